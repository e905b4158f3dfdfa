"""Batched damped-least-squares IK for millions of targets: one formula, run by NumPy or by JAX (jit, GPU).

The iteration is written once against the array API both NumPy and ``jax.numpy`` provide
(:func:`_dls_step`). ``backend="numpy"`` runs it with the compiled :mod:`physai.kinematics` engine and is the
reference; ``backend="jax"`` runs it under ``jax.jit`` with ``jax.vmap`` of :mod:`physai.jaxkin`
(float64) inside ``lax.fori_loop``, on a GPU when JAX finds one; the two are tested equal to 1e-12.

One DLS step for a batch of targets (every array has a leading target axis ``B``):

- residual ``e``: ``p_target - p`` (m) for ``task="position"``; for ``"pose"`` also the rotation
  vector ``log(R_target R^T)`` (rad, world frame), with task Jacobian ``J_t`` = the rows of ``J`` asked;
- ``dq = J_t^T (J_t J_t^T + damping^2 I)^-1 e``, scaled down uniformly to ``|dq| <= max_step``, then
  ``q + dq`` clipped into the joint limits;
- a target whose errors are within ``tol_position`` (m) and ``tol_orientation`` (rad) is frozen.

Each attempt runs ``max_iterations`` steps (the batch moves in lockstep; converged targets stay put);
``restarts`` further attempts start the unconverged targets from random joint vectors (drawn up front from
the passed ``numpy.random.Generator``), at most ``UNREACHABLE_RESTARTS`` for a position beyond
:func:`physai.ik.reach_bound`, as in :func:`physai.ik.solve_ik_batch`, whose names and defaults these are.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from physai._extras import require
from physai._validate import count, generator, one_of, positive
from physai.errors import InputError
from physai._ik_options import DEFAULT_MAX_ITERATIONS, DEFAULT_RESTARTS, MAX_RESTARTS, check_targets
from physai._ik_record import ITERATION_LIMIT, IKOptions
from physai._ik_result import IKBatchResult, batch_result
from physai._ik_solve import UNREACHABLE_RESTARTS, limit_blocked, restart_draws
from physai.kinematics import Chain, tool_pose_and_jacobian

TASKS = ("pose", "position")
BACKENDS = ("numpy", "jax")


def _rotation_error(xp, R_target, R):
    """Rotation vector of ``R_target R^T`` (world frame, rad) ``(B, 3)`` and its angle ``(B,)``.

    The twin of :func:`physai.transforms.so3_log` (tested equal): Shepperd's quaternion from the largest of
    its four diagonal combinations, then ``2 atan2(|v|, w)`` along ``v``. Accurate near 0 and near 180
    degrees, where it still gives a full-size step (about an arbitrary one of the two equal directions).
    """
    E = R_target @ xp.swapaxes(R, -1, -2)
    m00, m11, m22 = E[:, 0, 0], E[:, 1, 1], E[:, 2, 2]
    c = xp.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], axis=-1)
    d21, d02, d10 = E[:, 2, 1] - E[:, 1, 2], E[:, 0, 2] - E[:, 2, 0], E[:, 1, 0] - E[:, 0, 1]
    s01, s02, s12 = E[:, 0, 1] + E[:, 1, 0], E[:, 0, 2] + E[:, 2, 0], E[:, 1, 2] + E[:, 2, 1]
    k = xp.argmax(c, axis=-1)[:, None]
    s = 2.0 * xp.sqrt(xp.max(c, axis=-1))  # >= 2: the four sum to 4
    h = s / 4
    quats = [xp.stack(x, axis=-1) for x in (
        (h, d21 / s, d02 / s, d10 / s), (d21 / s, h, s01 / s, s02 / s),
        (d02 / s, s01 / s, h, s12 / s), (d10 / s, s02 / s, s12 / s, h))]
    q = xp.where(k == 0, quats[0], xp.where(k == 1, quats[1], xp.where(k == 2, quats[2], quats[3])))
    q = xp.where(q[:, :1] < 0, -q, q)  # w >= 0: the angle is at most pi
    v = q[:, 1:]
    n = xp.sqrt(xp.sum(v * v, axis=-1))
    theta = 2.0 * xp.arctan2(n, q[:, 0])
    scale = xp.where(n == 0, 2.0, theta / xp.where(n == 0, 1.0, n))
    return scale[:, None] * v, theta


def _errors(xp, task, T, J, p_target, R_target):
    """Residual ``e (B, m)``, task Jacobian ``(B, m, n)``, position and orientation errors ``(B,)``."""
    dp = p_target - T[:, :3, 3]
    perr = xp.sqrt(xp.sum(dp * dp, axis=-1))
    if task == "position":
        return dp, J[:, :3], perr, xp.zeros_like(perr)
    w, theta = _rotation_error(xp, R_target, T[:, :3, :3])
    return xp.concatenate([dp, w], axis=-1), J, perr, theta


def _converged(xp, kin, task, tols, p_target, R_target, q):
    """``(converged (B,), position_error (B,), orientation_error (B,))`` at ``q (B, n)``."""
    T, J = kin(q)
    _, _, perr, oerr = _errors(xp, task, T, J, p_target, R_target)
    return (perr <= tols[0]) & (oerr <= tols[1]), perr, oerr


def _damped(xp, Jt, e, damping):
    """``J^T (J J^T + damping^2 I)^-1 e`` per target: ``(B, m, n)``, ``(B, m)`` -> ``(B, n)``.

    :func:`physai.singularity.damped_solve` (the readable SVD form, tested equal) by one linear solve, which
    ``jax.jit`` runs fast on a GPU."""
    A = Jt @ xp.swapaxes(Jt, -1, -2) + damping**2 * xp.eye(Jt.shape[1])
    return (xp.swapaxes(Jt, -1, -2) @ xp.linalg.solve(A, e[:, :, None]))[:, :, 0]


def _dls_step(xp, kin, task, opts, lower, upper, p_target, R_target, state):
    """One DLS iteration on ``state = (q (B, n), done (B,), iterations (B,))``; ``kin(q) -> (T, J)`` batched."""
    q, done, its = state
    damping, max_step, tol_p, tol_o = opts
    T, J = kin(q)
    e, Jt, perr, oerr = _errors(xp, task, T, J, p_target, R_target)
    done = done | ((perr <= tol_p) & (oerr <= tol_o))
    dq = _damped(xp, Jt, e, damping)
    blocked = limit_blocked(q, dq, lower, upper)
    dq = _damped(xp, Jt * (~blocked)[:, None, :], e, damping)
    norm = xp.sqrt(xp.sum(dq * dq, axis=-1))
    dq = dq * xp.minimum(1.0, max_step / xp.maximum(norm, 1e-300))[:, None]
    q = xp.where(done[:, None], q, xp.clip(q + dq, lower, upper))
    return q, done, its + (~done).astype(its.dtype)


def _attempt(xp, kin, task, opts, iterations, lower, upper, p_target, R_target, q, done, its, loop):
    """``iterations`` DLS steps, then the errors at the final ``q``: ``(q, done, its, perr, oerr)``."""
    state = loop(iterations, lambda st: _dls_step(xp, kin, task, opts, lower, upper, p_target, R_target, st),
                 (q, done, its))
    q, done, its = state
    ok, perr, oerr = _converged(xp, kin, task, opts[2:], p_target, R_target, q)
    return q, done | ok, its, perr, oerr


def _python_loop(count, body, state):
    for _ in range(count):
        state = body(state)
    return state


def _numpy_attempt(chain: Chain, task: str, opts: tuple, iterations: int):
    kin = functools.partial(tool_pose_and_jacobian, chain)
    return functools.partial(_attempt, np, kin, task, opts, iterations, chain.lower, chain.upper, loop=_python_loop)


@functools.lru_cache(maxsize=64)
def _jax_attempt(chain: Chain, task: str, opts: tuple, iterations: int):
    """The jitted attempt ``(p_target, R_target, q, done, its) -> (q, done, its, perr, oerr)`` (memoised per chain),
    run in float64 whatever the caller's JAX setting."""
    import jax

    from physai import jaxkin

    jnp = jax.numpy
    kin = jax.vmap(functools.partial(jaxkin.tool_pose_and_jacobian, chain))

    def fori(count, body, state):
        return jax.lax.fori_loop(0, count, lambda _, st: body(st), state)

    return jaxkin.float64(jax.jit(functools.partial(_attempt, jnp, kin, task, opts, iterations, chain.lower,
                                                    chain.upper, loop=fori)))


def _targets(task: str, targets) -> tuple[np.ndarray, np.ndarray]:
    """``(p_target (B, 3), R_target (B, 3, 3))`` from ``(B, 4, 4)`` poses (or ``(B, 3)`` points for "position")."""
    t = check_targets(task, targets, 1)
    return np.ascontiguousarray(t[:, :3, 3]), np.ascontiguousarray(t[:, :3, :3])


def _attempts(chain: Chain, p_target: np.ndarray, restarts: int, tol_position: float) -> np.ndarray:
    """Attempts per target ``(B,)``: ``1 + restarts``, or at most ``1 + UNREACHABLE_RESTARTS`` for a provably
    unreachable position (farther from the first joint's anchor than :func:`physai.ik.reach_bound`)."""
    beyond = np.linalg.norm(p_target - chain.T_prev_joint[0, :3, 3], axis=-1) > chain.reach + tol_position
    return np.where(beyond, min(restarts, UNREACHABLE_RESTARTS), restarts) + 1


def dls_ik(
    chain: Chain,
    targets,
    q0=None,
    *,
    task: str = "pose",
    backend: str = "numpy",
    max_iterations: int | None = None,
    restarts: int = DEFAULT_RESTARTS,
    rng: np.random.Generator | None = None,
    damping: float = 0.02,
    max_step: float = 0.5,
    tol_position: float = 1e-4,
    tol_orientation: float = 1e-3,
) -> IKBatchResult:
    """Deprecated: ``physai.ik.solve(ik_problem(...), Solver(method="dls", backend="jax"))``. Solve ``B`` IK targets
    at once by damped least squares (see the module docstring for the step).

    Returns the :class:`physai.ik.IKBatchResult` of :func:`physai.ik.solve_ik_batch` (``method="dls"``): ``reason``
    is ``"converged"`` or ``"unreachable"`` (every attempt used its steps), ``restarts (B,)`` those each target
    used (the attempt it converged in, else all).

    ``targets``: ``(B, 4, 4)`` ``T_world_target`` (or ``(B, 3)`` points for ``task="position"``).
    ``q0``: ``None`` (middle of the limits), ``(n,)`` or ``(B, n)``; restart ``k`` starts the still
    unconverged targets from ``physai.ik.restart_draws(chain, rng, B, restarts)[:, k - 1]`` (``rng``
    defaults to ``default_rng(0)``), the restart poses of :func:`physai.ik.solve_ik_batch`. ``damping`` in m
    (and rad), ``max_step`` in joint units.
    """
    warnings.warn("physai.jaxik.dls_ik is deprecated: use physai.ik.solve(physai.ik.ik_problem(chain, targets, q0, "
                  "task=task), physai.ik.Solver(method='dls', backend='jax'))", DeprecationWarning, stacklevel=2)
    one_of(task, "task", TASKS)
    one_of(backend, "backend", BACKENDS)
    restarts = count(restarts, "restarts", 0, MAX_RESTARTS)
    steps = DEFAULT_MAX_ITERATIONS["dls"] if max_iterations is None else count(max_iterations, "max_iterations", 1)
    if rng is not None:
        generator(rng)
    opts = (positive(damping, "damping"), positive(max_step, "max_step"), positive(tol_position, "tol_position"),
            positive(tol_orientation, "tol_orientation"))
    p_target, R_target = _targets(task, targets)
    B, n = len(p_target), chain.n
    # The start policy of physai.ik.solve_ik: a start outside the limits is refused, naming the joint.
    q0 = chain.q_middle if q0 is None else chain.check_q(q0, "q0", within_limits=True)
    if q0.shape not in ((n,), (B, n)):
        raise InputError(f"q0: expected shape ({n},) or ({B}, {n}) for {B} target(s), got {q0.shape}")
    return _run(chain, task, backend, p_target, R_target, q0, restarts, rng, opts, steps)


def solve_checked(problem, o: IKOptions, rng) -> IKBatchResult:
    """The JAX loop on a problem :func:`physai.ik.ik_problem` checked and options ``o`` (``method="dls"``): nothing
    is checked again (the backend of ``physai.ik.Solver(method="dls", backend="jax")``)."""
    if o.task not in TASKS:
        raise InputError(f"task: backend='jax' solves {', '.join(map(repr, TASKS))}, not {o.task!r}")
    T = problem.T_target
    opts = (o.damping, o.max_step, o.tol_position, o.tol_orientation)
    return _run(problem.chain, o.task, "jax", np.ascontiguousarray(T[:, :3, 3]), np.ascontiguousarray(T[:, :3, :3]),
                problem.q0, o.restarts, rng, opts, o.max_iterations)


def _run(chain: Chain, task: str, backend: str, p_target, R_target, q0, restarts: int, rng, opts: tuple,
         steps: int) -> IKBatchResult:
    """The attempts of the DLS loop on checked arrays (every target's restart draws those of physai.ik)."""
    B, n = len(p_target), chain.n
    q = np.array(np.broadcast_to(q0, (B, n)))
    starts = restart_draws(chain, rng, B, restarts)  # (B, restarts, n), the draws of physai.ik
    if backend == "jax":
        require("jax", "physai.ik.Solver's backend='jax'")
    run = (_numpy_attempt if backend == "numpy" else _jax_attempt)(chain, task, opts, steps)
    attempts = _attempts(chain, p_target, restarts, opts[2])
    done, its, used = np.zeros(B, bool), np.zeros(B, np.int64), np.zeros(B, np.int64)
    for attempt in range(restarts + 1):
        spent = attempt >= attempts  # out of attempts: frozen, as converged targets are, through this attempt
        stay = done | spent
        if attempt:
            q = np.where(stay[:, None], q, starts[:, attempt - 1])
        used = np.where(stay, used, attempt)
        q, ran_done, its, perr, oerr = (np.asarray(x) for x in run(p_target, R_target, q, stay, its))
        done = np.where(spent, done, ran_done)
        if (done | (attempt + 1 >= attempts)).all():
            break
    return batch_result(q, np.where(done, 0, ITERATION_LIMIT), its, perr, oerr, used, "dls", task,
                        opts[2], opts[3])
