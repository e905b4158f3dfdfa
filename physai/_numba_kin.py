"""Compiled engine of :mod:`physai.kinematics` (private): the same walk of the chain as its readable NumPy code.

:mod:`physai.kinematics` dispatches here by default and is tested equal to its NumPy reference to 1e-13
(tests/test_kinematics.py). The kernels read the chain's constants from ``Chain.packed`` (packed
once at construction, layout in :mod:`physai.chain`) and never see a ``Chain``, so this module depends on
numpy and numba only.

Why it is fast: the walk runs on scalars (small arrays would cost heap allocations per pose), and the IK kernels
(:mod:`physai._numba_ik`) call it inside their loops. Batches of ``(B, n)`` walk blocks of poses joint by joint
(:func:`batch`), so that the compiler can run one step on several poses per vector instruction, and release the GIL,
so that threads share a large batch (:mod:`physai.kinematics`). Every kernel has one explicit
signature, compiled once and cached on disk (``cache=True``, in the user's cache folder:
:func:`physai._jit.njit`): a process loads it instead of compiling it, and no input layout compiles a second
specialisation. One pose from Python is served by ``_walk.c``, the same walk
in C (:mod:`physai._engine` says why).
"""

from __future__ import annotations

import numba
import numpy as np

from physai._jit import njit  # numba.njit, its disk cache in the user's cache folder

_Q2 = numba.types.Array(numba.float64, 2, "A", readonly=True)
_P = numba.types.Array(numba.float64, 2, "C", readonly=True)
_OUT3 = numba.float64[:, :, ::1]


@njit(cache=True, inline="always")
def mul(a, b):
    """Product ``a @ b`` of two 3x3 matrices held as row-major 9-tuples."""
    return (a[0] * b[0] + a[1] * b[3] + a[2] * b[6], a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
            a[0] * b[2] + a[1] * b[5] + a[2] * b[8], a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
            a[3] * b[1] + a[4] * b[4] + a[5] * b[7], a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
            a[6] * b[0] + a[7] * b[3] + a[8] * b[6], a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
            a[6] * b[2] + a[7] * b[5] + a[8] * b[8])


@njit(cache=True, inline="always")
def apply(a, v):
    """``a @ v`` for a row-major 9-tuple ``a`` and a 3-tuple ``v``."""
    return (a[0] * v[0] + a[1] * v[1] + a[2] * v[2], a[3] * v[0] + a[4] * v[1] + a[5] * v[2],
            a[6] * v[0] + a[7] * v[1] + a[8] * v[2])


@njit(cache=True, inline="always")
def transpose_apply(R, v):
    """``R^T @ v`` for a row-major 9-tuple ``R``."""
    return (R[0] * v[0] + R[3] * v[1] + R[6] * v[2], R[1] * v[0] + R[4] * v[1] + R[7] * v[2],
            R[2] * v[0] + R[5] * v[1] + R[8] * v[2])


@njit(cache=True, inline="always")
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True, inline="always")
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, inline="always")
def norm(a):
    return np.sqrt(dot(a, a))


@njit(cache=True, inline="always")
def place(R, p, m):
    """``(R, p) @ (m_R, m_t)`` for a packed row ``m`` (rotation in columns 0-8, translation in 9-11)."""
    t = apply(R, (m[9], m[10], m[11]))
    return mul(R, (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])), (p[0] + t[0], p[1] + t[1], p[2] + t[2])


# sin and cos of a joint's motion: fdlibm's kernels (within 1 ulp of the exact value, as the C library's) after a
# reduction by pi/2 in three parts, written without branches so that a loop of them runs on vector instructions (the C
# library's sin and cos are calls, one value at a time: they took most of a batch's time). _walk.c has the same
# arithmetic, term for term. Beyond REDUCED_MAX rad (2^19 pi/2: the three-part reduction is exact up to there) the
# C library serves.
REDUCED_MAX = 823549.6654828654
_INVPIO2 = 6.36619772367581382433e-01
_PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11,
         2.02226624879595063154e-21, 2.02226624871116645580e-21, 8.47842766036889956997e-32)
_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


@njit(cache=True, inline="always")
def _sin_cos_reduced(x):
    """``(sin x, cos x)`` for ``|x| <= REDUCED_MAX``, without a branch or a call."""
    fn = np.floor(x * _INVPIO2 + 0.5)  # x = fn pi/2 + y, |y| <= pi/4 (and a rounding)
    r = x - fn * _PIO2[0]
    w = fn * _PIO2[1]
    t, r = r, r - w
    w = fn * _PIO2[2] - ((t - r) - w)
    t = r
    w = fn * _PIO2[3]
    r = t - w
    w = fn * _PIO2[4] - ((t - r) - w)
    y0 = r - w
    y1 = (r - y0) - w  # y = y0 + y1
    z = y0 * y0
    zz = z * z
    v = z * y0
    rs = _S[1] + z * (_S[2] + z * _S[3]) + z * zz * (_S[4] + z * _S[5])
    s = y0 - ((z * (0.5 * y1 - v * rs) - y1) - v * _S[0])
    rc = z * (_C[0] + z * (_C[1] + z * _C[2])) + zz * zz * (_C[3] + z * (_C[4] + z * _C[5]))
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + (z * rc - y0 * y1))
    quadrant = fn - 4.0 * np.floor(fn * 0.25)
    odd = quadrant == 1.0 or quadrant == 3.0
    s, c = (c, s) if odd else (s, c)
    return (-s if quadrant >= 2.0 else s), (-c if quadrant == 1.0 or quadrant == 2.0 else c)


@njit(cache=True, inline="always")
def sin_cos(x):
    """``(sin x, cos x)`` for any finite ``x``: within 1 ulp of the C library's (tests/test_kinematics.py)."""
    if abs(x) > REDUCED_MAX:
        return np.sin(x), np.cos(x)
    return _sin_cos_reduced(x)


@njit(cache=True, inline="always")
def rodrigues(u, d):
    """Twin of :func:`physai.transforms.rotation_about_axis`: ``I + s K + k K^2``, ``K = skew(u)``, unit ``u``.

    ``K^2 = u u^T - I`` for a unit axis; ``s = sin d``, ``k = 1 - cos d``.
    """
    s, c = sin_cos(d)
    return _turn(u, s, 1.0 - c)


@njit(cache=True, inline="always")
def _turn(u, s, k):
    """:func:`rodrigues` of ``s = sin d``, ``k = 1 - cos d``."""
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
        R, p = place(R, p, m)
        u, d, hinge = (m[12], m[13], m[14]), q[i] - m[15], m[16] != 0.0
        # A joint's motion leaves its own axis fixed, so the world axis is R @ u before or after it.
        a = apply(R, u)
        if hinge:
            R = mul(R, rodrigues(u, d))
        else:
            p = (p[0] + d * a[0], p[1] + d * a[1], p[2] + d * a[2])
        if want_f:
            F[i, 0], F[i, 1], F[i, 2], F[i, 3], F[i, 4], F[i, 5] = a[0], a[1], a[2], p[0], p[1], p[2]
        if want_j:
            # A hinge parks its anchor in the linear rows; the pass below turns it into a x (p_tool - anchor).
            lin, ang = (p, a) if hinge else (a, (0.0, 0.0, 0.0))
            J[0, i], J[1, i], J[2, i], J[3, i], J[4, i], J[5, i] = lin[0], lin[1], lin[2], ang[0], ang[1], ang[2]
    R, p = place(R, p, P[n])
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


# Poses per block of :func:`batch`: the block's running poses (a few kB a joint) stay in the first-level cache.
BLOCK = 64
# Rows of a block's scratch (BLOCK numbers each): rotation 0-8, translation 9-11, sin and 1 - cos of the joint's
# motion 12-13, the joint's world axis 14-16.
_POSE_ROWS, _TURN_ROWS = 12, 5


@njit(cache=True, inline="always")
def _load(X, b):
    """Lane ``b``'s running pose ``(R, p)`` from a block's scratch."""
    W = BLOCK
    return ((X[b], X[W + b], X[2 * W + b], X[3 * W + b], X[4 * W + b], X[5 * W + b], X[6 * W + b], X[7 * W + b],
             X[8 * W + b]), (X[9 * W + b], X[10 * W + b], X[11 * W + b]))


@njit(cache=True, inline="always")
def _keep(X, b, R, p):
    """Store lane ``b``'s running pose ``(R, p)`` in a block's scratch."""
    W = BLOCK
    X[b], X[W + b], X[2 * W + b], X[3 * W + b], X[4 * W + b], X[5 * W + b] = R[0], R[1], R[2], R[3], R[4], R[5]
    X[6 * W + b], X[7 * W + b], X[8 * W + b] = R[6], R[7], R[8]
    X[9 * W + b], X[10 * W + b], X[11 * W + b] = p[0], p[1], p[2]


@njit(cache=True, inline="always")
def _row(P, i):
    """Row ``i`` of a chain's packed constants as a tuple."""
    m = P[i]
    return (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], m[13], m[14], m[15], m[16])


@njit(cache=True)
def _walk_block(Q, P, lo, w, X, Y):
    """:func:`walk` of rows ``lo .. lo + w`` of ``Q`` at once, joint by joint: each joint's step runs over the block's
    poses in one loop, which the compiler turns into vector instructions (its terms are those of :func:`walk`, in the
    same order, so each pose's numbers are the same bits). Leaves the tool poses in ``X`` (rows 0-11) and each joint's
    world axis and anchor in ``Y (6 n, BLOCK)``, lanes ``0 .. w``.

    Every loop but the one reading ``Q`` runs over all ``BLOCK`` lanes, those past ``w`` (a last, short block) on
    zero motions: a loop of a count the compiler knows is vectorised, one of ``w`` steps was not (twice the time)."""
    W, n = BLOCK, Q.shape[1]
    tool = _row(P, n)
    for b in range(W):
        _keep(X, b, (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
    for i in range(n):
        m = _row(P, i)  # in registers: the loops below read no array they write
        u, q_ref, hinge = (m[12], m[13], m[14]), m[15], m[16] != 0.0
        for b in range(w):  # a loop of its own: Q's strided column read in the one below stopped it vectorising
            X[12 * W + b] = Q[lo + b, i] - q_ref
        for b in range(w, W):
            X[12 * W + b] = 0.0
        for b in range(W):
            d = X[12 * W + b]
            s, c = _sin_cos_reduced(d)
            X[12 * W + b], X[13 * W + b] = (s, 1.0 - c) if hinge else (d, 0.0)
        for b in range(w if hinge else 0):  # a loop of its own: its library calls would stop the one above vectorising
            d = Q[lo + b, i] - q_ref
            if abs(d) > REDUCED_MAX:
                s, c = np.sin(d), np.cos(d)
                X[12 * W + b], X[13 * W + b] = s, 1.0 - c
        for b in range(W):
            R, p = _load(X, b)
            R, p = place(R, p, m)
            a = apply(R, u)
            if hinge:
                R = mul(R, _turn(u, X[12 * W + b], X[13 * W + b]))
            else:
                d = X[12 * W + b]
                p = (p[0] + d * a[0], p[1] + d * a[1], p[2] + d * a[2])
            _keep(X, b, R, p)
            X[14 * W + b], X[15 * W + b], X[16 * W + b] = a[0], a[1], a[2]
        for k in range(6):  # a loop of its own: the one above then writes no array but X, at fixed offsets
            for b in range(W):
                Y[6 * i + k, b] = X[(14 + k if k < 3 else 6 + k) * W + b]
    for b in range(W):
        R, p = _load(X, b)
        R, p = place(R, p, tool)
        _keep(X, b, R, p)


@njit(numba.void(_Q2, _P, _OUT3, _OUT3, _OUT3, _OUT3, numba.float64[:, ::1]), cache=True, nogil=True)
def batch(Q, P, T, J, A, O, X_tool):
    """Walk the chain for every row of ``Q (B, n)``: fill the outputs whose first dimension is ``B`` (an output of
    first dimension 0 is not wanted): ``T (B, 4, 4)`` tool poses, ``J (B, 6, n)`` Jacobians, ``A (B, n, 3)`` world
    joint axes, ``O (B, n, 3)`` joint anchors, ``X_tool (B, 3)`` tool points. The GIL is released: threads can
    share a batch (:func:`physai._threads.in_threads`)."""
    B, n, W = Q.shape[0], Q.shape[1], BLOCK
    want_t, want_j, want_a, want_x = T.shape[0] != 0, J.shape[0] != 0, A.shape[0] != 0, X_tool.shape[0] != 0
    X, Y = np.empty((_POSE_ROWS + _TURN_ROWS) * W), np.empty((6 * n, W))
    for lo in range(0, B, W):
        w = min(W, B - lo)
        _walk_block(Q, P, lo, w, X, Y)
        for b in range(w):
            R, p = _load(X, b)
            if want_t:
                store_pose(T[lo + b], R, p)
            if want_x:
                X_tool[lo + b, 0], X_tool[lo + b, 1], X_tool[lo + b, 2] = p[0], p[1], p[2]
            for i in range(n if want_a else 0):
                A[lo + b, i, 0], A[lo + b, i, 1], A[lo + b, i, 2] = Y[6 * i, b], Y[6 * i + 1, b], Y[6 * i + 2, b]
                O[lo + b, i, 0], O[lo + b, i, 1], O[lo + b, i, 2] = Y[6 * i + 3, b], Y[6 * i + 4, b], Y[6 * i + 5, b]
            for i in range(n if want_j else 0):
                ax, ay, az = Y[6 * i, b], Y[6 * i + 1, b], Y[6 * i + 2, b]
                if P[i, 16] != 0.0:  # a hinge: a x (p_tool - anchor); a slide: its axis
                    dx, dy, dz = p[0] - Y[6 * i + 3, b], p[1] - Y[6 * i + 4, b], p[2] - Y[6 * i + 5, b]
                    J[lo + b, 0, i], J[lo + b, 1, i] = ay * dz - az * dy, az * dx - ax * dz
                    J[lo + b, 2, i] = ax * dy - ay * dx
                    J[lo + b, 3, i], J[lo + b, 4, i], J[lo + b, 5, i] = ax, ay, az
                else:
                    J[lo + b, 0, i], J[lo + b, 1, i], J[lo + b, 2, i] = ax, ay, az
                    J[lo + b, 3, i], J[lo + b, 4, i], J[lo + b, 5, i] = 0.0, 0.0, 0.0
