"""Rotations and homogeneous transforms.

Conventions (stated once, used everywhere):
- A 4x4 homogeneous transform ``T_a_b`` maps coordinates in frame ``b`` to frame ``a``:
  ``p_a = T_a_b @ [p_b, 1]``; composition reads left to right, ``T_a_c = T_a_b @ T_b_c``.
- Quaternions are unit ``(w, x, y, z)``, scalar first, as MuJoCo stores them. SciPy's
  ``Rotation.from_quat`` expects ``(x, y, z, w)`` unless given ``scalar_first=True``.
- Twists are ``(v, w)``: linear velocity of the frame's origin first, then angular velocity, the
  row order of physai's Jacobians, MuJoCo's ``[jacp; jacr]`` and Pinocchio's ``Motion``. Modern
  Robotics writes ``(w, v)``; :mod:`physai.conventions` converts. Wrenches are ``(f, tau)``: force,
  then moment about the frame's origin, dual to the twist (power ``= F . V``).
- Roll-pitch-yaw ``(r, p, y)`` means ``R = Rz(y) @ Ry(p) @ Rx(r)``: rotate about the fixed x, then the
  fixed y, then the fixed z axis (extrinsic x-y-z, the URDF/ROS ``rpy``). SciPy spells it
  ``Rotation.from_euler("xyz", ...)`` (lower case = extrinsic there), MuJoCo ``mju_euler2Quat(..., "XYZ")``
  (upper case = extrinsic there), Pinocchio ``pin.rpy.rpyToMatrix``.
- Functions that read a rotation matrix check it (orthonormal with det +1 to ``ROTATION_TOL``) and
  raise :class:`~physai.errors.InputError` otherwise; :func:`orthonormalize` is the explicit projection.
- Every function broadcasts over leading batch dimensions ``(...)``.
"""

from __future__ import annotations

import numpy as np

from physai._validate import finite_array
from physai.errors import InputError

_EYE3 = np.eye(3)
ROTATION_TOL = 1e-9  # max |R R^T - I| accepted as a rotation; float64 round-off leaves ~1e-15
# Below this |w| (rad) the coefficients with t^3 cancellation use their series (truncation < 1e-17).
_SMALL_ANGLE = 1e-2
GIMBAL_TOL = 1e-8  # cos(pitch) below this is treated as gimbal lock by matrix_to_rpy


def check_rotation(R, name: str = "R", tol: float = ROTATION_TOL) -> np.ndarray:
    """``R: (..., 3, 3)`` as a float64 array after checking it is a rotation, else :class:`InputError`.

    A rotation has ``R R^T = I`` (to ``tol`` per entry) and ``det R = +1``. A matrix that drifted
    (e.g. after many compositions) is refused rather than silently used: project it explicitly
    with :func:`orthonormalize`.
    """
    R = finite_array(R, name, (3, 3))
    err = np.abs(R @ np.swapaxes(R, -1, -2) - _EYE3).max(initial=0.0)
    if err > tol:
        raise InputError(
            f"{name}: not a rotation matrix (max |R R^T - I| = {err:.2e} > {tol:.0e}); "
            "project it with physai.transforms.orthonormalize(R) if that is intended"
        )
    if np.any(np.linalg.det(R) < 0):
        raise InputError(f"{name}: a reflection (det R = -1), not a rotation")
    return R


def check_transform(T, name: str = "T", tol: float = ROTATION_TOL) -> np.ndarray:
    """``T: (..., 4, 4)`` as a float64 array after checking it is a pose, else :class:`InputError`.

    The rotation block must pass :func:`check_rotation` and the bottom row be ``[0, 0, 0, 1]`` to
    ``tol``: a target with a scaled, sheared or reflected "rotation" has no meaning as a pose.
    """
    T = finite_array(T, name, (4, 4))
    check_rotation(T[..., :3, :3], f"{name}[:3, :3]", tol)
    err = np.abs(T[..., 3, :] - [0.0, 0.0, 0.0, 1.0]).max(initial=0.0)
    if err > tol:
        raise InputError(f"{name}: bottom row must be [0, 0, 0, 1] (max deviation {err:.2e} > {tol:.0e})")
    return T


def orthonormalize(R) -> np.ndarray:
    """The rotation nearest to ``R`` in the Frobenius norm (polar factor by SVD): ``(..., 3, 3)`` -> ``(..., 3, 3)``.

    ``R = U S V^T`` -> ``U diag(1, 1, det(U V^T)) V^T``; the sign fix keeps ``det = +1``. Idempotent on
    rotations (to round-off). A singular input (rank < 2) has no unique nearest rotation and is refused.
    """
    M = finite_array(R, "R", (3, 3))
    U, S, Vt = np.linalg.svd(M)
    if np.any(S[..., 1] < 1e-12 * np.maximum(S[..., 0], 1e-300)):
        raise InputError("R: rank < 2, there is no unique nearest rotation")
    d = np.sign(np.linalg.det(U @ Vt))
    D = np.zeros(M.shape)
    D[..., 0, 0], D[..., 1, 1], D[..., 2, 2] = 1.0, 1.0, d
    return U @ D @ Vt


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

    Examples
    --------
    A quarter turn about z takes x to y:

    >>> from physai import transforms as tf
    >>> print(np.round(tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2), 3))
    [[ 0. -1.  0.]
     [ 1.  0.  0.]
     [ 0.  0.  1.]]
    """
    K = skew(axis)
    angle = np.asarray(angle, dtype=float)[..., None, None]
    return _EYE3 + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quat_to_matrix(quat_wxyz: np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion in MuJoCo's ``(w, x, y, z)`` order: ``(..., 4)`` -> ``(..., 3, 3)``.

    The quaternion is normalised first (as MuJoCo's compiler does); a zero quaternion is refused.

    Examples
    --------
    A quarter turn about z, ``(cos 45deg, 0, 0, sin 45deg)``, scalar first:

    >>> from physai import transforms as tf
    >>> c = s = np.sqrt(0.5)  # cos and sin of 45 degrees
    >>> print(np.round(tf.quat_to_matrix([c, 0.0, 0.0, s]), 3))
    [[ 0. -1.  0.]
     [ 1.  0.  0.]
     [ 0.  0.  1.]]
    """
    w, x, y, z = np.moveaxis(quat_normalize(quat_wxyz), -1, 0)
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
    every rotation, including 180 degrees. ``R`` must be a rotation (:func:`check_rotation`).

    Examples
    --------
    >>> from physai import transforms as tf
    >>> Rz = tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2)
    >>> print(np.round(tf.matrix_to_quat(Rz), 3))
    [0.707 0.    0.    0.707]
    """
    return _matrix_to_quat(check_rotation(R))


def _matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """:func:`matrix_to_quat` of a checked rotation."""
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
    """Homogeneous transform from rotation ``R: (..., 3, 3)`` and translation ``p: (..., 3)`` -> ``(..., 4, 4)``.

    ``T_a_b = make_transform(R_a_b, p_a_b)`` maps a point of frame ``b`` into frame ``a``: ``p_a = T_a_b @ [p_b, 1]``.

    Examples
    --------
    Frame ``b`` turned a quarter turn about z and placed 1 m along x of frame ``a``; ``b``'s x axis points along
    ``a``'s y:

    >>> from physai import transforms as tf
    >>> Rz = tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2)  # a quarter turn about z
    >>> T_a_b = tf.make_transform(Rz, [1.0, 0.0, 0.0])
    >>> print(np.round(T_a_b @ [1.0, 0.0, 0.0, 1.0], 3))
    [1. 1. 0. 1.]
    """
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
    """``T_b_a`` from ``T_a_b`` using ``R^T`` (no general matrix inverse): ``(..., 4, 4)`` -> ``(..., 4, 4)``.

    ``T_b_a = [[R^T, -R^T p], [0, 1]]``; a rotation block that is not a rotation is refused (:func:`check_rotation`).

    Examples
    --------
    >>> from physai import transforms as tf
    >>> Rz = tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2)  # a quarter turn about z
    >>> T_a_b = tf.make_transform(Rz, [1.0, 0.0, 0.0])
    >>> print(np.round(tf.inverse(T_a_b), 3))
    [[ 0.  1.  0.  0.]
     [-1.  0.  0.  1.]
     [ 0.  0.  1.  0.]
     [ 0.  0.  0.  1.]]
    """
    T_a_b = finite_array(T_a_b, "T_a_b", (4, 4))
    R = check_rotation(T_a_b[..., :3, :3], "T_a_b[:3, :3]")
    p = T_a_b[..., :3, 3]
    Rt = np.swapaxes(R, -1, -2)
    return make_transform(Rt, -(Rt @ p[..., None])[..., 0])


def compose(*transforms: np.ndarray) -> np.ndarray:
    """``compose(T_a_b, T_b_c, ...) == T_a_b @ T_b_c @ ...`` (broadcasts over batch dimensions).

    Each ``(..., 4, 4)``; the frame names cancel left to right: ``compose(T_a_b, T_b_c)`` is ``T_a_c``.

    Examples
    --------
    >>> from physai import transforms as tf
    >>> Rz = tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2)  # a quarter turn about z
    >>> T_a_b = tf.make_transform(Rz, [1.0, 0.0, 0.0])
    >>> T_b_c = tf.translation([0.5, 0.0, 0.0])  # 0.5 m along b's x axis (a's y)
    >>> print(np.round(tf.compose(T_a_b, T_b_c)[:3, 3], 3))
    [1.  0.5 0. ]
    >>> np.allclose(tf.compose(T_a_b, tf.inverse(T_a_b)), np.eye(4))
    True
    """
    if not transforms:
        raise InputError("compose: needs at least one transform")
    out = np.asarray(transforms[0], dtype=float)
    for T in transforms[1:]:
        out = out @ np.asarray(T, dtype=float)
    return out


# ---- exponential and logarithm -------------------------------------------------------------------


def so3_exp(rotvec) -> np.ndarray:
    """Rotation of a rotation vector ``w = angle * axis`` (rad): ``(..., 3)`` -> ``(..., 3, 3)``, ``exp(skew(w))``.

    Rodrigues' formula with ``sin(t)/t`` and ``(1 - cos t)/t^2`` written so that ``w = 0`` is exact.

    Examples
    --------
    >>> from physai import transforms as tf
    >>> print(np.round(tf.so3_exp([0.0, 0.0, np.pi / 2]), 3))
    [[ 0. -1.  0.]
     [ 1.  0.  0.]
     [ 0.  0.  1.]]
    """
    w = finite_array(rotvec, "rotvec", (3,))
    t = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    a, b, _ = _exp_coefficients(t)
    return _EYE3 + a * K + b * (K @ K)


def _exp_coefficients(t):
    """``sin t / t``, ``(1 - cos t) / t^2``, ``(t - sin t) / t^3``, each free of cancellation near ``t = 0``."""
    a = np.sinc(t / np.pi)
    b = 0.5 * np.sinc(t / (2 * np.pi)) ** 2  # 1 - cos t = 2 sin^2(t/2)
    small = t < _SMALL_ANGLE
    ts = np.where(small, 1.0, t)  # keeps the unused branch finite
    t2 = t * t
    c = np.where(small, 1 / 6 - t2 / 120 + t2 * t2 / 5040, (ts - np.sin(ts)) / ts**3)
    return a, b, c


def so3_log(R) -> np.ndarray:
    """Rotation vector ``w`` with ``|w| <= pi`` and ``so3_exp(w) == R``: ``(..., 3, 3)`` -> ``(..., 3)``.

    Goes through the quaternion (Shepperd's method), so it stays accurate near 0 and near pi, where
    ``acos((tr R - 1)/2)`` loses half the digits. At exactly pi the sign of ``w`` is arbitrary.

    Examples
    --------
    >>> from physai import transforms as tf
    >>> Rz = tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2)
    >>> print(np.round(tf.so3_log(Rz), 3))
    [0.    0.    1.571]
    """
    return _quat_to_rotvec(matrix_to_quat(R))


def _quat_to_rotvec(quat_wxyz: np.ndarray) -> np.ndarray:
    q = np.where(quat_wxyz[..., :1] < 0, -quat_wxyz, quat_wxyz)  # w >= 0 -> angle <= pi
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    # angle / sin(angle / 2) is accurate for any s > 0 (atan2 keeps relative accuracy); its limit at s = 0 is 2
    scale = np.where(s == 0, 2.0, angle / np.where(s == 0, 1.0, s))
    return scale * q[..., 1:]


def se3_exp(twist) -> np.ndarray:
    """``T = exp([V])`` of a twist ``V = (v, w)`` (linear first, physai order): ``(..., 6)`` -> ``(..., 4, 4)``.

    The pose reached after moving for unit time with constant body twist ``V`` from the identity:
    ``R = so3_exp(w)``, ``p = G(w) v`` with ``G = I + (1 - cos t)/t^2 K + (t - sin t)/t^3 K^2``.
    """
    V = finite_array(twist, "twist", (6,))
    v, w = V[..., :3], V[..., 3:]
    t = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    a, b, c = _exp_coefficients(t)
    K2 = K @ K
    R = _EYE3 + a * K + b * K2
    G = _EYE3 + b * K + c * K2
    return make_transform(R, (G @ v[..., None])[..., 0])


def se3_log(T) -> np.ndarray:
    """Twist ``V = (v, w)`` with ``|w| <= pi`` and ``se3_exp(V) == T``: ``(..., 4, 4)`` -> ``(..., 6)``.

    ``w = so3_log(R)``, ``v = G(w)^{-1} p`` with ``G^{-1} = I - K/2 + (1 - t sin t / (2 (1 - cos t)))/t^2 K^2``.
    """
    T = finite_array(T, "T", (4, 4))
    w = so3_log(T[..., :3, :3])
    t = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    small = t < _SMALL_ANGLE
    ts = np.where(small, 1.0, t)
    t2 = t * t
    d = np.where(small, 1 / 12 + t2 / 720 + t2 * t2 / 30240, (1 - ts * np.sin(ts) / (4 * np.sin(ts / 2) ** 2)) / ts**2)
    Ginv = _EYE3 - 0.5 * K + d * (K @ K)
    return np.concatenate([(Ginv @ T[..., :3, 3:4])[..., 0], w], axis=-1)


# ---- twists and wrenches between frames ---------------------------------------------------------


def adjoint(T_a_b) -> np.ndarray:
    """Adjoint ``Ad(T_a_b)``: ``(..., 4, 4)`` -> ``(..., 6, 6)`` mapping a twist in frame b to frame a.

    With the ``(v, w)`` order: ``Ad = [[R, skew(p) R], [0, R]]`` (Modern Robotics' ``[[R, 0], [skew(p) R, R]]``
    with the blocks swapped for its ``(w, v)`` order). ``Ad(T_a_b) @ Ad(T_b_c) == Ad(T_a_c)``.
    """
    T_a_b = finite_array(T_a_b, "T_a_b", (4, 4))
    R = check_rotation(T_a_b[..., :3, :3], "T_a_b[:3, :3]")
    pR = skew(T_a_b[..., :3, 3]) @ R
    Ad = np.zeros(T_a_b.shape[:-2] + (6, 6))
    Ad[..., :3, :3] = R
    Ad[..., :3, 3:] = pR
    Ad[..., 3:, 3:] = R
    return Ad


def transform_twist(T_a_b, twist_b) -> np.ndarray:
    """The same rigid motion seen from frame a: ``V_a = Ad(T_a_b) V_b``. ``(..., 4, 4)``, ``(..., 6)`` -> ``(..., 6)``.

    ``twist_b = (v_b, w_b)``: angular velocity in b's axes and the linear velocity of the (possibly
    fictitious) body point at b's origin. ``V_a`` is the velocity of the body point at a's origin, a's axes.
    """
    V = finite_array(twist_b, "twist_b", (6,))
    return (adjoint(T_a_b) @ V[..., None])[..., 0]


def transform_wrench(T_a_b, wrench_b) -> np.ndarray:
    """The same wrench expressed in frame a: ``F_a = Ad(T_b_a)^T F_b``. ``(..., 4, 4)``, ``(..., 6)`` -> ``(..., 6)``.

    ``wrench_b = (f_b, tau_b)``, moment about b's origin in b's axes. ``f_a = R f_b``,
    ``tau_a = R tau_b + p x (R f_b)``. The power ``F . V`` is the same in every frame.
    """
    F = finite_array(wrench_b, "wrench_b", (6,))
    return (np.swapaxes(adjoint(inverse(T_a_b)), -1, -2) @ F[..., None])[..., 0]


# ---- roll, pitch, yaw ---------------------------------------------------------------------------


def rpy_to_matrix(rpy) -> np.ndarray:
    """``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)`` from ``rpy = (roll, pitch, yaw)`` (rad): ``(..., 3)`` -> ``(..., 3, 3)``.

    Examples
    --------
    A yaw of 90 degrees alone is the quarter turn about z:

    >>> from physai import transforms as tf
    >>> print(np.round(tf.rpy_to_matrix([0.0, 0.0, np.pi / 2]), 3))
    [[ 0. -1.  0.]
     [ 1.  0.  0.]
     [ 0.  0.  1.]]
    """
    rpy = finite_array(rpy, "rpy", (3,))
    return (
        rotation_about_axis(_EYE3[2], rpy[..., 2])
        @ rotation_about_axis(_EYE3[1], rpy[..., 1])
        @ rotation_about_axis(_EYE3[0], rpy[..., 0])
    )


def matrix_to_rpy(R) -> np.ndarray:
    """``(roll, pitch, yaw)`` with pitch in [-pi/2, pi/2], roll and yaw in (-pi, pi]: ``(..., 3, 3)`` -> ``(..., 3)``.

    At gimbal lock (``cos(pitch) < GIMBAL_TOL``) only ``roll -+ yaw`` is defined: yaw is set to 0 and
    the whole angle goes to roll, so ``rpy_to_matrix(matrix_to_rpy(R)) == R`` to about ``1e-8``
    there and to round-off elsewhere.

    Examples
    --------
    >>> from physai import transforms as tf
    >>> print(np.round(tf.matrix_to_rpy(tf.rpy_to_matrix([0.1, 0.2, 0.3])), 3))
    [0.1 0.2 0.3]
    """
    R = check_rotation(R)
    cp = np.hypot(R[..., 0, 0], R[..., 1, 0])
    pitch = np.arctan2(-R[..., 2, 0], cp)
    lock = cp < GIMBAL_TOL
    yaw = np.where(lock, 0.0, np.arctan2(R[..., 1, 0], R[..., 0, 0]))
    roll = np.where(lock, np.arctan2(-R[..., 2, 0] * R[..., 0, 1], R[..., 1, 1]), np.arctan2(R[..., 2, 1], R[..., 2, 2]))
    return np.stack([roll, pitch, yaw], axis=-1)


def rpy_rate_matrix(rpy) -> np.ndarray:
    """``B(phi)`` with ``w_world = B(phi) @ d(phi)/dt`` for ``phi = (roll, pitch, yaw)``: ``(..., 3)`` -> ``(..., 3, 3)``.

    Columns: the world directions of the roll axis ``Rz Ry x``, the pitch axis ``Rz y`` and the yaw
    axis ``z``. ``det B = cos(pitch)``: at pitch = +-90 deg the rates cannot represent every ``w``
    (a singularity of the representation, not of any robot).
    """
    rpy = finite_array(rpy, "rpy", (3,))
    _, p, y = np.moveaxis(rpy, -1, 0)
    cp, sp, cy, sy = np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    z, o = np.zeros_like(p), np.ones_like(p)
    return np.stack([np.stack([cy * cp, -sy, z], -1), np.stack([sy * cp, cy, z], -1), np.stack([-sp, z, o], -1)], -2)


# ---- quaternion algebra ---------------------------------------------------------------------------


def quat_normalize(quat_wxyz) -> np.ndarray:
    """Unit quaternion ``(..., 4)``; a zero (or near-zero, norm < 1e-12) quaternion is refused: it is no rotation."""
    q = finite_array(quat_wxyz, "quat_wxyz", (4,))
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(norm < 1e-12):
        raise InputError("quat_wxyz: a zero quaternion is not a rotation")
    return q / norm


def quat_multiply(q1_wxyz, q2_wxyz) -> np.ndarray:
    """Hamilton product ``q1 * q2`` in ``(w, x, y, z)``: ``(..., 4)``, ``(..., 4)`` -> ``(..., 4)``.

    ``quat_to_matrix(q1 * q2) == quat_to_matrix(q1) @ quat_to_matrix(q2)``: the same left-to-right
    composition as transforms (``q_a_c = q_a_b * q_b_c``). Not normalised: pure algebra.
    """
    a = finite_array(q1_wxyz, "q1_wxyz", (4,))
    b = finite_array(q2_wxyz, "q2_wxyz", (4,))
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        axis=-1,
    )


def quat_conjugate(quat_wxyz) -> np.ndarray:
    """``(w, -x, -y, -z)``: the inverse rotation of a unit quaternion. ``(..., 4)`` -> ``(..., 4)``."""
    q = finite_array(quat_wxyz, "quat_wxyz", (4,))
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_slerp(q0_wxyz, q1_wxyz, t) -> np.ndarray:
    """Spherical linear interpolation from ``q0`` (t = 0) to ``q1`` (t = 1) along the shorter arc.

    ``q0, q1: (..., 4)`` (normalised first; zero refused), ``t: (...)`` -> ``(..., 4)`` unit, ``w`` sign
    as it falls. Constant angular speed: the rotation ``q0^-1 q(t)`` has angle ``t`` times that of
    ``q0^-1 q1``. Nearly equal inputs use normalised linear interpolation (same limit, no 0/0).
    """
    q0, q1 = quat_normalize(q0_wxyz), quat_normalize(q1_wxyz)
    t = np.asarray(t, dtype=float)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)  # q and -q are the same rotation; take the short way
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    close = theta < 1e-6
    st = np.where(close, 1.0, np.sin(theta))
    w0 = np.where(close, 1.0 - t, np.sin((1.0 - t) * theta) / st)
    w1 = np.where(close, t, np.sin(t * theta) / st)
    q = w0 * q0 + w1 * q1
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_rate_matrix(quat_wxyz) -> np.ndarray:
    """``G(q)`` with ``dq/dt = G(q) @ w_world``: ``(..., 4)`` -> ``(..., 4, 3)``.

    From ``dq/dt = 0.5 * (0, w) * q`` for the world-axes angular velocity ``w``:
    ``G = 0.5 * [[-v^T], [w I - skew(v)]]`` with ``q = (w, v)``. Its left inverse is ``4 G^T``
    (for unit ``q``), so unlike ``B(phi)`` it is never singular.
    """
    q = quat_normalize(quat_wxyz)
    w, v = q[..., :1, None], q[..., 1:]
    return 0.5 * np.concatenate([-v[..., None, :], w * _EYE3 - skew(v)], axis=-2)


def pose_error(T, T_ref) -> np.ndarray:
    """``[p_ref - p; log(R_ref R^T)]`` (m, rad; world axes) from ``T`` to ``T_ref: (..., 4, 4)`` -> ``(..., 6)``.

    Divided by a time it is the twist that carries ``T`` onto ``T_ref`` in that time (to first order).

    Examples
    --------
    From the identity to 0.1 m along x and a quarter turn about z:

    >>> from physai import transforms as tf
    >>> Rz = tf.rotation_about_axis([0.0, 0.0, 1.0], np.pi / 2)  # a quarter turn about z
    >>> T_ref = tf.make_transform(Rz, [0.1, 0.0, 0.0])
    >>> print(np.round(tf.pose_error(np.eye(4), T_ref), 3))
    [0.1   0.    0.    0.    0.    1.571]
    """
    T, T_ref = np.asarray(T, dtype=float), np.asarray(T_ref, dtype=float)
    return pose_error_trusted(T, T_ref, check_rotation(T_ref[..., :3, :3] @ np.swapaxes(T[..., :3, :3], -1, -2)))


def pose_error_trusted(T: np.ndarray, T_ref: np.ndarray, R_err: np.ndarray | None = None) -> np.ndarray:
    """:func:`pose_error` of rigid ``T`` and ``T_ref`` (a solver's own iterates and its checked targets), trusted;
    ``R_err`` their relative rotation if already formed."""
    if R_err is None:
        R_err = T_ref[..., :3, :3] @ np.swapaxes(T[..., :3, :3], -1, -2)
    return np.concatenate([T_ref[..., :3, 3] - T[..., :3, 3], _quat_to_rotvec(_matrix_to_quat(R_err))], axis=-1)
