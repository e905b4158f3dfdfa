"""The same forward kinematics and Jacobian in JAX: differentiable, ``jit``-able, ``vmap``-able, GPU-ready.

Kinematics pinned to 1e-12 needs doubles, and JAX computes in float32 unless its process-wide float64 switch
is on. Importing physai leaves that switch alone: the functions here refuse to run in float32 (call
``jax.config.update("jax_enable_x64", True)`` at start, or work inside ``with jax.enable_x64(True):``), and
physai functions that call JAX for you (:mod:`physai.learned`, ``physai.jaxik.dls_ik(backend="jax")``) switch it on
for their own duration with :func:`float64`. Functions mirror :mod:`physai.kinematics` and are tested equal to it.
"""

from __future__ import annotations

import functools

from physai._extras import require

require("jax", "physai.jaxkin")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from physai._validate import finite_array
from physai.errors import InputError
from physai.kinematics import Chain


def float64(fn):
    """Decorator: ``fn`` runs with JAX float64 on and the caller's setting is restored on return.

    JAX keys its ``jit`` caches on the setting, so a function traced here is not reused in float32 elsewhere.
    """

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return scoped


def _rotation_about_axis(axis, angle):
    K = jnp.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return jnp.eye(3) + jnp.sin(angle) * K + (1.0 - jnp.cos(angle)) * (K @ K)


def _joint_motion(joint_type: str, axis, displacement):
    T = jnp.eye(4)
    if joint_type == "hinge":
        return T.at[:3, :3].set(_rotation_about_axis(axis, displacement))
    return T.at[:3, 3].set(displacement * axis)


def _require_float64():
    """Read at trace time too, so a ``jit`` of these functions refuses float32 as well."""
    if not jax.config.jax_enable_x64:
        raise InputError(
            "physai.jaxkin needs JAX float64, which is off (JAX would round the kinematics to float32): call "
            "jax.config.update(\"jax_enable_x64\", True) once at start, or call inside `with jax.enable_x64(True):`"
        )


def _check_q(chain: Chain, q):
    """Shape is static under ``jit``/``vmap``, so it is always checked: JAX clamps out-of-range indices,
    and a short ``q`` would silently reuse its last entry. Finiteness is checked only for concrete arrays."""
    shape = jnp.shape(q)
    if shape != (chain.n,):
        raise InputError(
            f"q: expected shape ({chain.n},) for chain {chain.name!r} with joints {list(chain.joint_names)}, "
            f"got {shape} (one pose per call; jax.vmap for batches)"
        )
    if not isinstance(q, jax.core.Tracer):
        finite_array(q, "q", (chain.n,))
    return q


def joint_frames(chain: Chain, q):
    """``T_world_joint`` ``(n, 4, 4)`` and ``T_world_tool`` ``(4, 4)`` for one ``q: (n,)``; vmap for batches."""
    _require_float64()
    q = _check_q(chain, q)
    T = jnp.eye(4)
    frames = []
    for i, jtype in enumerate(chain.joint_types):
        axis = jnp.asarray(chain.axis_joint[i])
        T = T @ jnp.asarray(chain.T_prev_joint[i]) @ _joint_motion(jtype, axis, q[i] - chain.q_ref[i])
        frames.append(T)
    return jnp.stack(frames), T @ jnp.asarray(chain.T_last_tool)


def tool_pose(chain: Chain, q):
    """``T_world_tool`` ``(4, 4)`` for ``q: (n,)``."""
    return joint_frames(chain, q)[1]


def tool_position(chain: Chain, q):
    """Tool point in the world ``(3,)`` for ``q: (n,)`` (m)."""
    return tool_pose(chain, q)[:3, 3]


def tool_pose_and_jacobian(chain: Chain, q):
    """``T_world_tool`` ``(4, 4)`` and the geometric Jacobian ``(6, n)`` from one walk, for ``q: (n,)``."""
    frames, T_tool = joint_frames(chain, q)
    p = T_tool[:3, 3]
    cols = []
    for i, jtype in enumerate(chain.joint_types):
        axis = frames[i, :3, :3] @ jnp.asarray(chain.axis_joint[i])
        if jtype == "hinge":
            cols.append(jnp.concatenate([jnp.cross(axis, p - frames[i, :3, 3]), axis]))
        else:
            cols.append(jnp.concatenate([axis, jnp.zeros(3)]))
    return T_tool, jnp.stack(cols, axis=-1)


def jacobian(chain: Chain, q):
    """Geometric Jacobian ``(6, n)`` of the tool point for ``q: (n,)``: linear rows then angular, world axes."""
    return tool_pose_and_jacobian(chain, q)[1]


def tool_position_rpy(chain: Chain, q):
    """``(p, roll, pitch, yaw)`` ``(6,)`` of the tool for ``q: (n,)``: the FK whose ``jax.jacfwd`` is the RPY analytic Jacobian.

    Same convention as :func:`physai.transforms.matrix_to_rpy` (``R = Rz(yaw) Ry(pitch) Rx(roll)``);
    the gimbal-lock branch is left out: its derivative does not exist there anyway.
    """
    T = tool_pose(chain, q)
    R = T[:3, :3]
    rpy = jnp.stack([
        jnp.arctan2(R[2, 1], R[2, 2]),
        jnp.arctan2(-R[2, 0], jnp.hypot(R[0, 0], R[1, 0])),
        jnp.arctan2(R[1, 0], R[0, 0]),
    ])
    return jnp.concatenate([T[:3, 3], rpy])


def tool_position_quat(chain: Chain, q):
    """``(p, quat_wxyz)`` ``(7,)`` of the tool for ``q: (n,)``; its ``jax.jacfwd`` is the quaternion analytic Jacobian.

    Uses the ``w`` branch of the matrix-to-quaternion map (``w = sqrt(1 + tr R) / 2 >= 0``), which
    equals :func:`physai.transforms.matrix_to_quat` and is accurate while the tool is not turned
    near 180 degrees from the world frame (``w`` well above 0).
    """
    T = tool_pose(chain, q)
    R = T[:3, :3]
    w = 0.5 * jnp.sqrt(1.0 + jnp.trace(R))
    v = jnp.stack([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / (4.0 * w)
    return jnp.concatenate([T[:3, 3], w[None], v])
