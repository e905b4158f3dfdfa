"""The collision-avoiding joint step of the controllers (private; public as :func:`physai.nullspace.avoidance_step`).

A velocity damper per close pair of a :class:`physai.collision.CollisionWorld`, met in the null space of the task
(the one projector of :func:`physai.singularity.projector_of`), looking ahead by how far each pair can close in the
step, and swept along it. It reads the world through its attributes and methods only (``world`` below is a
:class:`~physai.collision.CollisionWorld`), so it sits below the collision module and beside the controllers
(:mod:`physai.control`, :mod:`physai.nullspace`) that use it.
"""

from __future__ import annotations

import numpy as np

from physai._validate import finite_array, nonnegative, positive, real
from physai.chain import Chain
from physai.errors import InputError
from physai.singularity import pinv_of_svd, projector_of, svd_trusted

DAMPER_GAIN = 0.3  # fraction of the gap above the margin a close pair may close in one step
# The swept step keeps this fraction of the margin (of the current gap, if smaller): the dampers hold the margin to
# first order at the step's end, and the straight joint-space path to it may dip below by second-order terms only.
SWEEP_FLOOR = 0.5
SWEEP_TOL = 1e-4  # m: a sweep whose room above the floor falls below this stops there
SWEEP_ITERATIONS = 100  # advances per step at most (each one distance evaluation)
SWEEP_BISECTIONS = 10  # halvings towards the farthest point that keeps the margin, where the step's end does not
LOOK_MAX = 1.0  # m: the dampers look at most this far beyond the margin (a step turning a hinge a radian or more)


def avoidance_step(world, q, J_task, dq, *, gain: float = DAMPER_GAIN, lam: float = 1e-3,
                   influence: float | None = None) -> tuple[np.ndarray, float]:
    """A joint step ``dq: (n,)`` made collision-aware at ``q: (n,)``: ``(dq_safe (n,), scale)``.

    Each pair closer than ``influence`` (m, default the world's ``distmax``) gets a velocity damper (Faverjon and
    Tournassoud 1987) in step form: ``G_i dq >= -gain (d_i - margin_i)`` (``margin_i`` the pair's clearance,
    ``world.pair_margin``: ``self_margin`` for the robot's own pairs, ``margin`` against an obstacle), so a pair
    closes at most ``gain`` of its gap above its margin per step and, to first order, never crosses it. Violated rows
    are met in the null space of the task Jacobian ``J_task: (m, n)`` (the task keeps priority, Maciejewski and
    Klein 1985): ``dq += N (G_v N)^#_lam (b_v - G_v dq)``, ``N = I - J^+ J`` (:func:`physai.nullspace.projector`),
    ``lam`` the damping of that inverse (m). Where the null space cannot meet them (no redundancy left), the step is
    scaled down until every row holds: the tool slows or stops rather than touch.

    A long step looks ahead and is swept. A pair's geoms move relative to each other only by the joints after the
    last one that moves the first geom, up to the last one that moves the second (every joint, against an obstacle);
    along the step they close by at most ``D = sum_j |dq_j| r_j / (1 - sum_hinges |dq_j|)`` over those joints,
    ``r_j`` the farthest the second geom's bounding sphere reaches from joint ``j``'s anchor (a slide's ``r_j = 1``;
    the denominator: a reach grows by at most the travel itself). The dampers take every pair closer than
    ``margin_i + D``, when that exceeds ``influence``. The damped step is then swept by conservative advancement
    (Mirtich 1996) along the straight joint-space path that a zero-order hold follows: it advances as far as the
    bound lets no pair come closer than :data:`SWEEP_FLOOR` of its margin (of its gap, if that is smaller), and
    measures again. The step ends where the sweep ends if every pair keeps its margin there (the dampers' first-order
    promise, measured wherever a pair could have come within it), else at the farthest point found that keeps it.
    ``scale`` in ``[0, 1]`` is the fraction of the damped step kept.

    Examples
    --------
    The SO-101 by a post: a step that would carry the arm 5 cm into it keeps the margin, cut to 4 % of its length.

    >>> from physai import collision, nullspace
    >>> chain = physai.load("so101")
    >>> post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    >>> world = physai.collision_world(collision.scene("so101", [post]), chain)
    >>> q = chain.q_ref.copy()
    >>> J = physai.jacobian(chain, q)[:3]
    >>> dq = physai.damped_solve(J, [0.1, 0.18, 0.0], lam=0.0)  # the tool 20 cm toward the post
    >>> dq_safe, scale = nullspace.avoidance_step(world, q, J, dq)
    >>> round(world.closest(q + dq)[0], 3), bool(world.clear(q + dq_safe)), round(scale, 2)  # m, -, -
    (-0.049, True, 0.04)
    """
    if not isinstance(getattr(world, "chain", None), Chain) or not hasattr(world, "evaluate_trusted"):
        raise InputError(f"world: expected a physai.collision.CollisionWorld, got {type(world).__name__}")
    n = world.chain.n
    q = world.chain.check_q(q)
    J_task = finite_array(J_task, "J_task", (n,))
    dq = finite_array(dq, "dq", (n,))
    if q.ndim != 1 or dq.ndim != 1 or J_task.ndim != 2:
        raise InputError(f"q, J_task, dq: expected shapes ({n},), (m, {n}), ({n},), got {q.shape}, {J_task.shape}, "
                         f"{dq.shape}")
    gain, lam = real(gain, "gain"), nonnegative(lam, "lam")
    if not 0 < gain <= 1:
        raise InputError(f"gain: expected a fraction in (0, 1], got {gain}")
    influence = world.distmax if influence is None else positive(influence, "influence")
    return avoid_trusted(world, q, J_task, svd_trusted(J_task), dq, gain, lam, influence)


def avoid_trusted(world, q: np.ndarray, J: np.ndarray, usv, dq: np.ndarray, gain: float = DAMPER_GAIN,
           lam: float = 1e-3, influence: float | None = None) -> tuple[np.ndarray, float]:
    """:func:`avoidance_step` of checked arguments, with ``usv`` the factors of ``J``
    (:func:`physai.singularity.svd_trusted`): a controller's tick passes the SVD its damped step took."""
    influence = world.distmax if influence is None else influence
    L, M = _levers(world, q)
    look = np.maximum(influence, world.pair_margin + np.minimum(_travel(L, M, world.hinge, dq, 1.0), LOOK_MAX))
    cap = max(float(look.max(initial=0.0)), world.distmax)
    d, G = world.evaluate_trusted(q, True, cap)
    close = d < look
    G, b = G[close], -gain * (d - world.pair_margin)[close]
    violated = G @ dq < b
    if violated.any():  # met in the task's null space
        Gv = G[violated]
        dq = dq + _null_fix(J, usv, Gv, b[violated] - Gv @ dq, lam)
    rate = G @ dq
    # rows still short of their bound (b <= 0 while the pair keeps its margin): the largest t with t G dq >= b
    short = rate < b
    scale = float(np.min(np.clip(b[short] / rate[short], 0.0, 1.0))) if short.any() else 1.0
    dq = dq * scale
    t = _sweep(world, q, dq, L, M, d, cap)
    return dq * t, scale * t


def _null_fix(J, usv, Gv, gap, lam) -> np.ndarray:
    """The least change ``N (G_v N)^#_lam gap`` within the null space of ``J`` that meets the violated rows."""
    N = projector_of(J, pinv_of_svd(usv, 0.0)[0])
    return N @ pinv_of_svd(svd_trusted(Gv @ N), lam)[0] @ gap


def _levers(world, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L (P, n), M (P, n))`` at ``q``: ``M`` the joints that move each pair's geoms relative to each other;
    ``L`` per such hinge the farthest the geom it moves reaches from its anchor (centre distance plus bounding
    radius, m), 1 per such slide, 0 elsewhere: to first order a pair closes by at most ``L @ |dq|``."""
    d, m = world.posed(q), world.model
    last = world.last_joint[world.pairs]  # (P, 2): the last chain joint moving each geom, -1 for a fixed one
    moved = world.pairs[np.arange(len(last)), np.argmax(last, axis=1)]  # the geom more joints move
    j = np.arange(world.chain.n)
    M = (j > last.min(axis=1)[:, None]) & (j <= last.max(axis=1)[:, None])
    reach = np.linalg.norm(d.geom_xpos[moved, None, :] - d.xanchor[list(world.joint_ids)][None], axis=-1)
    return np.where(world.hinge, reach + m.geom_rbound[moved, None], 1.0) * M, M


def _travel(L: np.ndarray, M: np.ndarray, hinge: np.ndarray, dq: np.ndarray, h: float) -> np.ndarray:
    """Bound (m) per pair on how far its geoms close along ``q + s dq``, ``s`` in ``[0, h]``: a reach from a hinge
    grows by at most the travel ``D`` itself, so ``D <= h D0 + h T D`` (``D0 = L @ |dq|``, ``T`` the pair's hinges'
    total turn), ``D = h D0 / (1 - h T)``; inf where ``h T >= 1``."""
    a = np.abs(dq)
    turn = h * (M[:, hinge] @ a[hinge])
    return np.divide(h * (L @ a), 1.0 - turn, out=np.full(len(L), np.inf), where=turn < 1.0)


def _sweep(world, q: np.ndarray, dq: np.ndarray, L: np.ndarray, M: np.ndarray, d: np.ndarray,
           cap: float) -> float:
    """The fraction ``t`` in ``[0, 1]`` of the straight path ``q + s dq`` to take, from the pairs' distances
    ``d (P,)`` at ``q`` (m, resolved up to ``cap``). Conservative advancement clears ``[0, t_c]``: no pair closer
    than its floor (:data:`SWEEP_FLOOR` of its margin ``world.pair_margin``, or of its own distance at ``q`` if that
    is smaller). The step ends at ``t_c`` if every pair keeps its margin there (or its distance at ``q``, if
    smaller), or cannot have come within it (the closing bound); else at the farthest point found to keep it
    (bisection)."""
    if not len(d) or d.min() <= 0:  # nothing to meet, or already touching: the dampers alone push apart
        return 1.0
    hinge, a = world.hinge, np.abs(dq)
    keep = np.minimum(world.pair_margin, d)
    floor, near = SWEEP_FLOOR * keep, d < world.pair_margin + _travel(L, M, hinge, dq, 1.0)
    turn = M[:, hinge] @ a[hinge]

    def keeps(t: float) -> bool:
        return bool(np.all(world.evaluate_trusted(q + t * dq, False, cap)[0] >= keep))

    t, kept, d_t = 0.0, 0.0, d
    for _ in range(SWEEP_ITERATIONS):
        room = d_t - floor  # how far each pair may close before it meets its floor
        if room.min() < SWEEP_TOL:
            break
        # levers at q + t dq: a reach has grown by at most how far the pair has closed since q
        D0 = (L + (hinge * M) * _travel(L, M, hinge, dq, t)[:, None]) @ a
        rate = D0 + room * turn  # the largest h whose travel bound is every pair's room: room / rate
        h = float(np.min(np.divide(room, rate, out=np.full(len(room), np.inf), where=rate > 0)))
        if t + h >= 1.0:
            t = 1.0
            if not near.any() or keeps(t):
                return t
            break
        t += h
        d_t = world.evaluate_trusted(q + t * dq, False, cap)[0]
        if np.all(d_t >= keep):
            kept = t
    lo, hi = kept, t
    for _ in range(SWEEP_BISECTIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if keeps(mid) else (lo, mid)
    return lo
