"""Numerical inverse kinematics: iterate the easy direction (FK + Jacobian) to solve the hard one (lesson 10).

Every method takes the same step shape: from the task residual ``e`` (target minus current, world
frame) and the task Jacobian ``J_t`` it computes a joint step ``dq`` with ``J_t dq ~ e``, limits its
size, and clips ``q + dq`` into the joint limits, so every iterate (and the returned ``q``) is inside
them. The methods differ only in how they invert ``J_t``:

- ``"transpose"``: gradient descent on ``0.5 |e|^2``, ``dq = alpha J_t^T e`` with Buss's step
  ``alpha = <e, J J^T e> / |J J^T e|^2``.
- ``"pinv"``: Newton-Raphson, ``dq = J_t^+ e`` (explodes near singularities; the step limit catches it).
- ``"dls"``: damped least squares with a fixed ``damping`` (m/rad): ``dq = J^T (J J^T + lam^2 I)^-1 e``.
- ``"adaptive"``: damping ramped in only as ``sigma_min`` falls below ``sigma_healthy`` (Nakamura).
- ``"lm"`` (default, the best): Levenberg-Marquardt, the damped step whose ``lam`` adapts to whether
  the previous step reduced the error (accept: shrink, reject: grow), with seeded random restarts.

Tasks and residuals (rows ``e: (m,)`` and ``J_t: (m, n)``):
- ``"pose"`` (m = 6): ``[p_target - p; log(R_target R^T)]`` (m, rad), ``J_t = J``.
- ``"position"`` (m = 3): ``p_target - p``, ``J_t = J[:3]``.
- ``"position+axis"`` (m = 6, rank 5): position plus the rotation vector taking the tool axis
  ``z = R a`` onto the target's ``z_t = R_target a`` (``a`` = ``axis`` in the tool frame, default its z),
  with ``J_t`` angular rows ``(I - z z^T) J_w`` (a spin about ``z`` changes nothing).
Per-row ``weights`` (default 1) scale the residual and Jacobian rows by ``sqrt(w)``; success is always
judged on the unweighted errors against ``tol_position`` (m) and ``tol_orientation`` (rad).

This module is the readable NumPy solver. By default ``"lm"`` runs as its compiled twin,
:mod:`physai.fast_ik` (the same algorithm, every iteration and restart of a target in one numba call,
140-470x faster per median solve in benchmarks/IK_RESULTS.md); ``backend="numpy"`` selects the loop here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from physai import fast_ik, kinematics
from physai import transforms as tf
from physai._validate import (
    count,
    finite_array,
    generator,
    nonnegative,
    one_of,
    positive,
)
from physai.errors import InputError
from physai.kinematics import Chain
from physai.singularity import (
    Health,
    adaptive_damping,
    damped_solve,
    health,
    scale_to_limit,
)

TASKS = ("pose", "position", "position+axis")
METHODS = ("transpose", "pinv", "dls", "adaptive", "lm")
# Default iteration budget per attempt: gradient descent converges linearly and needs far more steps.
# LM fails fast (a converging attempt needs ~5-20 steps; a stuck one is abandoned after `patience`
# steps without 1 % progress) and relies on restarts: 200 restarts took 1,000 random reachable targets
# per robot/task to 100 % in lesson 10; hard targets (near joint limits) have ~2-10 % basins.
DEFAULT_MAX_ITERATIONS = {"transpose": 2000, "pinv": 100, "dls": 200, "adaptive": 100, "lm": 50}
DEFAULT_PATIENCE = {"transpose": 50, "pinv": 20, "dls": 20, "adaptive": 20, "lm": 5}
DEFAULT_RESTARTS = 200
UNREACHABLE_RESTARTS = 3  # restarts for targets farther than reach_bound
TASK_ROWS = {"pose": 6, "position": 3, "position+axis": 6}
TASK_RANK = {"pose": 6, "position": 3, "position+axis": 5}
# Where the solver's one call per iteration, (T_world_tool, J) = f(chain, q), comes from: the compiled
# path by default, the readable NumPy reference on request (tested to give the same solutions).
KINEMATICS = {"fast": kinematics.tool_pose_and_jacobian,
              "reference": functools.partial(kinematics.tool_pose_and_jacobian, engine="numpy")}
REASONS = ("converged", "unreachable: best effort", "iteration limit")  # indexed by fast_ik's outcome codes
# Where the LM iterations run: the whole solve of each target in one compiled call (physai.fast_ik, the
# default), or the vectorised NumPy loop below (the readable reference; also every other method, `trace`
# and kinematics_path="reference").
BACKENDS = ("compiled", "numpy")

TARGET_TOL = 1e-6  # a target's rotation block and bottom row must be rigid to this (check_targets)
_ROUND_OFF = 1e-12  # rigid to round-off: used as given, else projected onto the nearest rotation
MAX_RESTARTS = 100_000  # restarts are drawn up front: (B, restarts, n) floats
_TOOL_Z = (0.0, 0.0, 1.0)
_UNIT = {m: np.ones(m) for m in set(TASK_ROWS.values())}  # default weights (never written)
_UNIT_Z = np.array(_TOOL_Z)

# Levenberg-Marquardt damping schedule (lam^2, in (m/rad)^2 like sigma^2).
_LM_MU0, _LM_DOWN, _LM_UP, _LM_MU_MIN = 1e-4, 0.3, 10.0, 1e-12


@dataclass(frozen=True)
class IKResult:
    """The outcome of one IK solve.

    ``q: (n,)`` joint positions, always inside the chain's limits; ``converged`` whether both errors are
    within tolerance; ``iterations`` steps taken over all attempts; ``position_error`` (m) and
    ``orientation_error`` (rad; the angle between tool and target axes for ``"position+axis"``, 0 for
    ``"position"``) at ``q``; ``reason`` one of :data:`REASONS`: ``"converged"``, ``"unreachable: best
    effort"`` (every attempt stopped at a stationary point above tolerance, ``q`` is the closest one
    found), ``"iteration limit"`` (some attempt was still improving when its budget ran out);
    ``restarts`` random restarts used; ``unmet`` the parts of the target not achieved:
    ``()`` when converged, else a subset of ``("position", "orientation")``.
    """

    q: np.ndarray
    converged: bool
    iterations: int
    position_error: float
    orientation_error: float
    reason: str
    restarts: int
    method: str
    task: str
    unmet: tuple[str, ...] = ()

    def health(self, chain: Chain, block: str | None = None, char_length: float = 0.3) -> Health:
        """Singularity health of the chain's Jacobian at ``q`` (position block for the position task, else full)."""
        block = block or ("position" if self.task == "position" else "full")
        return health(kinematics.jacobian(chain, self.q), block, char_length)


def task_residual(task: str, T: np.ndarray, J: np.ndarray, T_target: np.ndarray, axis: np.ndarray):
    """Residual and task Jacobian of ``task`` at tool poses ``T: (k, 4, 4)`` with Jacobians ``J: (k, 6, n)``.

    ``T_target: (k, 4, 4)`` (only its translation is read for ``"position"``); ``axis: (3,)`` unit, tool frame.
    Returns ``e: (k, m)``, ``J_t: (k, m, n)``, ``position_error: (k,)`` (m), ``orientation_error: (k,)`` (rad).
    """
    dp = T_target[:, :3, 3] - T[:, :3, 3]
    perr = np.sqrt(np.einsum("ki,ki->k", dp, dp))
    if task == "position":
        return dp, J[:, :3], perr, np.zeros(len(dp))
    if task == "pose":
        e = tf.pose_error(T, T_target)
        return e, J, perr, np.sqrt(np.einsum("ki,ki->k", e[:, 3:], e[:, 3:]))
    z = T[:, :3, :3] @ axis
    z_t = T_target[:, :3, :3] @ axis
    s = np.cross(z, z_t)
    sin_t = np.sqrt(np.einsum("ki,ki->k", s, s))
    theta = np.arctan2(sin_t, np.einsum("ki,ki->k", z, z_t))
    w = s * np.where(sin_t > 0, theta / np.where(sin_t > 0, sin_t, 1.0), 1.0)[:, None]
    J_axis = J[:, 3:] - z[:, :, None] * (z[:, None, :] @ J[:, 3:])
    return np.concatenate([dp, w], axis=-1), np.concatenate([J[:, :3], J_axis], axis=-2), perr, theta


def _step(method, Jw, ew, mu, damping, sigma_healthy, lambda_max, rank):
    """Joint step ``dq: (k, n)`` of ``method`` from weighted ``Jw: (k, m, n)`` and ``ew: (k, m)``."""
    if method == "transpose":
        g = (np.swapaxes(Jw, -1, -2) @ ew[..., None])[..., 0]
        Jg = (Jw @ g[..., None])[..., 0]
        den = np.einsum("ki,ki->k", Jg, Jg)
        alpha = np.where(den > 0, np.einsum("ki,ki->k", ew, Jg) / np.where(den > 0, den, 1.0), 0.0)
        return alpha[:, None] * g
    if method == "pinv":
        lam = 0.0
    elif method == "dls":
        lam = damping
    elif method == "adaptive":
        sigma = np.linalg.svd(Jw, compute_uv=False)
        lam = adaptive_damping(sigma[:, min(rank, sigma.shape[1]) - 1], sigma_healthy, lambda_max)
    else:
        lam = np.sqrt(mu)
    return damped_solve(Jw, ew, lam)


def reach_bound(chain: Chain) -> float:
    """An upper bound (m) on the distance from the first joint's anchor to the tool point over all ``q``.

    Consecutive joint anchors are rigidly linked (a hinge moves everything after it rigidly), so the
    distance is at most the sum of the anchor-to-anchor offsets and the last offset to the tool, plus
    the travel of any slide joint. A position farther than this is provably unreachable.
    """
    links = np.linalg.norm(chain.T_prev_joint[1:, :3, 3], axis=-1).sum() + np.linalg.norm(chain.T_last_tool[:3, 3])
    slides = [i for i, t in enumerate(chain.joint_types) if t == "slide"]
    # A slide moves by q - q_ref, and q_ref may lie outside [lower, upper]: the farthest travel is to either end.
    return float(links + sum(max(abs(chain.upper[i] - chain.q_ref[i]), abs(chain.lower[i] - chain.q_ref[i]))
                             for i in slides))


@functools.lru_cache(maxsize=256)
def _chain_constants(chain: Chain) -> tuple[np.ndarray, tuple[float, float, float], float]:
    """``(_center(chain), first joint anchor (x, y, z), reach_bound(chain))``, memoised on the frozen chain's identity
    (as ``Chain.packed``): a single solve should not recompute them."""
    center = _center(chain)
    center.flags.writeable = False
    return center, tuple(kinematics.joint_frames(chain, chain.q_ref)[0][0, :3, 3].tolist()), reach_bound(chain)


@functools.lru_cache(maxsize=64)
def _seed0_draws(chain: Chain, restarts: int) -> np.ndarray:
    """``chain.random_q(default_rng(0), (1, restarts))``, read-only: the restarts of every single solve that
    passes no ``rng`` are the same numbers, so they are drawn once per chain and count."""
    draws = chain.random_q(np.random.default_rng(0), (1, restarts))
    draws.flags.writeable = False
    return draws


def _center(chain: Chain) -> np.ndarray:
    both = np.isfinite(chain.lower) & np.isfinite(chain.upper)
    return np.where(both, 0.5 * (np.where(both, chain.lower, 0) + np.where(both, chain.upper, 0)),
                    np.clip(0.0, chain.lower, chain.upper))


@dataclass(frozen=True)
class IKOptions:
    """The validated options of one solve, as they pass between the solver's parts (and its compiled twin)."""

    task: str
    method: str
    sqrt_weights: np.ndarray  # (m,) square roots of the per-row weights
    tol_position: float
    tol_orientation: float
    max_iterations: int
    restarts: int
    axis: np.ndarray  # (3,) unit, tool frame
    max_step: float
    damping: float
    sigma_healthy: float
    lambda_max: float
    patience: int


def check_options(*, task, method, weights, tol_position, tol_orientation, max_iterations, restarts, rng, axis,
                  max_step, damping, sigma_healthy, lambda_max, patience, kinematics_path="fast",
                  backend="compiled") -> IKOptions:
    """Every IK option checked once, each error naming its option; returns the :class:`IKOptions` record."""
    one_of(task, "task", TASKS)
    one_of(method, "method", METHODS)
    one_of(kinematics_path, "kinematics_path", tuple(KINEMATICS))
    one_of(backend, "backend", BACKENDS)
    if rng is not None:
        generator(rng)
    return IKOptions(
        task, method, _sqrt_weights(weights, task), positive(tol_position, "tol_position"),
        positive(tol_orientation, "tol_orientation"),
        count(DEFAULT_MAX_ITERATIONS[method] if max_iterations is None else max_iterations, "max_iterations", 1),
        count(restarts, "restarts", 0, MAX_RESTARTS), _unit_axis(axis), positive(max_step, "max_step"),
        nonnegative(damping, "damping"), positive(sigma_healthy, "sigma_healthy"), positive(lambda_max, "lambda_max"),
        count(DEFAULT_PATIENCE[method] if patience is None else patience, "patience", 1),
    )


def _sqrt_weights(weights, task: str) -> np.ndarray:
    m = TASK_ROWS[task]
    if weights is None:
        return _UNIT[m]
    w = finite_array(weights, "weights", (m,), f" for task={task!r}")
    if w.ndim != 1 or np.any(w <= 0):  # checked before the square root: sqrt(-1) would be a silent NaN
        raise InputError(f"weights: expected {m} positive numbers for task={task!r}, got {weights}")
    return np.sqrt(w)


def _unit_axis(axis) -> np.ndarray:
    if axis is _TOOL_Z:
        return _UNIT_Z
    a = finite_array(axis, "axis", (3,))
    if a.ndim != 1 or np.linalg.norm(a) == 0:
        raise InputError(f"axis: expected a nonzero 3-vector in the tool frame, got {axis}")
    return a / np.linalg.norm(a)


def check_targets(task: str, targets, batch_ndim: int) -> np.ndarray:
    """Targets as ``(B, 4, 4)``; a position task also takes 3-vectors. ``batch_ndim``: 0 single, 1 batch.

    The one check of a target on every IK path: finite, the right shape and, unless ``task="position"``, a
    rigid transform to ``TARGET_TOL`` (an FK pose stored as float32 passes). A rotation block off by more
    than round-off is replaced by the nearest rotation, so every later step sees an exact one.
    """
    if (isinstance(targets, np.ndarray) and targets.dtype == np.float64 and targets.ndim == batch_ndim + 2
            and targets.shape[-2:] == (4, 4)):
        t = targets.reshape(-1, 4, 4)
        if fast_ik.targets_ok(t, task != "position", _ROUND_OFF):  # the usual case in one compiled pass
            return t
    t = finite_array(targets, "target")
    if task == "position" and t.ndim == batch_ndim + 1 and t.shape[-1] == 3:
        return tf.translation(t).reshape(-1, 4, 4)
    if t.ndim != batch_ndim + 2 or t.shape[-2:] != (4, 4):
        want = "a 3-vector or a 4x4 T_world_target" if task == "position" else "a 4x4 T_world_target"
        lead = "(B, ...) of " if batch_ndim else ""
        raise InputError(f"target: expected {lead}{want} for task={task!r}, got shape {t.shape}")
    t = t.reshape(-1, 4, 4)
    if task == "position":
        return t
    # A reflection passes R R^T = I but has no rotation vector: det and bottom row are checked too.
    t = tf.check_transform(t, "target", tol=TARGET_TOL).copy()
    t[:, :3, :3] = tf.orthonormalize(t[:, :3, :3])
    t[:, 3] = (0.0, 0.0, 0.0, 1.0)
    return t


def solve_ik_batch(
    chain: Chain,
    targets,
    q0=None,
    *,
    task: str = "pose",
    method: str = "lm",
    weights=None,
    tol_position: float = 1e-4,
    tol_orientation: float = 1e-3,
    max_iterations: int | None = None,
    restarts: int = DEFAULT_RESTARTS,
    rng: np.random.Generator | None = None,
    axis=_TOOL_Z,
    max_step: float = 0.5,
    damping: float = 0.02,
    sigma_healthy: float = 0.03,
    lambda_max: float = 0.05,
    patience: int | None = None,
    trace: list | None = None,
    kinematics_path: str = "fast",
    backend: str = "compiled",
    _single: bool = False,
) -> list[IKResult]:
    """Solve many targets at once; returns one :class:`IKResult` per target (a list).

    The compiled backend (default for ``"lm"``) runs every target's whole solve in one numba call; the
    NumPy backend steps all targets together, vectorised over them. Both give each target the same attempts.

    ``targets: (B, 4, 4)`` (or ``(B, 3)`` for ``task="position"``); ``q0``: ``None`` (the middle of the
    limits), ``(n,)`` for all or ``(B, n)``, inside the joint limits (a seed outside them is refused,
    naming the joint). Each target runs its attempts in turn: first from ``q0``, then from up to
    ``restarts`` random joint vectors inside the limits, drawn up front from ``rng`` (``default_rng(0)``
    when ``None``) as ``chain.random_q(rng, (B, restarts))``. Because target ``b``
    uses exactly the ``b``-th block of that draw, ``solve_ik`` in a loop over one shared generator gives
    the same results as one batched call. Options are those of :func:`solve_ik`.
    """
    o = check_options(task=task, method=method, weights=weights, tol_position=tol_position,
                      tol_orientation=tol_orientation, max_iterations=max_iterations, restarts=restarts, rng=rng,
                      axis=axis, max_step=max_step, damping=damping, sigma_healthy=sigma_healthy,
                      lambda_max=lambda_max, patience=patience, kinematics_path=kinematics_path, backend=backend)
    pose_and_jacobian = KINEMATICS[kinematics_path]
    T_target = check_targets(task, targets, 0 if _single else 1)
    B, n = len(T_target), chain.n
    m = TASK_ROWS[task]
    sw, a, iters, patience = o.sqrt_weights, o.axis, o.max_iterations, o.patience
    center, base, reach = _chain_constants(chain)
    q0 = center if q0 is None else chain.check_q(q0, "q0", within_limits=True)
    if q0.shape not in ((n,), (B, n)):
        raise InputError(f"q0: expected shape ({n},) or ({B}, {n}) for {B} target(s), got {q0.shape}")
    # Restarts drawn up front: target b uses exactly the b-th block, so looped solves equal one batch.
    draws = _seed0_draws(chain, restarts) if rng is None and B == 1 else chain.random_q(
        np.random.default_rng(0) if rng is None else rng, (B, restarts))
    n_far = min(1 + restarts, 1 + UNREACHABLE_RESTARTS)
    if backend == "compiled" and method == "lm" and trace is None and kinematics_path == "fast":
        out, out_int = np.empty((B, n + 2)), np.empty((B, 3), np.int64)
        fast_ik.solve_batch(
            chain.packed, chain.lower, chain.upper, T_target, a, sw, q0.reshape(-1, n), draws,
            np.array([fast_ik.TASK_CODES[task], iters, patience, 1 + restarts, n_far]),
            np.array([tol_position, tol_orientation, max_step, _LM_MU0, _LM_DOWN, _LM_UP, _LM_MU_MIN,
                      reach + tol_position, *base]), out, out_int)
        return _results(out[:, :n], out_int[:, 2], out_int[:, 0], out[:, n], out[:, n + 1], out_int[:, 1],
                        method, task, tol_position, tol_orientation)
    # Provably unreachable positions (beyond reach_bound) need no search for a hidden solution: a few
    # attempts find the closest point.
    beyond = np.linalg.norm(T_target[:, :3, 3] - base, axis=-1) > reach + tol_position
    n_attempts = np.where(beyond, n_far, 1 + restarts)
    starts = np.concatenate([np.broadcast_to(q0, (B, n))[:, None], draws], axis=1)  # (B, A, n)

    # Per-target state; "fresh" rows evaluate their next start instead of stepping.
    q = starts[:, 0].copy()
    Jw = np.zeros((B, m, n))
    ew = np.zeros((B, m))
    E = np.full(B, np.inf)
    cur_perr, cur_oerr = np.full(B, np.inf), np.full(B, np.inf)
    mu = np.full(B, _LM_MU0)
    fresh = np.ones(B, bool)
    attempt = np.zeros(B, int)
    it_attempt = np.zeros(B, int)
    it_total = np.zeros(B, int)
    E_ref = np.full(B, np.inf)
    no_progress = np.zeros(B, int)
    active = np.ones(B, bool)
    converged = np.zeros(B, bool)
    best_q, best_E = q.copy(), np.full(B, np.inf)
    best_perr, best_oerr = np.full(B, np.inf), np.full(B, np.inf)
    ended_by_limit = np.zeros(B, bool)  # some attempt was still improving when its budget ran out
    polishing = np.zeros(B, bool)  # the final attempt: refine the best point to its stationary point
    progress = np.full(B, 0.99)

    while active.any():
        r = np.flatnonzero(active)
        step_args = (mu[r], damping, sigma_healthy, lambda_max, TASK_RANK[task])
        dq = _step(method, Jw[r], ew[r], *step_args)
        # Joints resting on a limit that the step pushes further out are frozen (their columns removed)
        # and the step recomputed, so the other joints keep making progress along the boundary.
        blocked = ((q[r] <= chain.lower) & (dq < 0)) | ((q[r] >= chain.upper) & (dq > 0))
        rows = np.flatnonzero(blocked.any(axis=1))
        if len(rows):
            Jb = Jw[r[rows]] * ~blocked[rows][:, None, :]
            dq[rows] = _step(method, Jb, ew[r[rows]], *(x[rows] if np.ndim(x) else x for x in step_args))
        dq, _ = scale_to_limit(dq, max_step)
        trial = np.clip(q[r] + dq, chain.lower, chain.upper)
        f = fresh[r]
        rf = r[f]
        trial[f] = np.where(polishing[rf, None], best_q[rf], starts[rf, np.minimum(attempt[rf], starts.shape[1] - 1)])
        T, J = pose_and_jacobian(chain, trial)
        e, Jt, perr, oerr = task_residual(task, T, J, T_target[r], a)
        e_w, J_w = e * sw, Jt * sw[:, None]
        E_t = 0.5 * np.einsum("ki,ki->k", e_w, e_w)

        accept = f | (E_t < E[r]) if method == "lm" else np.ones(len(r), bool)
        ra = r[accept]
        q[ra], Jw[ra], ew[ra], E[ra] = trial[accept], J_w[accept], e_w[accept], E_t[accept]
        cur_perr[ra], cur_oerr[ra] = perr[accept], oerr[accept]
        mu[r] = np.where(f, _LM_MU0, np.maximum(mu[r] * np.where(accept, _LM_DOWN, _LM_UP), _LM_MU_MIN))
        it_attempt[r] = np.where(f, 0, it_attempt[r] + 1)
        it_total[r] += ~f
        better = E_t < best_E[r]
        rb = r[better]
        best_q[rb], best_E[rb], best_perr[rb], best_oerr[rb] = trial[better], E_t[better], perr[better], oerr[better]
        fresh[r] = False
        if trace is not None:
            trace.append((r, it_total[r].copy(), cur_perr[r].copy(), cur_oerr[r].copy()))

        ok = (perr <= tol_position) & (oerr <= tol_orientation) & accept
        converged[r[ok]] = True
        # Progress: an attempt's error must fall by 1 % within `patience` steps, else it sits near a
        # stationary point (a local minimum, or the closest pose to an unreachable target) and the next
        # start is tried. When all have failed, the best point is polished until it stops improving at all.
        improved = f | (E[r] < progress[r] * E_ref[r])
        E_ref[r] = np.where(improved, E[r], E_ref[r])
        no_progress[r] = np.where(improved, 0, no_progress[r] + 1)
        at_limit = it_attempt[r] >= iters
        end = ~ok & (at_limit | (no_progress[r] >= patience))
        re = r[end]
        finished = polishing[re]
        ended_by_limit[re[~finished]] |= at_limit[end][~finished]
        nxt = re[~finished]
        attempt[nxt] += 1
        polishing[nxt] = attempt[nxt] >= n_attempts[nxt]
        progress[nxt] = np.where(polishing[nxt], 1.0 - 1e-6, progress[nxt])
        fresh[nxt] = True
        E[nxt] = np.inf
        E_ref[nxt] = np.inf
        no_progress[nxt] = 0
        active[r[ok]] = False
        active[re[finished]] = False

    c = converged[:, None]
    return _results(np.where(c, q, best_q), np.where(converged, 0, np.where(ended_by_limit, 2, 1)), it_total,
                    np.where(converged, cur_perr, best_perr), np.where(converged, cur_oerr, best_oerr),
                    np.where(converged, np.minimum(attempt, starts.shape[1] - 1), n_attempts - 1),
                    method, task, tol_position, tol_orientation)


def _results(q, outcome, iterations, perr, oerr, used, method, task, tol_position, tol_orientation) -> list[IKResult]:
    """One :class:`IKResult` per row: ``q (B, n)`` the converged or best point, ``outcome (B,)`` an index into
    :data:`REASONS`, its ``iterations``, errors and restarts ``used`` (both backends end here)."""
    results = []
    for b in range(len(q)):
        perr_b, oerr_b = float(perr[b]), float(oerr[b])
        conv = outcome[b] == 0
        unmet = () if conv else tuple(
            part for part, err, tol in (("position", perr_b, tol_position), ("orientation", oerr_b, tol_orientation))
            if err > tol
        )
        results.append(IKResult(q[b].copy(), bool(conv), int(iterations[b]), perr_b, oerr_b, REASONS[outcome[b]],
                                int(used[b]), method, task, unmet))
    return results


def solve_ik(
    chain: Chain,
    target,
    q0=None,
    *,
    task: str = "pose",
    method: str = "lm",
    weights=None,
    tol_position: float = 1e-4,
    tol_orientation: float = 1e-3,
    max_iterations: int | None = None,
    restarts: int = DEFAULT_RESTARTS,
    rng: np.random.Generator | None = None,
    axis=_TOOL_Z,
    max_step: float = 0.5,
    damping: float = 0.02,
    sigma_healthy: float = 0.03,
    lambda_max: float = 0.05,
    patience: int | None = None,
    trace: list | None = None,
    kinematics_path: str = "fast",
    backend: str = "compiled",
) -> IKResult:
    """Joint positions that put the chain's tool on ``target``; never raises for unreachable targets.

    ``target``: a 4x4 ``T_world_target`` (world frame, m) for ``task="pose"`` or ``"position+axis"``,
    a 3-vector or 4x4 for ``"position"``. ``task`` and ``method``: see the module docstring
    (``"lm"`` is the default and the best). ``weights``: per residual row (6 for pose and
    position+axis, 3 for position), default ones. ``tol_position`` (m), ``tol_orientation`` (rad).
    ``max_iterations`` per attempt (``None``: :data:`DEFAULT_MAX_ITERATIONS` of the method);
    ``restarts``: at most this many further attempts from seeded random joint vectors inside the limits
    (``rng``, default ``default_rng(0)``), tried only when the previous attempt failed (at most
    :data:`UNREACHABLE_RESTARTS` for positions beyond :func:`reach_bound`); an attempt stops
    when its error has not fallen by 1 % within ``patience`` steps (``None``: :data:`DEFAULT_PATIENCE`). ``axis``: tool-frame axis aligned by
    ``"position+axis"``. ``max_step`` (rad or m): the largest joint change per step, applied by uniform
    scaling. ``damping``: ``lam`` of ``"dls"``; ``sigma_healthy``, ``lambda_max``: ``"adaptive"``'s ramp.
    ``trace``: a list that receives, after every step, ``(rows, iterations, position_error,
    orientation_error)`` arrays of the current (accepted) point of each active target (convergence curves).
    ``kinematics_path``: ``"fast"`` (compiled :mod:`physai.fast`, the default) or ``"reference"`` (the
    NumPy :func:`physai.kinematics.tool_pose_and_jacobian` the lessons teach); both give the same solutions.
    ``backend``: ``"compiled"`` (default) runs each target's whole ``"lm"`` solve in one compiled call
    (:mod:`physai.fast_ik`, same algorithm); ``"numpy"`` the vectorised NumPy loop of this module, which
    also serves the other methods, ``trace`` and ``kinematics_path="reference"``.

    The returned ``q`` is always inside the joint limits; unconverged results carry the closest point
    found (smallest weighted error over every attempt, then refined until it stops improving) and
    ``unmet`` names what is not achieved.
    """
    return solve_ik_batch(
        chain, target, q0, task=task, method=method, weights=weights, tol_position=tol_position,
        tol_orientation=tol_orientation, max_iterations=max_iterations, restarts=restarts, rng=rng, axis=axis,
        max_step=max_step, damping=damping, sigma_healthy=sigma_healthy, lambda_max=lambda_max,
        patience=patience, trace=trace, kinematics_path=kinematics_path, backend=backend, _single=True,
    )[0]
