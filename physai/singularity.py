"""Singularity health of a Jacobian and the damped step that survives it (lessons 09-10).

Shapes and units:
- ``J: (..., m, n)`` a geometric Jacobian, rows "linear (m/rad), then angular (rad/rad)" as
  :func:`physai.kinematics.jacobian` returns them; ``m`` is 6 (or 3 for one block alone).
- Task velocities ``v: (..., m)`` in the same row order; joint velocities ``qdot: (..., n)``.

The SVD ``J = U diag(sigma) V^T`` reads the arm's conditioning directly: joint motion along ``V[:, i]``
moves the tool along ``U[:, i]`` with gain ``sigma_i``. Near a singularity ``sigma_min -> 0`` and the
exact inverse demands joint speeds ``|v| / sigma_min``. Damped least squares replaces ``1/sigma`` by the
filter factor ``sigma / (sigma^2 + lambda^2)``, which never exceeds ``1 / (2 lambda)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai._validate import finite_array, nonnegative, positive
from physai.errors import InputError

BLOCKS = ("position", "orientation", "full")
_RCOND = 1e-12  # damped_solve's default: singular values below this times sigma_max count as zero


@dataclass(frozen=True)
class Health:
    """SVD health of one Jacobian block.

    ``sigma`` singular values, descending (units of the block: m/rad for position, 1 for
    orientation, m/rad for ``full`` whose angular rows are scaled by a characteristic length);
    ``kappa = sigma_max / sigma_min`` (inf when singular); ``manipulability`` Yoshikawa's
    ``sqrt(det(J J^T)) = prod(sigma)`` (0 when the block has more rows than joints).
    """

    sigma: np.ndarray
    sigma_min: float
    kappa: float
    manipulability: float


def jacobian_block(J, block: str = "position", char_length: float = 0.3) -> np.ndarray:
    """The rows of ``J: (..., 6, n)`` that ``block`` names.

    ``"position"`` rows 0-2, ``"orientation"`` rows 3-5, ``"full"`` all six with the angular rows
    multiplied by ``char_length`` (m), so every row is in m/rad and one condition number makes sense.
    """
    J = finite_array(J, "J")
    if J.ndim < 2 or J.shape[-2] != 6:
        raise InputError(f"J: expected shape (..., 6, n), got {J.shape}")
    char_length = positive(char_length, "char_length")
    if block not in BLOCKS:
        raise InputError(f"block: expected one of {BLOCKS}, got {block!r}")
    return jacobian_block_trusted(J, block, char_length)


def jacobian_block_trusted(J: np.ndarray, block: str, char_length: float) -> np.ndarray:
    """:func:`jacobian_block` of a checked ``J``, ``block`` and ``char_length``."""
    if block == "position":
        return J[..., :3, :]
    if block == "orientation":
        return J[..., 3:, :]
    return np.concatenate([J[..., :3, :], char_length * J[..., 3:, :]], axis=-2)


def _health_from_sigma(sigma: np.ndarray, rows: int) -> Health:
    sigma_min = float(sigma[-1]) if len(sigma) == rows else 0.0  # fewer joints than rows: rank-deficient
    kappa = float(sigma[0] / sigma_min) if sigma_min > 0 else float("inf")
    manipulability = float(np.prod(sigma)) if sigma_min > 0 else 0.0
    return Health(sigma=sigma, sigma_min=sigma_min, kappa=kappa, manipulability=manipulability)


def health(J, block: str = "position", char_length: float = 0.3) -> Health:
    """Singular values, sigma_min, condition number and manipulability of one block of ``J: (6, n)``.

    ``block``: ``"position"`` (rows 0-2, m/rad), ``"orientation"`` (rows 3-5, rad/rad) or ``"full"`` (all six,
    the angular rows scaled by ``char_length``). ``char_length`` (m) only matters for ``block="full"`` (0.3 m suits
    a WidowX-AI-sized arm). Returns a frozen ``Health``: ``sigma`` the singular values, descending;
    ``sigma_min`` the smallest of ``min(rows, n)`` (0 when the block has more rows than joints); ``kappa`` =
    ``sigma_max / sigma_min`` (``inf`` at a singularity); ``manipulability`` the product of the ``sigma`` (0 where
    ``sigma_min`` is).

    Examples
    --------
    The SO-101's position block at a bent pose: well conditioned (kappa about 5).

    >>> chain = physai.load("so101")
    >>> h = physai.health(physai.jacobian(chain, [0.0, -0.6, 0.9, 0.4, 0.3]))
    >>> print(np.round(h.sigma, 3), round(h.kappa, 2))
    [0.39  0.25  0.078] 5.03
    """
    Jb = jacobian_block(J, block, char_length)
    if Jb.ndim != 2:
        raise InputError(f"J: health takes one Jacobian of shape (6, n), got {np.shape(J)}")
    return _health_from_sigma(np.linalg.svd(Jb, compute_uv=False), Jb.shape[0])


def ellipsoid_axes(J, block: str = "position", char_length: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """The velocity manipulability ellipsoid ``{J qdot : |qdot| <= 1}`` of one block of ``J: (6, n)``.

    Returns ``radii: (m,)`` (the singular values, descending) and ``directions: (m, m)`` whose
    column ``i`` is the unit task-space direction of the axis with radius ``radii[i]``.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) at ``q = (0, pi/2)``: a flat ellipse in the xy plane (m/s per
    rad/s), no speed along z.

    >>> from physai import singularity
    >>> J = physai.jacobian(physai.load("planar2r"), [0.0, np.pi / 2])
    >>> radii, directions = singularity.ellipsoid_axes(J)
    >>> print(np.round(radii, 3), np.round(np.abs(directions[2, 2]), 3))
    [0.607 0.247 0.   ] 1.0
    """
    Jb = jacobian_block(J, block, char_length)
    U, S, _ = np.linalg.svd(Jb, full_matrices=True)
    radii = np.zeros(Jb.shape[-2])
    radii[: len(S)] = S
    return radii, U


def filter_factors(sigma, lam) -> np.ndarray:
    """Damped inverse gains ``sigma / (sigma^2 + lam^2)``; with ``lam = 0``, ``1/sigma`` (0 where sigma = 0).

    For ``lam > 0`` every factor is at most ``1 / (2 lam)``, reached at ``sigma = lam``.
    """
    sigma = np.asarray(sigma, dtype=float)
    lam = np.asarray(lam, dtype=float)[..., None]
    denom = sigma * sigma + lam * lam
    safe = np.where(denom > 0, denom, 1.0)
    return np.where(denom > 0, sigma / safe, 0.0)


def check_damping(lam, name: str = "lam") -> np.ndarray:
    """A damping ``lam``: a finite number ``>= 0`` or an array of them (one per batch entry)."""
    lam = finite_array(lam, name)
    if np.any(lam < 0):
        raise InputError(f"{name}: expected a damping >= 0, got {lam.min()}")
    return lam


def damped_solve(J, v, lam, rcond: float = 1e-12) -> np.ndarray:
    """Damped least squares ``J^T (J J^T + lam^2 I)^-1 v`` in filter-factor form.

    ``J: (..., m, n)``, ``v: (..., m)``, ``lam: scalar or (...)`` (units of ``sigma``) -> ``qdot: (..., n)``.
    Computed as ``V diag(sigma / (sigma^2 + lam^2)) U^T v`` so the gain from ``v`` to ``qdot`` is
    visibly bounded by ``1 / (2 lam)``. ``lam = 0`` gives the Moore-Penrose pseudoinverse, with
    singular values below ``rcond * sigma_max`` treated as zero.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m), rows x and y of its Jacobian. With the elbow at 90 degrees
    the exact inverse is tame: 0.1 m/s along y takes 0.2 rad/s at each joint, in opposite senses.

    >>> chain = physai.load("planar2r")
    >>> J_xy = physai.jacobian(chain, [0.0, np.pi / 2])[:2]
    >>> print(np.round(physai.damped_solve(J_xy, [0.0, 0.1], lam=0.0), 3))
    [ 0.2 -0.2]

    Almost stretched (elbow at 1 mrad), 1 cm/s along the arm needs 57 rad/s exactly; damping with
    ``lam = 0.05`` bounds the gain by ``1 / (2 lam) = 10``:

    >>> J_xy = physai.jacobian(chain, [0.0, 1e-3])[:2]
    >>> for lam in (0.0, 0.05):
    ...     qdot = physai.damped_solve(J_xy, [0.01, 0.0], lam)
    ...     print(lam, round(float(np.linalg.norm(qdot)), 3))
    0.0 56.96
    0.05 0.001
    """
    J, v, lam = finite_array(J, "J"), finite_array(v, "v"), check_damping(lam, "lam")
    nonnegative(rcond, "rcond")
    if J.ndim < 2 or v.shape[-1:] != J.shape[-2:-1]:
        raise InputError(f"J, v: expected shapes (..., m, n) and (..., m), got {J.shape} and {v.shape}")
    return damped_solve_trusted(J, v, lam, rcond)


def damped_solve_trusted(J: np.ndarray, v: np.ndarray, lam, rcond: float = _RCOND) -> np.ndarray:
    """:func:`damped_solve` of checked arrays (the solvers' per-iteration call)."""
    return _solve_svd(svd_trusted(J, rcond), v, lam)


def svd_trusted(J: np.ndarray, rcond: float = _RCOND) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(U, sigma, V^T)`` of checked ``J: (..., m, n)`` (thin), singular values below ``rcond * sigma_max`` set to
    0: the one factorisation a damped step and a null-space projector share."""
    U, S, Vt = np.linalg.svd(J, full_matrices=False)
    return U, np.where(S > rcond * S[..., :1], S, 0.0), Vt


def _solve_svd(usv, v: np.ndarray, lam) -> np.ndarray:
    """``V diag(filter_factors(sigma, lam)) U^T v`` from :func:`svd`'s factors."""
    U, S, Vt = usv
    coeff = filter_factors(S, lam) * (np.swapaxes(U, -1, -2) @ v[..., None])[..., 0]
    return (np.swapaxes(Vt, -1, -2) @ coeff[..., None])[..., 0]


def pinv_of_svd(usv, lam, S_half=None):
    """``(J^#_lam, J^#_0)`` from the factors ``(U, sigma, V^T)`` of ``J W^(-1/2)`` (:func:`svd_trusted`),
    ``S_half`` that ``W^(-1/2)`` (None: unweighted): :func:`physai.nullspace.pinv`'s damped and exact
    pseudoinverses."""
    U, S, Vt = usv
    V, Ut = np.swapaxes(Vt, -1, -2), np.swapaxes(U, -1, -2)
    out = [V @ (filter_factors(S, lam)[..., None] * Ut) for lam in ((lam, 0.0) if np.any(lam) else (0.0,))]
    if S_half is not None:
        out = [S_half @ P for P in out]
    return out[0], out[-1]


def projector_of(J: np.ndarray, J_pinv: np.ndarray) -> np.ndarray:
    """``N = I - J^# J: (..., n, n)`` from a pseudoinverse of ``J``: the one null-space projector
    (:func:`physai.nullspace.projector` and every step that moves in a null space)."""
    return np.eye(J.shape[-1]) - J_pinv @ J


def adaptive_damping(sigma_min, sigma_healthy: float, lambda_max: float):
    """Nakamura-style damping: 0 while ``sigma_min >= sigma_healthy``, then ``lambda_max sqrt(1 - (s/s_h)^2)``.

    The ramp is continuous at the threshold and reaches ``lambda_max`` at ``sigma_min = 0``. Broadcasts.
    """
    ratio = np.clip(np.asarray(sigma_min, dtype=float) / sigma_healthy, 0.0, 1.0)
    return lambda_max * np.sqrt(1.0 - ratio * ratio)


def scale_to_limit(qdot, limit) -> tuple[np.ndarray, np.ndarray]:
    """Scale ``qdot: (..., n)`` uniformly so that ``max |qdot_i| <= limit`` (scalar or ``(n,)``).

    Uniform scaling keeps the direction (the tool still moves along the commanded line, only slower);
    clipping joints one by one would bend it. Returns ``(qdot_scaled, scale)`` with ``scale: (...)`` in (0, 1].
    """
    qdot = finite_array(qdot, "qdot")
    return scale_to_limit_trusted(qdot, check_speed_limit(limit, qdot.shape[-1], "limit"))


def scale_to_limit_trusted(qdot: np.ndarray, limit) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scale_to_limit` of a checked ``qdot`` and limit."""
    peak = np.max(np.abs(qdot) / limit, axis=-1)
    scale = np.where(peak > 1.0, 1.0 / np.where(peak > 1.0, peak, 1.0), 1.0)
    return qdot * scale[..., None], scale


def check_speed_limit(limit, n: int, name: str = "limit") -> np.ndarray:
    """A joint-speed limit: a number ``> 0`` or one per joint ``(n,)``; ``inf`` means no limit."""
    if np.ndim(limit) == 0:
        return np.float64(positive(limit, name, inf_ok=True))
    a = np.asarray(limit)
    if a.shape != (n,) or a.dtype.kind not in "iuf" or not np.all(a > 0):  # NaN fails a > 0 too
        raise InputError(f"{name}: expected a speed limit > 0 or {n} of them (inf: no limit), got {limit!r}")
    return a.astype(float)


@dataclass(frozen=True)
class StepHealth:
    """What one resolved-rate tick reports: sigma_min, kappa and
    manipulability of the block used, the damping ``lam`` applied and the velocity scale (1 = unclipped)."""

    sigma_min: float
    kappa: float
    manipulability: float
    lam: float
    vel_scale: float


def damped_step(
    J,
    v_des,
    dt: float,
    *,
    sigma_healthy: float = 0.03,
    lambda_max: float = 0.05,
    qdot_limit: float = 6.28,
    block: str = "position",
    char_length: float = 0.3,
) -> tuple[np.ndarray, StepHealth]:
    """One resolved-rate tick: adaptive damped least squares on one block, then velocity scaling.

    ``J: (6, n)`` geometric Jacobian; ``v_des``: ``(3,)`` linear velocity (m/s) for ``block="position"``
    (the default), ``(3,)`` angular velocity for ``"orientation"``, or a ``(6,)`` twist for
    ``"full"`` (angular part in rad/s; it is scaled by ``char_length`` like the rows).
    ``dt`` (s). Returns ``dq = qdot * dt: (n,)`` and the :class:`StepHealth` of the tick.
    """
    Jb = jacobian_block(J, block, char_length)
    if Jb.ndim != 2:
        raise InputError(f"J: damped_step takes one Jacobian of shape (6, n), got {np.shape(J)}")
    dt, lambda_max = positive(dt, "dt"), nonnegative(lambda_max, "lambda_max")
    sigma_healthy = positive(sigma_healthy, "sigma_healthy")
    qdot_limit = check_speed_limit(qdot_limit, Jb.shape[-1], "qdot_limit")
    v = finite_array(v_des, "v_des", (Jb.shape[0],), f" for block={block!r}")
    if block == "full":
        v = np.concatenate([v[:3], char_length * v[3:]])
    return damped_step_trusted(Jb, v, dt, sigma_healthy, lambda_max, qdot_limit)[:2]


def damped_step_trusted(Jb: np.ndarray, v: np.ndarray, dt: float, sigma_healthy: float, lambda_max: float,
                 qdot_limit) -> tuple[np.ndarray, StepHealth, tuple]:
    """:func:`damped_step` of a checked block ``Jb: (m, n)`` and its velocity ``v: (m,)`` (angular part already
    scaled), and the one SVD of ``Jb`` it took (:func:`svd_trusted`'s factors, for a null-space projector of the
    block)."""
    U, S, Vt = np.linalg.svd(Jb, full_matrices=False)
    h = _health_from_sigma(S, Jb.shape[0])
    lam = float(adaptive_damping(h.sigma_min, sigma_healthy, lambda_max))
    usv = (U, np.where(S > _RCOND * S[..., :1], S, 0.0), Vt)
    qdot, scale = scale_to_limit_trusted(_solve_svd(usv, v, lam), qdot_limit)
    return qdot * dt, StepHealth(h.sigma_min, h.kappa, h.manipulability, lam, float(scale)), usv
