"""The compiled IK solve's settings record and codes (private), apart from numba so that reading them costs no import.

:mod:`physai.ik` fills the record; :mod:`physai._numba_ik` (the kernel) reads it by field name.
"""

from __future__ import annotations

import numpy as np

TASK_CODES = {"pose": 0, "position": 1, "position+axis": 2}
# Outcome codes of the kernel, index into physai.ik.REASONS.
CONVERGED, BEST_EFFORT, ITERATION_LIMIT = 0, 1, 2

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
