"""Signed distances between an arm and its surroundings, through MuJoCo's own geometry.

A :class:`CollisionWorld` is built once from a MuJoCo scene holding the arm (the chain's joints, by name) and
whatever surrounds it (:func:`collision_world`). It pairs every geom the chain moves with every geom it does not
move (the table, a shelf, the robot's own base) and with every other arm geom that moves relative to it
(self-collision), filtered as MuJoCo's collision detection filters them: ``contype``/``conaffinity``, ``<exclude>``
and the parent-child rule (plus every explicit ``<pair>``).

Obstacle pairs (the arm against anything that is not the robot) are all checked, each against ``margin``. The
robot's own pairs are classified once, as MoveIt's Allowed Collision Matrix does, by sampling the arm inside its
limits: adjacent (MuJoCo's parent-child filter), always in contact (never checked), in contact at rest (the middle
of the joint ranges: geoms that overlap by construction, MoveIt's "collision by default"), never closer than
``self_margin + NEVER_GAP`` (not worth checking), and default (checked, against their own padding ``self_margin``,
0 by default: no interpenetration). ``world.allowed`` lists every pair left out and why; ``keep=`` and ``drop=``
override the choice. The robot's fixed bodies (its base: no joint above them) never move against the surface they
rest on; the world's ``repr`` names them.

Distances are MuJoCo's ``mj_geomDistance`` (convex hulls for meshes), signed (negative: penetration depth), capped
at ``world.distmax``: a pair farther apart reports ``distmax``. A screen (:class:`_Screen`, compiled in
:mod:`physai._numba_collision`) bounds every pair from below first, from the geoms' poses along the chain: bounding
spheres, then boxes, then each geom's core shape (a segment with a radius, or a box), exact for spheres, capsules
and boxes against each other (box pairs excepted). MuJoCo is called only for pairs the screen leaves below the cap,
so a clear verdict usually costs no MuJoCo call at all, and the bound never hides a closer pair.
Gradients with respect to ``q`` are the contact-normal Jacobian ``n^T (J_2(p_2) - J_1(p_1))``
with ``n`` the unit normal from geom 1 to geom 2 and ``p_1, p_2`` the nearest (or deepest) points
(``mj_geomDistance``'s ``fromto``), the linear point Jacobians built from MuJoCo's joint axes and anchors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import mujoco
import numpy as np

from physai import _engine, _files
from physai._threads import in_threads
from physai._validate import count, finite_array, generator, nonnegative, one_of, positive, real
from physai.chain import _frozen
from physai.errors import InputError
from physai.kinematics import Chain, fk, joint_frames, tool_pose

DISTMAX_BEYOND_MARGIN = 0.05  # m: distances are resolved up to margin + this; farther pairs report the cap
ALWAYS_TOUCHING = 0.95  # a self pair in contact in this fraction of the sampled postures is never checked
NEVER_GAP = 0.05  # m: a self pair never within self_margin + this in the sampled postures is not worth checking
SAMPLES = 2000  # postures sampled when a world is built, to classify its pairs
ALLOWED = ("adjacent", "excluded", "always", "at_rest", "never", "dropped")  # why a pair of the robot is not checked
_FAR = 1e3  # m: the cap of a distance measured in full (closest, where every pair is beyond distmax)
_GEOM_CHECK_Q = 3  # configurations at which the scene's joint axes and anchors must match the chain's
_PLACEMENT_TOL = 1e-6  # m: how closely they must match


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
    from physai.robots import _is_name, model_path, mujoco_warnings

    path = model_path(str(robot)) if _is_name(robot) else os.fspath(robot)
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
    screen: _Screen = field(init=False, repr=False)
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
            object.__setattr__(self, name, _frozen(a, dtype))
        if P and (self.pairs.min() < 0 or self.pairs.max() >= self.model.ngeom):
            raise InputError(f"CollisionWorld: pairs must hold geom ids in [0, {self.model.ngeom})")
        object.__setattr__(self, "pair_margin", _frozen(np.where(self.pair_self, self.self_margin, self.margin),
                                                        np.float64))
        object.__setattr__(self, "_local", threading.local())
        object.__setattr__(self, "hinge", _frozen([t == "hinge" for t in self.chain.joint_types], bool))
        object.__setattr__(self, "screen", _Screen.of(self.model, self.pairs))
        last = np.where(self.moves.any(axis=1), self.chain.n - 1 - np.argmax(self.moves[:, ::-1], axis=1), -1)
        object.__setattr__(self, "last_joint", _frozen(last[self.model.geom_bodyid], np.int64))
        T = self._geom_offsets()
        object.__setattr__(self, "T_joint_geom", _frozen(T, np.float64))
        object.__setattr__(self, "local_rows", _frozen(np.concatenate([T[:, :3, :3].reshape(-1, 9), T[:, :3, 3]],
                                                                       axis=1), np.float64))
        object.__setattr__(self, "_engine_refs", (self.model, self.chain, self.screen, tuple(
            (owner, name, getattr(owner, name), getattr(owner, name).shape) for owner, names in (
                (self, ("pairs", "pair_margin", "unbounded", "last_joint", "local_rows", "T_joint_geom", "qpos_adr")),
                (self.screen, ("kind", "radius", "half", "centre", "rbound", "exact", "hull", "hull_adr", "hull_num",
                               "hull_radius", "hull_disk"))) for name in names)))
        q = self.chain.random_q(np.random.default_rng(0), CLEAR_SET_DRAWS)
        q = np.ascontiguousarray(q[self.clear_trusted(q, self.pair_margin)])
        object.__setattr__(self, "clear_postures",
                           (_frozen(q, np.float64), _frozen(tool_pose(self.chain, q), np.float64)))

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
        V = len(s.hull) if isinstance(s, _Screen) and isinstance(s.hull, np.ndarray) else -1
        expected = (("pairs", self.pairs, np.int64, (P, 2)), ("pair_margin", self.pair_margin, np.float64, (P,)),
                    ("unbounded", self.unbounded, bool, (P,)), ("pair_self", self.pair_self, bool, (P,)),
                    ("last_joint", self.last_joint, np.int64, (G,)),
                    ("local_rows", self.local_rows, np.float64, (G, 12)),
                    ("T_joint_geom", self.T_joint_geom, np.float64, (G, 4, 4)),
                    ("qpos_adr", self.qpos_adr, np.int64, (n,)))
        if not isinstance(s, _Screen):
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
                            self.pair_margin, _SAFE, _GJK_BAND)

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
        left to MuJoCo and their lower bounds (:meth:`_Screen.verdicts`); ``engine``: ``"compiled"``
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
                                     s.hull_adr, s.hull_num, s.hull_radius, s.hull_disk, margins, _SAFE, _GJK_BAND,
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
        (:class:`_Screen`); ``engine``: ``"compiled"`` (:mod:`physai._numba_collision`) or ``"numpy"``."""
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
        near = (self._bounds(flat, float(cap)) < cap + _SAFE) | self.unbounded
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


SEGMENT, BOX, SPHERE_ONLY = 0, 1, 2  # a geom's core shape in the screen: a swept segment, a box, its bounding sphere
_EXACT_TYPES = {int(mujoco.mjtGeom.mjGEOM_SPHERE), int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_BOX)}
_GOLDEN_STEPS = 50  # golden-section steps of the segment-box distance: the bracket shrinks to 0.618^50 = 4e-11
ENGINES = ("compiled", "numpy")  # the screen's two engines: physai._numba_collision, and _Screen's NumPy reference
CLEAR_SET_DRAWS = 2000  # uniform draws behind a world's clear postures (IK starts; about half are clear)
CLEAR, HIT, ASK = 0, 1, 2  # a configuration's verdict against the margin: kept, not kept, MuJoCo decides
_GJK_ITERATIONS = 32  # GJK steps per undecided convex pair before MuJoCo decides it
_GJK_BAND = 1e-6  # m: a GJK bracket decides a verdict only this far from the margin (MuJoCo's own GJK tolerance)
_SAFE = 1e-9  # m: an exact screen distance decides a verdict only this far from the threshold (round-off)


@dataclass(frozen=True)
class _Screen:
    """Lower bounds of pair distances from geom poses: MuJoCo is called only for pairs whose bound is below the cap.

    Each geom has a core that contains it: a segment swept by a radius (sphere, capsule, cylinder), a box (box,
    ellipsoid, a mesh's bounding box ``geom_aabb``), else its bounding sphere. A pair's bound is the larger of the
    bounding spheres' gap and the cores' distance: segment-segment in closed form (Ericson, *Real-Time Collision
    Detection*, 2005, section 5.1.9), segment-box by golden-section search (the distance from a point moving along a
    segment to a convex set is convex), box-box by their face normals as separating axes (a gap along any unit axis
    is a lower bound).
    Where both cores are the geoms themselves (sphere, capsule, box) and not box-box, the bound is the distance
    (``exact``), so a verdict needs no MuJoCo call. A pair of convex hulls (box, mesh, or a sphere or capsule as the
    hull of its centre or segment grown by its radius, a cylinder as its axis swept by a disk) that the bound leaves
    undecided is bracketed by GJK (:func:`gjk_bracket`), which decides it unless the bracket holds the margin within
    ``_GJK_BAND``; hulls GJK finds overlapping are short of any margin (margins are >= 0), so MuJoCo is not asked
    for their depth."""

    g1: np.ndarray
    g2: np.ndarray
    rbound: np.ndarray  # (ngeom,) each geom's bounding radius
    exact: np.ndarray  # (P,) the cores' distance is the pair's distance
    kind: np.ndarray  # (ngeom,) SEGMENT, BOX or SPHERE_ONLY
    radius: np.ndarray  # (ngeom,) a segment's radius
    half: np.ndarray  # (ngeom, 3) a box's half-sizes; a segment's half-length in [2]
    centre: np.ndarray  # (ngeom, 3) the core's centre in the geom frame (a mesh's bounding box is off-centre)
    hull: np.ndarray  # (V, 3) every geom's hull points in its own frame, geom by geom
    hull_adr: np.ndarray  # (ngeom,) a geom's first row in hull
    hull_num: np.ndarray  # (ngeom,) its number of points (0: no hull; MuJoCo decides its undecided pairs)
    hull_radius: np.ndarray  # (ngeom,) the radius grown around its hull (sphere, capsule)
    hull_disk: np.ndarray  # (ngeom,) the radius of a disk in its xy plane that sweeps its hull (cylinder)

    @classmethod
    def of(cls, m: mujoco.MjModel, pairs: np.ndarray) -> _Screen:
        G = m.ngeom
        kind, radius = np.full(G, SPHERE_ONLY), np.zeros(G)
        half, centre = np.zeros((G, 3)), np.zeros((G, 3))
        T = mujoco.mjtGeom
        for g in range(G):
            t, size = int(m.geom_type[g]), m.geom_size[g]
            if t in (int(T.mjGEOM_SPHERE), int(T.mjGEOM_CAPSULE), int(T.mjGEOM_CYLINDER)):
                kind[g], radius[g] = SEGMENT, size[0]
                half[g, 2] = 0.0 if t == int(T.mjGEOM_SPHERE) else size[1]
            elif t in (int(T.mjGEOM_BOX), int(T.mjGEOM_ELLIPSOID)):
                kind[g], half[g] = BOX, size
            elif t == int(T.mjGEOM_MESH):
                kind[g], centre[g], half[g] = BOX, m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
        g1, g2 = pairs[:, 0], pairs[:, 1]
        exact_geom = np.isin(m.geom_type, list(_EXACT_TYPES))
        exact = exact_geom[g1] & exact_geom[g2] & ~((kind[g1] == BOX) & (kind[g2] == BOX))
        hull, hull_adr, hull_num, hull_radius, hull_disk = _hulls(m)
        f8, i8 = np.float64, np.int64
        return cls(_frozen(g1, i8), _frozen(g2, i8), _frozen(m.geom_rbound, f8), _frozen(exact, bool),
                   _frozen(kind, i8), _frozen(radius, f8), _frozen(half, f8), _frozen(centre, f8), _frozen(hull, f8),
                   _frozen(hull_adr, i8), _frozen(hull_num, i8), _frozen(hull_radius, f8), _frozen(hull_disk, f8))

    def lower(self, xpos: np.ndarray, xmat: np.ndarray, cap: float) -> np.ndarray:
        """``(K, P)`` lower bounds (m) of the pairs' distances from geom poses ``xpos (K, ngeom, 3)``,
        ``xmat (K, ngeom, 3, 3)``. Cheap bounds first: a pair is refined only while its bound stays below ``cap``
        (bounding spheres; then a box to the other's bounding sphere; then the cores)."""
        dc = xpos[:, self.g1] - xpos[:, self.g2]
        bound = np.sqrt(np.einsum("bki,bki->bk", dc, dc)) - self.rbound[self.g1] - self.rbound[self.g2]
        cap = np.broadcast_to(np.asarray(cap, float), self.g1.shape)  # one cap, or each pair's
        k, p = np.nonzero(bound < cap)
        a, b, cap = self.g1[p], self.g2[p], cap[p]
        refined = bound[k, p]
        for box, other in ((a, b), (b, a)):
            on = self.kind[box] == BOX
            refined[on] = np.maximum(refined[on], self._point_box(k[on], box[on], xpos[k[on], other[on]], xpos, xmat)
                                     - self.rbound[other[on]])
        low = refined < cap
        refined[low] = np.maximum(refined[low], self._cores(k[low], a[low], b[low], xpos, xmat))
        bound[k, p] = refined
        return bound

    def verdicts(self, xpos: np.ndarray, xmat: np.ndarray, margins: np.ndarray, unbounded: np.ndarray):
        """``(verdict (K,), ask (K, P), bound (K, P))`` from geom poses ``xpos (K, ngeom, 3)``, ``xmat (K, ngeom, 3,
        3)``: each configuration :data:`CLEAR` (every pair keeps its margin, ``margins (P,)`` m), :data:`HIT` (a pair
        does not) or :data:`ASK` (MuJoCo decides the pairs ``ask`` marks; none on a hit), and the pairs' lower bounds
        (m)."""
        bound = self.lower(xpos, xmat, margins + _SAFE)
        clear = (bound >= margins + _SAFE) & ~unbounded
        hit = self.exact & (bound < margins - _SAFE) & ~unbounded
        convex = (self.hull_num[self.g1] > 0) & (self.hull_num[self.g2] > 0) & ~self.exact & ~unbounded
        for k, i in zip(*np.nonzero(~clear & ~hit & convex)):
            (A, ra, disk_a), (B, rb, disk_b) = (self._hull(xpos[k], xmat[k], g) for g in (self.g1[i], self.g2[i]))
            lo, hi = gjk_bracket(A, ra, B, rb, margins[i], _GJK_BAND, _GJK_ITERATIONS, disk_a, disk_b)
            # hulls found overlapping (hi = -ra - rb): the distance lies below every margin, which is >= 0
            clear[k, i], hit[k, i] = lo >= margins[i] + _GJK_BAND, hi < margins[i] - _GJK_BAND or hi <= -(ra + rb)
            bound[k, i] = max(bound[k, i], lo)
        ask = ~clear & ~hit & ~hit.any(axis=1, keepdims=True)
        verdict = np.where(hit.any(axis=1), HIT, np.where(ask.any(axis=1), ASK, CLEAR))
        return verdict, ask, np.where(unbounded, -np.inf, bound)

    def _hull(self, xpos, xmat, g):
        """Geom ``g``'s hull points in the world ``(k, 3)``, its radius, and its disk ``(normal, radius)`` or None."""
        local = self.hull[self.hull_adr[g]:self.hull_adr[g] + self.hull_num[g]]
        disk = (xmat[g][:, 2], self.hull_disk[g]) if self.hull_disk[g] > 0 else None
        return xpos[g] + local @ xmat[g].T, self.hull_radius[g], disk

    def _cores(self, k, a, b, xpos, xmat) -> np.ndarray:
        ka, kb = self.kind[a], self.kind[b]
        core = np.full(len(k), -np.inf)
        for sel, x, y, fn in (((ka == SEGMENT) & (kb == SEGMENT), a, b, self._segment_segment),
                              ((ka == SEGMENT) & (kb == BOX), a, b, self._segment_box),
                              ((ka == BOX) & (kb == SEGMENT), b, a, self._segment_box),
                              ((ka == BOX) & (kb == BOX), a, b, self._box_box)):
            if sel.any():
                core[sel] = fn(k[sel], x[sel], y[sel], xpos, xmat)
        return core

    def _point_box(self, k, g, point, xpos, xmat) -> np.ndarray:
        """Distance (m) from ``point (k, 3)`` to the box core of geom ``g``."""
        c, R = self._box(k, g, xpos, xmat)
        out = np.maximum(np.abs(np.einsum("kji,kj->ki", R, point - c)) - self.half[g], 0.0)
        return np.sqrt(np.einsum("ki,ki->k", out, out))

    def _segment(self, k, g, xpos, xmat):
        axis = xmat[k, g, :, 2] * self.half[g, 2:3]
        return xpos[k, g] - axis, xpos[k, g] + axis

    def _box(self, k, g, xpos, xmat):
        R = xmat[k, g]
        return xpos[k, g] + np.einsum("kij,kj->ki", R, self.centre[g]), R

    def _segment_segment(self, k, a, b, xpos, xmat):
        return segment_distance(*self._segment(k, a, xpos, xmat), *self._segment(k, b, xpos, xmat)) \
            - self.radius[a] - self.radius[b]

    def _segment_box(self, k, a, b, xpos, xmat):
        """Segment of geom ``a`` to box of geom ``b``: the golden-section minimum less its bracket's slack."""
        p0, p1 = self._segment(k, a, xpos, xmat)
        c, R = self._box(k, b, xpos, xmat)
        u, v = np.einsum("kji,kj->ki", R, p0 - c), np.einsum("kji,kj->ki", R, p1 - c)  # in the box frame
        h = self.half[b]

        def dist(t):
            out = np.maximum(np.abs(u + t[:, None] * (v - u)) - h, 0.0)
            return np.sqrt(np.einsum("ki,ki->k", out, out))

        lo, hi, w = np.zeros(len(k)), np.ones(len(k)), 0.5 * (np.sqrt(5.0) - 1.0)
        m1, m2 = hi - w * (hi - lo), lo + w * (hi - lo)
        f1, f2 = dist(m1), dist(m2)
        for _ in range(_GOLDEN_STEPS):  # keep the bracket holding the smaller value; one new evaluation a step
            left = f1 <= f2
            lo, hi = np.where(left, lo, m1), np.where(left, m2, hi)
            new = np.where(left, hi - w * (hi - lo), lo + w * (hi - lo))
            f_new = dist(new)
            m1, m2, f1, f2 = (np.where(left, new, m2), np.where(left, m1, new), np.where(left, f_new, f2),
                              np.where(left, f1, f_new))
        # the function is Lipschitz with constant |v - u|: the true minimum lies within that times the bracket
        return dist(0.5 * (lo + hi)) - np.linalg.norm(v - u, axis=1) * (hi - lo) - self.radius[a]

    def _box_box(self, k, a, b, xpos, xmat):
        """The largest gap between the boxes' projections on their 6 face normals (a lower bound; the 9 edge-edge
        axes would tighten it rarely and cost more than MuJoCo's call for the few pairs they would decide)."""
        ca, Ra = self._box(k, a, xpos, xmat)
        cb, Rb = self._box(k, b, xpos, xmat)
        C = np.abs(np.einsum("kia,kib->kab", Ra, Rb))  # |cosines| between A's axes (rows) and B's (columns)
        t = cb - ca
        gap_a = np.abs(np.einsum("kia,ki->ka", Ra, t)) - self.half[a] - np.einsum("kab,kb->ka", C, self.half[b])
        gap_b = np.abs(np.einsum("kib,ki->kb", Rb, t)) - self.half[b] - np.einsum("kab,ka->kb", C, self.half[a])
        return np.maximum(gap_a.max(axis=1), gap_b.max(axis=1))


def _hulls(m: mujoco.MjModel):
    """Every geom's hull points in its own frame, as MuJoCo collides it: a sphere's centre and a capsule's segment
    ends (grown by their radius), a cylinder's axis ends (swept by a disk of its radius), a box's corners, a mesh's
    vertices (whose convex hull MuJoCo uses). -> ``(hull (V, 3), hull_adr (ngeom,), hull_num (ngeom,),
    hull_radius (ngeom,), hull_disk (ngeom,))``."""
    T, points, radius, disk = mujoco.mjtGeom, [], np.zeros(m.ngeom), np.zeros(m.ngeom)
    for g in range(m.ngeom):
        t, size = int(m.geom_type[g]), m.geom_size[g]
        if t == int(T.mjGEOM_SPHERE):
            points.append(np.zeros((1, 3)))
            radius[g] = size[0]
        elif t in (int(T.mjGEOM_CAPSULE), int(T.mjGEOM_CYLINDER)):
            points.append(np.array([[0.0, 0.0, -size[1]], [0.0, 0.0, size[1]]]))
            (radius if t == int(T.mjGEOM_CAPSULE) else disk)[g] = size[0]
        elif t == int(T.mjGEOM_BOX):
            points.append(size * np.array(np.meshgrid(*[[-1.0, 1.0]] * 3, indexing="ij")).reshape(3, -1).T)
        elif t == int(T.mjGEOM_MESH):
            points.append(_mesh_hull(m, int(m.geom_dataid[g])))
        else:
            points.append(np.zeros((0, 3)))
    num = np.array([len(p) for p in points], dtype=np.int64)
    adr = np.concatenate([[0], np.cumsum(num)[:-1]]).astype(np.int64)
    return np.ascontiguousarray(np.concatenate(points)), adr, num, radius, disk


def _mesh_hull(m: mujoco.MjModel, mesh: int) -> np.ndarray:
    """The vertices ``(k, 3)`` of the convex hull MuJoCo collides for ``mesh``: its hull graph's vertices
    (``mesh_graph``: ``numvert, numface``, then ``vert_edgeadr (numvert,)``, then ``vert_globalid (numvert,)``), fewer
    than the mesh's own where ``maxhullvert`` reduced the hull; every vertex where MuJoCo keeps no graph."""
    adr, num = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
    vert = m.mesh_vert[adr:adr + num].astype(float)
    graph = int(m.mesh_graphadr[mesh])
    if graph < 0:
        return vert
    numvert = int(m.mesh_graph[graph])
    return vert[m.mesh_graph[graph + 2 + numvert:graph + 2 + 2 * numvert]]


def segment_distance(p1, q1, p2, q2) -> np.ndarray:
    """Distance between segments ``p1 q1`` and ``p2 q2`` (points ``(k, 3)``, m) -> ``(k,)`` (Ericson 2005, 5.1.9);
    a segment may be a point."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = np.einsum("ki,ki->k", d1, d1), np.einsum("ki,ki->k", d2, d2)
    b, c, f = np.einsum("ki,ki->k", d1, d2), np.einsum("ki,ki->k", d1, r), np.einsum("ki,ki->k", d2, r)
    tiny = 1e-18
    denom = a * e - b * b
    s = np.where(denom > tiny, np.clip((b * f - c * e) / np.where(denom > tiny, denom, 1.0), 0.0, 1.0), 0.0)
    t = np.where(e > tiny, (b * s + f) / np.where(e > tiny, e, 1.0), 0.0)
    safe_a = np.where(a > tiny, a, 1.0)
    s = np.where(t < 0, np.where(a > tiny, np.clip(-c / safe_a, 0.0, 1.0), 0.0), s)
    s = np.where(t > 1, np.where(a > tiny, np.clip((b - c) / safe_a, 0.0, 1.0), 0.0), s)
    # a point as the second segment: its only point, and the first segment's point closest to it
    s = np.where(e > tiny, s, np.where(a > tiny, np.clip(-c / safe_a, 0.0, 1.0), 0.0))
    t = np.clip(t, 0.0, 1.0)
    gap = p1 + s[:, None] * d1 - p2 - t[:, None] * d2
    return np.sqrt(np.einsum("ki,ki->k", gap, gap))


def collision_world(scene, chain: Chain, margin: float = 0.01, *, self_margin: float = 0.0,
                    distmax: float | None = None, keep=(), drop=(), samples: int = SAMPLES,
                    always: float = ALWAYS_TOUCHING, rng: np.random.Generator | None = None) -> CollisionWorld:
    """The :class:`CollisionWorld` of ``chain`` moving in ``scene``.

    ``scene``: a ``mujoco.MjModel``, an MJCF/URDF path or a robot name (see :func:`scene` to add obstacles to one),
    holding the chain's joints by name, placed where the chain places them (checked). The robot is the body tree
    that holds the chain; every other geom is an obstacle. ``margin`` (m, >= 0): the clearance the arm keeps from
    every obstacle; ``self_margin`` (m, >= 0): the clearance the robot's pairs keep from each other (0: no
    interpenetration). ``distmax`` (m; default the larger margin + 0.05): distances are resolved up to this.

    Every obstacle pair is checked. The robot's own pairs are classified from ``samples`` postures drawn uniformly
    inside the joint limits (``rng``, default ``default_rng(0)``): in contact in at least ``always`` of them
    (``"always"``), in contact at rest (``"at_rest"``: at the middle of the joint ranges, where the model's geoms
    overlap by construction) or never within ``self_margin + NEVER_GAP`` (``"never"``), they are not checked; MuJoCo's
    parent-child filter and ``<exclude>`` leave out the ``"adjacent"`` and ``"excluded"`` ones. ``keep`` (checked
    whatever the samples say) and ``drop`` (not checked, ``"dropped"``) are pairs of labels, each a geom name, a geom
    label ``body#k`` or a body name. A margin no sampled posture keeps for some pair, where a smaller one would, is
    refused (:class:`InputError` naming ``margin`` or ``self_margin``): the world would refuse every answer.

    Examples
    --------
    The SO-101 on a table, every pair named; the obstacle pairs all checked, its own pairs classified:

    >>> from physai import collision
    >>> table = collision.Obstacle("table", "box", (0.4, 0.4, 0.02), (0.0, 0.0, -0.02))
    >>> world = physai.collision_world(collision.scene("so101", [table]), physai.load("so101"), margin=0.01)
    >>> len(world.pairs), world.pair_names[0], int(world.pair_self.sum())
    (101, ('table', 'shoulder#0'), 71)
    >>> sorted({why for _, why in world.allowed})
    ['adjacent', 'always', 'at_rest', 'never']
    """
    if not isinstance(chain, Chain):
        raise InputError(f"chain: expected a physai Chain, got {type(chain).__name__}")
    margin, self_margin = nonnegative(margin, "margin"), nonnegative(self_margin, "self_margin")
    widest = max(margin, self_margin)
    distmax = widest + DISTMAX_BEYOND_MARGIN if distmax is None else positive(distmax, "distmax")
    if distmax <= widest:
        raise InputError(f"distmax: expected a distance beyond margin = {margin} m and self_margin = {self_margin} "
                         f"m, got {distmax}")
    rng = np.random.default_rng(0) if rng is None else generator(rng)
    samples, always = count(samples, "samples", 1, 100_000), real(always, "always")
    if not 0 < always <= 1:
        raise InputError(f"always: expected a fraction in (0, 1], got {always}")
    world, labels, robot, adjacent, keep_m, drop_m = _prepared(scene, chain, margin, self_margin, distmax, keep, drop)
    m, pairs, names, pair_self = world.model, world.pairs, world.pair_names, world.pair_self
    stats = _sampled_stats(world, chain.random_q(rng, samples))
    contact = stats[0] >= always
    at_rest = world.distances(chain.q_middle) < 0
    why = np.where(contact, "always", np.where(at_rest, "at_rest", np.where(
        stats[2] >= self_margin + NEVER_GAP, "never", "")))
    why = np.where(pair_self & ~keep_m, why, "")
    why = np.where(drop_m, "dropped", why)
    _refuse_unkept_margins(world, stats, contact, (why == "") & ~keep_m, always, samples)
    kept = np.flatnonzero(why == "")
    allowed = tuple(((labels[a], labels[b]), w) for (a, b), w in adjacent) + tuple(
        (names[i], str(why[i])) for i in np.flatnonzero(why != ""))
    return CollisionWorld(m, chain, margin, self_margin, distmax, pairs[kept], tuple(names[i] for i in kept),
                          pair_self[kept], allowed, _mounted(world, robot, labels), world.qpos_adr, world.moves,
                          world.joint_ids, world.unbounded[kept])


def _prepared(scene, chain: Chain, margin: float, self_margin: float, distmax: float, keep=(), drop=()):
    """The world of every candidate pair, checked (placement, finite geoms), before any is left out, with the
    geom labels, the robot's bodies ``(nbody,)``, the robot's pairs MuJoCo filters out and the pairs ``keep`` and
    ``drop`` name ``(P,)``."""
    m = _model(scene)
    qpos_adr, joint_ids, moves = _arm(m, chain)
    labels = [_label(m, g) for g in range(m.ngeom)]
    _check_finite_sizes(m, labels)
    robot = _robot_bodies(m, joint_ids)
    pairs, adjacent = _candidate_pairs(m, moves, robot)
    names = [(labels[a], labels[b]) for a, b in pairs]
    pair_self = robot[m.geom_bodyid[pairs]].all(axis=1)
    keep_m, drop_m = (_match(m, names, pairs, spec, arg) for spec, arg in ((keep, "keep"), (drop, "drop")))
    world = CollisionWorld(m, chain, margin, self_margin, distmax, pairs, tuple(names), pair_self, (), (), qpos_adr,
                           moves, joint_ids, _unbounded(m, pairs))
    _check_placement(world)
    _check_finite_poses(world, labels)
    return world, labels, robot, adjacent, keep_m, drop_m


def _refuse_unkept_margins(world: CollisionWorld, stats: np.ndarray, contact: np.ndarray, checked: np.ndarray,
                           always: float, samples: int) -> None:
    """Refuse a margin that a ``checked`` pair keeps in none of the sampled postures (an obstacle pair) or misses
    in ``always`` of them (the robot's own), while out of contact more often (``~contact``): the margin, not the
    scene, would refuse every answer. ``stats (3, P)``: :func:`_sampled_stats`."""
    in_contact, within = stats[0], stats[1]
    near = np.where(world.pair_self, within >= always, within >= 1.0)
    for i in np.flatnonzero(checked & ~contact & near)[:1]:
        arg = "self_margin" if world.pair_self[i] else "margin"
        a, b = world.pair_names[i]
        raise InputError(f"{arg}: {world.pair_margin[i]} m is more than {a!r} and {b!r} keep in "
                         f"{1 - within[i]:.0%} of {samples} sampled postures (in contact in {in_contact[i]:.0%} of "
                         f"them): the world would refuse nearly every answer; use a smaller {arg}, or "
                         f"drop=[({a!r}, {b!r})] if that pair may come this close")


SELF_PAIRS_FILE = "self_pairs.json"  # the robot's own pairs' sampled statistics, beside a bundled model
_SELF_PAIRS_CACHE = "self_pairs"  # the folder of such statistics in the user's cache folder (_engine.cache_dir)


def _sampled_stats(world: CollisionWorld, q: np.ndarray) -> np.ndarray:
    """``(3, P)``: each pair's fraction of the postures ``q (S, n)`` in contact, the fraction within its margin,
    and its smallest distance (m; at most its margin + :data:`NEVER_GAP`), by MuJoCo's distance.

    The robot's own pairs' statistics follow from the robot and the postures alone, not from the obstacles: they
    are read from ``self_pairs.json`` beside a bundled model, or from the user's cache folder, where the same
    postures, robot and ``self_margin`` left them (:func:`_self_key`); only the obstacle pairs are then measured."""
    own = np.flatnonzero(world.pair_self)
    key = _self_key(world, own, q)
    names = [f"{a}|{b}" for a, b in world.pair_names]
    known = _trusted_self_stats(world, own, q, _stored_self_stats(key))
    if known is not None:
        rest = np.flatnonzero(~world.pair_self)
        stats = np.empty((3, len(names)))
        stats[:, own] = known
        stats[:, rest] = _measured(_subworld(world, rest), q)
        return stats
    stats = _measured(world, q)
    _store_self_stats(key, {names[i]: stats[:, i].tolist() for i in own})
    return stats


_RECHECK = 16  # stored statistics are checked against MuJoCo's distances at this many of their postures
_RECHECK_TOL = 1e-6  # m: distances within this of zero or of a margin prove nothing either way (rounding)


def _trusted_self_stats(world: CollisionWorld, own: np.ndarray, q: np.ndarray, known) -> np.ndarray | None:
    """Stored statistics ``known`` (label pair -> 3 numbers) of the robot's own pairs ``own`` as ``(3, len(own))``,
    if they are well formed (fractions of ``len(q)`` postures, within at least as often as in contact, a smallest
    distance that agrees with both) and agree with MuJoCo's distances at :data:`_RECHECK` of the postures ``q``
    they were taken at (a pair stored as always in contact that a posture shows clear is refused); else None: they
    are measured again, never trusted."""
    if not isinstance(known, dict):
        return None
    try:
        stats = np.array([known[f"{a}|{b}"] for a, b in (world.pair_names[i] for i in own)], dtype=float)
    except (KeyError, TypeError, ValueError):
        return None
    if stats.shape != (len(own), 3) or not np.isfinite(stats).all():
        return None
    contact, within, least = stats.T
    margin = world.pair_margin[own]
    counts = np.r_[contact, within] * len(q)
    if not (np.all((0 <= contact) & (contact <= within) & (within <= 1)) and np.allclose(counts, np.round(counts))
            and np.all((least < 0) == (contact > 0)) and np.all((least < margin) == (within > 0))
            and np.all(least <= margin + NEVER_GAP)):
        return None
    rows = np.unique(np.linspace(0, len(q) - 1, min(_RECHECK, len(q))).astype(int))
    D = _subworld(world, own).evaluate_trusted(q[rows], False, float(margin.max(initial=0.0)) + NEVER_GAP)[0]
    tol = _RECHECK_TOL
    lies = ((D < -tol) & (contact == 0)) | ((D > tol) & (contact == 1)) | ((D < margin - tol) & (within == 0)) | (
        (D > margin + tol) & (within == 1)) | (np.minimum(D, margin + NEVER_GAP) < least - tol)
    return None if lies.any() else stats.T


def _measured(world: CollisionWorld, q: np.ndarray) -> np.ndarray:
    """:func:`_sampled_stats`, every pair measured."""
    cap = world.pair_margin + NEVER_GAP
    D = world.evaluate_trusted(q, False, float(cap.max(initial=NEVER_GAP)))[0]
    return np.array([np.mean(D < 0, axis=0), np.mean(D < world.pair_margin, axis=0),
                     np.minimum(D.min(axis=0, initial=np.inf), cap)])


def _subworld(world: CollisionWorld, rows: np.ndarray) -> CollisionWorld:
    """``world`` holding only its pairs ``rows``."""
    return CollisionWorld(world.model, world.chain, world.margin, world.self_margin, world.distmax,
                          world.pairs[rows], tuple(world.pair_names[i] for i in rows), world.pair_self[rows], (), (),
                          world.qpos_adr, world.moves, world.joint_ids, world.unbounded[rows])


def _self_key(world: CollisionWorld, own: np.ndarray, q: np.ndarray) -> str:
    """SHA-256 of everything the robot's own pairs' statistics follow from: the postures, the chain, each robot
    geom as the screen and MuJoCo see it (its label, type, size, hull and pose in its joint's frame), the pairs
    and ``self_margin``."""
    import hashlib

    m, s = world.model, world.screen
    h = hashlib.sha256()
    for part in (q, world.chain.packed, world.chain.lower, world.chain.upper, [world.self_margin, NEVER_GAP]):
        h.update(np.ascontiguousarray(part, np.float64).tobytes())
    for g in sorted({int(g) for g in world.pairs[own].ravel()}):
        h.update(f"{_label(m, g)}|{int(m.geom_type[g])}|{world.last_joint[g]}".encode())
        hull = s.hull[s.hull_adr[g]:s.hull_adr[g] + s.hull_num[g]]
        for part in (m.geom_size[g], world.local_rows[g], hull, [s.hull_radius[g], s.hull_disk[g], s.rbound[g]]):
            h.update(np.ascontiguousarray(part, np.float64).tobytes())
    h.update("\n".join(f"{a}|{b}" for a, b in (world.pair_names[i] for i in own)).encode())
    return h.hexdigest()


def _self_pairs_files(key: str) -> list:
    """Where statistics stored under ``key`` may be: beside each bundled model, then in the user's cache folder."""
    from physai import _engine
    from physai.robots import _MODELS

    return [*sorted(_MODELS.glob(f"*/{SELF_PAIRS_FILE}")), _engine.cache_dir() / _SELF_PAIRS_CACHE / f"{key}.json"]


def _digest(key: str, entry) -> str:
    """The content hash kept beside an entry of the user's cache: SHA-256 of the key and the entry as JSON."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps([key, entry], sort_keys=True).encode()).hexdigest()


def _stored_self_stats(key: str) -> dict | None:
    """The statistics stored under ``key`` (:func:`_self_pairs_files`), else None. An entry of the user's cache
    counts only beside its content hash (:func:`_digest`); a cut or edited one is measured again."""
    import json

    *bundled, cached = _self_pairs_files(key)
    for path in [*bundled, cached]:
        try:
            record = json.loads(path.read_text())
            entry = record.get(key)
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if isinstance(entry, dict) and (path != cached or record.get("sha256") == _digest(key, entry)):
            return entry
    return None


def _store_self_stats(key: str, stats: dict) -> None:
    """Keep ``stats`` in the user's cache folder (written whole, then renamed), its content hash beside it; a folder
    that cannot be written only means they are measured again next time. Never inside the package."""
    import json

    path = _self_pairs_files(key)[-1]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _files.write_text(path, json.dumps({key: stats, "sha256": _digest(key, stats)}))
    except OSError:
        pass


def self_pairs_record(name: str) -> dict:
    """What ``self_pairs.json`` holds beside bundled robot ``name``: the statistics of its own pairs in a world
    built with the defaults (``samples``, ``rng``, ``self_margin``), under their key (:func:`_sampled_stats`)."""
    from physai.robots import load

    chain = load(name)
    world = _prepared(name, chain, 0.01, 0.0, 0.01 + DISTMAX_BEYOND_MARGIN)[0]
    own = np.flatnonzero(world.pair_self)
    q = chain.random_q(np.random.default_rng(0), SAMPLES)
    stats = _measured(_subworld(world, own), q)
    return {_self_key(world, own, q): {f"{a}|{b}": stats[:, k].tolist()
                                       for k, (a, b) in enumerate(world.pair_names[i] for i in own)}}


def write_stored_self_pairs() -> list:
    """Rewrite ``self_pairs.json`` beside every bundled model (after editing one; at development time only)."""
    import json

    from physai.robots import _MODELS, ROBOTS

    written = []
    for name, info in ROBOTS.items():
        if info.bundled:
            out = (_MODELS / info.bundled).with_name(SELF_PAIRS_FILE)
            _files.write_text(out, json.dumps(self_pairs_record(name), indent=0) + "\n")
            written.append(out)
    return written


def _unbounded(m: mujoco.MjModel, pairs: np.ndarray) -> np.ndarray:
    """Pairs with a plane or height field, whose ``geom_rbound`` does not bound them: always evaluated."""
    t = m.geom_type[pairs]
    return np.isin(t, [int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD)]).any(axis=1)


def _model(scene) -> mujoco.MjModel:
    if isinstance(scene, mujoco.MjModel):
        return scene
    if isinstance(scene, (str, os.PathLike)):
        from physai.robots import mujoco_model

        return mujoco_model(scene)
    raise InputError(f"scene: expected a mujoco.MjModel, a model file path or a robot name, got {type(scene).__name__}")


def _arm(m: mujoco.MjModel, chain: Chain) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    """The chain's joints' qpos addresses and ids in ``m``, and ``moves (nbody, n)``: which chain joint moves which
    body."""
    names = list(chain.joint_names)
    twice = sorted({j for j in names if names.count(j) > 1})
    if twice:
        raise InputError(f"chain {chain.name!r}: joint {twice[0]!r} is named twice")
    in_model = [m.joint(j).name for j in range(m.njnt)]
    missing = [j for j in names if j not in in_model]
    if missing:
        raise InputError(f"scene: it does not hold the chain's joint(s) {missing} (its joints: {in_model})")
    ids = [in_model.index(j) for j in names]
    bad = [names[k] for k, j in enumerate(ids) if int(m.jnt_type[j]) not in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                                                              int(mujoco.mjtJoint.mjJNT_SLIDE))]
    if bad:
        raise InputError(f"scene: joint(s) {bad} are not hinges or slides, unlike the chain's")
    moves = np.zeros((m.nbody, chain.n), bool)
    for b in range(1, m.nbody):
        moves[b] = moves[m.body_parentid[b]]
        for k, j in enumerate(ids):
            moves[b, k] |= m.jnt_bodyid[j] == b
    return np.array([m.jnt_qposadr[j] for j in ids]), tuple(ids), moves


def _candidate_pairs(m: mujoco.MjModel, moves: np.ndarray, robot: np.ndarray):
    """Geom pairs ``(P, 2)`` whose distance changes with the chain and which MuJoCo's collision filter lets through
    (``contype``/``conaffinity``, ``<exclude>``, parent-child), plus the explicit ``<pair>`` elements; and the
    robot's pairs the filter leaves out, as ``((g1, g2), "adjacent" or "excluded")``."""
    body = m.geom_bodyid
    g1, g2 = np.triu_indices(m.ngeom, 1)
    moved = moves[body[g1]] != moves[body[g2]]
    relative = moved.any(axis=1)  # two bodies moved by the same chain joints keep their distance
    affinity = ((m.geom_contype[g1] & m.geom_conaffinity[g2]) | (m.geom_contype[g2] & m.geom_conaffinity[g1])) != 0
    adjacent, excluded = _filtered(m, body[g1], body[g2])
    ok = relative & affinity & ~adjacent & ~excluded
    explicit = {(min(a, b), max(a, b)) for a, b in zip(m.pair_geom1, m.pair_geom2)}
    chosen = {(int(a), int(b)) for a, b in zip(g1[ok], g2[ok])}
    chosen |= {p for p in explicit if (moves[body[p[0]]] != moves[body[p[1]]]).any()}
    out = relative & affinity & robot[body[g1]] & robot[body[g2]] & (adjacent | excluded)
    left = [((int(a), int(b)), "adjacent" if adj else "excluded")
            for a, b, adj in zip(g1[out], g2[out], adjacent[out]) if (int(a), int(b)) not in chosen]
    return np.array(sorted(chosen), dtype=np.int64).reshape(-1, 2), left


def _filtered(m: mujoco.MjModel, b1: np.ndarray, b2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's body-pair filter, ``(adjacent, excluded)``: the same weld group or (unless disabled) a body and its
    parent's weld group, the world excepted; an ``<exclude>``d pair."""
    w1, w2 = m.body_weldid[b1], m.body_weldid[b2]
    p1, p2 = m.body_weldid[m.body_parentid[w1]], m.body_weldid[m.body_parentid[w2]]
    adjacent = w1 == w2
    if not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT:
        adjacent |= (w1 != 0) & (w2 != 0) & ((w1 == p2) | (w2 == p1))
    sig = set(m.exclude_signature.tolist())
    lo, hi = np.minimum(b1, b2), np.maximum(b1, b2)
    return adjacent, np.array([(int(a) << 16) + int(b) in sig for a, b in zip(lo, hi)], bool)


def _robot_bodies(m: mujoco.MjModel, joint_ids: tuple[int, ...]) -> np.ndarray:
    """``(nbody,)`` bool: the robot, the body trees below the world that hold the chain's joints (its fixed base
    included); every other body, and the world's own geoms, are obstacles."""
    root = np.arange(m.nbody)
    while (m.body_parentid[root] != 0).any():
        root = np.where(m.body_parentid[root] != 0, m.body_parentid[root], root)
    robot = np.isin(root, root[m.jnt_bodyid[list(joint_ids)]])
    robot[0] = False
    return robot


def _mounted(world: CollisionWorld, robot: np.ndarray, labels: list[str]) -> tuple[tuple[str, str], ...]:
    """``(body, obstacle)``: the robot's fixed bodies (no chain joint above them) and the obstacles within ``margin``
    of them, the surfaces they rest on; they never move against each other, so no pair holds them."""
    m, d = world.model, world.posed(world.chain.q_middle)
    body = m.geom_bodyid
    fixed = np.flatnonzero(robot[body] & ~world.moves[body].any(axis=1))
    obstacles = np.flatnonzero(~robot[body])
    out = []
    for a in fixed.tolist():
        for b in obstacles.tolist():
            if (m.geom_contype[a] & m.geom_conaffinity[b]) | (m.geom_contype[b] & m.geom_conaffinity[a]) and \
                    mujoco.mj_geomDistance(m, d, a, b, world.margin + _SAFE, None) <= world.margin:
                out.append((m.body(int(body[a])).name or labels[a], labels[b]))
    return tuple(dict.fromkeys(out))


def _check_finite_sizes(m: mujoco.MjModel, labels: list[str]) -> None:
    """Refuse a geom whose size, placement or bounds are NaN or infinite, naming it (MuJoCo compiles it, and its
    distances would be NaN: a NaN distance is never below the margin, so the geom would be invisible)."""
    for name, values in (("size", m.geom_size), ("pos", m.geom_pos), ("quat", m.geom_quat),
                         ("bounding radius", m.geom_rbound), ("bounding box", m.geom_aabb)):
        bad = ~np.isfinite(values.reshape(m.ngeom, -1)).all(axis=1)
        if bad.any():
            g = int(np.argmax(bad))
            raise InputError(f"scene: geom {labels[g]!r} has a {name} that is not finite "
                             f"({values[g].tolist()}); fix it in the scene")


def _check_finite_poses(world: CollisionWorld, labels: list[str]) -> None:
    """Refuse a geom placed at a NaN or infinite position (a body's ``pos`` or ``quat``), naming it."""
    d = world.posed(world.chain.q_middle)
    bad = ~(np.isfinite(d.geom_xpos).all(axis=1) & np.isfinite(d.geom_xmat).all(axis=1))
    if bad.any():
        g = int(np.argmax(bad))
        raise InputError(f"scene: geom {labels[g]!r} is placed at a position that is not finite "
                         f"({d.geom_xpos[g].tolist()}); fix its body's pos or quat in the scene")


def _label(m: mujoco.MjModel, g: int) -> str:
    if m.geom(g).name:
        return m.geom(g).name
    b = int(m.geom_bodyid[g])
    return f"{m.body(b).name or f'body{b}'}#{g - int(m.body_geomadr[b])}"


def _match(m: mujoco.MjModel, names, pairs: np.ndarray, spec, arg: str) -> np.ndarray:
    """Which pairs ``spec`` (pairs of labels: geom name, ``body#k`` label or body name) names, either way round."""
    if isinstance(spec, str) or not isinstance(spec, Sequence):
        raise InputError(f"{arg}: expected a sequence of (name, name) pairs, got {type(spec).__name__} {spec!r}")
    # each pair's two sides, as the set of names each answers to: its label and its body's name
    sides = [[{names[i][k], m.body(int(m.geom_bodyid[g])).name} for i, g in enumerate(pairs[:, k])] for k in (0, 1)]
    hit = np.zeros(len(names), bool)
    for entry in spec:
        if isinstance(entry, str) or not isinstance(entry, Sequence) or len(entry) != 2:
            raise InputError(f"{arg}: expected (name, name) pairs, got {entry!r}")
        a, b = entry
        this = np.array([(a in s1 and b in s2) or (b in s1 and a in s2) for s1, s2 in zip(*sides)], bool)
        if not this.any():
            raise InputError(f"{arg}: no candidate pair matches {tuple(entry)!r}; pairs: {list(names)}")
        hit |= this
    return hit


def _check_placement(world: CollisionWorld) -> None:
    """The scene must place the chain's joints where the chain does: its axes and anchors at a few ``q`` match the
    chain's forward kinematics (a chain of another model, or the arm moved in the scene, would give distances of a
    different arm)."""
    chain = world.chain
    ids = world.joint_ids
    for q in chain.random_q(np.random.default_rng(1), _GEOM_CHECK_Q):
        d = world.posed(q)
        axes, anchors, _ = fk(chain, q)
        err_anchor = np.abs(np.cross(axes, d.xanchor[list(ids)] - anchors)).max()  # anchors lie on the same axis
        err_axis = np.abs(d.xaxis[list(ids)] - axes).max()
        if max(err_anchor, err_axis) > _PLACEMENT_TOL:
            raise InputError(f"scene: the chain {chain.name!r} does not match the arm in the scene (joint axes or "
                             f"anchors differ by {max(err_anchor, err_axis):.3g}); build the chain from the scene: "
                             "physai.load(scene_file, tool=...) or chain_from_mujoco(model, ...)")


# ---- GJK distance bracket of two convex hulls (Gilbert, Johnson and Keerthi 1988; Ericson 2005, ch. 9) -----------

GJK_CONVERGED = 1e-9  # m: a bracket this narrow stops the iteration
GJK_TOUCH = 1e-12  # m: a Minkowski point this close to the origin: the hulls touch
GJK_FLAT = 1e-10  # a tetrahedron whose volume over its edges' product is below this is treated as flat
_TETRA_FACES = ((0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 3, 2, 0))  # a face's three corners, then the fourth


def gjk_bracket(A_world, ra: float, B_world, rb: float, threshold: float, band: float, max_iter: int,
                disk_a=None, disk_b=None) -> tuple[float, float]:
    """Bounds ``(lo, hi)`` (m) of the signed distance between the convex hull of ``A_world (na, 3)`` inflated by the
    radius ``ra >= 0`` and the hull of ``B_world (nb, 3)`` inflated by ``rb`` (points in the world frame, m). A hull
    may be swept by a disk, ``disk_a = (normal (3,), radius)`` (a cylinder: its axis's two ends, and its radius).

    GJK on the Minkowski difference ``A - B``: ``hi = |v| - ra - rb`` with ``v`` its simplex's point nearest the
    origin (a convex combination of support points, so a point of the difference: an upper bound); ``lo`` the
    best ``v.w / |v| - ra - rb`` over the iterations, ``w`` the support point along ``-v`` (a plane separating the
    origin from the difference: a lower bound, whatever the simplex did), ``-inf`` until such a plane separates
    them. Hulls found overlapping give ``(-inf, -ra - rb)`` (no penetration depth is computed). Stops once the
    verdict against ``threshold`` is decided (``lo >= threshold + band`` or ``hi < threshold - band``), the
    bracket is narrower than :data:`GJK_CONVERGED`, no progress is made, or after ``max_iter`` iterations.

    Examples
    --------
    A box of half-size 0.1 m (its eight corners) and a ball of radius 0.05 m centred 0.25 m out along its x axis:

    >>> from physai.collision import gjk_bracket
    >>> corners = [[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)]
    >>> lo, hi = gjk_bracket(corners, 0.0, [[0.25, 0.05, 0.0]], 0.05, threshold=0.0, band=1.0, max_iter=50)
    >>> print(f"{lo:.6f} {hi:.6f}")
    0.100000 0.100000

    Against a 10 mm margin it stops as soon as the bracket clears it:

    >>> lo, hi = gjk_bracket(corners, 0.0, [[0.25, 0.05, 0.0]], 0.05, threshold=0.01, band=0.0, max_iter=50)
    >>> bool(lo >= 0.01), bool(hi - lo > 1e-3)
    (True, True)
    """
    A, B = np.asarray(A_world, float), np.asarray(B_world, float)
    r = ra + rb
    simplex = [A[0] - B[0]]
    v, lo = simplex[0], -np.inf
    hi = _gjk_length(v) - r
    for _ in range(max_iter):
        nv = _gjk_length(v)
        if nv < GJK_TOUCH:
            break
        w = _gjk_support(A, -v, disk_a) - _gjk_support(B, v, disk_b)
        gap = _gjk_dot(v, w) / nv
        if gap > 0.0:  # the plane through w normal to v separates the origin from A - B
            lo = max(lo, gap - r)
        if _gjk_decided(lo, hi, threshold, band) or any(np.array_equal(w, s) for s in simplex):
            break
        simplex, v = _gjk_nearest(simplex + [w])
        if v is None:
            return -np.inf, -r
        hi = min(hi, _gjk_length(v) - r)
        if _gjk_length(v) >= nv or _gjk_decided(lo, hi, threshold, band):
            break
    return lo, hi


def _gjk_length(v: np.ndarray) -> float:
    return float(np.sqrt(_gjk_dot(v, v)))


def _gjk_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` of two 3-vectors, summed left to right as the compiled twin sums it. Not ``a @ b``: NumPy hands that
    to its BLAS, whose kernel (picked per CPU: FMA, another order on AVX-512) rounds differently, and GJK's path
    (which support point, which simplex) follows the last bit of these sums."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _gjk_support(P: np.ndarray, d: np.ndarray, disk=None) -> np.ndarray:
    """The point of ``P (n, 3)`` (swept by ``disk = (normal, radius)``, if given) farthest along ``d (3,)`` (the
    first of equals)."""
    # GJK meets ties as a rule (v comes out normal to a hull's edge): summed in the compiled twin's order, the
    # products round alike there, so both pick the same point
    p = P[np.argmax(P[:, 0] * d[0] + P[:, 1] * d[1] + P[:, 2] * d[2])]
    if disk is None:
        return p
    normal, radius = disk
    across = d - _gjk_dot(d, normal) * normal  # d's part in the disk's plane: the rim point it reaches
    length = _gjk_length(across)
    return p + radius * across / length if length > 0.0 else p


def _gjk_decided(lo: float, hi: float, threshold: float, band: float) -> bool:
    return lo >= threshold + band or hi < threshold - band or hi - lo <= GJK_CONVERGED


def _gjk_nearest(simplex: list) -> tuple[list, np.ndarray | None]:
    """The simplex's point nearest the origin ``v (3,)`` and the corners it needs (those of nonzero weight);
    ``v = None`` for a tetrahedron holding the origin."""
    weights = (_gjk_segment_weights(*simplex) if len(simplex) == 2 else _gjk_triangle_weights(*simplex)
               if len(simplex) == 3 else _gjk_tetrahedron_weights(simplex))
    if weights is None:
        return simplex, None
    kept = [(lam, s) for lam, s in zip(weights, simplex) if lam > 0.0]
    return [s for _, s in kept], sum(lam * s for lam, s in kept)


def _gjk_segment_weights(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Weights of ``a, b`` of the point of segment ``a b`` nearest the origin."""
    ab = b - a
    den = _gjk_dot(ab, ab)
    t = min(max(-_gjk_dot(a, ab) / den, 0.0), 1.0) if den > 0.0 else 1.0
    return 1.0 - t, t


def _gjk_ratio(num: float, den: float) -> float:
    """``num / den`` for a parameter in [0, 1]; 0 for a degenerate (zero-length) edge."""
    return num / den if den > 0.0 else 0.0


def _gjk_triangle_weights(a, b, c) -> tuple[float, float, float]:
    """Weights of ``a, b, c`` of the point of triangle ``a b c`` nearest the origin, by its Voronoi regions
    (Ericson 2005, 5.1.5); a degenerate triangle gives its nearest edge."""
    ab, ac = b - a, c - a
    d1, d2 = -_gjk_dot(ab, a), -_gjk_dot(ac, a)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    d3, d4 = -_gjk_dot(ab, b), -_gjk_dot(ac, b)
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = _gjk_ratio(d1, d1 - d3)
        return 1.0 - t, t, 0.0
    d5, d6 = -_gjk_dot(ab, c), -_gjk_dot(ac, c)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = _gjk_ratio(d2, d2 - d6)
        return 1.0 - t, 0.0, t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = _gjk_ratio(d4 - d3, (d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - t, t
    den = va + vb + vc
    if den > 0.0:
        return va / den, vb / den, vc / den
    return _gjk_nearest_edge(a, b, c)


def _gjk_nearest_edge(a, b, c) -> tuple[float, float, float]:
    """Weights of the point nearest the origin on the edges of a flat triangle ``a b c``."""
    s1, t1 = _gjk_segment_weights(a, b)
    s2, t2 = _gjk_segment_weights(a, c)
    s3, t3 = _gjk_segment_weights(b, c)
    best = min(((s1, t1, 0.0), (s2, 0.0, t2), (0.0, s3, t3)),
               key=lambda w: _gjk_length(w[0] * a + w[1] * b + w[2] * c))
    return best


def _gjk_tetrahedron_weights(simplex: list) -> tuple[float, ...] | None:
    """Weights of the four corners of the point of tetrahedron ``simplex`` nearest the origin, from the faces the
    origin lies outside of (Ericson 2005, 5.1.6); ``None`` when it lies inside none (the origin is inside). A flat
    tetrahedron is never said to hold the origin: all its faces are searched."""
    a, b, c, d = simplex
    volume = _gjk_dot(np.cross(b - a, c - a), d - a)
    flat = abs(volume) <= GJK_FLAT * _gjk_length(b - a) * _gjk_length(c - a) * _gjk_length(d - a)
    best, weights = np.inf, None
    for i, j, k, o in _TETRA_FACES:
        p, q, s = simplex[i], simplex[j], simplex[k]
        n = np.cross(q - p, s - p)
        if flat or -_gjk_dot(n, p) * _gjk_dot(n, simplex[o] - p) < 0.0:
            w = _gjk_triangle_weights(p, q, s)
            x = w[0] * p + w[1] * q + w[2] * s
            if _gjk_dot(x, x) < best:
                best, weights = _gjk_dot(x, x), [0.0] * 4
                weights[i], weights[j], weights[k] = w
    return None if weights is None else tuple(weights)
