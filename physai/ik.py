"""Numerical inverse kinematics: iterate the easy direction (FK + Jacobian) to solve the hard one (lesson 11).

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
  the previous step reduced the error (accept: shrink, reject: grow), with random restarts from a seeded generator.

Tasks and residuals (rows ``e: (m,)`` and ``J_t: (m, n)``):
- ``"pose"`` (m = 6): ``[p_target - p; log(R_target R^T)]`` (m, rad), ``J_t = J``.
- ``"position"`` (m = 3): ``p_target - p``, ``J_t = J[:3]``.
- ``"position+axis"`` (m = 6, rank 5): position plus the rotation vector taking the tool axis
  ``z = R a`` onto the target's ``z_t = R_target a`` (``a`` = ``axis`` in the tool frame, default its z),
  with ``J_t`` angular rows ``(I - z z^T) J_w`` (a spin about ``z`` changes nothing).
Per-row ``weights`` (default 1) scale the residual and Jacobian rows by ``sqrt(w)``; success is always
judged on the unweighted errors against ``tol_position`` (m) and ``tol_orientation`` (rad).

This module is the readable NumPy solver. By default ``"lm"`` runs as its compiled twin,
:mod:`physai._numba_ik` (the same algorithm, every iteration and restart of a target in one numba call,
140-470x faster per median solve in benchmarks/IK_RESULTS.md); ``backend="numpy"`` selects the loop here.
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, replace

import numpy as np

from physai import _engine, _ik_record, kinematics
from physai import transforms as tf
from physai._validate import (
    count,
    finite_array,
    generator,
    nonnegative,
    one_of,
    positive,
)
from physai.chain import (
    reach_bound as reach_bound,  # part of the IK API: the bound it restarts by
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
# per robot/task to 100 % in lesson 11; hard targets (near joint limits) have ~2-10 % basins.
DEFAULT_MAX_ITERATIONS = {"transpose": 2000, "pinv": 100, "dls": 200, "adaptive": 100, "lm": 50}
DEFAULT_PATIENCE = {"transpose": 50, "pinv": 20, "dls": 20, "adaptive": 20, "lm": 5}
DEFAULT_RESTARTS = 200
UNREACHABLE_RESTARTS = 3  # restarts for targets farther than reach_bound (chain.reach)
# Numeric option defaults (m, rad, m, m/rad, -, m/rad). solve_ik_batch's signature holds these very objects, and
# check_options passes a value that *is* its default as it is: a single solve should not prove them valid again.
TOL_POSITION, TOL_ORIENTATION, MAX_STEP = 1e-4, 1e-3, 0.5
DAMPING, SIGMA_HEALTHY, LAMBDA_MAX = 0.02, 0.03, 0.05
TASK_ROWS = {"pose": 6, "position": 3, "position+axis": 6}
TASK_RANK = {"pose": 6, "position": 3, "position+axis": 5}
# Every IK path reports one of these: solve_ik and its batch (the first three, indexed by _numba_ik's outcome codes,
# and the last with avoid=), jaxik.dls_ik ("converged", "iteration limit") and the null-space refinement (the
# fourth and fifth, and "iteration limit").
REASONS = ("converged", "unreachable: best effort", "iteration limit", "stationary",
           "primary not converged: not optimised", "collision: no answer keeps the margin")
_REASON_NAMES = np.asarray(REASONS)  # indexed by an outcome array (never written)
# Where the LM iterations run: the whole solve of each target in one compiled call (physai._numba_ik, the
# default where it serves: method="lm", no trace, the compiled kinematics engine), or the vectorised NumPy
# loop below (the readable reference, which serves every method and option).
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
    ``"position"``) at ``q``; ``reason`` one of the first three of :data:`REASONS` (or its last, with ``avoid=``):
    ``"converged"``,
    ``"unreachable: best effort"`` (every attempt stopped at a stationary point above tolerance, ``q`` is the
    closest one found), ``"iteration limit"`` (some attempt was still improving when its budget ran out);
    ``restarts`` random restarts used; ``unmet`` the parts of the target not achieved:
    ``()`` when converged, else a subset of ``("position", "orientation")``, led by ``"collision"`` when the reason
    is ``"collision: no answer keeps the margin"`` (``avoid=``; then ``q`` is the closest clear point found).

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) asked for a point 1.0 m away, beyond its 0.8 m reach:
    the result is the closest point, and says so.

    >>> result = physai.solve_ik(physai.load("planar2r"), [1.0, 0.0, 0.0], task="position")
    >>> result.converged, result.reason, result.unmet
    (False, 'unreachable: best effort', ('position',))
    >>> print(np.round(result.q, 3), round(result.position_error, 3))
    [0. 0.] 0.2
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


@dataclass(frozen=True)
class IKBatchResult:
    """The outcome of one IK solve per target: the fields of :class:`IKResult`, each with a leading target axis.

    ``q: (B, n)`` joint positions inside the limits; ``converged: (B,)`` bool; ``iterations: (B,)`` int steps over
    all attempts; ``position_error: (B,)`` (m) and ``orientation_error: (B,)`` (rad) at ``q``; ``reason: (B,)``
    str, each one of :data:`REASONS`; ``restarts: (B,)`` int random restarts used; ``method`` and ``task`` shared
    by all targets; ``unmet``: per target, ``()`` when converged, else a subset of ``("position", "orientation")``.
    ``batch[b]`` is target ``b``'s :class:`IKResult`, and iterating yields them in order.

    Examples
    --------
    >>> targets = [[0.2, 0.0, 0.1], [0.15, 0.1, 0.15], [1.0, 0.0, 0.0]]  # m; the last: too far
    >>> batch = physai.solve_ik_batch(physai.load("so101"), targets, task="position")
    >>> batch.q.shape, batch.converged
    ((3, 5), array([ True,  True, False]))
    >>> round(batch.success_rate, 3), batch[2].reason
    (0.667, 'unreachable: best effort')
    """

    q: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    position_error: np.ndarray
    orientation_error: np.ndarray
    reason: np.ndarray
    restarts: np.ndarray
    method: str
    task: str
    unmet: tuple[tuple[str, ...], ...]

    def __len__(self) -> int:
        return len(self.q)

    def __getitem__(self, b: int) -> IKResult:
        return IKResult(self.q[b].copy(), bool(self.converged[b]), int(self.iterations[b]),
                        float(self.position_error[b]), float(self.orientation_error[b]), str(self.reason[b]),
                        int(self.restarts[b]), self.method, self.task, self.unmet[b])

    def __iter__(self):
        return (self[b] for b in range(len(self)))

    @property
    def success_rate(self) -> float:
        """Fraction of targets within both tolerances."""
        return float(np.mean(self.converged))


def batch_result(q, outcome, iterations, perr, oerr, restarts, method: str, task: str, tol_position: float,
                 tol_orientation: float) -> IKBatchResult:
    """The :class:`IKBatchResult` of a solver's arrays: ``q (B, n)`` the converged or best point, ``outcome (B,)``
    an index into :data:`REASONS` (0: converged), ``iterations``, ``perr`` (m), ``oerr`` (rad) and ``restarts``
    ``(B,)``; ``unmet`` names each part of an unconverged target whose error is above its tolerance."""
    perr, oerr = np.asarray(perr, float), np.asarray(oerr, float)
    converged = np.asarray(outcome) == 0
    unmet = tuple(_unmet(c, p, o, tol_position, tol_orientation)
                  for c, p, o in zip(converged.tolist(), perr.tolist(), oerr.tolist()))
    return IKBatchResult(np.array(q, float), converged, np.asarray(iterations, np.int64), perr, oerr,
                         _REASON_NAMES[outcome], np.asarray(restarts, np.int64), method, task, unmet)


def _unmet(converged: bool, perr: float, oerr: float, tol_position: float, tol_orientation: float) -> tuple:
    """What one target did not achieve: ``()`` when converged, else each of ``("position", "orientation")`` whose
    error (``perr`` m, ``oerr`` rad) is above its tolerance."""
    if converged:
        return ()
    return tuple(part for part, err, tol in (("position", perr, tol_position), ("orientation", oerr, tol_orientation))
                 if err > tol)


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
    low, high = chain._sample_range
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


def default_start(chain: Chain) -> np.ndarray:
    """The first start of every solve without ``q0``: ``chain.q_middle`` ``(n,)``, read-only, the middle of each
    joint's range (0 clipped into the range for a joint with an open side)."""
    return chain.q_middle


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
    polish: bool = True  # polish the best point once every attempt has failed (off where only converged answers count)


def check_options(*, task, method, weights, tol_position, tol_orientation, max_iterations, restarts, rng, axis,
                  max_step, damping, sigma_healthy, lambda_max, patience, engine="compiled",
                  backend=None) -> IKOptions:
    """Every IK option checked once, each error naming its option; returns the :class:`IKOptions` record."""
    one_of(task, "task", TASKS)
    one_of(method, "method", METHODS)
    one_of(engine, "engine", kinematics.ENGINES)
    if backend is not None:
        one_of(backend, "backend", BACKENDS)
    if rng is not None:
        generator(rng)
    return IKOptions(
        task, method, _sqrt_weights(weights, task), _checked(positive, tol_position, TOL_POSITION, "tol_position"),
        _checked(positive, tol_orientation, TOL_ORIENTATION, "tol_orientation"),
        DEFAULT_MAX_ITERATIONS[method] if max_iterations is None else count(max_iterations, "max_iterations", 1),
        count(restarts, "restarts", 0, MAX_RESTARTS), _unit_axis(axis),
        _checked(positive, max_step, MAX_STEP, "max_step"), _checked(nonnegative, damping, DAMPING, "damping"),
        _checked(positive, sigma_healthy, SIGMA_HEALTHY, "sigma_healthy"),
        _checked(positive, lambda_max, LAMBDA_MAX, "lambda_max"),
        DEFAULT_PATIENCE[method] if patience is None else count(patience, "patience", 1),
    )


def _checked(check, value, default: float, name: str) -> float:
    """``check(value, name)``; the default object itself (valid by construction) passes as it is, unchecked."""
    return value if value is default else check(value, name)


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
    # the kernel trusts type, dtype and ndim (an ndarray subclass such as a masked array goes the long way)
    if type(targets) is np.ndarray and targets.dtype == np.float64:
        t = tf.translation(targets) if task == "position" and targets.shape[batch_ndim:] == (3,) else targets
        if t.ndim == batch_ndim + 2 and t.shape[-2:] == (4, 4):
            t = t.reshape(-1, 4, 4)
            if _engine.kernels.targets_ok(t, task != "position", _ROUND_OFF):  # the usual case in one compiled pass
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
    tol_position: float = TOL_POSITION,
    tol_orientation: float = TOL_ORIENTATION,
    max_iterations: int | None = None,
    restarts: int = DEFAULT_RESTARTS,
    rng: np.random.Generator | None = None,
    axis=_TOOL_Z,
    max_step: float = MAX_STEP,
    damping: float = DAMPING,
    sigma_healthy: float = SIGMA_HEALTHY,
    lambda_max: float = LAMBDA_MAX,
    patience: int | None = None,
    trace: list | None = None,
    engine: str = "compiled",
    backend: str | None = None,
    avoid=None,
    _single: bool = False,  # solve_ik's call: one target, no batch axis, answered as its IKResult
    _uniforms: np.ndarray | None = None,  # the collision step's restart numbers (B, restarts, n), in place of rng's
    _polish: bool = True,  # False for the collision step's restarts, which take converged answers only
) -> IKBatchResult:
    """Solve many targets at once; returns an :class:`IKBatchResult` (``batch[b]`` is target ``b``'s :class:`IKResult`).

    The compiled backend (default for ``"lm"``) runs every target's whole solve in compiled code, the targets
    shared among one thread per core (from 2 x :data:`THREAD_MIN_TARGETS` targets; the rows are the same on any
    number of threads); the NumPy backend steps all targets together, vectorised over them. Both give each target
    the same attempts.

    ``targets: (B, 4, 4)`` (or ``(B, 3)`` for ``task="position"``); ``q0``: ``None`` (the middle of the
    limits), ``(n,)`` for all or ``(B, n)``, inside the joint limits (a start outside them is refused,
    naming the joint). Each target runs its attempts in turn: first from ``q0``, then from up to
    ``restarts`` random joint vectors inside the limits, drawn up front from ``rng`` (``default_rng(0)``
    when ``None``) as ``chain.random_q(rng, (B, restarts))``. Because target ``b``
    uses exactly the ``b``-th block of that draw, ``solve_ik`` in a loop over one shared generator gives
    the same results as one batched call. Options are those of :func:`solve_ik`.

    Examples
    --------
    Two tool positions (m, world frame) for the SO-101, solved together:

    >>> chain = physai.load("so101")
    >>> targets = [[0.2, 0.0, 0.1], [0.15, 0.1, 0.15]]
    >>> batch = physai.solve_ik_batch(chain, targets, task="position")
    >>> batch.converged
    array([ True,  True])
    >>> print(np.round(physai.tool_pose(chain, batch.q)[:, :3, 3], 3))
    [[0.2  0.   0.1 ]
     [0.15 0.1  0.15]]
    """
    o = check_options(task=task, method=method, weights=weights, tol_position=tol_position,
                      tol_orientation=tol_orientation, max_iterations=max_iterations, restarts=restarts, rng=rng,
                      axis=axis, max_step=max_step, damping=damping, sigma_healthy=sigma_healthy,
                      lambda_max=lambda_max, patience=patience, engine=engine, backend=backend)
    o = o if _polish else replace(o, polish=False)
    T_target = check_targets(task, targets, 0 if _single else 1)
    chain.check_engine_arrays()  # the limits, start ranges and packed constants the solver reads, as built
    B, n = len(T_target), chain.n
    base, reach = chain.T_prev_joint[0, :3, 3], chain.reach  # the first joint's anchor at q_ref, and the reach
    q0 = chain.q_middle if q0 is None else chain.check_q(q0, "q0", within_limits=True)
    if q0.shape not in ((n,), (B, n)):
        raise InputError(f"q0: expected shape ({n},) or ({B}, {n}) for {B} target(s), got {q0.shape}")
    n_far = min(1 + restarts, 1 + UNREACHABLE_RESTARTS)
    if avoid is not None:  # the collision step: plain solves whose answers are checked and repaired
        from physai import _avoid_ik

        world = _avoid_ik.checked_world(avoid, chain, None if q0 is chain.q_middle else q0)

        def plain(T, q0, uniforms, polish=True):
            return solve_ik_batch(chain, T, q0, **options, restarts=uniforms.shape[1], _uniforms=uniforms,
                                  _polish=polish)

        options = dict(task=task, method=method, weights=weights, tol_position=tol_position,
                       tol_orientation=tol_orientation, max_iterations=max_iterations, axis=axis, max_step=max_step,
                       damping=damping, sigma_healthy=sigma_healthy, lambda_max=lambda_max, patience=patience,
                       trace=trace, engine=engine, backend=backend)
        uniforms = restart_uniforms(chain, rng, B, restarts)
        compiled = _compiled_backend(backend, method, trace, engine)
        result = _avoid_ik.solve(world, chain, T_target, q0, uniforms, o, plain, compiled)
        return result[0] if _single else result
    if _compiled_backend(backend, method, trace, engine):
        uniforms = restart_uniforms(chain, rng, B, restarts) if _uniforms is None else _uniforms
        out, out_int = _solve_compiled(chain, T_target, q0, uniforms, o, n_far)
        return _compiled_result(out[0], out_int[0], o) if _single else _compiled_batch_result(out, out_int, o)
    draws = restart_draws(chain, rng, B, restarts) if _uniforms is None else starts_of(chain, _uniforms)
    # Provably unreachable positions (beyond reach_bound) need no search for a hidden solution: a few
    # attempts find the closest point.
    beyond = np.linalg.norm(T_target[:, :3, 3] - base, axis=-1) > reach + tol_position
    n_attempts = np.where(beyond, n_far, 1 + restarts)
    starts = np.concatenate([np.broadcast_to(q0, (B, n))[:, None], draws], axis=1)  # (B, A, n)
    kin = functools.partial(kinematics.tool_pose_and_jacobian, engine=engine)
    result = _solve_numpy(chain, T_target, starts, n_attempts, o, kin, trace)
    return result[0] if _single else result


def _compiled_backend(backend: str | None, method: str, trace, engine: str) -> bool:
    """Whether the compiled solve runs: by default wherever it serves; asked for where it cannot, an error."""
    serves = method == "lm" and trace is None and engine == "compiled"
    if backend == "compiled" and not serves:
        unserved = [why for why, bad in ((f"method={method!r} (it runs 'lm')", method != "lm"),
                                         ("a trace", trace is not None), (f"engine={engine!r}", engine != "compiled"))
                    if bad]
        raise InputError(f"backend: 'compiled' cannot serve {', '.join(unserved)}; pass backend='numpy' or leave "
                         "backend=None to choose")
    return serves and backend != "numpy"


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
               q_first if len(q_first) == 1 else q_first[lo:hi], uniforms[lo:hi], chain._sample_range, settings,
               out[lo:hi], out_int[lo:hi])

    _in_threads(rows, B)
    return out, out_int


def compiled_settings(chain: Chain, o: IKOptions, attempts: int, attempts_far: int) -> np.ndarray:
    """The compiled solver's :data:`physai._ik_record.SETTINGS` record of options ``o``: ``attempts`` per target,
    ``attempts_far`` for a position provably beyond the chain's reach."""
    return _ik_record.settings(
        task=o.task, iterations=o.max_iterations, patience=o.patience, attempts=attempts, attempts_far=attempts_far,
        tol_position=o.tol_position, tol_orientation=o.tol_orientation, max_step=o.max_step, mu0=_LM_MU0,
        mu_down=_LM_DOWN, mu_up=_LM_UP, mu_min=_LM_MU_MIN, reach=chain.reach + o.tol_position,
        base=chain.T_prev_joint[0, :3, 3], polish=o.polish)


# Targets per thread below which a batch runs on one thread: starting a thread costs about as much as a few solves.
THREAD_MIN_TARGETS = 8


def _in_threads(rows, B: int) -> None:
    """``rows(lo, hi)`` over consecutive chunks of ``range(B)``, on as many threads as this process has cores.

    The compiled kernel releases the GIL, so the threads run at once. Each target's answer depends on its own
    inputs only, so the rows are bit for bit those of one thread whatever the chunks or their order; the chunks are
    small (about 32 per thread) and taken in turn, so a thread that drew slow targets takes fewer of them.
    """
    workers = min(_cores(), B // THREAD_MIN_TARGETS)
    if workers < 2:
        rows(0, B)
        return
    size = max(1, B // (32 * workers))
    chunks, errors = iter(range(0, B, size)), []  # next() on one shared range iterator is atomic under the GIL

    def work():
        try:
            for lo in chunks:
                rows(lo, min(lo + size, B))
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers - 1)]
    for t in threads:
        t.start()
    work()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _cores() -> int:
    """The cores this process may run on (its affinity, as ``taskset`` sets it, where the platform tells)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _compiled_batch_result(out: np.ndarray, out_int: np.ndarray, o: IKOptions) -> IKBatchResult:
    """The :class:`IKBatchResult` of the compiled solve's rows (:func:`_solve_compiled`)."""
    n = out.shape[1] - 2
    return batch_result(out[:, :n], out_int[:, 2], out_int[:, 0], out[:, n], out[:, n + 1], out_int[:, 1],
                        o.method, o.task, o.tol_position, o.tol_orientation)


def _compiled_result(out: np.ndarray, out_int: np.ndarray, o: IKOptions) -> IKResult:
    """The :class:`IKResult` of one row of the compiled solve, built directly: the same fields as the batch's."""
    n = len(out) - 2
    (iterations, restarts, outcome), perr, oerr = out_int.tolist(), float(out[n]), float(out[n + 1])
    return IKResult(out[:n].copy(), outcome == 0, iterations, perr, oerr, REASONS[outcome], restarts, o.method,
                    o.task, _unmet(outcome == 0, perr, oerr, o.tol_position, o.tol_orientation))


def _solve_numpy(chain: Chain, T_target, starts, n_attempts, o: IKOptions, pose_and_jacobian, trace) -> IKBatchResult:
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
    return batch_result(np.where(c, s.q, s.best_q), np.where(conv, 0, np.where(s.ended_by_limit, 2, 1)), s.it_total,
                    np.where(conv, s.perr, s.best_perr), np.where(conv, s.oerr, s.best_oerr),
                    np.where(conv, np.minimum(s.attempt, starts.shape[1] - 1), n_attempts - 1),
                    method, task, tol_position, tol_orientation)


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
                   np.full(B, _LM_MU0), np.ones(B, bool), zeros(), zeros(), zeros(), inf(), zeros(),
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
    dq, _ = scale_to_limit(dq, o.max_step)
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
    s.mu[r] = np.where(f, _LM_MU0, np.maximum(s.mu[r] * np.where(accept, _LM_DOWN, _LM_UP), _LM_MU_MIN))
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


def solve_ik(chain: Chain, target, q0=None, **options) -> IKResult:
    """Joint positions that put the chain's tool on ``target``; never raises for unreachable targets.

    ``options`` are the keywords of :func:`solve_ik_batch` (same names and defaults), described here.

    ``target``: a 4x4 ``T_world_target`` (world frame, m) for ``task="pose"`` or ``"position+axis"``,
    a 3-vector or 4x4 for ``"position"``. ``task`` and ``method``: see the module docstring
    (``"lm"`` is the default and the best). ``weights``: per residual row (6 for pose and
    position+axis, 3 for position), default ones. ``tol_position`` (m), ``tol_orientation`` (rad).
    ``max_iterations`` per attempt (``None``: :data:`DEFAULT_MAX_ITERATIONS` of the method);
    ``restarts``: at most this many further attempts from random joint vectors (a seeded generator's) inside the limits
    (``rng``, default ``default_rng(0)``), tried only when the previous attempt failed (at most
    :data:`UNREACHABLE_RESTARTS` for positions beyond :func:`reach_bound`); an attempt stops
    when its error has not fallen by 1 % within ``patience`` steps (``None``: :data:`DEFAULT_PATIENCE`). ``axis``: tool-frame axis aligned by
    ``"position+axis"``. ``max_step`` (rad or m): the largest joint change per step, applied by uniform
    scaling. ``damping``: ``lam`` of ``"dls"``; ``sigma_healthy``, ``lambda_max``: ``"adaptive"``'s ramp.
    ``trace``: a list that receives, after every step, ``(rows, iterations, position_error,
    orientation_error)`` arrays of the current (accepted) point of each active target (convergence curves).
    ``engine``: the kinematics engine of :mod:`physai.kinematics`, ``"compiled"`` (default) or ``"numpy"``
    (the readable code the lessons teach); both give the same solutions.
    ``backend``: ``"compiled"`` runs each target's whole ``"lm"`` solve in one compiled call
    (:mod:`physai._numba_ik`, same algorithm); ``"numpy"`` the vectorised NumPy loop of this module, which
    serves every method, ``trace`` and ``engine="numpy"``. ``None`` (default): compiled where it serves, else
    NumPy; ``"compiled"`` asked for where it cannot serve raises :class:`InputError`.

    ``avoid``: a :class:`physai.collision.CollisionWorld` of this chain (:func:`physai.collision.collision_world`).
    An answer then counts as converged only if every pair of the world keeps its ``margin`` (MuJoCo's
    ``mj_geomDistance``); a target with no such answer found is ``converged=False`` with reason
    ``"collision: no answer keeps the margin"`` and ``"collision"`` in ``unmet``. Method (:mod:`physai._avoid_ik`):
    the plain solve, its answer checked; for a colliding one, one plain attempt from each of the target's restart
    draws in turn until an answer is clear; then Levenberg-Marquardt with a quadratic penalty row per close pair
    from the colliding answers (Nocedal and Wright 2006, section 17.1; the rows' Jacobian is the contact-normal
    Jacobian). A ``q0`` that
    penetrates an obstacle is refused (:class:`InputError` naming the pair).

    The returned ``q`` is always inside the joint limits; unconverged results carry the closest point
    found (smallest weighted error over every attempt, then refined until it stops improving) and
    ``unmet`` names what is not achieved.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m): the tip at ``(0.5, 0.3, 0)`` m needs the elbow at 90 degrees.

    >>> chain = physai.load("planar2r")
    >>> result = physai.solve_ik(chain, [0.5, 0.3, 0.0], task="position")
    >>> result.converged, result.reason
    (True, 'converged')
    >>> print(np.round(result.q, 3))
    [0.    1.571]

    A full pose (a ``(4, 4)`` ``T_world_target``) for the SO-101, here one its tool reaches at a known ``q``:

    >>> so101 = physai.load("so101")
    >>> T_world_target = physai.tool_pose(so101, [0.0, -0.6, 0.9, 0.4, 0.3])
    >>> result = physai.solve_ik(so101, T_world_target)
    >>> result.converged, result.position_error < 1e-4, result.orientation_error < 1e-3
    (True, True, True)
    >>> print(np.round(result.q, 2))
    [ 0.  -0.6  0.9  0.4  0.3]
    """
    return solve_ik_batch(chain, target, q0, _single=True, **options)
