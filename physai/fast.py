"""Compiled kinematics: the same FK and tool Jacobian as :mod:`physai.kinematics`, far faster (benchmarks/RESULTS.md).

:mod:`physai.kinematics` is the readable reference the lessons teach from; this module computes the
same quantities with numba kernels and is tested equal to it to 1e-13. Signatures and shapes match
the reference (``q: (..., n)``; ``T_world_tool (..., 4, 4)``; ``J (..., 6, n)`` linear rows then
angular, tool point, world axes), validation included: a wrong shape or a NaN raises the same
:class:`~physai.errors.InputError` as the reference.

Why it is fast: a single-pose request is one compiled call that also validates ``q`` (length,
finite); the chain's numbers are packed once per :class:`~physai.kinematics.Chain` into one flat
array (:func:`pack`, memoised on the immutable chain's identity, so it can never go stale). Batches of
``(B, n)`` run one compiled loop over ``B`` (``numba.prange``: parallel over the CPU cores).
Compiled code is cached on disk (``cache=True``, beside this file in ``__pycache__``), so only the
first import on a machine pays the compilation (``benchmarks/run.py`` reports both costs).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from physai.kinematics import Chain

# Packed layout, one row per joint: T_prev_joint rotation (9, row-major), T_prev_joint translation (3),
# unit axis in the joint frame (3), q_ref (1), 1.0 for a hinge / 0.0 for a slide (1); then one final row
# holding T_last_tool rotation (9) and translation (3) in the same columns.
_ROW = 17
_F64 = np.dtype(np.float64)


def pack(chain: Chain) -> np.ndarray:
    """The chain's constants as one read-only ``(n + 1, 17)`` float64 array for the kernels."""
    P = np.zeros((chain.n + 1, _ROW))
    P[:-1, 0:9] = chain.T_prev_joint[:, :3, :3].reshape(chain.n, 9)
    P[:-1, 9:12] = chain.T_prev_joint[:, :3, 3]
    P[:-1, 12:15] = chain.axis_joint
    P[:-1, 15] = chain.q_ref
    P[:-1, 16] = [t == "hinge" for t in chain.joint_types]
    P[-1, 0:9] = chain.T_last_tool[:3, :3].reshape(9)
    P[-1, 9:12] = chain.T_last_tool[:3, 3]
    P.flags.writeable = False
    return P


@functools.lru_cache(maxsize=256)
def _packed(chain: Chain) -> tuple[np.ndarray, tuple[int, int]]:
    """``(pack(chain), (6, n))``, memoised on the chain's identity.

    ``Chain`` is frozen with ``eq=False`` (hashed by identity) and its arrays are read-only, so an entry can
    never disagree with its chain; the bounded cache keeps at most 256 chains alive.
    """
    return pack(chain), (6, chain.n)


# ---- kernels -----------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _walk(q, P, T, J):
    """Walk the chain once for one ``q (n,)``: fill ``T (4, 4)`` and ``J (6, n)``.

    Same algebra as :func:`physai.kinematics.joint_frames` + ``jacobian_from_fk``: the running world
    pose ``(R, p)`` is composed with each joint's fixed placement, then with the joint's own motion
    (Rodrigues rotation about, or translation along, its axis). The pose is held in scalars: small arrays here would cost heap allocations per call.
    """
    n = q.shape[0]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    p0, p1, p2 = 0.0, 0.0, 0.0
    for i in range(n):
        # (R, p) <- (R, p) @ T_prev_joint[i]
        m = P[i]
        p0, p1, p2 = (p0 + r00 * m[9] + r01 * m[10] + r02 * m[11],
                      p1 + r10 * m[9] + r11 * m[10] + r12 * m[11],
                      p2 + r20 * m[9] + r21 * m[10] + r22 * m[11])
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            r00 * m[0] + r01 * m[3] + r02 * m[6], r00 * m[1] + r01 * m[4] + r02 * m[7], r00 * m[2] + r01 * m[5] + r02 * m[8],
            r10 * m[0] + r11 * m[3] + r12 * m[6], r10 * m[1] + r11 * m[4] + r12 * m[7], r10 * m[2] + r11 * m[5] + r12 * m[8],
            r20 * m[0] + r21 * m[3] + r22 * m[6], r20 * m[1] + r21 * m[4] + r22 * m[7], r20 * m[2] + r21 * m[5] + r22 * m[8])
        ux, uy, uz = m[12], m[13], m[14]
        d = q[i] - m[15]
        # A joint's motion leaves its own axis fixed, so the world axis is R @ u before or after it.
        ax, ay, az = r00 * ux + r01 * uy + r02 * uz, r10 * ux + r11 * uy + r12 * uz, r20 * ux + r21 * uy + r22 * uz
        if m[16] != 0.0:
            s, k = np.sin(d), 1.0 - np.cos(d)
            # Rodrigues: M = I + s K + k K^2 with K = skew(u); K^2 = u u^T - I for a unit axis.
            m00, m11, m22 = 1.0 + k * (ux * ux - 1.0), 1.0 + k * (uy * uy - 1.0), 1.0 + k * (uz * uz - 1.0)
            m01, m10 = -s * uz + k * ux * uy, s * uz + k * ux * uy
            m02, m20 = s * uy + k * ux * uz, -s * uy + k * ux * uz
            m12, m21 = -s * ux + k * uy * uz, s * ux + k * uy * uz
            r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
                r00 * m00 + r01 * m10 + r02 * m20, r00 * m01 + r01 * m11 + r02 * m21, r00 * m02 + r01 * m12 + r02 * m22,
                r10 * m00 + r11 * m10 + r12 * m20, r10 * m01 + r11 * m11 + r12 * m21, r10 * m02 + r11 * m12 + r12 * m22,
                r20 * m00 + r21 * m10 + r22 * m20, r20 * m01 + r21 * m11 + r22 * m21, r20 * m02 + r21 * m12 + r22 * m22)
            # Park the anchor in the linear rows; the second pass turns it into a x (p_tool - anchor).
            J[0, i], J[1, i], J[2, i] = p0, p1, p2
            J[3, i], J[4, i], J[5, i] = ax, ay, az
        else:
            p0, p1, p2 = p0 + d * ax, p1 + d * ay, p2 + d * az
            J[0, i], J[1, i], J[2, i] = ax, ay, az
            J[3, i], J[4, i], J[5, i] = 0.0, 0.0, 0.0
    # tool = (R, p) @ T_last_tool
    m = P[n]
    t0 = p0 + r00 * m[9] + r01 * m[10] + r02 * m[11]
    t1 = p1 + r10 * m[9] + r11 * m[10] + r12 * m[11]
    t2 = p2 + r20 * m[9] + r21 * m[10] + r22 * m[11]
    T[0, 0], T[0, 1], T[0, 2], T[0, 3] = r00 * m[0] + r01 * m[3] + r02 * m[6], r00 * m[1] + r01 * m[4] + r02 * m[7], r00 * m[2] + r01 * m[5] + r02 * m[8], t0
    T[1, 0], T[1, 1], T[1, 2], T[1, 3] = r10 * m[0] + r11 * m[3] + r12 * m[6], r10 * m[1] + r11 * m[4] + r12 * m[7], r10 * m[2] + r11 * m[5] + r12 * m[8], t1
    T[2, 0], T[2, 1], T[2, 2], T[2, 3] = r20 * m[0] + r21 * m[3] + r22 * m[6], r20 * m[1] + r21 * m[4] + r22 * m[7], r20 * m[2] + r21 * m[5] + r22 * m[8], t2
    T[3, 0], T[3, 1], T[3, 2], T[3, 3] = 0.0, 0.0, 0.0, 1.0
    for i in range(n):
        if P[i, 16] != 0.0:
            ax, ay, az = J[3, i], J[4, i], J[5, i]
            dx, dy, dz = t0 - J[0, i], t1 - J[1, i], t2 - J[2, i]
            J[0, i], J[1, i], J[2, i] = ay * dz - az * dy, az * dx - ax * dz, ax * dy - ay * dx


@numba.njit(cache=True)
def _all_finite(q):
    for x in q.flat:
        if not np.isfinite(x):
            return False
    return True


# One compiled variant serves every float64 vector: numba converts C-contiguous and writable arrays to
# this strided read-only type (and remembers the conversion, so later calls dispatch as fast).
_Q_TYPE = numba.types.Array(numba.float64, 1, "A", readonly=True)
_P_TYPE = numba.types.Array(numba.float64, 2, "C", readonly=True)
_OUT2 = numba.float64[:, ::1]


@numba.njit(numba.boolean(_Q_TYPE, _P_TYPE, _OUT2, _OUT2), cache=True)
def _pose_jac_into(q, P, T, J):
    """Fill ``T (4, 4)`` and ``J (6, n)`` for one ``q (n,)``; False (nothing computed) for a wrong length or a NaN/inf."""
    if q.shape[0] != P.shape[0] - 1 or J.shape[1] != q.shape[0] or not _all_finite(q):
        return False
    _walk(q, P, T, J)
    return True


# Eagerly compiled (or loaded from the disk cache) for exactly this signature: any other input raises
# TypeError at once instead of compiling a new specialisation, and falls back to the validated path.
_pose_jac_into.disable_compile()


@numba.njit(cache=True, parallel=True)
def _walk_batch(Q, P, T, J):
    for b in numba.prange(Q.shape[0]):
        _walk(Q[b], P, T[b], J[b])


@numba.njit(cache=True)
def _walk_few(Q, P, T, J):
    for b in range(Q.shape[0]):
        _walk(Q[b], P, T[b], J[b])


# Below this many rows, waking the thread pool costs more than the rows (a solver's active set is often 1).
_PARALLEL_MIN_ROWS = 256


# ---- public API ----------------------------------------------------------------------------------


def tool_pose_and_jacobian(chain: Chain, q) -> tuple[np.ndarray, np.ndarray]:
    """``T_world_tool (..., 4, 4)`` and the geometric Jacobian ``(..., 6, n)``: fast twin of the reference.

    ``q: (..., n)`` joint positions (rad / m), validated as :meth:`Chain.check_q` does (same errors).
    A float64 ``(n,)`` array takes the single compiled call; ``(..., n)`` runs the parallel batch loop.
    The outputs are fresh arrays (the caller may keep them).
    """
    P, J_shape = _packed(chain)
    T, J = np.empty((4, 4)), np.empty(J_shape)
    try:
        if _pose_jac_into(q, P, T, J):
            return T, J
    except TypeError:  # not a float64 vector: a list, another dtype, a batch
        pass
    q = chain.check_q(q)
    if q.ndim == 1:
        _pose_jac_into(q, P, T, J)
        return T, J
    lead, n = q.shape[:-1], chain.n
    B = int(np.prod(lead))
    T, J = np.empty((B, 4, 4)), np.empty((B, 6, n))
    # One layout for the lazily compiled batch kernel: C-contiguous and writable (copies only if needed).
    (_walk_batch if B >= _PARALLEL_MIN_ROWS else _walk_few)(np.require(q.reshape(B, n), np.float64, ["C", "W"]), P, T, J)
    return T.reshape(lead + (4, 4)), J.reshape(lead + (6, n))


def tool_pose(chain: Chain, q) -> np.ndarray:
    """Forward kinematics ``T_world_tool``: ``q: (..., n)`` -> ``(..., 4, 4)``."""
    return tool_pose_and_jacobian(chain, q)[0]


def jacobian(chain: Chain, q) -> np.ndarray:
    """Geometric Jacobian of the tool point: ``q: (..., n)`` -> ``(..., 6, n)`` (linear rows, then angular)."""
    return tool_pose_and_jacobian(chain, q)[1]
