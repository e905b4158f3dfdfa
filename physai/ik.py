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

from dataclasses import dataclass

import numpy as np

from physai import _engine, _ik_solve, kinematics
from physai import transforms as tf
from physai._ik_record import COLLISION, REASONS, IKOptions, IKProblem, Rows
from physai._ik_solve import (  # the solver's parts that are IK API (the lessons and peers read them)
    TASK_RANK,
    TASK_ROWS,
    THREAD_MIN_TARGETS,
    UNREACHABLE_RESTARTS,
    compiled_settings,
    limit_blocked,
    restart_draws,
    restart_uniforms,
    starts_of,
    task_residual,
)
from physai._validate import (
    count,
    finite_array,
    generator,
    nonnegative,
    one_of,
    positive,
)
from physai._world_check import checked_world
from physai.chain import (
    reach_bound as reach_bound,  # part of the IK API: the bound it restarts by
)
from physai.errors import InputError
from physai.kinematics import Chain
from physai.singularity import Health, health

__all__ = [  # the IK API, some of it defined below this module (in _ik_solve and _ik_record)
    "BACKENDS", "DAMPING", "DEFAULT_MAX_ITERATIONS", "DEFAULT_PATIENCE", "DEFAULT_RESTARTS", "LAMBDA_MAX", "MAX_RESTARTS",
    "MAX_STEP", "METHODS", "REASONS", "SIGMA_HEALTHY", "TARGET_TOL", "TASKS", "TASK_RANK", "TASK_ROWS",
    "THREAD_MIN_TARGETS", "TOL_ORIENTATION", "TOL_POSITION", "UNREACHABLE_RESTARTS", "IKBatchResult", "IKOptions",
    "IKResult", "batch_result", "check_options", "check_problem", "check_targets", "compiled_settings", "default_start",
    "limit_blocked", "reach_bound", "restart_draws", "restart_uniforms", "solve_ik", "solve_ik_batch", "starts_of",
    "task_residual",
]

TASKS = ("pose", "position", "position+axis")
METHODS = ("transpose", "pinv", "dls", "adaptive", "lm")
# Default iteration budget per attempt: gradient descent converges linearly and needs far more steps.
# LM fails fast (a converging attempt needs ~5-20 steps; a stuck one is abandoned after `patience`
# steps without 1 % progress) and relies on restarts: 200 restarts took 1,000 random reachable targets
# per robot/task to 100 % in lesson 11; hard targets (near joint limits) have ~2-10 % basins.
DEFAULT_MAX_ITERATIONS = {"transpose": 2000, "pinv": 100, "dls": 200, "adaptive": 100, "lm": 50}
DEFAULT_PATIENCE = {"transpose": 50, "pinv": 20, "dls": 20, "adaptive": 20, "lm": 5}
DEFAULT_RESTARTS = 200
# Numeric option defaults (m, rad, m, m/rad, -, m/rad). solve_ik_batch's signature holds these very objects, and
# check_options passes a value that *is* its default as it is: a single solve should not prove them valid again.
TOL_POSITION, TOL_ORIENTATION, MAX_STEP = 1e-4, 1e-3, 0.5
DAMPING, SIGMA_HEALTHY, LAMBDA_MAX = 0.02, 0.03, 0.05
_REASON_NAMES = np.asarray(REASONS)  # indexed by an outcome array (never written)
# Where the LM iterations run: the whole solve of each target in one compiled call (physai._numba_ik, the
# default where it serves: method="lm", no trace, the compiled kinematics engine), or the vectorised NumPy
# loop of physai._ik_solve (the readable reference, which serves every method and option).
BACKENDS = ("compiled", "numpy")

TARGET_TOL = 1e-6  # a target's rotation block and bottom row must be rigid to this (check_targets)
_ROUND_OFF = 1e-12  # rigid to round-off: used as given, else projected onto the nearest rotation
MAX_RESTARTS = 100_000  # restarts are drawn up front: (B, restarts, n) floats
_TOOL_Z = (0.0, 0.0, 1.0)
_UNIT = {m: np.ones(m) for m in set(TASK_ROWS.values())}  # default weights (never written)
_UNIT_Z = np.array(_TOOL_Z)


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
    ``(B,)``; ``unmet`` names each part of an unconverged target whose error is above its tolerance (led by
    ``"collision"`` for the collision outcome)."""
    perr, oerr = np.asarray(perr, float), np.asarray(oerr, float)
    converged = np.asarray(outcome) == 0
    unmet = tuple(_unmet(k, p, o, tol_position, tol_orientation)
                  for k, p, o in zip(np.asarray(outcome).tolist(), perr.tolist(), oerr.tolist()))
    return IKBatchResult(np.array(q, float), converged, np.asarray(iterations, np.int64), perr, oerr,
                         _REASON_NAMES[outcome], np.asarray(restarts, np.int64), method, task, unmet)


def _unmet(outcome: int, perr: float, oerr: float, tol_position: float, tol_orientation: float) -> tuple:
    """What one target did not achieve: ``()`` when converged (``outcome`` 0), else each of
    ``("position", "orientation")`` whose error (``perr`` m, ``oerr`` rad) is above its tolerance, led by
    ``"collision"`` for the collision outcome."""
    if outcome == 0:
        return ()
    return ("collision",) * (outcome == COLLISION) + tuple(
        part for part, err, tol in (("position", perr, tol_position), ("orientation", oerr, tol_orientation))
        if err > tol)


def default_start(chain: Chain) -> np.ndarray:
    """The first start of every solve without ``q0``: ``chain.q_middle`` ``(n,)``, read-only, the middle of each
    joint's range (0 clipped into the range for a joint with an open side)."""
    return chain.q_middle


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
    options = {name: value for name, value in locals().items() if name in _OPTIONS}  # the keywords as given
    p = check_problem(chain, targets, q0, 1, options)
    return _batch_result(_solve(p), p.options)


def check_problem(chain: Chain, targets, q0, batch_ndim: int, options: dict) -> IKProblem:
    """Every argument of one solve checked once, each error naming its argument: the :class:`IKProblem` that the
    solvers below take on trust. ``batch_ndim``: 0 one target (:func:`solve_ik`), 1 a batch; ``options``: keywords of
    :func:`solve_ik_batch` (the others take their defaults; an unknown one is a ``TypeError``, as in a call)."""
    for name in options:
        if name not in _OPTIONS:
            raise TypeError(f"solve_ik() got an unexpected keyword argument {name!r}")
    kw = {**_OPTIONS, **options}
    trace, avoid = kw.pop("trace"), kw.pop("avoid")
    o = check_options(**kw)
    T_target = check_targets(o.task, targets, batch_ndim)
    chain.check_engine_arrays()  # the limits, start ranges and packed constants the solver reads, as built
    B, n = len(T_target), chain.n
    q0 = chain.q_middle if q0 is None else chain.check_q(q0, "q0", within_limits=True)
    if q0.shape not in ((n,), (B, n)):
        raise InputError(f"q0: expected shape ({n},) or ({B}, {n}) for {B} target(s), got {q0.shape}")
    world = checked_world(avoid, chain, None if q0 is chain.q_middle else q0)
    return IKProblem(chain, T_target, q0, restart_uniforms(chain, kw["rng"], B, o.restarts), o, world,
                     _compiled_backend(kw["backend"], o.method, trace, kw["engine"]), kw["engine"], trace)


def _solve(p: IKProblem) -> Rows:
    """The checked problem's rows: the plain solve, or with a world the collision step (:mod:`physai._avoid_ik`)."""
    if p.world is None:
        return _ik_solve.solve(p)
    from physai import _avoid_ik  # MuJoCo is imported only once a world is given

    return _avoid_ik.solve(p)


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


def _batch_result(rows: Rows, o: IKOptions) -> IKBatchResult:
    """The :class:`IKBatchResult` of a solver's rows."""
    return batch_result(*rows, o.method, o.task, o.tol_position, o.tol_orientation)


def _result(rows: Rows, o: IKOptions) -> IKResult:
    """The :class:`IKResult` of a one-target solve's rows, built directly: the same fields as the batch's."""
    outcome, perr, oerr = rows.outcome.item(0), rows.perr.item(0), rows.oerr.item(0)
    return IKResult(rows.q[0].copy(), outcome == 0, rows.iterations.item(0), perr, oerr, REASONS[outcome],
                    rows.restarts.item(0), o.method, o.task, _unmet(outcome, perr, oerr, o.tol_position,
                                                                    o.tol_orientation))


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
    draws in turn until an answer is clear, the first draws replaced by the world's clear postures whose tool poses
    are nearest the target; then Levenberg-Marquardt with a quadratic penalty row per close pair
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
    p = check_problem(chain, target, q0, 0, options)
    return _result(_solve(p), p.options)


# solve_ik_batch's keywords and their defaults: the options every solve takes (solve_ik's **options too).
_OPTIONS = solve_ik_batch.__kwdefaults__
