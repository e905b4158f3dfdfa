"""Signed distances between an arm and its surroundings, through MuJoCo's own geometry.

A :class:`CollisionWorld` is built once from a MuJoCo scene holding the arm (the chain's joints, by name) and
whatever surrounds it (:func:`collision_world`). It pairs every geom the chain moves with every geom it does not
move (the table, a shelf, the robot's own base) and with every other arm geom that moves relative to it
(self-collision), filtered as MuJoCo's collision detection filters them: ``contype``/``conaffinity``, ``<exclude>``
and the parent-child rule (plus every explicit ``<pair>``). Pairs that touch in (nearly) every configuration (a base
bolted to its table, overlapping fitted geoms) are left out and listed in ``world.dropped``; ``keep=`` and ``drop=``
override the choice.

Distances are MuJoCo's ``mj_geomDistance`` (convex hulls for meshes), signed (negative: penetration depth), capped
at ``world.distmax``: a pair farther apart reports ``distmax``. A bounding-sphere test (``geom_rbound``) skips the
call for pairs whose spheres are farther apart than ``distmax``; the spheres enclose the geoms, so the skip never
hides a closer pair. Gradients with respect to ``q`` are the contact-normal Jacobian ``n^T (J_2(p_2) - J_1(p_1))``
with ``n`` the unit normal from geom 1 to geom 2 and ``p_1, p_2`` the nearest (or deepest) points
(``mj_geomDistance``'s ``fromto``), the linear point Jacobians built from MuJoCo's joint axes and anchors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np

from physai._validate import count, finite_array, generator, nonnegative, positive, real
from physai.errors import InputError
from physai.kinematics import Chain, fk

DISTMAX_BEYOND_MARGIN = 0.05  # m: distances are resolved up to margin + this; farther pairs report the cap
ALWAYS_TOUCHING = 0.95  # a pair within the margin in this fraction of sampled configurations is dropped
SAMPLES = 100  # configurations sampled to find such pairs
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
    for ob in obstacles:
        if not isinstance(ob, Obstacle):
            raise InputError(f"obstacles: expected physai.collision.Obstacle entries, got {type(ob).__name__}")
        if ob.type not in _OBSTACLE_TYPES:
            raise InputError(f"obstacle {ob.name!r}: type must be one of {sorted(_OBSTACLE_TYPES)}, got {ob.type!r}")
        size = finite_array(ob.size, f"obstacle {ob.name!r} size")
        if size.ndim != 1 or not 1 <= len(size) <= 3 or np.any(size <= 0):
            raise InputError(f"obstacle {ob.name!r}: size must hold 1-3 lengths > 0 (m), got {ob.size}")
        spec.worldbody.add_geom(name=ob.name, type=_OBSTACLE_TYPES[ob.type], size=np.resize(size, 3),
                                pos=finite_array(ob.pos, f"obstacle {ob.name!r} pos", (3,)),
                                quat=finite_array(ob.quat, f"obstacle {ob.name!r} quat", (4,)),
                                contype=1, conaffinity=1, rgba=[0.55, 0.45, 0.35, 1])
    with mujoco_warnings(os.path.basename(path)):
        try:
            return spec.compile()
        except ValueError as exc:  # e.g. an obstacle named like a geom of the robot
            raise InputError(f"obstacles: the scene does not compile in MuJoCo: {exc}") from None


@dataclass(frozen=True, eq=False)
class CollisionWorld:
    """The pairs of one scene and the arm that moves in it; build with :func:`collision_world`.

    ``pairs: (P, 2)`` geom ids, ``pair_names`` their labels (a geom's name, else ``body#k``, its ``k``-th geom);
    ``dropped``: the labels of pairs left out as touching in nearly every configuration (or by ``drop=``);
    ``margin`` (m) the clearance every pair must keep; ``distmax`` (m) the distance up to which pairs are resolved.

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
    """

    model: mujoco.MjModel = field(repr=False)
    chain: Chain
    margin: float
    distmax: float
    pairs: np.ndarray
    pair_names: tuple[tuple[str, str], ...]
    dropped: tuple[tuple[str, str], ...]
    qpos_adr: np.ndarray = field(repr=False)  # the chain's joints in this model
    moves: np.ndarray = field(repr=False)  # (nbody, n) bool: chain joint j moves body b
    joint_ids: tuple[int, ...] = field(repr=False)  # the chain's joints' ids in this model
    unbounded: np.ndarray = field(repr=False)  # (P,) pairs with a plane or height field: no bounding sphere
    hinge: np.ndarray = field(init=False, repr=False)  # (n,) bool: the chain's joint is a hinge (else a slide)
    bounds: _Bounds = field(init=False, repr=False)
    pair_list: list = field(init=False, repr=False)  # pairs as Python ints, for the per-pair MuJoCo calls
    _local: threading.local = field(default_factory=threading.local, repr=False)

    @property
    def arm_geoms(self) -> np.ndarray:
        """Ids of the geoms the chain moves."""
        return np.flatnonzero(self.moves[self.model.geom_bodyid].any(axis=1))

    def __post_init__(self):
        object.__setattr__(self, "hinge", np.array([t == "hinge" for t in self.chain.joint_types]))
        object.__setattr__(self, "bounds", _Bounds.of(self.model, self.pairs))
        object.__setattr__(self, "pair_list", [tuple(p) for p in self.pairs.tolist()])

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
        return self._evaluate(q, gradients=False)[0]

    def distances_and_gradients(self, q) -> tuple[np.ndarray, np.ndarray]:
        """``(d (..., P), G (..., P, n))``: signed distances (m) and ``G = dd/dq`` (m/rad, m/m for slides);
        a pair at ``distmax`` (resolved farther apart) has a zero gradient."""
        return self._evaluate(q, gradients=True)

    def clear(self, q, margin: float | None = None) -> np.ndarray:
        """Whether every pair keeps ``margin`` (default the world's), ``q: (..., n)`` -> bool ``(...)``.

        Distances are resolved only up to ``margin`` here (MuJoCo's ``distmax``): pairs whose bounds are farther
        apart are not evaluated at all, which is what makes a verdict cheaper than :meth:`distances`."""
        m = self.margin if margin is None else nonnegative(margin, "margin")
        return np.all(self._evaluate(q, gradients=False, cap=m)[0] >= m, axis=-1)

    def closest(self, q) -> tuple[float, tuple[str, str]]:
        """The smallest signed distance (m) at one ``q: (n,)`` and the labels of that pair."""
        d = self.distances(finite_array(q, "q", (self.chain.n,)).reshape(self.chain.n))
        i = int(np.argmin(d)) if len(d) else 0
        return (float(d[i]), self.pair_names[i]) if len(d) else (float(self.distmax), ("", ""))

    def _evaluate(self, q, gradients: bool, cap: float | None = None):
        """Distances capped at ``cap`` (default ``distmax``), with gradients if asked, for ``q: (..., n)``.

        All configurations are posed first and their pairs' lower bounds computed together; MuJoCo's distance is
        called only for pairs whose bound is below ``cap``, on the configurations that have such pairs."""
        q = self.chain.check_q(q)
        flat = q.reshape(-1, self.chain.n)
        P, cap = len(self.pairs), self.distmax if cap is None else cap
        D = np.full((len(flat), P), cap)
        G = np.zeros((len(flat), P, self.chain.n)) if gradients else None
        near = self._near(flat, cap)
        for k in np.flatnonzero(near.any(axis=1)):
            self._one(flat[k], np.flatnonzero(near[k]), D[k], None if G is None else G[k], cap)
        D = D.reshape(q.shape[:-1] + (P,))
        return D, (None if G is None else G.reshape(q.shape[:-1] + (P, self.chain.n)))

    def _near(self, flat: np.ndarray, cap: float) -> np.ndarray:
        """``(K, P)`` bool: the pairs whose lower bound at each configuration is below ``cap`` (or unbounded)."""
        d = self._data()
        xpos = np.empty((len(flat), self.model.ngeom, 3))
        xmat = np.empty((len(flat), self.model.ngeom, 9))
        for k, qk in enumerate(flat):
            d.qpos[self.qpos_adr] = qk
            mujoco.mj_kinematics(self.model, d)
            xpos[k], xmat[k] = d.geom_xpos, d.geom_xmat
        return self.bounds.near(xpos, xmat, cap) | self.unbounded

    def _one(self, q: np.ndarray, near: np.ndarray, D: np.ndarray, G: np.ndarray | None, cap: float) -> None:
        """Fill ``D (P,)`` (and ``G (P, n)``) at one ``q`` for the pairs ``near``."""
        m, d = self.model, self.posed(q)
        fromto = np.zeros((len(near), 6))
        pairs, geom_distance = self.pair_list, mujoco.mj_geomDistance
        D[near] = [geom_distance(m, d, *pairs[i], cap, fromto[k]) for k, i in enumerate(near.tolist())]
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


@dataclass(frozen=True)
class _Bounds:
    """The constants of the bounding test (:meth:`near`) for a world's pairs: radii, and the box sides (box geom,
    the other geom, its radius) for pairs with a box on either side (a pair of two boxes has two sides)."""

    g1: np.ndarray
    g2: np.ndarray
    r: np.ndarray  # (P,) the sum of both bounding radii
    rows: np.ndarray  # (K,) pair of each box side
    box: np.ndarray  # (K,) its box geom
    other: np.ndarray  # (K,) the other geom
    r_other: np.ndarray  # (K,) the other geom's radius
    half: np.ndarray  # (K, 3) the box's half-sizes

    @classmethod
    def of(cls, m: mujoco.MjModel, pairs: np.ndarray) -> _Bounds:
        g1, g2 = pairs[:, 0], pairs[:, 1]
        is_box = m.geom_type[pairs] == int(mujoco.mjtGeom.mjGEOM_BOX)
        rows = np.concatenate([np.flatnonzero(is_box[:, 0]), np.flatnonzero(is_box[:, 1])])
        box = np.concatenate([g1[is_box[:, 0]], g2[is_box[:, 1]]])
        other = np.concatenate([g2[is_box[:, 0]], g1[is_box[:, 1]]])
        return cls(g1, g2, m.geom_rbound[g1] + m.geom_rbound[g2], rows, box, other, m.geom_rbound[other],
                   m.geom_size[box])

    def near(self, xpos: np.ndarray, xmat: np.ndarray, cap: float) -> np.ndarray:
        """Which pairs may be closer than ``cap`` (m), from geom poses ``xpos (K, ngeom, 3)``, ``xmat (K, ngeom, 9)``
        -> bool ``(K, P)``; a pair left out is certainly not. Every point of a geom lies within its ``geom_rbound``
        of its centre, so a pair's distance is at least the centres' distance less both radii; where that leaves
        the pair in, the distance from one centre to the other geom less one radius, exact for a box (a table, a
        shelf), may still rule it out."""
        dc = xpos[:, self.g1] - xpos[:, self.g2]
        near = np.sqrt(np.einsum("bki,bki->bk", dc, dc)) - self.r < cap
        bi, ki = np.nonzero(near[:, self.rows])
        if len(bi):
            box, other = self.box[ki], self.other[ki]
            R = xmat[bi, box].reshape(-1, 3, 3)
            local = np.einsum("kji,kj->ki", R, xpos[bi, other] - xpos[bi, box])
            out = np.maximum(np.abs(local) - self.half[ki], 0.0)
            far = np.sqrt(np.einsum("ki,ki->k", out, out)) - self.r_other[ki] >= cap
            near[bi[far], self.rows[ki[far]]] = False
        return near


def collision_world(scene, chain: Chain, margin: float = 0.01, *, distmax: float | None = None, keep=(), drop=(),
                    samples: int = SAMPLES, always: float = ALWAYS_TOUCHING,
                    rng: np.random.Generator | None = None) -> CollisionWorld:
    """The :class:`CollisionWorld` of ``chain`` moving in ``scene``.

    ``scene``: a ``mujoco.MjModel``, an MJCF/URDF path or a robot name (see :func:`scene` to add obstacles to one),
    holding the chain's joints by name, placed where the chain places them (checked). ``margin`` (m, >= 0): the
    clearance every pair must keep. ``distmax`` (m, > margin; default ``margin + 0.05``): distances are resolved up
    to this. Pairs within ``margin`` in at least ``always`` of ``samples`` configurations drawn uniformly inside
    the joint limits (``rng``, default ``default_rng(0)``) are dropped; ``keep`` (never dropped) and ``drop``
    (dropped too) are pairs of labels, each a geom name, a geom label ``body#k`` or a body name.

    Examples
    --------
    The SO-101 on a table, every pair named; two of its own pairs overlap in nearly every posture and are left out:

    >>> from physai import collision
    >>> table = collision.Obstacle("table", "box", (0.4, 0.4, 0.02), (0.0, 0.0, -0.02))
    >>> world = physai.collision_world(collision.scene("so101", [table]), physai.load("so101"), margin=0.01)
    >>> len(world.pairs), world.pair_names[0]
    (188, ('table', 'shoulder#0'))
    >>> world.dropped
    (('lower_arm#0', 'gripper#6'), ('lower_arm#1', 'gripper#6'))
    """
    if not isinstance(chain, Chain):
        raise InputError(f"chain: expected a physai Chain, got {type(chain).__name__}")
    margin = nonnegative(margin, "margin")
    distmax = margin + DISTMAX_BEYOND_MARGIN if distmax is None else positive(distmax, "distmax")
    if distmax <= margin:
        raise InputError(f"distmax: expected a distance beyond margin = {margin} m, got {distmax}")
    m = _model(scene)
    qpos_adr, joint_ids, moves = _arm(m, chain)
    pairs = _candidate_pairs(m, moves)
    labels = [_label(m, g) for g in range(m.ngeom)]
    names = [(labels[a], labels[b]) for a, b in pairs]
    keep_m, drop_m = (_match(m, names, pairs, spec, arg) for spec, arg in ((keep, "keep"), (drop, "drop")))
    world = CollisionWorld(m, chain, margin, distmax, pairs, tuple(names), (), qpos_adr, moves, joint_ids,
                           _unbounded(m, pairs))
    _check_placement(world)
    rng = np.random.default_rng(0) if rng is None else generator(rng)
    samples, always = count(samples, "samples", 1, 100_000), real(always, "always")
    if not 0 < always <= 1:
        raise InputError(f"always: expected a fraction in (0, 1], got {always}")
    touching = np.mean(world.distances(chain.random_q(rng, samples)) < margin, axis=0) >= always
    out = (touching & ~keep_m) | drop_m
    kept = np.flatnonzero(~out)
    return CollisionWorld(m, chain, margin, distmax, pairs[kept], tuple(names[i] for i in kept),
                          tuple(names[i] for i in np.flatnonzero(out)), qpos_adr, moves, joint_ids,
                          world.unbounded[kept])


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


def _candidate_pairs(m: mujoco.MjModel, moves: np.ndarray) -> np.ndarray:
    """Geom pairs ``(P, 2)`` whose distance changes with the chain and which MuJoCo's collision filter lets through
    (``contype``/``conaffinity``, ``<exclude>``, parent-child), plus the explicit ``<pair>`` elements."""
    body = m.geom_bodyid
    g1, g2 = np.triu_indices(m.ngeom, 1)
    moved = moves[body[g1]] != moves[body[g2]]
    relative = moved.any(axis=1)  # two bodies moved by the same chain joints keep their distance
    affinity = ((m.geom_contype[g1] & m.geom_conaffinity[g2]) | (m.geom_contype[g2] & m.geom_conaffinity[g1])) != 0
    ok = relative & affinity & ~_filtered(m, body[g1], body[g2])
    explicit = {(min(a, b), max(a, b)) for a, b in zip(m.pair_geom1, m.pair_geom2)}
    chosen = {(int(a), int(b)) for a, b in zip(g1[ok], g2[ok])}
    chosen |= {p for p in explicit if (moves[body[p[0]]] != moves[body[p[1]]]).any()}
    return np.array(sorted(chosen), dtype=np.int64).reshape(-1, 2)


def _filtered(m: mujoco.MjModel, b1: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """MuJoCo's body-pair filter: the same weld group, an ``<exclude>``d pair, or (unless disabled) a body and its
    parent's weld group, the world excepted."""
    w1, w2 = m.body_weldid[b1], m.body_weldid[b2]
    p1, p2 = m.body_weldid[m.body_parentid[w1]], m.body_weldid[m.body_parentid[w2]]
    out = w1 == w2
    if not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT:
        out |= (w1 != 0) & (w2 != 0) & ((w1 == p2) | (w2 == p1))
    sig = set(m.exclude_signature.tolist())
    lo, hi = np.minimum(b1, b2), np.maximum(b1, b2)
    out |= np.array([(int(a) << 16) + int(b) in sig for a, b in zip(lo, hi)], bool)
    return out


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


# ---- collision-aware rate control ---------------------------------------------------------------------------------

DAMPER_GAIN = 0.3  # fraction of the gap above the margin a close pair may close in one step


def avoidance_step(world: CollisionWorld, q, J_task, dq, *, gain: float = DAMPER_GAIN, lam: float = 1e-3,
                   influence: float | None = None) -> tuple[np.ndarray, float]:
    """A joint step ``dq: (n,)`` made collision-aware at ``q: (n,)``: ``(dq_safe (n,), scale)``.

    Each pair closer than ``influence`` (m, default the world's ``distmax``) gets a velocity damper (Faverjon and
    Tournassoud 1987) in step form: ``G_i dq >= -gain (d_i - margin)``, so a pair closes at most ``gain`` of its gap
    above the margin per step and, to first order, never crosses it. Violated rows are met in the null space of the
    task Jacobian ``J_task: (m, n)`` (the task keeps priority, Maciejewski and Klein 1985):
    ``dq += N (G_v N)^#_lam (b_v - G_v dq)``, ``N = I - J^+ J``, ``lam`` the damping of that inverse (m). Where the
    null space cannot meet them (no redundancy left), the whole step is scaled down by ``scale`` in ``[0, 1]`` until
    every row holds: the tool slows or stops rather than touch.
    """
    q = world.chain.check_q(q)
    J_task = finite_array(J_task, "J_task", (world.chain.n,))
    dq = finite_array(dq, "dq", (world.chain.n,))
    gain, lam = real(gain, "gain"), nonnegative(lam, "lam")
    if not 0 < gain <= 1:
        raise InputError(f"gain: expected a fraction in (0, 1], got {gain}")
    influence = world.distmax if influence is None else positive(influence, "influence")
    d, G = world.distances_and_gradients(q)
    close = d < influence
    G, b = G[close], -gain * (d[close] - world.margin)
    violated = G @ dq < b
    if violated.any():
        from physai.nullspace import pinv

        N = np.eye(len(dq)) - pinv(J_task) @ J_task
        Gv = G[violated]
        dq = dq + N @ pinv(Gv @ N, lam=lam) @ (b[violated] - Gv @ dq)
    rate = G @ dq
    # rows still short of their bound (b <= 0 while the pair keeps its margin): the largest t with t G dq >= b
    short = rate < b
    scale = float(np.min(np.clip(b[short] / rate[short], 0.0, 1.0))) if short.any() else 1.0
    return dq * scale, scale
