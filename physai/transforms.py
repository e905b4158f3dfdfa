"""Rotations and homogeneous transforms.

Conventions (stated once, used everywhere):
- A 4x4 homogeneous transform ``T_a_b`` maps coordinates in frame ``b`` to frame ``a``:
  ``p_a = T_a_b @ [p_b, 1]``; composition reads left to right, ``T_a_c = T_a_b @ T_b_c``.
- Quaternions are unit ``(w, x, y, z)``, scalar first, as MuJoCo stores them. SciPy's
  ``Rotation.from_quat`` expects ``(x, y, z, w)`` unless given ``scalar_first=True``.
- Every function broadcasts over leading batch dimensions ``(...)``.
"""

from __future__ import annotations

import numpy as np

from physai._validate import finite_array
from physai.errors import InputError

_EYE3 = np.eye(3)


def skew(v: np.ndarray) -> np.ndarray:
    """The cross-product matrix: ``skew(v) @ u == cross(v, u)``. ``v: (..., 3)`` -> ``(..., 3, 3)``."""
    v = np.asarray(v, dtype=float)
    z = np.zeros(v.shape[:-1])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return np.stack(
        [np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2
    )


def vee(S: np.ndarray) -> np.ndarray:
    """Inverse of ``skew`` on the skew-symmetric part of ``S``: ``(..., 3, 3)`` -> ``(..., 3)``."""
    S = np.asarray(S, dtype=float)
    A = 0.5 * (S - np.swapaxes(S, -1, -2))
    return np.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], -1)


def rotation_about_axis(axis: np.ndarray, angle) -> np.ndarray:
    """Rodrigues' formula: rotation by ``angle`` (rad) about the unit ``axis``.

    ``axis: (..., 3)`` unit vector, ``angle: (...)`` -> ``(..., 3, 3)``.
    ``R = I + sin(angle) K + (1 - cos(angle)) K^2`` with ``K = skew(axis)``.
    """
    K = skew(axis)
    angle = np.asarray(angle, dtype=float)[..., None, None]
    return _EYE3 + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quat_to_matrix(quat_wxyz: np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion in MuJoCo's ``(w, x, y, z)`` order: ``(..., 4)`` -> ``(..., 3, 3)``.

    The quaternion is normalised first (as MuJoCo's compiler does); a zero quaternion is refused.
    """
    q = finite_array(quat_wxyz, "quat_wxyz", (4,))
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(norm < 1e-12):
        raise InputError("quat_wxyz: a zero quaternion is not a rotation")
    w, x, y, z = np.moveaxis(q / norm, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)`` with ``w >= 0`` of a rotation matrix: ``(..., 3, 3)`` -> ``(..., 4)``.

    Uses Shepperd's method (the largest of the four diagonal combinations) so it is accurate for
    every rotation, including 180 degrees.
    """
    R = np.asarray(R, dtype=float)
    m00, m11, m22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    cand = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    k = np.argmax(cand, axis=-1)
    s = 2.0 * np.sqrt(np.take_along_axis(cand, k[..., None], -1)[..., 0])
    d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
    s01, s02, s12 = R[..., 0, 1] + R[..., 1, 0], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1]
    options = np.stack(
        [
            np.stack([s / 4, d21 / s, d02 / s, d10 / s], -1),
            np.stack([d21 / s, s / 4, s01 / s, s02 / s], -1),
            np.stack([d02 / s, s01 / s, s / 4, s12 / s], -1),
            np.stack([d10 / s, s02 / s, s12 / s, s / 4], -1),
        ],
        -2,
    )
    q = np.take_along_axis(options, k[..., None, None], -2)[..., 0, :]
    return np.where(q[..., :1] < 0, -q, q)


def make_transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Homogeneous transform from rotation ``R: (..., 3, 3)`` and translation ``p: (..., 3)`` -> ``(..., 4, 4)``."""
    R = np.asarray(R, dtype=float)
    p = np.asarray(p, dtype=float)
    shape = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    T = np.zeros(shape + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def translation(p: np.ndarray) -> np.ndarray:
    """Pure translation ``(..., 3)`` -> ``(..., 4, 4)``."""
    return make_transform(_EYE3, p)


def inverse(T_a_b: np.ndarray) -> np.ndarray:
    """``T_b_a`` from ``T_a_b`` using ``R^T`` (no general matrix inverse): ``(..., 4, 4)`` -> ``(..., 4, 4)``."""
    R = np.asarray(T_a_b, dtype=float)[..., :3, :3]
    p = np.asarray(T_a_b, dtype=float)[..., :3, 3]
    Rt = np.swapaxes(R, -1, -2)
    return make_transform(Rt, -(Rt @ p[..., None])[..., 0])


def compose(*transforms: np.ndarray) -> np.ndarray:
    """``compose(T_a_b, T_b_c, ...) == T_a_b @ T_b_c @ ...`` (broadcasts over batch dimensions)."""
    if not transforms:
        raise InputError("compose: needs at least one transform")
    out = np.asarray(transforms[0], dtype=float)
    for T in transforms[1:]:
        out = out @ np.asarray(T, dtype=float)
    return out


def rotation_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector ``theta * axis`` of a rotation matrix (the SO(3) log map): ``(..., 3, 3)`` -> ``(..., 3)``.

    ``theta`` in ``[0, pi]``. Below 90 degrees the axis comes from the skew part
    ``vee(R) = sin(theta) axis``; above it from the symmetric part ``(R + R^T)/2 - cos(theta) I =
    (1 - cos(theta)) axis axis^T``, which stays accurate up to 180 degrees where ``sin(theta) -> 0``.
    """
    R = np.asarray(R, dtype=float)
    s = vee(R)
    sin_t = np.linalg.norm(s, axis=-1)
    cos_t = np.clip(0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0), -1.0, 1.0)
    theta = np.arctan2(sin_t, cos_t)
    small = np.where(sin_t > 0, theta / np.where(sin_t > 0, sin_t, 1.0), 1.0)
    B = 0.5 * (R + np.swapaxes(R, -1, -2)) - cos_t[..., None, None] * _EYE3
    k = np.argmax(np.diagonal(B, axis1=-2, axis2=-1), axis=-1)
    row = np.take_along_axis(B, k[..., None, None], -2)[..., 0, :]
    axis = row / np.maximum(np.linalg.norm(row, axis=-1, keepdims=True), 1e-300)
    axis = np.where(np.sum(axis * s, axis=-1, keepdims=True) < 0, -axis, axis)
    return np.where((cos_t < 0)[..., None], theta[..., None] * axis, small[..., None] * s)
