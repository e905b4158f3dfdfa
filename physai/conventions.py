"""Jacobian conventions: one motion of the tool, several matrices (lessons 08 and 09).

The geometric Jacobian of :func:`physai.kinematics.jacobian` ("world") is the reference; the
others are fixed linear maps of it at the same pose. ``J: (..., 6, n)``, ``T_world_tool: (..., 4, 4)``.

=========  ===============  ==================================  =========  ==========================================
frame      row order        velocity of which point             axes       equals
=========  ===============  ==================================  =========  ==========================================
``world``  linear, angular  the tool point                      world      ``mj_jacSite``; Pinocchio ``LOCAL_WORLD_ALIGNED``
``local``  linear, angular  the tool point                      tool       Pinocchio ``LOCAL``
``space``  angular, linear  the body point at the world origin  world      Modern Robotics ``J_s`` (Pinocchio ``WORLD``, rows swapped)
``body``   angular, linear  the tool point                      tool       Modern Robotics ``J_b`` (Pinocchio ``LOCAL``, rows swapped)
=========  ===============  ==================================  =========  ==========================================

Analytic Jacobians differentiate a pose *parameterisation* instead: rows 3-5 are roll-pitch-yaw
rates (``B(phi)^-1`` times the angular rows) or rows 3-6 quaternion rates (``G(q)`` times them).
The angular velocity ``w`` is not the derivative of any three orientation numbers, so autodiff of
an FK that returns RPY matches the geometric Jacobian only after this conversion.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from physai import transforms as tf
from physai.errors import InputError, UnknownNameError
from physai.kinematics import Chain, fd_jacobian, tool_pose_and_jacobian

FRAMES = ("world", "local", "space", "body")


def jacobian_in_frame(J_world: np.ndarray, T_world_tool: np.ndarray, frame: str) -> np.ndarray:
    """Convert the world geometric Jacobian ``(..., 6, n)`` at pose ``T_world_tool`` to ``frame`` (see the table).

    ``local``: both blocks rotated into tool axes, ``R^T J``. ``body``: the same, angular rows first.
    ``space``: the body point at the world origin moves at ``v - w x p = v + skew(p) w``.
    """
    if frame not in FRAMES:
        raise UnknownNameError("frame", frame, FRAMES)
    J = np.asarray(J_world, dtype=float)
    Jv, Jw = J[..., :3, :], J[..., 3:, :]
    if frame == "world":
        return J.copy()
    if frame == "space":
        return np.concatenate([Jw, Jv + tf.skew(T_world_tool[..., :3, 3]) @ Jw], axis=-2)
    Rt = np.swapaxes(T_world_tool[..., :3, :3], -1, -2)
    blocks = [Rt @ Jv, Rt @ Jw] if frame == "local" else [Rt @ Jw, Rt @ Jv]
    return np.concatenate(blocks, axis=-2)


def frame_jacobian(chain: Chain, q, frame: str = "world") -> np.ndarray:
    """Geometric Jacobian of the tool in the convention ``frame`` (see the table): ``q: (..., n)`` -> ``(..., 6, n)``.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) at ``q = (0, pi/2)``, whose tool x axis points along world y.
    In tool axes (``"local"``) the world Jacobian's linear rows ``[[-0.3, -0.3], [0.5, 0]]`` read:

    >>> from physai import conventions
    >>> chain = physai.load("planar2r")
    >>> J_local = conventions.frame_jacobian(chain, [0.0, np.pi / 2], "local")
    >>> print(np.round(J_local[:3], 3))
    [[ 0.5  0. ]
     [ 0.3  0.3]
     [ 0.   0. ]]
    """
    T_world_tool, J = tool_pose_and_jacobian(chain, q)
    return jacobian_in_frame(J, T_world_tool, frame)


def rpy_jacobian(chain: Chain, q) -> np.ndarray:
    """Analytic Jacobian of ``(p, roll, pitch, yaw)`` (rpy as in :func:`physai.transforms.matrix_to_rpy`).

    ``q: (..., n)`` -> ``(..., 6, n)``: rows 0-2 the world tool-point velocity, rows 3-5 ``d(rpy)/dq =
    B(phi)^-1 J_w``. Refused (``InputError``) at pitch = +-90 deg, where the rates do not exist.
    """
    T_world_tool, J = tool_pose_and_jacobian(chain, q)
    rpy = tf.matrix_to_rpy(T_world_tool[..., :3, :3])
    if np.any(np.abs(np.cos(rpy[..., 1])) < tf.GIMBAL_TOL):
        raise InputError("rpy_jacobian: the tool's pitch is +-90 deg (gimbal lock); use quat_jacobian")
    return np.concatenate([J[..., :3, :], np.linalg.solve(tf.rpy_rate_matrix(rpy), J[..., 3:, :])], axis=-2)


def quat_jacobian(chain: Chain, q) -> np.ndarray:
    """Analytic Jacobian of ``(p, quat_wxyz)`` (the ``w >= 0`` quaternion of :func:`~physai.transforms.matrix_to_quat`).

    ``q: (..., n)`` -> ``(..., 7, n)``: rows 0-2 the world tool-point velocity, rows 3-6 ``dq/dt = G(q) J_w``.
    """
    T_world_tool, J = tool_pose_and_jacobian(chain, q)
    G = tf.quat_rate_matrix(tf.matrix_to_quat(T_world_tool[..., :3, :3]))
    return np.concatenate([J[..., :3, :], G @ J[..., 3:, :]], axis=-2)


def numeric_geometric_jacobian(tool_pose: Callable[[np.ndarray], np.ndarray], q, eps: float = 1e-6) -> np.ndarray:
    """The geometric Jacobian ``(6, n)`` by central differences of any ``q -> T_world_tool`` (the WidowX AI lesson's check).

    Linear rows: ``(p(q + eps e_i) - p(q - eps e_i)) / (2 eps)``. Angular rows: ``vee(dR R^T)`` with
    ``dR`` the central difference of ``R``, because ``dR/dt = skew(w) R`` for the world angular velocity.
    Error ``O(eps^2)`` truncation plus ``~1e-16 / eps`` round-off.
    """
    dT = fd_jacobian(lambda x: np.asarray(tool_pose(x), dtype=float).reshape(16), q, eps)  # (16, n)
    dT = np.moveaxis(dT, -1, 0).reshape(-1, 4, 4)  # one dT/dq_i per joint
    R0 = np.asarray(tool_pose(np.asarray(q, dtype=float)))[:3, :3]
    return np.concatenate([dT[:, :3, 3], tf.vee(dT[:, :3, :3] @ R0.T)], axis=-1).T
