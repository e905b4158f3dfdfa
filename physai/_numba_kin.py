"""Compiled engine of :mod:`physai.kinematics` (private): the same walk of the chain as its readable NumPy code.

:mod:`physai.kinematics` dispatches here by default and is tested equal to its NumPy reference to 1e-13
(tests/test_kinematics.py). The kernels read the chain's constants from ``Chain.packed`` (packed
once at construction, layout in :mod:`physai.chain`) and never see a ``Chain``, so this module depends on
numpy and numba only.

Why it is fast: the walk runs on scalars (small arrays would cost heap allocations per pose); batches of
``(B, n)`` run one compiled loop over ``B`` (``numba.prange``, parallel over the CPU cores, from 256 rows), and
the IK kernels (:mod:`physai._numba_ik`) call the walk inside their loops. Every kernel has one explicit
signature, compiled once and cached on disk (``cache=True``, in the user's cache folder:
:func:`physai._jit.njit`): a process loads it instead of compiling it, and no input layout compiles a second
specialisation. One pose from Python is served by ``_walk.c``, the same walk
in C (:mod:`physai._engine` says why).
"""

from __future__ import annotations

import functools
import os

import numba
import numpy as np

from physai._jit import njit  # numba.njit, its disk cache in the user's cache folder

# GNU OpenMP, numba's fastest layer here, aborts a forked child (multiprocessing's default on Linux) that enters
# a parallel region once the parent has run one; numba's fork-safe layer (workqueue) is ~30 % slower on batches.
# So the layer stays numba's choice, and a forked child runs batches serially: its siblings are the parallelism.
_IN_FORKED_CHILD = [False]
os.register_at_fork(after_in_child=lambda: _IN_FORKED_CHILD.__setitem__(0, True))

_Q2 = numba.types.Array(numba.float64, 2, "A", readonly=True)
_P = numba.types.Array(numba.float64, 2, "C", readonly=True)
_OUT3 = numba.float64[:, :, ::1]


@njit(cache=True, inline="always")
def _mul(a, b):
    """Product ``a @ b`` of two 3x3 matrices held as row-major 9-tuples."""
    return (a[0] * b[0] + a[1] * b[3] + a[2] * b[6], a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
            a[0] * b[2] + a[1] * b[5] + a[2] * b[8], a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
            a[3] * b[1] + a[4] * b[4] + a[5] * b[7], a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
            a[6] * b[0] + a[7] * b[3] + a[8] * b[6], a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
            a[6] * b[2] + a[7] * b[5] + a[8] * b[8])


@njit(cache=True, inline="always")
def _apply(a, v):
    """``a @ v`` for a row-major 9-tuple ``a`` and a 3-tuple ``v``."""
    return (a[0] * v[0] + a[1] * v[1] + a[2] * v[2], a[3] * v[0] + a[4] * v[1] + a[5] * v[2],
            a[6] * v[0] + a[7] * v[1] + a[8] * v[2])


@njit(cache=True, inline="always")
def _transpose_apply(R, v):
    """``R^T @ v`` for a row-major 9-tuple ``R``."""
    return (R[0] * v[0] + R[3] * v[1] + R[6] * v[2], R[1] * v[0] + R[4] * v[1] + R[7] * v[2],
            R[2] * v[0] + R[5] * v[1] + R[8] * v[2])


@njit(cache=True, inline="always")
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True, inline="always")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, inline="always")
def _norm(a):
    return np.sqrt(_dot(a, a))


@njit(cache=True, inline="always")
def _place(R, p, m):
    """``(R, p) @ (m_R, m_t)`` for a packed row ``m`` (rotation in columns 0-8, translation in 9-11)."""
    t = _apply(R, (m[9], m[10], m[11]))
    return _mul(R, (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])), (p[0] + t[0], p[1] + t[1], p[2] + t[2])


@njit(cache=True, inline="always")
def rodrigues(u, d):
    """Twin of :func:`physai.transforms.rotation_about_axis`: ``I + s K + k K^2``, ``K = skew(u)``, unit ``u``.

    ``K^2 = u u^T - I`` for a unit axis; ``s = sin d``, ``k = 1 - cos d``.
    """
    s, k = np.sin(d), 1.0 - np.cos(d)
    ux, uy, uz = u
    return (1.0 + k * (ux * ux - 1.0), -s * uz + k * ux * uy, s * uy + k * ux * uz,
            s * uz + k * ux * uy, 1.0 + k * (uy * uy - 1.0), -s * ux + k * uy * uz,
            -s * uy + k * ux * uz, s * ux + k * uy * uz, 1.0 + k * (uz * uz - 1.0))


@njit(cache=True)
def walk(q, P, J, F):
    """Walk the chain once for one ``q (n,)``: return the tool pose ``(R, p)`` (row-major 9-tuple, 3-tuple),
    fill ``J (6, n)`` and ``F (n, 6)``; an output with no columns (``J``) or rows (``F``) is skipped.

    The algebra of :func:`physai.kinematics.joint_frames` + ``jacobian_from_fk``: the running world pose
    ``(R, p)`` is composed with each joint's fixed placement, then with the joint's own motion. ``F`` gets
    each joint's world axis (columns 0-2) and anchor (3-5).
    """
    n = q.shape[0]
    want_j, want_f = J.shape[1] != 0, F.shape[0] != 0
    R, p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    for i in range(n):
        m = P[i]
        R, p = _place(R, p, m)
        u, d, hinge = (m[12], m[13], m[14]), q[i] - m[15], m[16] != 0.0
        # A joint's motion leaves its own axis fixed, so the world axis is R @ u before or after it.
        a = _apply(R, u)
        if hinge:
            R = _mul(R, rodrigues(u, d))
        else:
            p = (p[0] + d * a[0], p[1] + d * a[1], p[2] + d * a[2])
        if want_f:
            F[i, 0], F[i, 1], F[i, 2], F[i, 3], F[i, 4], F[i, 5] = a[0], a[1], a[2], p[0], p[1], p[2]
        if want_j:
            # A hinge parks its anchor in the linear rows; the pass below turns it into a x (p_tool - anchor).
            lin, ang = (p, a) if hinge else (a, (0.0, 0.0, 0.0))
            J[0, i], J[1, i], J[2, i], J[3, i], J[4, i], J[5, i] = lin[0], lin[1], lin[2], ang[0], ang[1], ang[2]
    R, p = _place(R, p, P[n])
    for i in range(n if want_j else 0):
        if P[i, 16] != 0.0:
            ax, ay, az = J[3, i], J[4, i], J[5, i]
            dx, dy, dz = p[0] - J[0, i], p[1] - J[1, i], p[2] - J[2, i]
            J[0, i], J[1, i], J[2, i] = ay * dz - az * dy, az * dx - ax * dz, ax * dy - ay * dx
    return R, p


@njit(cache=True, inline="always")
def store_pose(T, R, p):
    """Write the pose ``(R, p)`` into ``T (4, 4)``."""
    T[0, 0], T[0, 1], T[0, 2], T[0, 3] = R[0], R[1], R[2], p[0]
    T[1, 0], T[1, 1], T[1, 2], T[1, 3] = R[3], R[4], R[5], p[1]
    T[2, 0], T[2, 1], T[2, 2], T[2, 3] = R[6], R[7], R[8], p[2]
    T[3, 0], T[3, 1], T[3, 2], T[3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(cache=True)
def _walk_row(q, P, T, J, F):
    R, p = walk(q, P, J, F)
    store_pose(T, R, p)


def _batch_rows_in_parallel(Q, P, T, J, F):
    for b in numba.prange(Q.shape[0]):
        _walk_row(Q[b], P, T[b], J[b], F[b])


@functools.cache
def _batch_parallel():
    """The parallel batch kernel, compiled (or loaded from numba's cache) for the first batch that needs it: it takes
    longer to compile than the rest of this module, which a first small call, served by the JIT, waits for."""
    return njit(numba.void(_Q2, _P, _OUT3, _OUT3, _OUT3), cache=True, parallel=True)(_batch_rows_in_parallel)


@njit(numba.void(_Q2, _P, _OUT3, _OUT3, _OUT3), cache=True)
def _batch_serial(Q, P, T, J, F):
    for b in range(Q.shape[0]):
        _walk_row(Q[b], P, T[b], J[b], F[b])


# Below this many rows, waking the thread pool costs more than the rows (a solver's active set is often 1).
PARALLEL_MIN_ROWS = 256


def batch(Q: np.ndarray, P: np.ndarray, T: np.ndarray, J: np.ndarray, F: np.ndarray) -> None:
    """Fill ``T (B, 4, 4)``, ``J (B, 6, n or 0)``, ``F (B, n or 0, 6)`` for validated ``Q (B, n)``."""
    parallel = Q.shape[0] >= PARALLEL_MIN_ROWS and not _IN_FORKED_CHILD[0]
    (_batch_parallel() if parallel else _batch_serial)(Q, P, T, J, F)
