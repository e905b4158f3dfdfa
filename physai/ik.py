"""Numerical inverse kinematics: iterate the easy direction (FK + Jacobian) to solve the hard one (lesson 11).

One problem, one solve: :func:`ik_problem` checks a chain, its targets, a start and the options once into a frozen
:class:`Problem`; :func:`solve` runs a :class:`Solver` on it and returns an :class:`IKBatchResult`;
:func:`solve_ik` and :func:`solve_ik_batch` are the two fronts over both. ``problem.with_target(T, q0)`` checks only
the new target and start, for a loop that solves one target per tick (with :meth:`Solver.tracking`);
``problem.trusted_solver(solver)`` goes further for a loop that keeps its own start inside the limits.

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

This module is the public entry; the readable NumPy loop is :mod:`physai._ik_solve`. By default ``"lm"`` runs as
its compiled twin, :mod:`physai._numba_ik` (the same algorithm, every iteration and restart of a target in one
numba call, 140-470x faster per median solve in benchmarks/IK_RESULTS.md); ``Solver(backend="numpy")`` selects the
loop.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from physai import _ik_options, _ik_solve
from physai._ik_options import (
    BACKENDS,
    DAMPING,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_PATIENCE,
    DEFAULT_RESTARTS,
    DEFAULT_SOLVER,
    LAMBDA_MAX,
    MAX_RESTARTS,
    MAX_STEP,
    METHODS,
    SIGMA_HEALTHY,
    TARGET_TOL,
    TASKS,
    TOL_ORIENTATION,
    TOL_POSITION,
    Clearance,
    Secondary,
    Solver,
    Task,
    as_task,
    check_targets,
)
from physai._ik_record import REASONS, IKOptions, IKProblem, Rows
from physai._ik_result import IKBatchResult, IKResult, batch_result, one_result
from physai._ik_solve import (  # the solver's parts that are IK API (the lessons and peers read them)
    TASK_RANK,
    TASK_ROWS,
    UNREACHABLE_RESTARTS,
    limit_blocked,
    restart_draws,
    restart_uniforms,
    starts_of,
    task_residual,
)
from physai._validate import generator
from physai._world_check import check_start, checked_world
from physai.chain import (
    reach_bound as reach_bound,  # part of the IK API: the bound it restarts by
)
from physai.errors import InputError
from physai.kinematics import Chain, check_out

__all__ = [  # the IK API (some of it defined below this module, in _ik_options, _ik_result and _ik_solve)
    "BACKENDS", "DAMPING", "DEFAULT_MAX_ITERATIONS", "DEFAULT_PATIENCE", "DEFAULT_RESTARTS", "LAMBDA_MAX",
    "MAX_RESTARTS", "MAX_STEP", "METHODS", "REASONS", "SIGMA_HEALTHY", "TARGET_TOL", "TASKS", "TASK_RANK", "TASK_ROWS",
    "TOL_ORIENTATION", "TOL_POSITION", "UNREACHABLE_RESTARTS", "Clearance", "IKBatchResult", "IKResult", "Problem",
    "Solver", "Task", "default_start", "ik_problem", "limit_blocked", "reach_bound", "restart_draws", "solve",
    "solve_ik", "solve_ik_batch", "starts_of", "task_residual",
]


def default_start(chain: Chain) -> np.ndarray:
    """The first start of every solve without ``q0``: ``chain.q_middle`` ``(n,)``, read-only, the middle of each
    joint's range (0 clipped into the range for a joint with an open side)."""
    return chain.q_middle


@dataclass(frozen=True)
class Problem:
    """An IK problem checked once (:func:`ik_problem`): what :func:`solve` trusts.

    ``chain``; ``T_target: (B, 4, 4)`` rigid ``T_world_target`` (only the translation is read for a position task);
    ``q0: (n,)`` or ``(B, n)`` first starts inside the limits; ``task`` a :class:`Task`; ``world`` the collision world
    of a :class:`Clearance` limit (None: none); ``prefer`` the null-space secondary (None: none); ``single`` whether it
    was built from one target (:func:`solve_ik`'s).

    Examples
    --------
    >>> problem = physai.ik.ik_problem(physai.load("planar2r"), [0.5, 0.3, 0.0], task="position")
    >>> problem
    Problem(chain='planar2r', targets=1, task='position', q0=[0.0, 0.0], clearance=False, prefer=None)
    >>> problem.with_target([0.3, 0.5, 0.0]).T_target[0, :3, 3]
    array([0.3, 0.5, 0. ])
    """

    chain: Chain
    T_target: np.ndarray
    q0: np.ndarray
    task: Task
    world: object = None
    prefer: Secondary | None = None
    single: bool = False

    def __repr__(self) -> str:
        task = self.task.kind if self.task == as_task(self.task.kind) else self.task
        return (f"Problem(chain={self.chain.name!r}, targets={len(self.T_target)}, task={task!r}, "
                f"q0={np.round(self.q0, 4).tolist()}, clearance={self.world is not None}, prefer={self.prefer!r})")

    def with_target(self, target, q0=None) -> Problem:
        """This problem with a new ``target`` (one or a batch, as :func:`ik_problem` takes) and start ``q0`` (None:
        the middle of the limits); only they are checked, so a loop that solves one target per tick pays for the
        chain, the options and the world once."""
        T_target, q0, single = _target_and_start(self.chain, self.task, target, q0)
        if self.world is not None and q0 is not self.chain.q_middle:
            check_start(self.world, q0)
        return Problem(self.chain, T_target, q0, self.task, self.world, self.prefer, single)

    def checked_target(self, target) -> np.ndarray:
        """One ``target`` (a 4x4 ``T_world_target``, or a 3-vector for a position task) checked as :meth:`with_target`
        checks it: ``(1, 4, 4)``, as :meth:`trusted_solver`'s function takes it."""
        return check_targets(self.task.kind, target, 0)

    def trusted_solver(self, solver: Solver) -> Callable[[np.ndarray, np.ndarray], Rows]:
        """``solve_one(T_target, q0)``: ``solve(self.with_target(T_target, q0), solver)``'s numbers for one target,
        trusting its inputs (nothing about them is checked), so a loop that checks its own start pays only for the
        solve. Built once per solver, called once per tick.

        ``solver``: a :class:`Solver` whose ``"lm"`` runs compiled, on a problem without a :class:`Clearance` or
        ``prefer`` (else :class:`InputError`, here). The function takes ``T_target`` ``(1, 4, 4)`` from
        :meth:`checked_target` and ``q0`` float64 ``(n,)`` (rad or m) inside the joint limits, and returns the
        solver's rows of the one target: ``q (1, n)``, ``outcome (1,)`` an index into :data:`REASONS`,
        ``iterations``, ``perr`` (m), ``oerr`` (rad) and ``restarts``, each ``(1,)``.

        Examples
        --------
        >>> chain = physai.load("so101")
        >>> problem = physai.ik.ik_problem(chain, [0.2, 0.0, 0.1], task="position")
        >>> solve_one = problem.trusted_solver(physai.ik.Solver.tracking())
        >>> rows = solve_one(problem.checked_target([0.2, 0.0, 0.12]), chain.q_middle)
        >>> physai.ik.REASONS[rows.outcome[0]], bool(rows.perr[0] < 1e-4)
        ('converged', True)
        """
        if (self.world is not None or self.prefer is not None or type(solver) is not Solver
                or solver.method != "lm" or solver.backend == "numpy"):  # "jax" runs "dls" only
            raise InputError("trusted_solver: runs a compiled 'lm' Solver on a problem without limits or prefer; "
                             "pass the problem to physai.ik.solve")
        return _ik_solve.one_target_solver(self.chain, _ik_options.options(self.task, solver))


def _target_and_start(chain: Chain, task: Task, targets, q0):
    """The one check of targets and start: ``(T_target (B, 4, 4), q0 (n,) or (B, n), single)``."""
    shape = np.shape(targets) if type(targets) is not np.ndarray else targets.shape
    batch_ndim = _ik_options.target_ndim(task.kind, shape)
    T_target = check_targets(task.kind, targets, batch_ndim)
    B, n = len(T_target), chain.n
    q0 = chain.q_middle if q0 is None else chain.check_q(q0, "q0", within_limits=True)
    if q0.shape not in ((n,), (B, n)):
        raise InputError(f"q0: expected shape ({n},) or ({B}, {n}) for {B} target(s), got {q0.shape}")
    return T_target, q0, batch_ndim == 0


def ik_problem(chain: Chain, targets, q0=None, *, task: Task | str = "pose", limits: tuple = (),
               prefer: Secondary | None = None) -> Problem:
    """Check an IK problem once: the :class:`Problem` that :func:`solve` runs a :class:`Solver` on.

    ``targets``: one ``T_world_target`` ``(4, 4)`` (world frame, m) or ``(B, 4, 4)``; a position task also takes
    3-vectors, ``(3,)`` or ``(B, 3)``. ``q0``: ``None`` (the middle of the limits), ``(n,)`` for all or ``(B, n)``,
    inside the joint limits (a start outside them is refused, naming the joint). ``task``: a :class:`Task` or a
    kind's name. ``limits``: :class:`Clearance` limits (at most one; the joint limits always hold); a start that
    penetrates is refused, naming the pair. ``prefer``: a :class:`physai.nullspace.Prefer`, the secondary objective
    lowered along the self-motion of each converged answer.

    Examples
    --------
    >>> chain = physai.load("so101")
    >>> problem = physai.ik.ik_problem(chain, [[0.2, 0.0, 0.1], [0.15, 0.1, 0.15]], task="position")
    >>> physai.ik.solve(problem).converged
    array([ True,  True])
    """
    if not isinstance(chain, Chain):
        raise InputError(f"chain: expected a physai.Chain, got {type(chain).__name__}")
    task = as_task(task)
    if isinstance(limits, Clearance):
        limits = (limits,)
    if not isinstance(limits, tuple) or not all(isinstance(limit, Clearance) for limit in limits) or len(limits) > 1:
        raise InputError(f"limits: expected a tuple of at most one physai.ik.Clearance, got {limits!r}")
    if prefer is not None and not isinstance(prefer, Secondary):
        raise InputError(f"prefer: expected a physai.nullspace.Prefer, got {type(prefer).__name__}")
    chain.check_engine_arrays()  # the limits, start ranges and packed constants the solver reads, as built
    T_target, q0, single = _target_and_start(chain, task, targets, q0)
    world = checked_world(limits[0].world, chain, None if q0 is chain.q_middle else q0) if limits else None
    if world is not None:
        world.check_engine_arrays()  # the world's arrays, once per problem
    return Problem(chain, T_target, q0, task, world, prefer, single)


def solve(problem: Problem, solver: Solver = DEFAULT_SOLVER, *, rng: np.random.Generator | None = None,
          out: np.ndarray | None = None, trace: list | None = None) -> IKBatchResult:
    """Run ``solver`` on a checked ``problem``; returns an :class:`IKBatchResult` (``batch[b]`` is target ``b``'s).

    Each target runs its attempts in turn: first from ``q0``, then from up to ``solver.restarts`` random joint vectors
    inside the limits, drawn up front from ``rng`` (``default_rng(0)`` when ``None``) as
    ``chain.random_q(rng, (B, restarts))``; target ``b`` uses exactly the ``b``-th block of that draw, so solving
    targets one by one from one shared generator equals one batched solve. ``trace``: a list that receives, after
    every step of the NumPy loop, ``(rows, iterations, position_error, orientation_error)`` of each active target.
    ``out``: a writeable, C-contiguous float64 array ``(B, n)`` (checked before the solve) that receives the answers;
    the result's ``q`` is then that array (a loop that solves batch after batch reuses one buffer).

    Examples
    --------
    A tracking loop: the problem checked once, one target per tick from the last answer.

    >>> chain = physai.load("so101")
    >>> problem = physai.ik.ik_problem(chain, [0.2, 0.0, 0.1], task="position")
    >>> q = physai.ik.solve(problem).q[0]
    >>> for x in (0.201, 0.202):
    ...     q = physai.ik.solve(problem.with_target([x, 0.0, 0.1], q), physai.ik.Solver.tracking()).q[0]
    >>> print(np.round(physai.tool_pose(chain, q)[:3, 3], 4))
    [0.202 0.    0.1  ]
    """
    if out is not None:
        check_out(out, (len(problem.T_target), problem.chain.n), "out", (problem.q0,))
    rows, o = _rows(problem, solver, rng, trace)
    result = rows if isinstance(rows, IKBatchResult) else batch_result(*rows, o.method, o.task, o.tol_position,
                                                                       o.tol_orientation)
    if problem.prefer is not None:
        result = problem.prefer.refine(problem.chain, problem.T_target, result, problem.task, problem.world)
    if out is not None:
        out[...] = result.q
        result = replace(result, q=out)
    return result


def _rows(problem: Problem, solver: Solver, rng, trace) -> tuple[Rows | IKBatchResult, IKOptions]:
    """The solver's rows of a checked problem (the JAX loop's batch result), and the options it ran."""
    if type(problem) is not Problem:
        raise InputError(f"problem: expected a physai.ik.Problem (physai.ik.ik_problem), got {type(problem).__name__}")
    if type(solver) is not Solver:
        raise InputError(f"solver: expected a physai.ik.Solver, got {type(solver).__name__}")
    if rng is not None:
        generator(rng)
    o, chain = _ik_options.options(problem.task, solver), problem.chain
    if solver.backend == "jax":
        from physai import jaxik  # JAX only where it is asked for

        return jaxik.solve_checked(problem, o, rng), o
    if solver.backend == "compiled" and trace is not None:
        raise InputError("backend: 'compiled' cannot keep a trace; pass backend='numpy' or 'auto'")
    p = IKProblem(chain, problem.T_target, problem.q0, restart_uniforms(chain, rng, len(problem.T_target), o.restarts),
                  o, problem.world, solver.backend != "numpy" and o.method == "lm" and trace is None, "compiled", trace)
    return _solve(p), o


def _solve(p: IKProblem) -> Rows:
    """The checked problem's rows: the plain solve, or with a world the collision step (:mod:`physai._avoid_ik`)."""
    if p.world is None:
        return _ik_solve.solve(p)
    from physai import _avoid_ik  # MuJoCo is imported only once a world is given

    return _avoid_ik.solve(p)


def _deprecated_keywords(front):
    """The flat keywords of the previous release (``method=``, ``restarts=``, ``weights=``, ``engine=``, ...) for one
    more release: each call that passes one warns, naming the objects that replace it, and is answered by them."""
    @functools.wraps(front)
    def shim(chain, targets, q0=None, **keywords):
        flat = {k: keywords.pop(k) for k in list(keywords) if k in _FLAT}
        if not flat:
            return front(chain, targets, q0, **keywords)
        warnings.warn(f"{front.__name__}({', '.join(f'{k}=' for k in flat)}) is deprecated: pass "
                      "task=physai.ik.Task(...) and solver=physai.ik.Solver(...) (the README maps each keyword)",
                      DeprecationWarning, stacklevel=2)
        task, solver, trace = from_flat(keywords.pop("task", "pose"), flat)
        if trace is None:
            return front(chain, targets, q0, task=task, solver=solver, **keywords)
        keywords.pop("solver", None)
        limits = () if keywords.get("avoid") is None else (Clearance(keywords["avoid"]),)
        problem = ik_problem(chain, targets, q0, task=task, limits=limits, prefer=keywords.get("prefer"))
        result = solve(problem, solver, rng=keywords.get("rng"), out=keywords.get("out"), trace=trace)
        return result[0] if problem.single and front.__name__ == "solve_ik" else result
    return shim


# the previous release's flat keywords -> (the object that holds it now, its field there)
_FLAT = {"method": ("solver", "method"), "restarts": ("solver", "restarts"), "max_iterations": ("solver", "iterations"),
         "max_step": ("solver", "step"), "damping": ("solver", "damping"), "patience": ("solver", "patience"),
         "sigma_healthy": ("solver", "sigma_healthy"), "lambda_max": ("solver", "lambda_max"),
         "weights": ("task", "weights"), "tol_position": ("task", "tol_position"),
         "tol_orientation": ("task", "tol_orientation"), "axis": ("task", "axis"), "engine": (None, None),
         "backend": (None, None), "trace": (None, None)}


def from_flat(task, flat: dict) -> tuple[Task, Solver, list | None]:
    """The :class:`Task`, :class:`Solver` and trace of the previous release's flat keywords ``flat`` (a name of
    ``task`` or a Task); ``engine="numpy"`` and ``backend="numpy"`` both mean ``Solver(backend="numpy")``."""
    task = as_task(task)
    fields = {"task": {}, "solver": {}}
    for name, value in flat.items():
        if name not in _FLAT:
            raise TypeError(f"solve_ik() got an unexpected keyword argument {name!r}")
        home, field_name = _FLAT[name]
        if home:
            fields[home][field_name] = value
    engine, backend = flat.get("engine", "compiled"), flat.get("backend")
    from physai._validate import one_of

    one_of(engine, "engine", ("compiled", "numpy"))
    if backend is not None:
        one_of(backend, "backend", ("compiled", "numpy"))
    trace = flat.get("trace")
    if backend == "compiled" and (engine != "compiled" or trace is not None
                                  or fields["solver"].get("method", "lm") != "lm"):
        raise InputError("backend: 'compiled' cannot serve this method, trace or engine; pass backend='numpy' or "
                         "leave backend=None to choose")
    fields["solver"]["backend"] = "numpy" if "numpy" in (engine, backend) else backend or "auto"
    try:
        if fields["task"]:
            task = Task(task.kind, **{"weights": task.weights, "tol_position": task.tol_position,
                                      "tol_orientation": task.tol_orientation, "axis": task.axis, **fields["task"]})
        return task, Solver(**fields["solver"]), trace
    except InputError as error:  # named as the caller spelled it
        field, _, rest = str(error).partition(":")
        flat_name = next((k for k in flat if _FLAT[k][1] == field), field)
        raise InputError(f"{flat_name}:{rest}") from None


@_deprecated_keywords
def solve_ik_batch(chain: Chain, targets, q0=None, *, task: Task | str = "pose", solver: Solver = DEFAULT_SOLVER,
                   avoid=None, prefer: Secondary | None = None, rng: np.random.Generator | None = None,
                   out: np.ndarray | None = None) -> IKBatchResult:
    """Solve many targets at once: ``solve(ik_problem(chain, targets, q0, task=task, limits=(Clearance(avoid),),
    prefer=prefer), solver, rng=rng, out=out)``; returns an :class:`IKBatchResult` (``batch[b]`` is target ``b``'s
    :class:`IKResult`; its ``q`` is ``out`` when given, a writeable C-contiguous float64 ``(B, n)``).

    The compiled backend (default for ``"lm"``) runs every target's whole solve in compiled code, the targets
    shared among one thread per core (from 2 x ``THREAD_MIN_TARGETS`` targets; the rows are the same on any
    number of threads); the NumPy backend steps all targets together, vectorised over them. Both give each target
    the same attempts.

    ``targets: (B, 4, 4)`` (or ``(B, 3)`` for ``task="position"``); ``q0``: ``None`` (the middle of the
    limits), ``(n,)`` for all or ``(B, n)``. Each target runs its attempts in turn (:func:`solve`). Because target
    ``b`` uses exactly the ``b``-th block of the restart draw, ``solve_ik`` in a loop over one shared generator gives
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
    limits = () if avoid is None else (Clearance(avoid),)
    return solve(ik_problem(chain, targets, q0, task=task, limits=limits, prefer=prefer), solver, rng=rng, out=out)


@_deprecated_keywords
def solve_ik(chain: Chain, target, q0=None, *, task: Task | str = "pose", solver: Solver = DEFAULT_SOLVER,
             avoid=None, prefer: Secondary | None = None, rng: np.random.Generator | None = None) -> IKResult:
    """Joint positions that put the chain's tool on ``target``; never raises for unreachable targets.

    ``target``: a 4x4 ``T_world_target`` (world frame, m) for ``task="pose"`` or ``"position+axis"``,
    a 3-vector or 4x4 for ``"position"``. ``task``: a :class:`Task` (the kind, row weights, tolerances) or a kind's
    name; ``solver``: a :class:`Solver` (method, restarts, iterations, step, damping, backend; see the module
    docstring: ``"lm"`` is the default and the best; :meth:`Solver.tracking` for a loop that follows a moving target).
    An attempt stops when its error has not fallen by 1 % within ``patience`` steps; further attempts start from
    random joint vectors (``rng``, default ``default_rng(0)``) inside the limits, tried only when the previous attempt
    failed (at most :data:`UNREACHABLE_RESTARTS` for positions beyond :func:`reach_bound`).

    ``avoid``: a :class:`physai.collision.CollisionWorld` of this chain (:func:`physai.collision.collision_world`;
    ``limits=(Clearance(world),)`` of :func:`ik_problem`). An answer then counts as converged only if every pair of
    the world keeps its ``margin`` (MuJoCo's ``mj_geomDistance``); a target with no such answer found is
    ``converged=False`` with reason ``"collision: no answer keeps the margin"`` and ``"collision"`` in ``unmet``.
    Method (:mod:`physai._avoid_ik`): the plain solve, its answer checked; for a colliding one, one plain attempt
    from each of the target's restart draws in turn until an answer is clear, the first draws replaced by the world's
    clear postures whose tool poses are nearest the target; then Levenberg-Marquardt with a quadratic penalty row per
    close pair from the colliding answers (Nocedal and Wright 2006, section 17.1; the rows' Jacobian is the
    contact-normal Jacobian). A ``q0`` that penetrates an obstacle is refused (:class:`InputError` naming the pair).
    ``prefer``: a :class:`physai.nullspace.Prefer`, lowered along the self-motion of a converged answer.

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
    limits = () if avoid is None else (Clearance(avoid),)
    problem = ik_problem(chain, target, q0, task=task, limits=limits, prefer=prefer)
    if not problem.single:
        raise InputError(f"target: expected one target for solve_ik (solve_ik_batch solves {len(problem.T_target)})")
    if prefer is not None:
        return solve(problem, solver, rng=rng)[0]
    rows, o = _rows(problem, solver, rng, None)
    return rows[0] if isinstance(rows, IKBatchResult) else one_result(*rows, o.method, o.task, o.tol_position,
                                                                      o.tol_orientation)


def check_problem(chain: Chain, targets, q0, batch_ndim: int, options: dict) -> IKProblem:
    """The solvers' :class:`~physai._ik_record.IKProblem` of the previous release's keywords ``options`` (``task``,
    ``avoid``, ``rng`` and the flat ones): what the collision step's tests build a problem from."""
    options = dict(options)
    task, solver, trace = from_flat(options.pop("task", "pose"), {k: options.pop(k) for k in list(options)
                                                                   if k in _FLAT})
    avoid, rng = options.pop("avoid", None), options.pop("rng", None)
    if options:
        raise TypeError(f"solve_ik() got an unexpected keyword argument {next(iter(options))!r}")
    problem = ik_problem(chain, targets, q0, task=task, limits=() if avoid is None else (Clearance(avoid),))
    o = _ik_options.options(problem.task, solver)
    return IKProblem(chain, problem.T_target, problem.q0, restart_uniforms(chain, rng, len(problem.T_target),
                                                                           o.restarts), o, problem.world,
                     solver.backend != "numpy" and trace is None, "compiled", trace)
