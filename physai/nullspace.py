"""Redundancy and the null space (lesson 12): choose among infinitely many IK answers on purpose.

Shapes and frames (as :mod:`physai.kinematics`):
- ``J: (..., m, n)`` a task Jacobian (rows of the geometric Jacobian, world frame, linear rows in m/rad,
  angular rows in rad/rad); ``v: (..., m)`` a task velocity; ``qdot: (..., n)`` joint velocities.
- A chain is *redundant* for a task when ``n > rank J``: the ``n - rank J`` dimensional null space
  ``{qdot : J qdot = 0}`` moves the joints without moving the task ("self-motion").

The tools:
- :func:`pinv` the (weighted, damped) pseudoinverse and :func:`projector` ``N = I - J^# J`` onto the
  null space; :func:`null_basis` an orthonormal basis of it.
- Secondary objectives as costs to *minimise* with their gradients (:class:`Objective`): joint-limit
  avoidance (Liegeois), manipulability (Yoshikawa, analytic gradient through :func:`jacobian_derivative`),
  a preferred posture.
- :func:`redundant_rate`: ``qdot = J^# v + N qdot0`` (the gradient projection method); the
  secondary motion ``N qdot0`` never changes the task to first order.
- :func:`priority_rate`: two-level task priority (Siciliano and Slotine 1991) with damping of the
  secondary task's algorithmic singularity.
- :func:`solve_ik_redundant` / :func:`solve_ik_redundant_batch`: :func:`physai.ik.solve_ik`, then descend
  a secondary objective in the null space while every accepted iterate keeps the primary converged.
"""

from __future__ import annotations

from collections.abc import Callable
import warnings
from dataclasses import dataclass, replace

import numpy as np

from physai import kinematics
from physai._avoid_step import DAMPER_GAIN, avoid_trusted, avoidance_step
from physai._validate import count, finite_array, nonnegative, one_of, positive
from physai._world_check import checked_world
from physai.errors import InputError
from physai.ik import (
    TASKS,
    Clearance,
    IKBatchResult,
    IKResult,
    Secondary,
    Task,
    from_flat,
    ik_problem,
    solve,
    task_residual,
)
from physai._ik_options import check_targets
from physai.kinematics import Chain
from physai.singularity import (
    pinv_of_svd,
    projector_of,
    scale_to_limit_trusted,
    svd_trusted,
    check_damping,
    jacobian_block,
)
from physai.transforms import pose_error

__all__ = [  # the null-space API; avoidance_step (and its gain) is defined below this module, in _avoid_step
    "DAMPER_GAIN", "RCOND", "REFINE_ITERATIONS", "REFINE_MIN_STEP", "REFINE_STEP", "Objective", "Prefer",
    "RedundantResult", "SelfMotionResult", "avoidance_step", "jacobian_derivative", "joint_limit_cost", "limit_margin",
    "manipulability", "manipulability_cost", "null_basis", "pinv", "point_jacobian", "posture_cost", "priority_rate",
    "projector", "redundant_rate", "refine_in_nullspace", "self_motion", "solve_ik_redundant",
    "solve_ik_redundant_batch",
]

RCOND = 1e-12  # singular values below RCOND * sigma_max count as zero (rank decisions)


# ---- pseudoinverse and projector -------------------------------------------------------------------


def _inverse_sqrt_weight(weights, n: int) -> np.ndarray:
    """``W^(-1/2): (n, n)`` of a joint-space weight: ``(n,)`` positive diagonal or ``(n, n)`` symmetric positive
    definite."""
    W = finite_array(weights, "weights")
    if W.shape == (n,):
        if np.any(W <= 0):
            raise InputError(f"weights: expected {n} positive joint weights, got {W}")
        return np.diag(1.0 / np.sqrt(W))
    if W.shape != (n, n) or not np.allclose(W, W.T, rtol=0, atol=1e-12 * np.abs(W).max()):
        raise InputError(f"weights: expected shape ({n},) or a symmetric ({n}, {n}) matrix, got shape {W.shape}")
    ev, V = np.linalg.eigh(W)
    if ev[0] <= 0:
        raise InputError(f"weights: the matrix must be positive definite, smallest eigenvalue {ev[0]:.3g}")
    return (V / np.sqrt(ev)) @ V.T


def pinv(J, *, lam=0.0, weights=None, rcond: float = RCOND) -> np.ndarray:
    """Weighted, damped pseudoinverse ``J^#: (..., m, n) -> (..., n, m)``.

    ``lam = 0``, ``weights = None``: Moore-Penrose ``V diag(1/sigma) U^T`` (singular values below
    ``rcond * sigma_max`` dropped). ``lam > 0`` (units of sigma): damped least squares, gains
    ``sigma / (sigma^2 + lam^2) <= 1 / (2 lam)``. ``weights`` ``W`` (``(n,)`` or ``(n, n)`` SPD): the
    solution ``J^# v`` minimises ``qdot^T W qdot`` among those with ``J qdot = v`` (damped: trades
    ``|J qdot - v|^2`` against ``lam^2 qdot^T W qdot``), i.e. ``W^-1 J^T (J W^-1 J^T)^-1 = W^(-1/2)
    (J W^(-1/2))^+``; a heavy joint moves less.
    """
    J, lam = finite_array(J, "J"), check_damping(lam, "lam")
    nonnegative(rcond, "rcond")
    if J.ndim < 2:
        raise InputError(f"J: expected shape (..., m, n), got {J.shape}")
    return _pinv(J, lam, None if weights is None else _inverse_sqrt_weight(weights, J.shape[-1]), rcond)[0]


def _pinv(J, lam, S_half, rcond):
    """``(J^#_lam, J^#_0)`` from one SVD (the second is the exact pseudoinverse the projector needs)."""
    return pinv_of_svd(svd_trusted(J if S_half is None else J @ S_half, rcond), lam, S_half)


def projector(J, *, lam=0.0, weights=None, rcond: float = RCOND) -> np.ndarray:
    """``N = I - J^# J: (..., m, n) -> (..., n, n)``, with ``J^#`` from :func:`pinv` (same options).

    ``lam = 0``: ``J N = 0`` (to round-off) and ``N`` is idempotent; unweighted it is the orthogonal
    projector onto the null space (symmetric, norm 1, so it never amplifies), weighted it is the
    ``W``-orthogonal one. It is discontinuous where the rank drops: a direction with ``sigma`` just
    above ``rcond * sigma_max`` is excluded, at zero it is suddenly included. ``lam > 0`` (damped):
    ``N_lam = V diag(lam^2 / (sigma^2 + lam^2)) V^T`` on the row space, continuous through the
    singularity but ``J N_lam != 0``: it lets the secondary motion leak into the task by at most
    ``sigma lam^2 / (sigma^2 + lam^2) <= lam / 2`` per unit joint speed.

    Examples
    --------
    The planar 3R arm (links 0.5, 0.3, 0.2 m) has one joint more than its tip's ``(x, y)`` task needs: the null
    space is a line, and motion in it leaves the tip where it is.

    >>> from physai import nullspace
    >>> J_xy = physai.jacobian(physai.load("planar3r"), [0.3, 0.6, 0.9])[:2]
    >>> N = nullspace.projector(J_xy)
    >>> N.shape, int(np.linalg.matrix_rank(N))
    ((3, 3), 1)
    >>> print(np.round(J_xy @ N @ [1.0, 0.0, 0.0], 6))
    [0. 0.]
    """
    J = finite_array(J, "J")
    return projector_of(J, pinv(J, lam=lam, weights=weights, rcond=rcond))


def null_basis(J, rcond: float = RCOND) -> np.ndarray:
    """Orthonormal basis of the null space of one ``J: (m, n)`` -> ``(n, n - rank)`` (columns).

    The right singular vectors beyond the numerical rank. Their sign is arbitrary: a path that follows
    the null space must keep it continuous itself (e.g. ``sign(v_k . v_{k-1})``).

    Examples
    --------
    >>> from physai import nullspace
    >>> J_xy = physai.jacobian(physai.load("planar3r"), [0.3, 0.6, 0.9])[:2]
    >>> basis = nullspace.null_basis(J_xy)
    >>> basis.shape, round(float(np.linalg.norm(basis)), 6)
    ((3, 1), 1.0)
    """
    J = finite_array(J, "J")
    if J.ndim != 2:
        raise InputError(f"J: expected one Jacobian of shape (m, n), got {J.shape}")
    _, S, Vt = np.linalg.svd(J, full_matrices=True)
    rank = int(np.sum(S > rcond * S[0])) if len(S) else 0
    return Vt[rank:].T


# ---- resolved-rate steps ---------------------------------------------------------------------------


def redundant_rate(J, v, qdot0=None, *, lam=0.0, weights=None, rcond: float = RCOND) -> np.ndarray:
    """Gradient projection: ``qdot = J^#_lam v + N qdot0``: ``J (..., m, n)``, ``v (..., m)``, ``qdot0 (..., n)``.

    ``qdot0`` is any desired joint velocity, typically ``-k grad H`` of a secondary cost. It passes
    through the *exact* projector ``N`` even when the task part is damped, so ``J N qdot0 = 0`` always:
    the secondary objective never moves the task to first order (the damping only affects how well
    ``v`` itself is tracked).
    """
    J, lam = finite_array(J, "J"), check_damping(lam, "lam")
    v = finite_array(v, "v", (J.shape[-2],))
    n = J.shape[-1]
    P, P0 = _pinv(J, lam, None if weights is None else _inverse_sqrt_weight(weights, n), rcond)
    qdot = (P @ v[..., None])[..., 0]
    if qdot0 is None:
        return qdot
    qdot0 = finite_array(qdot0, "qdot0", (n,))
    return qdot + (projector_of(J, P0) @ qdot0[..., None])[..., 0]


def priority_rate(J1, v1, J2, v2, *, lam2=0.0, rcond: float = RCOND) -> np.ndarray:
    """Two-level task priority (Siciliano and Slotine 1991): ``(..., n)`` joint velocities.

    ``qdot = J1^+ v1 + N1 (J2 N1)^#_lam2 (v2 - J2 J1^+ v1)``: the primary task ``J1 qdot = v1`` is met
    exactly (when feasible); the secondary ``J2 qdot = v2`` is met as well as the primary's null space
    ``N1`` allows, in least squares. Where the two conflict, ``J2 N1`` loses rank (an *algorithmic*
    singularity, even though J1 and J2 are each fine) and the undamped solution demands joint speeds
    ``|residual| / sigma`` that blow up; ``lam2 > 0`` bounds that gain by ``1 / (2 lam2)``. The leading
    ``N1`` keeps the secondary correction in the primary's null space for any ``lam2``.
    """
    J1, J2, lam2 = finite_array(J1, "J1"), finite_array(J2, "J2"), check_damping(lam2, "lam2")
    if J1.shape[-1] != J2.shape[-1]:
        raise InputError(f"J2: expected {J1.shape[-1]} columns like J1, got shape {J2.shape}")
    v1 = finite_array(v1, "v1", (J1.shape[-2],))
    v2 = finite_array(v2, "v2", (J2.shape[-2],))
    J1p = pinv(J1, rcond=rcond)
    N1 = projector_of(J1, J1p)
    qdot1 = (J1p @ v1[..., None])[..., 0]
    residual = v2 - (J2 @ qdot1[..., None])[..., 0]
    return qdot1 + (N1 @ pinv(J2 @ N1, lam=lam2, rcond=rcond) @ residual[..., None])[..., 0]


# ---- Jacobian derivative and secondary objectives --------------------------------------------------


def jacobian_derivative(J) -> np.ndarray:
    """``H[..., i, :, j] = d J[..., :, j] / d q_i`` of a geometric Jacobian ``J: (..., 6, n)`` -> ``(..., n, 6, n)``.

    Closed form from ``J`` alone (Haviland and Corke 2023): with column ``j = (v_j, w_j)``,
    ``i < j``: joint ``i`` rotates column ``j`` as a whole, ``(w_i x v_j, w_i x w_j)``;
    ``i >= j``: only the tool point moves, ``(w_j x v_i, 0)``. Slide joints have ``w = 0`` and fit the same rule.
    """
    J = finite_array(J, "J")
    if J.ndim < 2 or J.shape[-2] != 6:
        raise InputError(f"J: expected a geometric Jacobian of shape (..., 6, n), got {J.shape}")
    v = np.swapaxes(J[..., :3, :], -1, -2)  # (..., n, 3)
    w = np.swapaxes(J[..., 3:, :], -1, -2)
    n = J.shape[-1]
    later = (np.arange(n)[:, None] < np.arange(n)[None, :])[..., None]  # [i, j]: i < j
    w_i, w_j = w[..., :, None, :], w[..., None, :, :]
    lin = np.where(later, np.cross(w_i, v[..., None, :, :]), np.cross(w_j, v[..., :, None, :]))
    ang = np.where(later, np.cross(w_i, w_j), 0.0)
    return np.swapaxes(np.concatenate([lin, ang], axis=-1), -1, -2)  # (..., i, 6, j)


@dataclass(frozen=True)
class Objective:
    """A secondary cost ``H(q)`` to minimise: ``value: (..., n) -> (...)``, ``gradient: (..., n) -> (..., n)``.

    ``trusted_value`` and ``trusted_gradient`` (default: ``value`` and ``gradient``): the same functions for joint
    vectors already checked (a solver's iterates), so a refinement checks its inputs once, not every step."""

    name: str
    value: Callable[[np.ndarray], np.ndarray]
    gradient: Callable[[np.ndarray], np.ndarray]
    trusted_value: Callable[[np.ndarray], np.ndarray] | None = None
    trusted_gradient: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self):
        object.__setattr__(self, "trusted_value", self.trusted_value or self.value)
        object.__setattr__(self, "trusted_gradient", self.trusted_gradient or self.gradient)


def joint_limit_cost(chain: Chain) -> Objective:
    """Liegeois' joint-limit cost ``H = 1/(2k) sum_i ((q_i - c_i) / (u_i - l_i))^2`` over the ``k`` limited joints.

    ``c`` the middle of the range; 0 at the centre, ``1/8`` per joint at a limit. Joints without both
    limits contribute nothing.
    """
    limited = np.isfinite(chain.lower) & np.isfinite(chain.upper) & (chain.upper > chain.lower)
    if not limited.any():
        raise InputError(f"chain {chain.name!r} has no limited joint: joint-limit avoidance has nothing to do")
    lo, hi = np.where(limited, chain.lower, 0.0), np.where(limited, chain.upper, 1.0)
    c, inv_range2 = 0.5 * (lo + hi), np.where(limited, 1.0 / (hi - lo) ** 2, 0.0)
    k = int(limited.sum())

    def value(q):
        d = q - c
        return np.sum(d * d * inv_range2, axis=-1) / (2 * k)

    def gradient(q):
        return (q - c) * inv_range2 / k

    return Objective("joint-limit", lambda q: value(chain.check_q(q)), lambda q: gradient(chain.check_q(q)), value,
                     gradient)


def posture_cost(chain: Chain, q_pref, weights=None) -> Objective:
    """Preferred posture ``H = 1/2 sum_i w_i (q_i - q_pref_i)^2`` (rad^2), gradient ``w (q - q_pref)``."""
    q_pref = chain.check_q(q_pref, "q_pref")
    w = np.ones(chain.n) if weights is None else finite_array(weights, "weights", (chain.n,))
    if np.any(w < 0):
        raise InputError(f"weights: expected non-negative joint weights, got {w}")

    def value(q):
        d = q - q_pref
        return 0.5 * np.sum(w * d * d, axis=-1)

    def gradient(q):
        return w * (q - q_pref)

    return Objective("posture", lambda q: value(chain.check_q(q)), lambda q: gradient(chain.check_q(q)), value,
                     gradient)


def _rows(block, char_length: float) -> np.ndarray:
    """The task's rows of the geometric Jacobian as a ``(k, 6)`` matrix ``S`` (``J_task = S J``)."""
    if isinstance(block, str):
        return jacobian_block(np.eye(6), block, char_length)
    S = finite_array(block, "block", (6,))
    if S.ndim != 2:
        raise InputError(f"block: expected a name or a (k, 6) row selection, got shape {S.shape}")
    return S


def manipulability(chain: Chain, q, block="position", char_length: float = 0.3) -> np.ndarray:
    """Yoshikawa's ``w = sqrt(det(J_b J_b^T)) = prod(sigma)`` of one task block, ``q: (..., n)`` -> ``(...)``.

    ``block``: ``"position"``, ``"orientation"``, ``"full"`` (angular rows scaled by ``char_length`` m,
    as :func:`physai.singularity.health`) or a ``(k, 6)`` row selection (e.g. the x, y rows of a planar arm).
    """
    Jb = _rows(block, char_length) @ kinematics.jacobian(chain, q)
    return np.prod(np.linalg.svd(Jb, compute_uv=False), axis=-1)


def manipulability_cost(chain: Chain, block="position", char_length: float = 0.3) -> Objective:
    """``H = -w`` (maximise the manipulability of ``block``; see :func:`manipulability`) with its analytic gradient.

    ``dw/dq_i = w tr(J_b^+ dJ_b/dq_i)`` (Yoshikawa 1985), ``dJ/dq_i`` from :func:`jacobian_derivative`.
    Where the block is rank-deficient ``w = 0`` and so is the gradient (``w`` is not smooth there).
    """
    S = _rows(block, char_length)

    def value(q):
        return -manipulability(chain, q, S)

    def gradient(q):
        J = kinematics.jacobian(chain, q)
        Jb = S @ J
        w = np.prod(np.linalg.svd(Jb, compute_uv=False), axis=-1)
        dJb = S @ jacobian_derivative(J)  # (..., i, k, j)
        return -w[..., None] * np.einsum("...ikj,...jk->...i", dJb, pinv(Jb))

    return Objective("manipulability", value, gradient)


def limit_margin(chain: Chain, q) -> np.ndarray:
    """Smallest distance to a joint limit as a fraction of that joint's range: ``(..., n) -> (...)``.

    0.5 at the centre of every range, 0 on a limit; unlimited joints are ignored (inf if none is limited).
    """
    q = chain.check_q(q)
    span = chain.upper - chain.lower
    limited = np.isfinite(span) & (span > 0)
    frac = np.minimum(q - chain.lower, chain.upper - q) / np.where(limited, span, 1.0)
    return np.min(np.where(limited, frac, np.inf), axis=-1)


def point_jacobian(chain: Chain, q, joint: int) -> tuple[np.ndarray, np.ndarray]:
    """Position ``(..., 3)`` of joint ``joint``'s anchor (e.g. the elbow) and its linear Jacobian ``(..., 3, n)``.

    A secondary Cartesian task on a point of the arm: columns of the joints before it (and of the
    joint itself if it slides) are ``a x (x - o)`` (hinge) or ``a`` (slide); later joints do not move it.
    """
    if not 0 <= joint < chain.n:
        raise InputError(f"joint: expected an index in [0, {chain.n}), got {joint}")
    axes, anchors, _ = kinematics.fk(chain, q)
    x = anchors[..., joint, :]
    cols = []
    for i, jtype in enumerate(chain.joint_types):
        moves = i < joint or (i == joint and jtype == "slide")
        col = kinematics.hinge_column(axes[..., i, :], anchors[..., i, :], x) if jtype == "hinge" else \
            kinematics.slide_column(axes[..., i, :])
        cols.append(col[..., :3] * moves)
    return x, np.stack(cols, axis=-1)


# ---- IK with a secondary objective -----------------------------------------------------------------

@dataclass(frozen=True)
class RedundantResult:
    """IK followed by null-space optimisation of a secondary cost.

    ``q: (n,)`` inside the limits; ``converged`` whether the primary task meets its tolerances at ``q``
    (always equal to ``ik.converged``: the optimisation only accepts iterates that keep it);
    ``position_error`` (m), ``orientation_error`` (rad) at ``q``; ``cost_initial``/``cost_final`` the
    secondary cost at ``ik.q`` and at ``q``; ``iterations`` null-space iterations; ``reason`` one of
    :data:`physai.ik.REASONS`: ``"stationary"`` (no step of at least ``min_step`` lowers the cost within the
    primary tolerances), ``"iteration limit"`` or ``"primary not converged: not optimised"``; ``ik`` the plain
    :class:`~physai.ik.IKResult` it started from.
    """

    q: np.ndarray
    converged: bool
    position_error: float
    orientation_error: float
    cost_initial: float
    cost_final: float
    iterations: int
    reason: str
    ik: IKResult


def _corrected(chain, q, e, Jp, task, T_target, axis):
    """One Newton correction ``q + J^+ e`` of the primary residual, clipped into the limits, and its residual."""
    q = np.clip(q + (Jp @ e[..., None])[..., 0], chain.lower, chain.upper)
    T, J = kinematics.pose_and_jacobian_trusted(chain, q, "compiled")
    return (q, *task_residual(task, T, J, T_target, axis))


def _self_motion_step(chain, objective, q, e, Jt, alpha, task, T_target, axis):
    """``(dmax, corrected)``: the projected gradient step ``-N grad H`` (largest joint change ``alpha``, ``dmax`` its
    unscaled size) plus the Newton correction, corrected once more at the new point (``_corrected``'s tuple)."""
    Jp = _pinv(Jt, 0.0, None, RCOND)[0]
    d = -(projector_of(Jt, Jp) @ objective.trusted_gradient(q)[..., None])[..., 0]
    dmax = np.abs(d).max(axis=-1)
    scale = np.where(dmax > 0, alpha / np.where(dmax > 0, dmax, 1.0), 0.0)
    q1, e1, J1, _, _ = _corrected(chain, q + scale[:, None] * d, e, Jp, task, T_target, axis)
    return dmax, _corrected(chain, q1, e1, _pinv(J1, 0.0, None, RCOND)[0], task, T_target, axis)


REFINE_ITERATIONS, REFINE_STEP, REFINE_MIN_STEP = 200, 0.2, 1e-4  # refine_in_nullspace's defaults


def _refine(chain, T_target, q, converged, objective, task, tol_position, tol_orientation, a, iterations, step,
            min_step, world):
    """The refinement loop on checked arguments: ``(q, perr, oerr, cost0, cost, its, active)`` per target."""
    q = np.array(q, float)
    e, Jt, perr, oerr = task_residual(task, *kinematics.pose_and_jacobian_trusted(chain, q, "compiled"), T_target, a)
    cost0 = objective.trusted_value(q)
    cost, alpha, its = cost0.copy(), np.full(len(q), float(step)), np.zeros(len(q), int)
    active = np.array(converged, bool)
    for _ in range(int(iterations)):
        r = np.flatnonzero(active)
        if not len(r):
            break
        dmax, (trial, et, Jtt, pt, ot) = _self_motion_step(chain, objective, q[r], e[r], Jt[r], alpha[r],
                                                           task, T_target[r], a)
        ct = objective.trusted_value(trial)
        ok = (ct < cost[r]) & (pt <= tol_position) & (ot <= tol_orientation)
        if world is not None:
            ok[ok] = world.clear_trusted(trial[ok], world.pair_margin)
        ra = r[ok]
        q[ra], e[ra], Jt[ra], perr[ra], oerr[ra], cost[ra] = trial[ok], et[ok], Jtt[ok], pt[ok], ot[ok], ct[ok]
        alpha[r] = np.where(ok, np.minimum(alpha[r] * 1.5, step), alpha[r] * 0.5)
        its[r] += 1
        active[r[(alpha[r] < min_step) | (dmax == 0)]] = False
    return q, perr, oerr, cost0, cost, its, active


def refine_in_nullspace(
    chain: Chain,
    targets,
    ik_results: IKBatchResult,
    *,
    objective: Objective,
    task: str = "pose",
    tol_position: float = 1e-4,
    tol_orientation: float = 1e-3,
    axis=(0.0, 0.0, 1.0),
    iterations: int = REFINE_ITERATIONS,
    step: float = REFINE_STEP,
    min_step: float = REFINE_MIN_STEP,
    avoid=None,
) -> list[RedundantResult]:
    """Deprecated: ``prefer=Prefer(objective)`` (the same steps). Lower ``objective`` along the self-motion of each
    converged answer of ``ik_results`` (the :class:`~physai.ik.IKBatchResult` of ``targets``, ``(B, 4, 4)`` or
    ``(B, 3)`` for a position task), keeping the task within ``tol_position``/``tol_orientation`` and, with
    ``avoid``, every pair of that world its margin."""
    warnings.warn("physai.nullspace.refine_in_nullspace is deprecated: pass prefer=physai.nullspace.Prefer(objective) "
                  "to physai.ik.ik_problem (or solve_ik_batch)", DeprecationWarning, stacklevel=2)
    _check_options(objective, iterations, step, min_step)
    T_target = check_targets(one_of(task, "task", TASKS), targets, 1)
    if len(T_target) != len(ik_results):
        raise InputError(f"ik_results: expected one result per target ({len(T_target)}), got {len(ik_results)}")
    world = checked_world(avoid, chain)
    a = finite_array(axis, "axis", (3,))
    q, perr, oerr, cost0, cost, its, active = _refine(
        chain, T_target, ik_results.q, ik_results.converged, objective, task, tol_position, tol_orientation,
        a / np.linalg.norm(a), iterations, step, min_step, world)
    out = []
    for b, res in enumerate(ik_results):
        reason = ("primary not converged: not optimised" if not res.converged
                  else "iteration limit" if active[b] else "stationary")
        out.append(RedundantResult(q[b].copy(), res.converged, float(perr[b]), float(oerr[b]), float(cost0[b]),
                                   float(cost[b]), int(its[b]), reason, res))
    return out


def _check_options(objective, iterations=REFINE_ITERATIONS, step=REFINE_STEP, min_step=REFINE_MIN_STEP):
    if not isinstance(objective, Objective):
        raise InputError(f"objective: expected a physai.nullspace.Objective, got {type(objective).__name__}")
    count(iterations, "iterations")
    if not positive(min_step, "min_step") <= positive(step, "step"):
        raise InputError(f"step, min_step: expected 0 < min_step <= step, got {min_step}, {step}")




def solve_ik_redundant_batch(chain: Chain, targets, q0=None, *, objective: Objective,
                             **options) -> list[RedundantResult]:
    """Deprecated: ``solve_ik_batch(..., prefer=Prefer(objective))``. The solve, then the refinement; one
    :class:`RedundantResult` per target. ``task``, ``tol_position``, ``tol_orientation`` and ``axis`` go to both;
    ``iterations``, ``step`` and ``min_step`` to the refinement; the rest (``method``, ``restarts``, ``rng``, ...) to
    the solver."""
    warnings.warn("physai.nullspace.solve_ik_redundant(_batch) is deprecated: pass prefer=physai.nullspace.Prefer("
                  "objective) to physai.ik.solve_ik(_batch) or ik_problem", DeprecationWarning, stacklevel=2)
    return _redundant(chain, targets, q0, objective, options)


def solve_ik_redundant(chain: Chain, target, q0=None, *, objective: Objective, **options) -> RedundantResult:
    """Deprecated: ``solve_ik(..., prefer=Prefer(objective))``. :func:`solve_ik_redundant_batch` on one target."""
    warnings.warn("physai.nullspace.solve_ik_redundant is deprecated: pass prefer=physai.nullspace.Prefer(objective) "
                  "to physai.ik.solve_ik", DeprecationWarning, stacklevel=2)
    return _redundant(chain, finite_array(target, "target")[None], q0, objective, options)[0]


def _redundant(chain, targets, q0, objective, options) -> list[RedundantResult]:
    options = dict(options)
    refine = {k: options.pop(k) for k in ("iterations", "step", "min_step") if k in options}  # Prefer's options
    prefer = Prefer(objective, **refine)  # before the solve: a bad refinement option costs no IK
    avoid, rng = options.pop("avoid", None), options.pop("rng", None)
    task, solver, trace = from_flat(options.pop("task", "pose"), options)
    problem = ik_problem(chain, targets, q0, task=task, limits=() if avoid is None else (Clearance(avoid),))
    res = solve(problem, solver, rng=rng, trace=trace)
    q, perr, oerr, cost0, cost, its, active = prefer.run(chain, problem.T_target, res, problem.task, problem.world)
    return [RedundantResult(q[b].copy(), r.converged, float(perr[b]), float(oerr[b]), float(cost0[b]), float(cost[b]),
                            int(its[b]), "primary not converged: not optimised" if not r.converged
                            else "iteration limit" if active[b] else "stationary", r) for b, r in enumerate(res)]


@dataclass(frozen=True)
class Prefer(Secondary):
    """The null-space secondary of an IK problem (``prefer=`` of :func:`physai.ik.ik_problem`): after the solve,
    lower ``objective`` along the self-motion of each converged answer, keeping the task within its tolerances.

    Each iteration is a predictor-corrector step: the normalised projected gradient ``-N grad H`` (largest joint
    change ``alpha <= step`` rad) plus the Newton correction ``J^+ e`` of the primary residual, then one more
    correction at the new point, clipped into the limits. It is accepted only if the cost falls *and* the primary
    still meets its tolerances (and, with a clearance limit, every pair keeps its margin); ``alpha`` grows by 1.5 on
    acceptance and halves on rejection; it stops below ``min_step`` or after ``iterations``. ``result.cost (B,)``.

    Examples
    --------
    >>> panda = physai.load("panda")
    >>> T = physai.tool_pose(panda, panda.q_middle + 0.3)
    >>> plain = physai.solve_ik(panda, T)
    >>> refined = physai.solve_ik(panda, T, prefer=physai.nullspace.Prefer(physai.nullspace.joint_limit_cost(panda)))
    >>> refined.converged, bool(refined.cost <= physai.nullspace.joint_limit_cost(panda).value(plain.q))
    (True, True)
    """

    objective: Objective
    iterations: int = REFINE_ITERATIONS
    step: float = REFINE_STEP
    min_step: float = REFINE_MIN_STEP

    def __post_init__(self):
        _check_options(self.objective, self.iterations, self.step, self.min_step)

    def run(self, chain, T_target, result, task: Task, world):
        """The refinement's arrays ``(q, perr, oerr, cost0, cost, its, active)`` of a solve's ``result``."""
        return _refine(chain, T_target, result.q, result.converged, self.objective, task.kind, task.tol_position,
                       task.tol_orientation, task.unit_axis, self.iterations, self.step, self.min_step, world)

    def refine(self, chain, T_target, result, task: Task, world) -> IKBatchResult:
        q, perr, oerr, _, cost, _, _ = self.run(chain, T_target, result, task, world)
        return replace(result, q=q, position_error=perr, orientation_error=oerr, cost=cost)


# ---- self-motion with a secondary objective, clear of obstacles --------------------------------------------------


@dataclass(frozen=True)
class SelfMotionResult:
    """A walk along the self-motion of a held tool pose: ``q: (N+1, n)``; ``pose_drift: (N+1,)`` the tool's position
    error (m) from where it started; ``cost: (N+1,)`` the objective; ``clearance: (N+1,)`` the smallest pair distance
    (m) of the ``avoid`` world (None without one); ``scale: (N,)`` the step scale that
    :func:`avoidance_step` applied (ones without a world)."""

    q: np.ndarray
    pose_drift: np.ndarray
    cost: np.ndarray
    clearance: np.ndarray | None
    scale: np.ndarray


def self_motion(chain: Chain, q0, objective: Objective, *, steps: int = 200, step: float = 0.02,
                avoid=None) -> SelfMotionResult:
    """Hold the tool's pose at ``q0: (n,)`` and descend ``objective`` along the self-motion, ``steps`` steps of at most
    ``step`` rad: ``dq = J^+ e - alpha N grad H`` with ``alpha = min(1, step / max |N grad H|)``
    (the Newton correction ``J^+ e`` of the pose error ``e`` keeps the tool where it was; ``N = I - J^+ J``). With
    ``avoid`` (a :class:`physai.collision.CollisionWorld`) each step passes :func:`avoidance_step`
    with the pose task's Jacobian: the classic use of redundancy to keep an elbow clear of an obstacle while the tool
    holds still (Maciejewski and Klein 1985)."""
    q = chain.check_q(q0).copy()
    _check_options(objective)
    steps, step = count(steps, "steps"), positive(step, "step")
    world = checked_world(avoid, chain, q)
    T0 = kinematics.tool_pose(chain, q)
    qs, scales = [q.copy()], []
    for _ in range(steps):
        T, J = kinematics.tool_pose_and_jacobian(chain, q)
        e = pose_error(T, T0)
        usv = svd_trusted(J, RCOND)
        Jp = pinv_of_svd(usv, 0.0)[0]
        d = scale_to_limit_trusted(-(projector_of(J, Jp) @ objective.gradient(q)), step)[0]  # joint change <= step
        dq, scale = Jp @ e + d, 1.0
        if world is not None:
            dq, scale = avoid_trusted(world, q, J, usv, dq)
        q = np.clip(q + dq, chain.lower, chain.upper)
        qs.append(q.copy())
        scales.append(scale)
    q_all = np.array(qs)
    drift = np.linalg.norm(kinematics.tool_pose(chain, q_all)[:, :3, 3] - T0[:3, 3], axis=-1)
    clearance = None if world is None else world.distances(q_all).min(axis=-1, initial=world.distmax)
    return SelfMotionResult(q_all, drift, objective.value(q_all), clearance, np.array(scales))
