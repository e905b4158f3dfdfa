"""The records an IK solve passes below its public entry (private): the checked problem, its options, the solvers'
rows, and the compiled solve's settings record and codes, apart from numba so that reading them costs no import.

:mod:`physai.ik` checks its arguments once into an :class:`IKProblem`; the solvers below it
(:mod:`physai._ik_solve`, :mod:`physai._avoid_ik`) trust it and answer :class:`Rows`; :mod:`physai._numba_ik` (the
kernel) reads :data:`SETTINGS` by field name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from physai.chain import Chain

TASK_CODES = {"pose": 0, "position": 1, "position+axis": 2}
# Every IK path reports one of these: a solve "converged", "unreachable" (its outcome codes BEST_EFFORT and
# ITERATION_LIMIT, one word for every task and backend) or, with a clearance limit, the last; the null-space
# refinement the fourth, fifth and "iteration limit".
REASONS = ("converged", "unreachable", "iteration limit", "stationary",
           "primary not converged: not optimised", "collision: no answer keeps the margin")
# Outcome codes of the solvers, indices into REASONS.
CONVERGED, BEST_EFFORT, ITERATION_LIMIT = 0, 1, 2
COLLISION = REASONS.index("collision: no answer keeps the margin")


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


class IKProblem(NamedTuple):
    """One solve's arguments, checked once at the public entry (:func:`physai.ik.solve_ik_batch`): nothing below it
    checks them again. Immutable (a named tuple: built once per call, it costs a fifth of a frozen dataclass, and a
    one-target solve takes some 35 us in all); ``p._replace(...)`` derives another problem."""

    chain: Chain
    T_target: np.ndarray  # (B, 4, 4) rigid targets (only the translation is read for task="position")
    q0: np.ndarray  # (n,) or (B, n) first starts, inside the limits
    uniforms: np.ndarray  # (B, restarts, n) numbers in [0, 1) behind the restart draws
    options: IKOptions
    world: Any = None  # the avoid= CollisionWorld of this chain, or None
    compiled: bool = True  # the compiled solve serves (else the NumPy loop)
    engine: str = "compiled"  # the NumPy loop's kinematics engine
    trace: list | None = None  # the NumPy loop's convergence log


class Rows(NamedTuple):
    """A solver's answer per target: ``q (B, n)`` the converged or best point, ``outcome (B,)`` an index into
    :data:`REASONS`, ``iterations``, ``perr`` (m), ``oerr`` (rad) and ``restarts``, each ``(B,)``."""

    q: np.ndarray
    outcome: np.ndarray
    iterations: np.ndarray
    perr: np.ndarray
    oerr: np.ndarray
    restarts: np.ndarray

# The solver's settings as one named record: a structured NumPy array of one element, which numba reads by
# field name at the cost of an array argument.
SETTINGS = np.dtype([
    ("task", np.int64), ("iterations", np.int64), ("patience", np.int64), ("attempts", np.int64),
    ("attempts_far", np.int64), ("tol_position", np.float64), ("tol_orientation", np.float64),
    ("max_step", np.float64), ("mu0", np.float64), ("mu_down", np.float64), ("mu_up", np.float64),
    ("mu_min", np.float64), ("reach", np.float64), ("base", np.float64, (3,)), ("polish", np.int64),
])


def settings(*, task: str, iterations: int, patience: int, attempts: int, attempts_far: int, tol_position: float,
             tol_orientation: float, max_step: float, mu0: float, mu_down: float, mu_up: float, mu_min: float,
             reach: float, base, polish: bool = True) -> np.ndarray:
    """One :data:`SETTINGS` record ``(1,)``: ``task`` (a name of :data:`TASK_CODES`), steps per attempt, patience,
    attempts for a target within ``reach`` (m) of ``base (3,)`` and for one beyond it, the tolerances (m, rad),
    ``max_step``, the damping schedule, and whether the best point is polished once every attempt has failed."""
    return np.array([(TASK_CODES[task], iterations, patience, attempts, attempts_far, tol_position, tol_orientation,
                      max_step, mu0, mu_down, mu_up, mu_min, reach, base, int(polish))], SETTINGS)
