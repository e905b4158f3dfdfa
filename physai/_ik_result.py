"""The results of an IK solve (private; :mod:`physai.ik` exports them): one target's, and a batch's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai import kinematics
from physai._ik_record import BEST_EFFORT, COLLISION, ITERATION_LIMIT, REASONS
from physai.kinematics import Chain
from physai.singularity import Health, health

# indexed by an outcome array (never written); one word for every task: an attempt out of steps and one at a
# stationary point both fell short of the target
_REASON_NAMES = np.asarray([REASONS[BEST_EFFORT] if k == ITERATION_LIMIT else r for k, r in enumerate(REASONS)])


@dataclass(frozen=True)
class IKResult:
    """The outcome of one IK solve.

    ``q: (n,)`` joint positions, always inside the chain's limits; ``converged`` whether both errors are
    within tolerance; ``iterations`` steps taken over all attempts; ``position_error`` (m) and
    ``orientation_error`` (rad; the angle between tool and target axes for ``"position+axis"``, 0 for
    ``"position"``) at ``q``; ``reason`` ``"converged"``, ``"unreachable"`` (no attempt met the tolerances: ``q`` is the
    closest point found, for every task) or, with a clearance limit, ``"collision: no answer keeps the margin"``;
    ``restarts`` random restarts used; ``unmet`` the parts of the target not achieved:
    ``()`` when converged, else a subset of ``("position", "orientation")``, led by ``"collision"`` when the reason
    is ``"collision: no answer keeps the margin"`` (``avoid=``; then ``q`` is the closest clear point found).

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) asked for a point 1.0 m away, beyond its 0.8 m reach:
    the result is the closest point, and says so.

    >>> result = physai.solve_ik(physai.load("planar2r"), [1.0, 0.0, 0.0], task="position")
    >>> result.converged, result.reason, result.unmet
    (False, 'unreachable', ('position',))
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
    cost: float | None = None  # the secondary objective at q (a problem with prefer=), else None

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
    (0.667, 'unreachable')
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
    cost: np.ndarray | None = None  # (B,) the secondary objective at q (a problem with prefer=), else None

    def __len__(self) -> int:
        return len(self.q)

    def __getitem__(self, b: int) -> IKResult:
        return IKResult(self.q[b].copy(), bool(self.converged[b]), int(self.iterations[b]),
                        float(self.position_error[b]), float(self.orientation_error[b]), str(self.reason[b]),
                        int(self.restarts[b]), self.method, self.task, self.unmet[b],
                        None if self.cost is None else float(self.cost[b]))

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
    perr, oerr, outcome = np.asarray(perr, float), np.asarray(oerr, float), np.asarray(outcome)
    codes = outcome.tolist()
    unmet = tuple(() if k == 0 else _unmet(k, p, o, tol_position, tol_orientation)
                  for k, p, o in zip(codes, perr.tolist(), oerr.tolist()))
    return IKBatchResult(np.array(q, float), outcome == 0, np.asarray(iterations, np.int64), perr, oerr,
                         _REASON_NAMES[outcome], np.asarray(restarts, np.int64), method, task, unmet)


def one_result(q, outcome, iterations, perr, oerr, restarts, method: str, task: str, tol_position: float,
               tol_orientation: float) -> IKResult:
    """The :class:`IKResult` of a one-target solve's arrays (those of :func:`batch_result`, ``B = 1``), built
    directly: the same fields as the batch's row, without the batch."""
    outcome, perr, oerr = outcome.item(0), perr.item(0), oerr.item(0)
    return IKResult(q[0].copy(), outcome == 0, iterations.item(0), perr, oerr, str(_REASON_NAMES[outcome]),
                    restarts.item(0), method, task,
                    () if outcome == 0 else _unmet(outcome, perr, oerr, tol_position, tol_orientation))


def _unmet(outcome: int, perr: float, oerr: float, tol_position: float, tol_orientation: float) -> tuple:
    """What one target did not achieve: ``()`` when converged (``outcome`` 0), else each of
    ``("position", "orientation")`` whose error (``perr`` m, ``oerr`` rad) is above its tolerance, led by
    ``"collision"`` for the collision outcome."""
    if outcome == 0:
        return ()
    return ("collision",) * (outcome == COLLISION) + tuple(
        part for part, err, tol in (("position", perr, tol_position), ("orientation", oerr, tol_orientation))
        if err > tol)
