"""The IK options as frozen objects, each checked once where it is built (private; :mod:`physai.ik` exports them).

:class:`Task` says what to reach (the kind, the row weights, the tolerances), :class:`Solver` how (the method, its
budget and step, and the backend that runs it), :class:`Clearance` a collision world to keep clear of. A solve merges
one task and one solver into the :class:`~physai._ik_record.IKOptions` record the solvers read
(:func:`options`, cached: a tracking loop passes the same objects every tick). Also the one check of a target.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from physai import _engine
from physai import transforms as tf
from physai._ik_record import IKOptions
from physai._ik_solve import TASK_ROWS
from physai._validate import count, finite_array, nonnegative, one_of, positive
from physai.errors import InputError

TASKS = ("pose", "position", "position+axis")
METHODS = ("transpose", "pinv", "dls", "adaptive", "lm")
# "auto": the compiled solve where it serves (method "lm", no trace), else the NumPy loop; "jax": jaxik's DLS loop.
BACKENDS = ("auto", "compiled", "numpy", "jax")
# Default iteration budget per attempt: gradient descent converges linearly and needs far more steps.
# LM fails fast (a converging attempt needs ~5-20 steps; a stuck one is abandoned after `patience`
# steps without 1 % progress) and relies on restarts: 200 restarts took 1,000 random reachable targets
# per robot/task to 100 % in lesson 11; hard targets (near joint limits) have ~2-10 % basins.
DEFAULT_MAX_ITERATIONS = {"transpose": 2000, "pinv": 100, "dls": 200, "adaptive": 100, "lm": 50}
DEFAULT_PATIENCE = {"transpose": 50, "pinv": 20, "dls": 20, "adaptive": 20, "lm": 5}
DEFAULT_RESTARTS = 200
TOL_POSITION, TOL_ORIENTATION, MAX_STEP = 1e-4, 1e-3, 0.5  # m, rad, rad or m per step
DAMPING, SIGMA_HEALTHY, LAMBDA_MAX = 0.02, 0.03, 0.05  # m/rad, -, m/rad
MAX_RESTARTS = 100_000  # restarts are drawn up front: (B, restarts, n) floats
TARGET_TOL = 1e-6  # a target's rotation block and bottom row must be rigid to this (check_targets)
_ROUND_OFF = 1e-12  # rigid to round-off: used as given, else projected onto the nearest rotation
# The tracking preset (Solver.tracking): measured on a 5 cm circle at 100 ticks (benchmarks/ik_peers.py --circle),
# a tick from the previous answer converges in a few LM steps; a step of 0.2 rad keeps one bad tick from flipping
# the arm to another branch.
TRACKING_ITERATIONS, TRACKING_STEP = 20, 0.2


@dataclass(frozen=True)
class Task:
    """What an IK solve reaches: ``kind`` (``"pose"``, ``"position"`` or ``"position+axis"``, :mod:`physai.ik`),
    ``weights`` per residual row (6 for pose and position+axis, 3 for position; None: ones), the tolerances
    ``tol_position`` (m) and ``tol_orientation`` (rad) that success is judged by (unweighted), and ``axis`` the
    tool-frame axis ``"position+axis"`` aligns. Checked when built.

    Examples
    --------
    >>> physai.ik.Task("pose", weights=(1, 1, 1, 0.01, 0.01, 0.01))
    Task(kind='pose', weights=(1.0, 1.0, 1.0, 0.01, 0.01, 0.01), tol_position=0.0001, tol_orientation=0.001, axis=(0.0, 0.0, 1.0))
    """

    kind: str = "pose"
    weights: tuple | None = None
    tol_position: float = TOL_POSITION
    tol_orientation: float = TOL_ORIENTATION
    axis: tuple = (0.0, 0.0, 1.0)
    sqrt_weights: np.ndarray = field(init=False, repr=False, compare=False)
    unit_axis: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        one_of(self.kind, "task", TASKS)
        m = TASK_ROWS[self.kind]
        if self.weights is None:
            sqrt_w = np.ones(m)
        else:
            w = finite_array(self.weights, "weights", (m,), f" for task={self.kind!r}")
            if w.ndim != 1 or np.any(w <= 0):  # checked before the square root: sqrt(-1) would be a silent NaN
                raise InputError(f"weights: expected {m} positive numbers for task={self.kind!r}, got {self.weights}")
            object.__setattr__(self, "weights", tuple(float(x) for x in w))
            sqrt_w = np.sqrt(w)
        a = finite_array(self.axis, "axis", (3,))
        if a.ndim != 1 or np.linalg.norm(a) == 0:
            raise InputError(f"axis: expected a nonzero 3-vector in the tool frame, got {self.axis}")
        object.__setattr__(self, "axis", tuple(float(x) for x in a))
        object.__setattr__(self, "tol_position", positive(self.tol_position, "tol_position"))
        object.__setattr__(self, "tol_orientation", positive(self.tol_orientation, "tol_orientation"))
        for name, value in (("sqrt_weights", sqrt_w), ("unit_axis", a / np.linalg.norm(a))):
            value.flags.writeable = False
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Solver:
    """How an IK solve runs: ``method`` (:data:`METHODS`; ``"lm"`` the best), ``restarts`` further attempts from
    random joint vectors after the one from ``q0`` fails, ``iterations`` per attempt (None: the method's default),
    ``step`` the largest joint change per step (rad or m), ``damping`` (``"dls"``'s lambda, m/rad), ``patience`` steps
    without 1 % progress before an attempt ends (None: the method's default), ``sigma_healthy`` and ``lambda_max``
    (``"adaptive"``'s ramp), and ``backend``: ``"compiled"`` (each target's ``"lm"`` solve in one compiled call),
    ``"numpy"`` (the readable vectorised loop, every method), ``"jax"`` (the ``"dls"`` loop under ``jax.jit``; the
    ``jax`` extra) or ``"auto"`` (compiled where it serves, else NumPy). Checked when built.

    Examples
    --------
    >>> physai.ik.Solver.tracking()
    Solver(method='lm', restarts=0, iterations=20, step=0.2, damping=0.02, patience=None, backend='auto', sigma_healthy=0.03, lambda_max=0.05)
    """

    method: str = "lm"
    restarts: int = DEFAULT_RESTARTS
    iterations: int | None = None
    step: float = MAX_STEP
    damping: float = DAMPING
    patience: int | None = None
    backend: str = "auto"
    sigma_healthy: float = SIGMA_HEALTHY
    lambda_max: float = LAMBDA_MAX

    def __post_init__(self):
        one_of(self.method, "method", METHODS)
        one_of(self.backend, "backend", BACKENDS)
        if self.backend == "compiled" and self.method != "lm":
            raise InputError(f"backend: 'compiled' runs method='lm', not {self.method!r}; pass backend='numpy' or "
                             "'auto'")
        if self.backend == "jax" and self.method != "dls":
            raise InputError(f"backend: 'jax' runs method='dls', not {self.method!r}")
        set_ = functools.partial(object.__setattr__, self)
        set_("restarts", count(self.restarts, "restarts", 0, MAX_RESTARTS))
        set_("iterations", DEFAULT_MAX_ITERATIONS[self.method] if self.iterations is None
             else count(self.iterations, "iterations", 1))
        set_("patience", None if self.patience is None else count(self.patience, "patience", 1))
        set_("step", positive(self.step, "step"))
        set_("damping", nonnegative(self.damping, "damping"))
        set_("sigma_healthy", positive(self.sigma_healthy, "sigma_healthy"))
        set_("lambda_max", positive(self.lambda_max, "lambda_max"))

    @classmethod
    def tracking(cls, iterations: int = TRACKING_ITERATIONS, step: float = TRACKING_STEP) -> Solver:
        """The preset of a teleop or servo loop: no restarts (each tick starts from the last answer, and a restart
        could move the arm to another branch), ``iterations`` LM steps, a joint step bounded by ``step`` (rad or m).
        An unreachable tick ends on the best compromise near ``q0``."""
        return cls(restarts=0, iterations=iterations, step=step)


@dataclass(frozen=True)
class Clearance:
    """A limit that keeps every pair of ``world`` (a :class:`physai.collision.CollisionWorld` of the chain) at least
    its margin apart; checked against the chain when the problem is built (:func:`physai.ik.ik_problem`).

    Examples
    --------
    >>> from physai import collision
    >>> chain = physai.load("so101")
    >>> post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))  # half-sizes, centre (m)
    >>> world = collision.collision_world(collision.scene("so101", [post]), chain)
    >>> problem = physai.ik.ik_problem(chain, [0.2, -0.05, 0.1], task="position", limits=(physai.ik.Clearance(world),))
    >>> result = physai.ik.solve(problem)
    >>> result.converged, world.clear(result.q)
    (array([ True]), array([ True]))
    """

    world: object


class Secondary:
    """A secondary objective optimised in the null space of a solved task (the base of
    :class:`physai.nullspace.Prefer`): ``refine(chain, T_target, result, task, world)`` returns the result with ``q``
    moved along the self-motion."""

    def refine(self, chain, T_target, result, task: Task, world):
        raise NotImplementedError


DEFAULT_TASK, DEFAULT_SOLVER = Task(), Solver()
_TASK_OF_KIND = {kind: Task(kind) for kind in TASKS}


def as_task(task) -> Task:
    """``task`` as a :class:`Task`: one passes as it is, a kind's name is that kind's default task."""
    if type(task) is Task:
        return task
    if isinstance(task, str):
        return _TASK_OF_KIND[one_of(task, "task", TASKS)]
    raise InputError(f"task: expected a physai.ik.Task or one of {', '.join(map(repr, TASKS))}, got {task!r}")


_OPTIONS: dict = {}  # (id(task), id(solver)) -> (task, solver, options): the pair held, so neither id is reused


def options(task: Task, solver: Solver) -> IKOptions:
    """The solvers' :class:`~physai._ik_record.IKOptions` of a checked task and solver, cached by identity (both are
    frozen; a loop passes the same two objects every tick, and hashing their fields would cost more)."""
    hit = _OPTIONS.get((id(task), id(solver)))
    if hit is not None and hit[0] is task and hit[1] is solver:
        return hit[2]
    if len(_OPTIONS) >= 256:
        _OPTIONS.clear()
    o = _options(task, solver)
    _OPTIONS[id(task), id(solver)] = (task, solver, o)
    return o


def _options(task: Task, solver: Solver) -> IKOptions:
    return IKOptions(task.kind, solver.method, task.sqrt_weights, task.tol_position, task.tol_orientation,
                     solver.iterations, solver.restarts, task.unit_axis, solver.step, solver.damping,
                     solver.sigma_healthy, solver.lambda_max,
                     DEFAULT_PATIENCE[solver.method] if solver.patience is None else solver.patience)


def target_ndim(kind: str, shape: tuple) -> int:
    """0 for one target of ``kind`` (a 4x4, or a 3-vector for ``"position"``), 1 for a batch."""
    if kind == "position" and len(shape) == 2 and shape != (4, 4):
        return 1
    return 0 if len(shape) <= 2 else 1


def check_targets(task: str, targets, batch_ndim: int) -> np.ndarray:
    """Targets as ``(B, 4, 4)``; a position task also takes 3-vectors. ``batch_ndim``: 0 single, 1 batch.

    The one check of a target on every IK path: finite, the right shape and, unless ``task="position"``, a
    rigid transform to ``TARGET_TOL`` (an FK pose stored as float32 passes). A rotation block off by more
    than round-off is replaced by the nearest rotation, so every later step sees an exact one.
    """
    if type(targets) is not np.ndarray and isinstance(targets, (list, tuple)):
        try:  # a list of numbers takes the array's path (one check, no slow way round)
            targets = np.array(targets, dtype=np.float64)
        except (TypeError, ValueError):
            pass
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
