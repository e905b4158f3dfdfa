"""The collision world (private to :mod:`physai.collision`): the frozen :class:`CollisionWorld` and its queries,
an :class:`Obstacle` and the :func:`scene` that places obstacles around a robot."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import mujoco
import numpy as np

from physai import _engine
from physai._threads import in_threads
from physai._validate import finite_array, nonnegative, one_of, real
from physai.chain import frozen_array
from physai.collision import _screen as screen  # screen.GJK_BAND is read at each call (tests widen it)
from physai.collision._screen import ASK, CLEAR, ENGINES, SAFE, Screen
from physai.errors import InputError
from physai.kinematics import Chain, joint_frames, tool_pose

ALLOWED = ("adjacent", "excluded", "always", "at_rest", "never", "dropped")  # why a pair of the robot is not checked
_FAR = 1e3  # m: the cap of a distance measured in full (closest, where every pair is beyond distmax)
CLEAR_SET_DRAWS = 2000  # uniform draws behind a world's clear postures (IK starts; about half are clear)


@dataclass(frozen=True)
class Obstacle:
    """A fixed primitive in the world frame: ``type`` one of box, sphere, capsule, cylinder (MuJoCo ``size``
    conventions: half-sizes and radii, m); ``pos (3,)`` m; ``quat (4,)`` ``(w, x, y, z)``."""

    name: str
    type: str
    size: tuple[float, ...]
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


_OBSTACLE_TYPES = {"box": mujoco.mjtGeom.mjGEOM_BOX, "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
                   "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER}


def scene(robot: str | os.PathLike, obstacles: Sequence[Obstacle] = ()) -> mujoco.MjModel:
    """The compiled model of ``robot`` (a bundled or Menagerie name, or an MJCF file) with ``obstacles`` added to
    its world body (``contype = conaffinity = 1``)."""
    from physai.robots import is_robot_name, model_path, mujoco_warnings

    path = model_path(str(robot)) if is_robot_name(robot) else os.fspath(robot)
    with mujoco_warnings(os.path.basename(path)):
        spec = mujoco.MjSpec.from_file(str(path))
    seen = set()
    for ob in obstacles:
        if not isinstance(ob, Obstacle):
            raise InputError(f"obstacles: expected physai.collision.Obstacle entries, got {type(ob).__name__}")
        if ob.name in seen:
            raise InputError(f"obstacle {ob.name!r} is named twice: each obstacle needs a name of its own")
        seen.add(ob.name)
        if ob.type not in _OBSTACLE_TYPES:
            raise InputError(f"obstacle {ob.name!r}: type must be one of {sorted(_OBSTACLE_TYPES)}, got {ob.type!r}")
        size = finite_array(ob.size, f"obstacle {ob.name!r} size")
        if size.ndim != 1 or not 1 <= len(size) <= 3 or np.any(size <= 0):
            raise InputError(f"obstacle {ob.name!r}: size must hold 1-3 lengths > 0 (m), got {ob.size}")
        quat = finite_array(ob.quat, f"obstacle {ob.name!r} quat", (4,))
        if not np.linalg.norm(quat) > 1e-9:  # MuJoCo would compile a degenerate rotation
            raise InputError(f"obstacle {ob.name!r}: quat {tuple(ob.quat)} has no length; a rotation (w, x, y, z) "
                             "needs one, e.g. (1, 0, 0, 0) for none")
        spec.worldbody.add_geom(name=ob.name, type=_OBSTACLE_TYPES[ob.type], size=np.resize(size, 3),
                                pos=finite_array(ob.pos, f"obstacle {ob.name!r} pos", (3,)), quat=quat,
                                contype=1, conaffinity=1, rgba=[0.55, 0.45, 0.35, 1])
    with mujoco_warnings(os.path.basename(path)):
        try:
            return spec.compile()
        except ValueError as exc:  # e.g. an obstacle named like a geom of the robot
            raise InputError(f"obstacles: the scene does not compile in MuJoCo: {exc}") from None


class KernelRecord(NamedTuple):
    """A :class:`CollisionWorld`'s arrays in the order the compiled kernels take them
    (:attr:`CollisionWorld.kernel_record`): the moving joint of each geom, its pose in that joint's frame
    ``(ngeom, 12)``, the pairs ``(P, 2)``, the screen's shapes and hulls, the pairs' clearances ``(P,)`` (m), and the
    two round-off bands (m) a verdict keeps."""

    last_joint: np.ndarray
    local_rows: np.ndarray
    pairs: np.ndarray
    kind: np.ndarray
    radius: np.ndarray
    half: np.ndarray
    centre: np.ndarray
    rbound: np.ndarray
    exact: np.ndarray
    unbounded: np.ndarray
    hull: np.ndarray
    hull_adr: np.ndarray
    hull_num: np.ndarray
    hull_radius: np.ndarray
    hull_disk: np.ndarray
    pair_margin: np.ndarray
    safe: float
    band: float


@dataclass(frozen=True, eq=False)
class CollisionWorld:
    """The pairs of one scene and the arm that moves in it; build with :func:`collision_world`.

    ``pairs: (P, 2)`` geom ids, checked; ``pair_names`` their labels (a geom's name, else ``body#k``, its ``k``-th
    geom); ``pair_self (P,)`` whether a pair is the robot's own (held to ``self_margin``) rather than the arm against
    an obstacle (held to ``margin``); ``pair_margin (P,)`` each pair's clearance (m). ``allowed``: the robot's pairs
    left out, as ``((label, label), why)`` with ``why`` one of :data:`ALLOWED`. ``mounted``: ``(body, surface)``, the
    robot's fixed bodies and the obstacles they rest on (they never move against each other: no pair).
    ``distmax`` (m): the distance up to which pairs are resolved. Every array is read-only.

    Examples
    --------
    The SO-101 on a table: in the middle of its joint ranges it is clear, with the shoulder 24.4 mm above the table;
    with the shoulder lifted 1.6 rad it reaches down through the table.

    >>> from physai import collision
    >>> chain = physai.load("so101")
    >>> table = collision.Obstacle("table", "box", (0.4, 0.4, 0.02), (0.0, 0.0, -0.02))
    >>> world = physai.collision_world(collision.scene("so101", [table]), chain)
    >>> bool(world.clear(chain.q_middle)), world.closest(chain.q_middle)[1]
    (True, ('table', 'shoulder#1'))
    >>> round(world.closest(chain.q_middle)[0], 4)
    0.0244
    >>> dist, pair = world.closest([0.0, 1.6, 0.0, 0.0, 0.0])
    >>> round(dist, 4), pair
    (-0.0349, ('table', 'lower_arm#0'))

    The arm keeps 1 cm from the table; its own pairs keep 0 (no interpenetration), the closest 27.1 mm apart here:

    >>> sorted(set(world.pair_margin.tolist()))
    [0.0, 0.01]
    >>> dist, pair = world.closest(chain.q_middle, "self")
    >>> round(dist, 4), pair
    (0.0271, ('wrist#0', 'moving_jaw_box1'))
    """

    model: mujoco.MjModel = field(repr=False)
    chain: Chain
    margin: float
    self_margin: float
    distmax: float
    pairs: np.ndarray
    pair_names: tuple[tuple[str, str], ...]
    pair_self: np.ndarray
    allowed: tuple[tuple[tuple[str, str], str], ...]
    mounted: tuple[tuple[str, str], ...]
    qpos_adr: np.ndarray = field(repr=False)  # the chain's joints in this model
    moves: np.ndarray = field(repr=False)  # (nbody, n) bool: chain joint j moves body b
    joint_ids: tuple[int, ...] = field(repr=False)  # the chain's joints' ids in this model
    unbounded: np.ndarray = field(repr=False)  # (P,) pairs with a plane or height field: no bounding sphere
    pair_margin: np.ndarray = field(init=False, repr=False)  # (P,) each pair's clearance, m
    hinge: np.ndarray = field(init=False, repr=False)  # (n,) bool: the chain's joint is a hinge (else a slide)
    screen: Screen = field(init=False, repr=False)
    last_joint: np.ndarray = field(init=False, repr=False)  # (ngeom,) the last chain joint moving each geom, or -1
    T_joint_geom: np.ndarray = field(init=False, repr=False)  # (ngeom, 4, 4) each geom in that joint's frame
    local_rows: np.ndarray = field(init=False, repr=False)  # T_joint_geom in the kernels' layout (ngeom, 12)
    _local: threading.local = field(init=False, repr=False)
    _engine_refs: tuple = field(init=False, repr=False)  # model, chain, screen, (owner, name, array, shape) as built
    # IK starts (physai._avoid_ik): the postures among CLEAR_SET_DRAWS uniform draws (default_rng(0)) that keep every
    # pair's clearance (K, n), and their tool poses (K, 4, 4); sampled once, as the world is built, not in a solve
    clear_postures: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False)

    @property
    def arm_geoms(self) -> np.ndarray:
        """Ids of the geoms the chain moves."""
        return np.flatnonzero(self.moves[self.model.geom_bodyid].any(axis=1))

    @property
    def dropped(self) -> tuple[tuple[str, str], ...]:
        """The labels of the pairs left out as in contact (always, or at rest), or by ``drop=``."""
        return tuple(names for names, why in self.allowed if why in ("always", "at_rest", "dropped"))

    def __post_init__(self):
        if not isinstance(self.model, mujoco.MjModel) or not isinstance(self.chain, Chain):
            raise InputError("CollisionWorld: expected a mujoco.MjModel and a physai Chain; build it with "
                             "physai.collision_world")
        object.__setattr__(self, "margin", nonnegative(self.margin, "margin"))
        object.__setattr__(self, "self_margin", nonnegative(self.self_margin, "self_margin"))
        P, n = len(self.pair_names), self.chain.n
        for name, dtype, shape in (("pairs", np.int64, (P, 2)), ("pair_self", bool, (P,)),
                                   ("unbounded", bool, (P,)), ("qpos_adr", np.int64, (n,)),
                                   ("moves", bool, (self.model.nbody, n))):
            a = np.asarray(getattr(self, name))
            if a.shape != shape:
                raise InputError(f"CollisionWorld: {name} has shape {a.shape}, expected {shape}")
            object.__setattr__(self, name, frozen_array(a, dtype))
        if P and (self.pairs.min() < 0 or self.pairs.max() >= self.model.ngeom):
            raise InputError(f"CollisionWorld: pairs must hold geom ids in [0, {self.model.ngeom})")
        object.__setattr__(self, "pair_margin", frozen_array(np.where(self.pair_self, self.self_margin, self.margin),
                                                        np.float64))
        object.__setattr__(self, "_local", threading.local())
        object.__setattr__(self, "hinge", frozen_array([t == "hinge" for t in self.chain.joint_types], bool))
        object.__setattr__(self, "screen", Screen.of(self.model, self.pairs))
        last = np.where(self.moves.any(axis=1), self.chain.n - 1 - np.argmax(self.moves[:, ::-1], axis=1), -1)
        object.__setattr__(self, "last_joint", frozen_array(last[self.model.geom_bodyid], np.int64))
        T = self._geom_offsets()
        object.__setattr__(self, "T_joint_geom", frozen_array(T, np.float64))
        object.__setattr__(self, "local_rows", frozen_array(np.concatenate([T[:, :3, :3].reshape(-1, 9), T[:, :3, 3]],
                                                                       axis=1), np.float64))
        object.__setattr__(self, "_engine_refs", (self.model, self.chain, self.screen, tuple(
            (owner, name, getattr(owner, name), getattr(owner, name).shape) for owner, names in (
                (self, ("pairs", "pair_margin", "unbounded", "last_joint", "local_rows", "T_joint_geom", "qpos_adr")),
                (self.screen, ("kind", "radius", "half", "centre", "rbound", "exact", "hull", "hull_adr", "hull_num",
                               "hull_radius", "hull_disk"))) for name in names)))
        q = self.chain.random_q(np.random.default_rng(0), CLEAR_SET_DRAWS)
        q = np.ascontiguousarray(q[self.clear_trusted(q, self.pair_margin)])
        object.__setattr__(self, "clear_postures",
                           (frozen_array(q, np.float64), frozen_array(tool_pose(self.chain, q), np.float64)))

    def __reduce__(self):
        """Pickle and copy rebuild the world through its constructor from the fields it was built from, so the
        copy's arrays are read-only again and everything derived is recomputed, never taken from the stream."""
        return type(self), tuple(getattr(self, f.name) for f in fields(self) if f.init)

    def __repr__(self) -> str:
        n_self = int(self.pair_self.sum())
        why = {w: sum(1 for _, x in self.allowed if x == w) for w in ALLOWED}
        left = ", ".join(f"{w} {k}" for w, k in why.items() if k) or "none"
        mounted = "; ".join(f"{body} rests on {surface}" for body, surface in self.mounted)
        return (f"CollisionWorld(chain {self.chain.name!r}: {len(self.pairs) - n_self} obstacle pairs held to margin "
                f"{self.margin} m, {n_self} self pairs held to self_margin {self.self_margin} m; not checked: {left}"
                + (f"; fixed to the world, never checked against the surface it rests on: {mounted}" if mounted else "")
                + ")")

    def check_engine_arrays(self) -> None:
        """Refuse a world whose arrays no longer have the dtype, shape, layout or index range its constructor gave
        them. The arrays are read-only, but NumPy still lets ``a.shape`` be set on one, and ``object.__setattr__``
        replaces a field of any frozen dataclass; the compiled kernels trust the layout and the indices (and would
        read past an array), so every compiled entry calls this first. Raises :class:`InputError` naming the field."""
        model, chain, screen, arrays = self._engine_refs
        if self.model is model and self.chain is chain and self.screen is screen and \
                all(getattr(owner, name) is a and a.shape == shape for owner, name, a, shape in arrays):
            self.chain.check_engine_arrays(("packed",))
            return  # the arrays it built, in immutable memory, with their shapes: nothing else to check
        if not isinstance(self.model, mujoco.MjModel) or self.model.ngeom != model.ngeom or \
                not isinstance(self.chain, Chain) or self.chain.n != chain.n:
            raise InputError("CollisionWorld: model or chain was replaced after construction; build the world again")
        P, G, n, s = len(self.pair_names), self.model.ngeom, self.chain.n, self.screen
        V = len(s.hull) if isinstance(s, Screen) and isinstance(s.hull, np.ndarray) else -1
        expected = (("pairs", self.pairs, np.int64, (P, 2)), ("pair_margin", self.pair_margin, np.float64, (P,)),
                    ("unbounded", self.unbounded, bool, (P,)), ("pair_self", self.pair_self, bool, (P,)),
                    ("last_joint", self.last_joint, np.int64, (G,)),
                    ("local_rows", self.local_rows, np.float64, (G, 12)),
                    ("T_joint_geom", self.T_joint_geom, np.float64, (G, 4, 4)),
                    ("qpos_adr", self.qpos_adr, np.int64, (n,)))
        if not isinstance(s, Screen):
            raise InputError("CollisionWorld: screen was replaced after construction; build the world again")
        expected += tuple((f"screen.{k}", getattr(s, k), t, shape) for k, t, shape in (
            ("kind", np.int64, (G,)), ("radius", np.float64, (G,)), ("half", np.float64, (G, 3)),
            ("centre", np.float64, (G, 3)), ("rbound", np.float64, (G,)), ("exact", bool, (P,)),
            ("hull", np.float64, (V, 3)), ("hull_adr", np.int64, (G,)), ("hull_num", np.int64, (G,)),
            ("hull_radius", np.float64, (G,)), ("hull_disk", np.float64, (G,))))
        for name, a, dtype, shape in expected:
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
                got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
                raise InputError(f"CollisionWorld: {name} is {got}, not the C-contiguous {np.dtype(dtype)} {shape} its "
                                 "constructor made (edited after construction?); build the world again")
        ranges = (("pairs", self.pairs, 0, G - 1), ("last_joint", self.last_joint, -1, n - 1),
                  ("qpos_adr", self.qpos_adr, 0, self.model.nq - 1),
                  ("screen.hull_adr", s.hull_adr, 0, V), ("screen.hull_num", s.hull_num, 0, V))
        for name, a, lo, hi in ranges:
            if a.size and (a.min() < lo or a.max() > hi):
                raise InputError(f"CollisionWorld: {name} holds indices outside [{lo}, {hi}] (edited after "
                                 "construction?); build the world again")
        if not np.array_equal(self.pair_margin, np.where(self.pair_self, self.self_margin, self.margin)):
            raise InputError("CollisionWorld: pair_margin no longer holds margin and self_margin (edited after "
                             "construction?); build the world again")
        if G and (s.hull_adr + s.hull_num).max() > V:
            raise InputError("CollisionWorld: screen.hull_adr + screen.hull_num run past screen.hull (edited after "
                             "construction?); build the world again")
        self.chain.check_engine_arrays(("packed",))

    def thresholds(self, margin: float | None = None) -> np.ndarray:
        """Each pair's clearance ``(P,)`` (m): ``margin`` (default the world's) for the obstacle pairs,
        ``self_margin`` for the robot's own."""
        if margin is None:
            return self.pair_margin
        return np.where(self.pair_self, self.self_margin, nonnegative(margin, "margin"))

    def _data(self) -> mujoco.MjData:
        d = getattr(self._local, "data", None)
        if d is None:
            d = self._local.data = mujoco.MjData(self.model)
        return d

    def posed(self, q) -> mujoco.MjData:
        """This thread's ``MjData`` of the scene with the chain at ``q: (n,)`` (kinematics computed)."""
        d = self._data()
        d.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, d)
        return d

    def distances(self, q) -> np.ndarray:
        """Signed distance (m) of every pair, ``q: (..., n)`` -> ``(..., P)``, capped at ``distmax``."""
        return self.evaluate_trusted(self.chain.check_q(q), gradients=False)[0]

    def distances_and_gradients(self, q) -> tuple[np.ndarray, np.ndarray]:
        """``(d (..., P), G (..., P, n))``: signed distances (m) and ``G = dd/dq`` (m/rad, m/m for slides);
        a pair at ``distmax`` (resolved farther apart) has a zero gradient."""
        return self.evaluate_trusted(self.chain.check_q(q), gradients=True)

    def clear(self, q, margin: float | None = None) -> np.ndarray:
        """Whether every pair keeps its clearance (:meth:`thresholds`: ``margin``, default the world's, for the
        obstacle pairs; ``self_margin`` for the robot's own), ``q: (..., n)`` -> bool ``(...)``.

        Most verdicts need no MuJoCo call (:meth:`verdicts`): MuJoCo's distance decides only the pairs the screen
        leaves undecided, likeliest hits first."""
        margins = self.thresholds(margin)
        q = self.chain.check_q(q)
        return self.clear_trusted(q.reshape(-1, self.chain.n), margins).reshape(q.shape[:-1])

    @property
    def kernel_record(self) -> KernelRecord:
        """The world's arrays as the compiled collision kernels read them, in their order, as one record (the solvers
        pass it on whole: :func:`physai._numba_avoid.restarts`). Trusted: the caller checked the world
        (:meth:`check_engine_arrays`)."""
        s = self.screen
        return KernelRecord(self.last_joint, self.local_rows, self.pairs, s.kind, s.radius, s.half, s.centre, s.rbound,
                            s.exact, self.unbounded, s.hull, s.hull_adr, s.hull_num, s.hull_radius, s.hull_disk,
                            self.pair_margin, SAFE, screen.GJK_BAND)

    def clear_trusted(self, flat: np.ndarray, margins: np.ndarray) -> np.ndarray:
        """:meth:`clear` of checked configurations ``flat: (K, n)`` against checked clearances ``margins: (P,)``
        (:meth:`thresholds`; ``pair_margin`` for the world's) -> bool ``(K,)``."""
        flat = np.ascontiguousarray(flat)
        verdict, ask, bound = self._verdicts(flat, margins)
        ok = verdict == CLEAR
        for k in np.flatnonzero(verdict == ASK):
            pairs = np.flatnonzero(ask[k])
            ok[k] = self._keeps(flat[k], pairs[np.argsort(bound[k, pairs])], margins)
        return ok

    def verdicts(self, flat: np.ndarray, margin: float, engine: str = "compiled"):
        """``(verdict (K,), ask (K, P), bound (K, P))`` at ``flat: (K, n)``: each configuration :data:`CLEAR`,
        :data:`HIT` or :data:`ASK` against ``margin`` (m; the robot's own pairs against ``self_margin``), the pairs
        left to MuJoCo and their lower bounds (:meth:`Screen.verdicts`); ``engine``: ``"compiled"``
        (:mod:`physai._numba_collision`) or ``"numpy"``."""
        flat, margins = self._configs(flat), self.thresholds(nonnegative(margin, "margin"))
        if one_of(engine, "engine", ENGINES) == "numpy":
            self.check_engine_arrays()
            return self.screen.verdicts(*self.geom_poses(flat), margins, self.unbounded)
        return self._verdicts(flat, margins)

    def _verdicts(self, flat: np.ndarray, margins: np.ndarray):
        """:meth:`verdicts` by the compiled engine, on checked ``flat (K, n)`` (C-contiguous) and ``margins (P,)``."""
        self.check_engine_arrays()
        s, K, P = self.screen, len(flat), len(self.pairs)
        # a hit stops a configuration's pairs: those after it keep -inf, a lower bound that holds
        verdict, ask, bound = np.empty(K, np.int64), np.zeros((K, P), bool), np.full((K, P), -np.inf)
        margins = np.ascontiguousarray(margins, np.float64)

        def rows(lo: int, hi: int) -> None:  # each configuration's verdict is its own: rows shared among threads
            _engine.kernels.verdicts(flat[lo:hi], self.chain.packed, self.last_joint, self.local_rows, self.pairs,
                                     s.kind, s.radius, s.half, s.centre, s.rbound, s.exact, self.unbounded, s.hull,
                                     s.hull_adr, s.hull_num, s.hull_radius, s.hull_disk, margins, SAFE, screen.GJK_BAND,
                                     verdict[lo:hi], ask[lo:hi], bound[lo:hi])

        in_threads(rows, K, per_thread=4)  # a verdict takes some microseconds: few kernel calls
        return verdict, ask, bound

    def _keeps(self, q: np.ndarray, pairs: np.ndarray, margins: np.ndarray) -> bool:
        """Whether every pair in ``pairs`` keeps its clearance ``margins[i]`` at ``q: (n,)`` by MuJoCo, stopping at
        the first that does not."""
        m, d, geom_distance = self.model, self.posed(q), mujoco.mj_geomDistance
        return all(geom_distance(m, d, a, b, margins[i], None) >= margins[i]
                   for i, (a, b) in zip(pairs.tolist(), self.pairs[pairs].tolist()))

    def closest(self, q, among: str = "all") -> tuple[float | None, tuple[str, str] | None]:
        """The smallest signed distance (m) at one ``q: (n,)`` and the labels of that pair, among ``"all"`` pairs,
        the ``"obstacle"`` pairs or the robot's own (``"self"``); ``(None, None)`` where there is no such pair.
        Never the cap: where every pair is beyond ``distmax``, MuJoCo measures them in full."""
        q = finite_array(q, "q", (self.chain.n,)).reshape(self.chain.n)
        chosen = np.flatnonzero({"all": np.ones(len(self.pairs), bool), "obstacle": ~self.pair_self,
                                 "self": self.pair_self}[one_of(among, "among", ("all", "obstacle", "self"))])
        if not len(chosen):
            return None, None
        d = self.distances(q)[chosen]
        if d.min() >= self.distmax:
            d = self.evaluate_trusted(q, False, _FAR)[0][chosen]
        i = chosen[int(np.argmin(d))]
        return float(d.min()), self.pair_names[i]

    def bounds(self, flat: np.ndarray, cap: float, engine: str = "compiled") -> np.ndarray:
        """Lower bounds ``(K, P)`` (m) of the pairs' distances at ``flat: (K, n)``, refined while below ``cap``
        (:class:`Screen`); ``engine``: ``"compiled"`` (:mod:`physai._numba_collision`) or ``"numpy"``."""
        flat, cap = self._configs(flat), real(cap, "cap")
        if one_of(engine, "engine", ENGINES) == "numpy":
            self.check_engine_arrays()
            return self.screen.lower(*self.geom_poses(flat), cap)
        return self._bounds(flat, cap)

    def _bounds(self, flat: np.ndarray, cap: float) -> np.ndarray:
        """:meth:`bounds` by the compiled engine, on checked ``flat (K, n)`` (C-contiguous) and ``cap``."""
        self.check_engine_arrays()
        s = self.screen
        out = np.empty((len(flat), len(self.pairs)))
        _engine.kernels.screen(flat, self.chain.packed, self.last_joint, self.local_rows, self.pairs, s.kind,
                               s.radius, s.half, s.centre, s.rbound, cap, out)
        return out

    def _configs(self, q) -> np.ndarray:
        """``q`` checked as the chain's joint positions, as the kernels take them: C-contiguous ``(K, n)`` float64."""
        return np.ascontiguousarray(self.chain.check_q(q).reshape(-1, self.chain.n))

    def geom_poses(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every geom's world position ``(K, ngeom, 3)`` and rotation ``(K, ngeom, 3, 3)`` at ``flat: (K, n)``, from
        the chain's joint frames (equal to MuJoCo's ``geom_xpos``, ``geom_xmat`` to round-off)."""
        T_world_joint = joint_frames(self.chain, flat)[0]
        moved = self.last_joint >= 0
        T = np.broadcast_to(self.T_joint_geom, (len(flat),) + self.T_joint_geom.shape).copy()
        T[:, moved] = T_world_joint[:, self.last_joint[moved]] @ self.T_joint_geom[moved]
        return T[..., :3, 3], T[..., :3, :3]

    def _geom_offsets(self) -> np.ndarray:
        """Each geom's pose in the frame of the last chain joint that moves it (a fixed geom's in the world), read
        from MuJoCo at the middle of the joint ranges."""
        q = self.chain.q_middle
        d = self.posed(q)
        T_world_geom = np.tile(np.eye(4), (self.model.ngeom, 1, 1))
        T_world_geom[:, :3, :3], T_world_geom[:, :3, 3] = d.geom_xmat.reshape(-1, 3, 3), d.geom_xpos
        moved = self.last_joint >= 0
        T_world_joint = joint_frames(self.chain, q)[0]
        T_world_geom[moved] = np.linalg.inv(T_world_joint[self.last_joint[moved]]) @ T_world_geom[moved]
        return T_world_geom

    def evaluate_trusted(self, q, gradients: bool, cap: float | None = None):
        """Distances capped at ``cap`` (default ``distmax``), with gradients if asked, for checked ``q: (..., n)``.

        All configurations are posed first and their pairs' lower bounds computed together; MuJoCo's distance is
        called only for pairs whose bound is below ``cap``, on the configurations that have such pairs."""
        flat = np.ascontiguousarray(q.reshape(-1, self.chain.n))
        P, cap = len(self.pairs), self.distmax if cap is None else cap
        D = np.full((len(flat), P), cap)
        G = np.zeros((len(flat), P, self.chain.n)) if gradients else None
        near = (self._bounds(flat, float(cap)) < cap + SAFE) | self.unbounded
        for k in np.flatnonzero(near.any(axis=1)):
            self._one(flat[k], np.flatnonzero(near[k]), D[k], None if G is None else G[k], cap)
        D = D.reshape(q.shape[:-1] + (P,))
        return D, (None if G is None else G.reshape(q.shape[:-1] + (P, self.chain.n)))

    def _one(self, q: np.ndarray, near: np.ndarray, D: np.ndarray, G: np.ndarray | None, cap: float) -> None:
        """Fill ``D (P,)`` (and ``G (P, n)``) at one ``q`` for the pairs ``near``."""
        m, d = self.model, self.posed(q)
        fromto = np.zeros((len(near), 6))
        geom_distance = mujoco.mj_geomDistance
        D[near] = [geom_distance(m, d, a, b, cap, fromto[k]) for k, (a, b) in enumerate(self.pairs[near].tolist())]
        if G is not None:
            hit = D[near] < cap
            G[near[hit]] = self._gradients(d, self.pairs[near[hit]], D[near[hit]], fromto[hit])

    def _gradients(self, d: mujoco.MjData, pairs: np.ndarray, dist: np.ndarray, fromto: np.ndarray) -> np.ndarray:
        """``n^T (J_2(p_2) - J_1(p_1))`` of ``k`` pairs -> ``(k, n)``.

        ``fromto`` runs from ``p_1`` on geom 1 to ``p_2`` on geom 2: along the normal ``n`` (geom 1 to 2) when apart,
        against it in penetration; coincident points (touching) fall back to the line between the geom centres.
        A point fixed to a body moved by hinge ``j`` (axis ``a``, anchor ``o``, MuJoCo's ``xaxis``/``xanchor``) has
        ``dp/dq_j = a x (p - o)``, so ``n . dp/dq_j = (p - o) . (n x a)``; by slide ``j``: ``n . a``.
        """
        p1, p2 = fromto[:, :3], fromto[:, 3:]
        u = (p2 - p1) * np.where(dist < 0, -1.0, 1.0)[:, None]
        centres = d.geom_xpos[pairs[:, 1]] - d.geom_xpos[pairs[:, 0]]
        u = np.where((np.linalg.norm(u, axis=1) < 1e-12)[:, None], centres, u)
        n = u / np.maximum(np.linalg.norm(u, axis=1), 1e-300)[:, None]
        ids = list(self.joint_ids)
        axes, anchors = d.xaxis[ids], d.xanchor[ids]  # (n_joints, 3)
        na = np.cross(n[:, None, :], axes[None])  # (k, n_joints, 3)
        hinge = self.hinge

        def along(p, geoms):
            rate = np.where(hinge, np.einsum("kjx,kjx->kj", p[:, None, :] - anchors[None], na), n @ axes.T)
            return rate * self.moves[self.model.geom_bodyid[geoms]]

        return along(p2, pairs[:, 1]) - along(p1, pairs[:, 0])

