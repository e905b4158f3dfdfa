"""Building a :class:`~physai.collision._world.CollisionWorld` (private to :mod:`physai.collision`): the scene's
pairs, filtered as MuJoCo filters them, the robot's own pairs classified by sampling, and those statistics stored
beside a bundled model or in the user's cache folder, each read back only after it is checked."""

from __future__ import annotations

import os
from collections.abc import Sequence

import mujoco
import numpy as np

from physai import _files
from physai._validate import count, generator, nonnegative, positive, real
from physai.collision._screen import SAFE
from physai.collision._world import CollisionWorld
from physai.errors import InputError
from physai.kinematics import Chain, fk

DISTMAX_BEYOND_MARGIN = 0.05  # m: distances are resolved up to margin + this; farther pairs report the cap
ALWAYS_TOUCHING = 0.95  # a self pair in contact in this fraction of the sampled postures is never checked
NEVER_GAP = 0.05  # m: a self pair never within self_margin + this in the sampled postures is not worth checking
SAMPLES = 2000  # postures sampled when a world is built, to classify its pairs
_GEOM_CHECK_Q = 3  # configurations at which the scene's joint axes and anchors must match the chain's
_PLACEMENT_TOL = 1e-6  # m: how closely they must match


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
    from physai.robots import MODELS_DIR

    return [*sorted(MODELS_DIR.glob(f"*/{SELF_PAIRS_FILE}")), _engine.cache_dir() / _SELF_PAIRS_CACHE / f"{key}.json"]


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

    from physai.robots import MODELS_DIR, ROBOTS

    written = []
    for name, info in ROBOTS.items():
        if info.bundled:
            out = (MODELS_DIR / info.bundled).with_name(SELF_PAIRS_FILE)
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
                    mujoco.mj_geomDistance(m, d, a, b, world.margin + SAFE, None) <= world.margin:
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


