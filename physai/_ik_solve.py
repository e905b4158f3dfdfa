"""The plain IK solvers below :mod:`physai.ik`'s public entry (private): they take its checked
:class:`~physai._ik_record.IKProblem` and answer :class:`~physai._ik_record.Rows`, checking nothing again.

Two backends of one Levenberg-Marquardt algorithm (and the NumPy loop's other methods, :mod:`physai.ik`'s
docstring): the whole solve of each target in one compiled call (:mod:`physai._numba_ik`), the targets shared among
threads, or the vectorised NumPy loop here, all targets stepped together (the readable reference).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from physai import _engine, _ik_record, kinematics
from physai._threads import THREAD_MIN_TARGETS
from physai._threads import in_threads as _in_threads
from physai import transforms as tf
from physai._ik_record import IKOptions, IKProblem, Rows
from physai.kinematics import Chain
from physai.singularity import damped_solve_trusted, scale_to_limit_trusted, adaptive_damping

UNREACHABLE_RESTARTS = 3  # restarts for targets farther than reach_bound (chain.reach)
TASK_ROWS = {"pose": 6, "position": 3, "position+axis": 6}
TASK_RANK = {"pose": 6, "position": 3, "position+axis": 5}
# Levenberg-Marquardt damping schedule (lam^2, in (m/rad)^2 like sigma^2).
LM_MU0, LM_DOWN, LM_UP, LM_MU_MIN = 1e-4, 0.3, 10.0, 1e-12


def solve(p: IKProblem) -> Rows:
    """Every target's plain solve: its attempts from ``p.q0`` and then its restart draws (``p.uniforms`` mapped
    into the limits), by the compiled solve where ``p.compiled``, else the NumPy loop."""
    chain, o = p.chain, p.options
    n_far = min(1 + o.restarts, 1 + UNREACHABLE_RESTARTS)
    if p.compiled:
        return _compiled_rows(*_solve_compiled(chain, p.T_target, p.q0, p.uniforms, o, n_far), chain.n)
    B, n = len(p.T_target), chain.n
    # Provably unreachable positions (beyond reach_bound) need no search for a hidden solution: a few
    # attempts find the closest point.
    base = chain.T_prev_joint[0, :3, 3]  # the first joint's anchor at q_ref
    beyond = np.linalg.norm(p.T_target[:, :3, 3] - base, axis=-1) > chain.reach + o.tol_position
    n_attempts = np.where(beyond, n_far, 1 + o.restarts)
    starts = np.concatenate([np.broadcast_to(p.q0, (B, n))[:, None], starts_of(chain, p.uniforms)], axis=1)
    kin = functools.partial(kinematics.pose_and_jacobian_trusted, engine=p.engine)
    return _solve_numpy(chain, p.T_target, starts, n_attempts, o, kin, p.trace)


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
        e = tf.pose_error_trusted(T, T_target)
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
    return damped_solve_trusted(Jw, ew, lam)


def limit_blocked(q, dq, lower, upper):
    """The joint-limit freeze rule: which joints rest on a limit that the step ``dq`` pushes further out.

    ``q, dq: (..., n)``, ``lower, upper: (n,)`` -> bool ``(...,n)``. Such a joint loses its Jacobian column and the
    step is solved again, so the other joints keep moving along the boundary instead of stalling there. Plain
    operators only, so ``jax.numpy`` arrays work too; the compiled solver's copy is tested equal.
    """
    return ((q <= lower) & (dq < 0)) | ((q >= upper) & (dq > 0))


def restart_draws(chain: Chain, rng: np.random.Generator | None, B: int, restarts: int) -> np.ndarray:
    """The restart poses of ``B`` targets, ``(B, restarts, n)``: ``chain.random_q(rng, (B, restarts))``, drawn up
    front from ``rng`` (``default_rng(0)`` when None). Target ``b`` uses exactly the ``b``-th block, so solving
    targets one by one from one shared generator equals one batched solve."""
    return starts_of(chain, restart_uniforms(chain, rng, B, restarts))


def starts_of(chain: Chain, uniforms: np.ndarray) -> np.ndarray:
    """Joint vectors ``(..., n)`` from numbers in [0, 1) ``(..., n)``: ``chain.random_q``'s map into the limits, bit
    for bit (as the compiled solver maps a restart it tries)."""
    low, high = chain.sample_range
    return low + (high - low) * uniforms


@functools.lru_cache(maxsize=64)
def _seed0_uniforms(n: int, restarts: int) -> np.ndarray:
    """``default_rng(0).random((1, restarts, n))``, read-only: the restarts of every single solve that passes no
    ``rng`` are the same numbers, so they are drawn once per joint count and restart count."""
    uniforms = np.random.default_rng(0).random((1, restarts, n))
    uniforms.flags.writeable = False
    return uniforms


def restart_uniforms(chain: Chain, rng: np.random.Generator | None, B: int, restarts: int) -> np.ndarray:
    """The numbers in [0, 1) behind :func:`restart_draws`, ``(B, restarts, n)``: drawn from ``rng`` exactly as
    ``chain.random_q`` draws them, so the generator ends in the same state. The compiled solver maps a restart into
    the limits only when it tries it (:func:`physai._numba_ik.restart_start`, ``chain.random_q``'s map), which
    spares every batch two passes over numbers that most targets never use."""
    if rng is None and B == 1:
        return _seed0_uniforms(chain.n, restarts)
    return (np.random.default_rng(0) if rng is None else rng).random((B, restarts, chain.n))


def _solve_compiled(chain: Chain, T_target, q0, uniforms, o: IKOptions, n_far: int) -> tuple[np.ndarray, np.ndarray]:
    """Every target's whole LM solve in compiled code (:mod:`physai._numba_ik`, the same algorithm), the targets
    shared among threads (:func:`_in_threads`).

    Returns the kernel's rows: ``out (B, n + 2)`` the converged (or best) ``q``, its position and orientation errors;
    ``out_int (B, 3)`` the steps over all attempts, the restarts used and the outcome (an index into :data:`REASONS`).
    """
    B, n = len(T_target), chain.n
    out, out_int = np.empty((B, n + 2)), np.empty((B, 3), np.int64)
    settings = compiled_settings(chain, o, 1 + o.restarts, n_far)
    q_first, kernel = q0.reshape(-1, n), _engine.kernels.solve_batch

    def rows(lo: int, hi: int) -> None:
        kernel(chain.packed, chain.lower, chain.upper, T_target[lo:hi], o.axis, o.sqrt_weights,
               q_first if len(q_first) == 1 else q_first[lo:hi], uniforms[lo:hi], chain.sample_range, settings,
               out[lo:hi], out_int[lo:hi])

    _in_threads(rows, B)
    return out, out_int


def one_target_solver(chain: Chain, o: IKOptions) -> Callable[[np.ndarray, np.ndarray], Rows]:
    """``solve_one(T_target, q0) -> Rows``: one target's compiled solve with no ``rng``, the rows :func:`solve` gives
    for ``B = 1``, its settings and restart draws prepared here once, for a loop that solves one target per tick
    (no problem record, thread pool or settings' rebuild per call). Trusts everything: ``T_target`` a checked
    ``(1, 4, 4)``, ``q0`` float64 ``(n,)`` inside the limits, ``o`` an ``"lm"`` solve."""
    n = chain.n
    uniforms = restart_uniforms(chain, None, 1, o.restarts)
    settings = compiled_settings(chain, o, 1 + o.restarts, min(1 + o.restarts, 1 + UNREACHABLE_RESTARTS))

    def solve_one(T_target: np.ndarray, q0: np.ndarray) -> Rows:
        out, out_int = np.empty((1, n + 2)), np.empty((1, 3), np.int64)
        _engine.kernels.solve_batch(chain.packed, chain.lower, chain.upper, T_target, o.axis, o.sqrt_weights,
                                    q0.reshape(1, n), uniforms, chain.sample_range, settings, out, out_int)
        return _compiled_rows(out, out_int, n)

    return solve_one


def _compiled_rows(out: np.ndarray, out_int: np.ndarray, n: int) -> Rows:
    """The :class:`Rows` of the compiled kernel's ``out (B, n + 2)`` and ``out_int (B, 3)``."""
    return Rows(out[:, :n], out_int[:, 2], out_int[:, 0], out[:, n], out[:, n + 1], out_int[:, 1])


def compiled_settings(chain: Chain, o: IKOptions, attempts: int, attempts_far: int) -> np.ndarray:
    """The compiled solver's :data:`physai._ik_record.SETTINGS` record of options ``o``: ``attempts`` per target,
    ``attempts_far`` for a position provably beyond the chain's reach."""
    return _settings(o.task, o.max_iterations, o.patience, attempts, attempts_far, o.tol_position, o.tol_orientation,
                     o.max_step, chain.reach + o.tol_position, tuple(chain.T_prev_joint[0, :3, 3].tolist()), o.polish)


@functools.lru_cache(maxsize=256)  # a loop that solves one target per tick passes the same settings every tick
def _settings(task, iterations, patience, attempts, attempts_far, tol_position, tol_orientation, max_step, reach, base,
              polish) -> np.ndarray:
    settings = _ik_record.settings(
        task=task, iterations=iterations, patience=patience, attempts=attempts, attempts_far=attempts_far,
        tol_position=tol_position, tol_orientation=tol_orientation, max_step=max_step, mu0=LM_MU0, mu_down=LM_DOWN,
        mu_up=LM_UP, mu_min=LM_MU_MIN, reach=reach, base=base, polish=polish)
    settings.flags.writeable = False
    return settings


def _solve_numpy(chain: Chain, T_target, starts, n_attempts, o: IKOptions, pose_and_jacobian, trace) -> Rows:
    """The NumPy loop, all targets stepped together: propose, evaluate, accept, advance (lesson 11's steps)."""
    task, method, tol_position, tol_orientation = o.task, o.method, o.tol_position, o.tol_orientation
    s = _LoopState.start(starts, TASK_ROWS[task])
    while s.active.any():
        r = np.flatnonzero(s.active)
        trial = _propose(s, r, o, chain, starts)
        T, J = pose_and_jacobian(chain, trial)
        e, Jt, perr, oerr = task_residual(task, T, J, T_target[r], o.axis)
        accept = _accept(s, r, trial, e * o.sqrt_weights, Jt * o.sqrt_weights[:, None], perr, oerr, method)
        if trace is not None:
            trace.append((r, s.it_total[r].copy(), s.perr[r].copy(), s.oerr[r].copy()))
        _advance(s, r, (perr <= tol_position) & (oerr <= tol_orientation) & accept, o, n_attempts)
    c, conv = s.converged[:, None], s.converged
    outcome = np.where(conv, _ik_record.CONVERGED,
                       np.where(s.ended_by_limit, _ik_record.ITERATION_LIMIT, _ik_record.BEST_EFFORT))
    return Rows(np.where(c, s.q, s.best_q), outcome, s.it_total, np.where(conv, s.perr, s.best_perr),
                np.where(conv, s.oerr, s.best_oerr),
                np.where(conv, np.minimum(s.attempt, starts.shape[1] - 1), n_attempts - 1))


@dataclass
class _LoopState:
    """Per-target state of the NumPy loop, row ``b`` for target ``b``; ``fresh`` rows evaluate their next start
    instead of stepping; ``polishing`` rows refine the best point found, after every attempt has failed."""

    q: np.ndarray  # (B, n) current (accepted) point
    Jw: np.ndarray  # (B, m, n) weighted task Jacobian there
    ew: np.ndarray  # (B, m) weighted residual there
    E: np.ndarray  # (B,) its cost 0.5 |ew|^2
    perr: np.ndarray  # (B,) its position error (m)
    oerr: np.ndarray  # (B,) its orientation error (rad)
    mu: np.ndarray  # (B,) LM damping
    fresh: np.ndarray
    attempt: np.ndarray  # index of the start in use
    it_attempt: np.ndarray  # steps in this attempt
    it_total: np.ndarray  # steps over all attempts
    E_ref: np.ndarray  # cost at the last 1 % improvement
    no_progress: np.ndarray  # steps since then
    active: np.ndarray
    converged: np.ndarray
    best_q: np.ndarray
    best_E: np.ndarray
    best_perr: np.ndarray
    best_oerr: np.ndarray
    ended_by_limit: np.ndarray  # some attempt was still improving when its budget ran out
    polishing: np.ndarray
    progress: np.ndarray  # the factor E must fall below within `patience` steps

    @classmethod
    def start(cls, starts: np.ndarray, m: int) -> _LoopState:
        B, _, n = starts.shape
        inf, zeros = (lambda: np.full(B, np.inf)), (lambda dtype=int: np.zeros(B, dtype))
        return cls(starts[:, 0].copy(), np.zeros((B, m, n)), np.zeros((B, m)), inf(), inf(), inf(),
                   np.full(B, LM_MU0), np.ones(B, bool), zeros(), zeros(), zeros(), inf(), zeros(),
                   np.ones(B, bool), zeros(bool), starts[:, 0].copy(), inf(), inf(), inf(), zeros(bool), zeros(bool),
                   np.full(B, 0.99))


def _propose(s: _LoopState, r: np.ndarray, o: IKOptions, chain: Chain, starts: np.ndarray) -> np.ndarray:
    """The next point of each active row ``r``: one step from ``q`` (limit-frozen, scaled, clipped), or a start."""
    step_args = (s.mu[r], o.damping, o.sigma_healthy, o.lambda_max, TASK_RANK[o.task])
    dq = _step(o.method, s.Jw[r], s.ew[r], *step_args)
    blocked = limit_blocked(s.q[r], dq, chain.lower, chain.upper)
    rows = np.flatnonzero(blocked.any(axis=1))
    if len(rows):
        Jb = s.Jw[r[rows]] * ~blocked[rows][:, None, :]
        dq[rows] = _step(o.method, Jb, s.ew[r[rows]], *(x[rows] if np.ndim(x) else x for x in step_args))
    dq, _ = scale_to_limit_trusted(dq, o.max_step)
    trial = np.clip(s.q[r] + dq, chain.lower, chain.upper)
    f = s.fresh[r]
    rf = r[f]
    trial[f] = np.where(s.polishing[rf, None], s.best_q[rf], starts[rf, np.minimum(s.attempt[rf], starts.shape[1] - 1)])
    return trial


def _accept(s: _LoopState, r, trial, e_w, J_w, perr, oerr, method: str) -> np.ndarray:
    """LM's rule: a fresh start is always taken, a step only if it lowers the cost (other methods take every
    step); the damping falls on success and rises on failure. Tracks the best point. Returns the accept mask."""
    E_t = 0.5 * np.einsum("ki,ki->k", e_w, e_w)
    f = s.fresh[r]
    accept = f | (E_t < s.E[r]) if method == "lm" else np.ones(len(r), bool)
    ra = r[accept]
    s.q[ra], s.Jw[ra], s.ew[ra], s.E[ra] = trial[accept], J_w[accept], e_w[accept], E_t[accept]
    s.perr[ra], s.oerr[ra] = perr[accept], oerr[accept]
    s.mu[r] = np.where(f, LM_MU0, np.maximum(s.mu[r] * np.where(accept, LM_DOWN, LM_UP), LM_MU_MIN))
    s.it_attempt[r] = np.where(f, 0, s.it_attempt[r] + 1)
    s.it_total[r] += ~f
    better = E_t < s.best_E[r]
    rb = r[better]
    s.best_q[rb], s.best_E[rb], s.best_perr[rb], s.best_oerr[rb] = trial[better], E_t[better], perr[better], oerr[better]
    s.fresh[r] = False
    return accept


def _advance(s: _LoopState, r: np.ndarray, ok: np.ndarray, o: IKOptions, n_attempts: np.ndarray) -> None:
    """Stop converged rows; end attempts that stall or hit their budget and move them to their next start.

    Progress: an attempt's error must fall by 1 % within ``patience`` steps, else it sits near a stationary
    point (a local minimum, or the closest pose to an unreachable target) and the next start is tried. When
    all have failed, the best point is polished until it stops improving at all.
    """
    s.converged[r[ok]] = True
    improved = (s.it_attempt[r] == 0) | (s.E[r] < s.progress[r] * s.E_ref[r])  # a fresh start counts as progress
    s.E_ref[r] = np.where(improved, s.E[r], s.E_ref[r])
    s.no_progress[r] = np.where(improved, 0, s.no_progress[r] + 1)
    at_limit = s.it_attempt[r] >= o.max_iterations
    end = ~ok & (at_limit | (s.no_progress[r] >= o.patience))
    re = r[end]
    finished = s.polishing[re]
    s.ended_by_limit[re[~finished]] |= at_limit[end][~finished]
    nxt = re[~finished]
    s.attempt[nxt] += 1
    s.polishing[nxt] = s.attempt[nxt] >= n_attempts[nxt]
    if not o.polish:
        s.active[nxt[s.polishing[nxt]]] = False
    s.progress[nxt] = np.where(s.polishing[nxt], 1.0 - 1e-6, s.progress[nxt])
    s.fresh[nxt] = True
    s.E[nxt], s.E_ref[nxt], s.no_progress[nxt] = np.inf, np.inf, 0
    s.active[r[ok]] = False
    s.active[re[finished]] = False
