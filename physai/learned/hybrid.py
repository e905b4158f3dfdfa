"""Measuring learned inverse models, and the hybrid: a network guess refined by a few DLS iterations.

All functions are batched: ``targets: (N, 3)`` tool points (m, world), ``q: (N, n)`` (rad).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from physai._validate import count, finite_array, nonnegative
from physai.errors import InputError
from physai.kinematics import Chain, fk, tool_pose_and_jacobian
from physai.singularity import damped_solve


def position_error(chain: Chain, q, targets) -> np.ndarray:
    """Distance from the tool point at ``q: (..., n)`` to ``targets: (..., 3)`` -> ``(...)`` (m)."""
    return np.linalg.norm(fk(chain, q).p - finite_array(targets, "targets", (3,)), axis=-1)


def limit_violation(chain: Chain, q) -> np.ndarray:
    """Which joint values lie outside the chain's limits: ``q: (..., n)`` -> bool ``(..., n)``."""
    q = chain.check_q(q)
    return (q < chain.lower) | (q > chain.upper)


@dataclass(frozen=True)
class RefineResult:
    """Refined joints ``q: (N, n)``, their errors (m), the initial guesses' errors, iterations run."""

    q: np.ndarray
    position_error: np.ndarray
    initial_error: np.ndarray
    iterations: int


def dls_refine(chain: Chain, targets, q0, iterations: int, *, damping: float = 0.01,
               tol: float = 0.0) -> RefineResult:
    """``iterations`` damped-least-squares steps on the position error from ``q0``, batched; keep the best.

    Each step is ``dq = J^T (J J^T + damping^2 I)^-1 (x* - p(q))`` on the 3-row position Jacobian,
    then ``q`` is clipped into the joint limits. Every target keeps the best iterate seen, including
    ``q0`` itself, so the result is never worse than its initial guess. Targets already within
    ``tol`` (m) stop moving.

    The step is :func:`physai.singularity.damped_solve`; unlike ``solve_ik`` this runs a fixed number
    of iterations with no restarts.

    Deprecated: refine network guesses with ``physai.solve_ik_batch(chain, targets, q0, task="position",
    solver=physai.Solver(method="dls", restarts=0, iterations=k, damping=d))``, which also stops at the task's
    tolerance, bounds each step and polishes a failed attempt (so its answers are not this loop's, step for step).
    """
    warnings.warn("physai.learned.dls_refine is deprecated: use physai.solve_ik_batch(chain, targets, q0, "
                  "task='position', solver=physai.Solver(method='dls', restarts=0, iterations=k, damping=d))",
                  DeprecationWarning, stacklevel=2)
    targets = finite_array(targets, "targets", (3,))
    q = np.array(chain.check_q(q0), dtype=float)
    if q.shape[:-1] != targets.shape[:-1]:
        raise InputError(f"q0: expected batch shape {targets.shape[:-1]} to match targets, got {q.shape[:-1]}")
    iterations = count(iterations, "iterations")
    damping, tol = nonnegative(damping, "damping"), nonnegative(tol, "tol")
    best_q = q.copy()
    err0 = best_err = position_error(chain, q, targets)
    for _ in range(iterations):
        T, J = tool_pose_and_jacobian(chain, q)
        e = targets - T[..., :3, 3]
        dq = damped_solve(J[..., :3, :], e, damping)
        dq[np.linalg.norm(e, axis=-1) <= tol] = 0.0
        q = np.clip(q + dq, chain.lower, chain.upper)
        err = position_error(chain, q, targets)
        better = err < best_err
        best_q[better], best_err = q[better], np.where(better, err, best_err)
    return RefineResult(best_q, best_err, err0, iterations)
