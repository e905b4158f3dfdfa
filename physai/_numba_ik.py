"""Compiled Levenberg-Marquardt IK: the whole solve of :func:`physai.ik.solve_ik_batch` (``method="lm"``) in numba.

:mod:`physai.ik` is the readable NumPy solver the lessons teach from; it is vectorised over targets,
and for one target its per-iteration Python/NumPy overhead (tens of small array operations, an SVD)
costs far more than the arithmetic. This module runs the same algorithm for each target -- every
iteration and every restart -- inside one compiled call:

- the same residuals as :func:`physai.ik.task_residual` (``"pose"``: position and ``so3_log`` of
  ``R_target R^T`` through Shepperd's quaternion; ``"position"``; ``"position+axis"``: position and the
  rotation vector taking ``z = R a`` onto ``z_t``, angular rows projected by ``I - z z^T``), the same
  per-row weights ``sqrt(w)``;
- the same LM step ``dq = J^T (J J^T + mu I)^-1 e`` (solved as the smaller of the ``m x m`` and the
  equal ``(J^T J + mu I)^-1 J^T e`` ``n x n`` systems by Cholesky, instead of the reference's SVD), the
  same freeze-and-recompute of joints the step pushes past a limit, the same uniform step scaling to
  ``max_step`` and clip into the limits;
- the same damping schedule, accept/reject test, stopping rules (tolerances, ``iterations`` per
  attempt, ``patience`` steps without 1 % progress), starts (their uniform numbers drawn up front by the caller
  from its seeded generator, so batched == looped) and the final polish of the best point of an unconverged target.

The two solvers differ only by round-off (Cholesky vs SVD), which LM's accept/reject tests and the
restarts may amplify into a different (equally valid) solution; tests/test_fast_ik.py checks both
against MuJoCo's site pose. One such difference is systematic: the SVD gives a frozen joint a ~1e-13
step instead of exactly 0, which lifts it off its limit on about every other step, so the NumPy loop
alternates frozen and clipped steps there, while here a joint stays frozen while the step pushes it
out. On random reachable targets this takes no more iterations (benchmarks/IK_RESULTS.md); against a
limit, e.g. beside an unreachable target, an attempt can creep to its iteration budget (outcome ITERATION_LIMIT)
where the NumPy loop stops at a stationary point (BEST_EFFORT): a result reports both as ``"unreachable"``.
Compiled code is cached on disk (``cache=True``, in the user's cache folder: :func:`physai._jit.njit`).
"""

from __future__ import annotations

import numba
import numpy as np

from physai._jit import njit  # numba.njit, its disk cache in the user's cache folder
from physai._ik_record import BEST_EFFORT, CONVERGED, ITERATION_LIMIT, SETTINGS
from physai._numba_kin import store_pose, walk

_RO = dict(readonly=True)
F1, F2, F3 = (numba.types.Array(numba.float64, d, "A", **_RO) for d in (1, 2, 3))
SETTINGS_ARRAY = numba.types.Array(numba.from_dtype(SETTINGS), 1, "A", **_RO)


@njit(numba.boolean(F3, numba.boolean, numba.float64), cache=True)
def targets_ok(T, pose, tol):
    """True if every ``T (B, 4, 4)`` is finite and, with ``pose``, a rigid transform to ``tol``
    (``|R R^T - I|``, ``det R > 0``, bottom row ``[0, 0, 0, 1]``): the checks of
    :func:`physai.transforms.check_transform` in one compiled pass. False sends the caller to those
    checks, which name the problem."""
    for b in range(T.shape[0]):
        for i in range(4):
            for j in range(4):
                if not np.isfinite(T[b, i, j]):
                    return False
        if not pose:
            continue
        R = T[b]
        for i in range(3):
            for j in range(3):
                d = R[i, 0] * R[j, 0] + R[i, 1] * R[j, 1] + R[i, 2] * R[j, 2] - (1.0 if i == j else 0.0)
                if abs(d) > tol:
                    return False
        det = (R[0, 0] * (R[1, 1] * R[2, 2] - R[1, 2] * R[2, 1]) - R[0, 1] * (R[1, 0] * R[2, 2] - R[1, 2] * R[2, 0])
               + R[0, 2] * (R[1, 0] * R[2, 1] - R[1, 1] * R[2, 0]))
        if not det > 0 or abs(R[3, 0]) > tol or abs(R[3, 1]) > tol or abs(R[3, 2]) > tol or abs(R[3, 3] - 1.0) > tol:
            return False
    return True


@njit(cache=True, inline="always")
def _rotvec(R):
    """``so3_log(R)`` for a 3x3 rotation, as :func:`physai.transforms.so3_log`: Shepperd quaternion -> rotation
    vector."""
    m00, m11, m22 = R[0, 0], R[1, 1], R[2, 2]
    c0, c1, c2, c3 = 1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22
    d21, d02, d10 = R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]
    s01, s02, s12 = R[0, 1] + R[1, 0], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1]
    # np.argmax picks the first of equal candidates: keep the same order of the comparisons
    if c0 >= c1 and c0 >= c2 and c0 >= c3:
        s = 2.0 * np.sqrt(c0)
        w, x, y, z = s / 4, d21 / s, d02 / s, d10 / s
    elif c1 >= c2 and c1 >= c3:
        s = 2.0 * np.sqrt(c1)
        w, x, y, z = d21 / s, s / 4, s01 / s, s02 / s
    elif c2 >= c3:
        s = 2.0 * np.sqrt(c2)
        w, x, y, z = d02 / s, s01 / s, s / 4, s12 / s
    else:
        s = 2.0 * np.sqrt(c3)
        w, x, y, z = d10 / s, s02 / s, s12 / s, s / 4
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    sn = np.sqrt(x * x + y * y + z * z)
    scale = 2.0 if sn == 0 else 2.0 * np.arctan2(sn, w) / sn
    return scale * x, scale * y, scale * z


@njit(cache=True)
def _residual(task, T, J, Tt, a, sw, e, Jt, M):
    """Weighted residual ``e (m,)`` and task Jacobian ``Jt (m, n)`` of :func:`physai.ik.task_residual` at ``T (4, 4)``,
    ``J (6, n)``; returns ``(0.5 |e|^2, position_error, orientation_error)``. ``M (3, 3)`` is scratch."""
    n = J.shape[1]
    dp0, dp1, dp2 = Tt[0, 3] - T[0, 3], Tt[1, 3] - T[1, 3], Tt[2, 3] - T[2, 3]
    perr = np.sqrt(dp0 * dp0 + dp1 * dp1 + dp2 * dp2)
    e[0], e[1], e[2] = dp0, dp1, dp2
    for r in range(3):
        for j in range(n):
            Jt[r, j] = J[r, j]
    oerr = 0.0
    if task == 0:
        for i in range(3):
            for k in range(3):
                M[i, k] = Tt[i, 0] * T[k, 0] + Tt[i, 1] * T[k, 1] + Tt[i, 2] * T[k, 2]
        e[3], e[4], e[5] = _rotvec(M)
        oerr = np.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
        for r in range(3, 6):
            for j in range(n):
                Jt[r, j] = J[r, j]
    elif task == 2:
        z0 = T[0, 0] * a[0] + T[0, 1] * a[1] + T[0, 2] * a[2]
        z1 = T[1, 0] * a[0] + T[1, 1] * a[1] + T[1, 2] * a[2]
        z2 = T[2, 0] * a[0] + T[2, 1] * a[1] + T[2, 2] * a[2]
        t0 = Tt[0, 0] * a[0] + Tt[0, 1] * a[1] + Tt[0, 2] * a[2]
        t1 = Tt[1, 0] * a[0] + Tt[1, 1] * a[1] + Tt[1, 2] * a[2]
        t2 = Tt[2, 0] * a[0] + Tt[2, 1] * a[1] + Tt[2, 2] * a[2]
        s0, s1, s2 = z1 * t2 - z2 * t1, z2 * t0 - z0 * t2, z0 * t1 - z1 * t0
        sin_t = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
        oerr = np.arctan2(sin_t, z0 * t0 + z1 * t1 + z2 * t2)
        f = oerr / sin_t if sin_t > 0 else 1.0
        e[3], e[4], e[5] = s0 * f, s1 * f, s2 * f
        for j in range(n):  # (I - z z^T) J_w: a spin about the tool axis changes nothing
            zj = z0 * J[3, j] + z1 * J[4, j] + z2 * J[5, j]
            Jt[3, j], Jt[4, j], Jt[5, j] = J[3, j] - z0 * zj, J[4, j] - z1 * zj, J[5, j] - z2 * zj
    m = e.shape[0]
    E = 0.0
    for r in range(m):
        e[r] *= sw[r]
        E += e[r] * e[r]
        for j in range(n):
            Jt[r, j] *= sw[r]
    return 0.5 * E, perr, oerr


@njit(cache=True)
def _cholesky_solve(A, x):
    """Solve ``A y = x`` in place (``x`` becomes ``y``) for symmetric positive definite ``A (k, k)`` (overwritten).

    False if a pivot is not positive (round-off on a numerically singular system): the caller takes no step."""
    k = A.shape[0]
    for j in range(k):
        d = A[j, j]
        for p in range(j):
            d -= A[j, p] * A[j, p]
        if not d > 0.0:
            return False
        d = np.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, k):
            s = A[i, j]
            for p in range(j):
                s -= A[i, p] * A[j, p]
            A[i, j] = s / d
    for i in range(k):
        s = x[i]
        for p in range(i):
            s -= A[i, p] * x[p]
        x[i] = s / A[i, i]
    for i in range(k - 1, -1, -1):
        s = x[i]
        for p in range(i + 1, k):
            s -= A[p, i] * x[p]
        x[i] = s / A[i, i]
    return True


@njit(cache=True)
def _lm_step(Jw, ew, mu, free, dq, A, y):
    """``dq = J^T (J J^T + mu I)^-1 e`` over the ``free`` columns of ``Jw (m, n)`` (blocked joints get 0).

    Solves whichever of the ``m x m`` and ``n x n`` forms is smaller (``A``, ``y``: scratch of that size)."""
    m, n = Jw.shape
    if n <= m:  # (J^T J + mu I) dq = J^T e
        for i in range(n):
            for j in range(i + 1):
                s = 0.0
                if free[i] and free[j]:
                    for r in range(m):
                        s += Jw[r, i] * Jw[r, j]
                A[i, j] = s
                A[j, i] = s
            A[i, i] += mu
            s = 0.0
            if free[i]:
                for r in range(m):
                    s += Jw[r, i] * ew[r]
            y[i] = s
        ok = _cholesky_solve(A, y)
        for i in range(n):
            dq[i] = y[i] if ok else 0.0
    else:  # (J J^T + mu I) y = e, dq = J^T y
        for r in range(m):
            for c in range(r + 1):
                s = 0.0
                for j in range(n):
                    if free[j]:
                        s += Jw[r, j] * Jw[c, j]
                A[r, c] = s
                A[c, r] = s
            A[r, r] += mu
            y[r] = ew[r]
        ok = _cholesky_solve(A, y)
        for j in range(n):
            s = 0.0
            if ok and free[j]:
                for r in range(m):
                    s += Jw[r, j] * y[r]
            dq[j] = s


@njit(cache=True, inline="always")
def _free_joints(q, dq, lower, upper, free):
    """``free = ~physai.ik.limit_blocked(q, dq, lower, upper)`` in place (the freeze rule); True if any is blocked."""
    any_blocked = False
    for j in range(q.shape[0]):
        free[j] = not ((q[j] <= lower[j] and dq[j] < 0) or (q[j] >= upper[j] and dq[j] > 0))
        any_blocked |= not free[j]
    return any_blocked



@njit(cache=True, inline="always")
def _lm_trial(q, Jw, ew, mu, lower, upper, max_step, free, all_free, dq, A, y, trial):
    """``trial = clip(q + dq)``: the LM step, recomputed without the joints the freeze rule blocks, scaled down
    uniformly to ``|dq_j| <= max_step``."""
    n = q.shape[0]
    _lm_step(Jw, ew, mu, all_free, dq, A, y)
    if _free_joints(q, dq, lower, upper, free):
        _lm_step(Jw, ew, mu, free, dq, A, y)
    peak = 0.0
    for j in range(n):
        peak = max(peak, abs(dq[j]) / max_step)
    scale = 1.0 / peak if peak > 1.0 else 1.0
    for j in range(n):
        trial[j] = min(max(q[j] + dq[j] * scale, lower[j]), upper[j])


@njit(cache=True, inline="always")
def restart_start(u, sample_range, out):
    """``out = low + (high - low) * u`` for ``sample_range = (low, high)`` ``(2, n)``: the map of
    :meth:`physai.chain.Chain.random_q` from uniform numbers in [0, 1) to joint positions, term for term."""
    for j in range(out.shape[0]):
        out[j] = sample_range[0, j] + (sample_range[1, j] - sample_range[0, j]) * u[j]


@njit(cache=True)
def solve_target(P, lower, upper, Tt, axis, sw, q0, uniforms, sample_range, s, n_attempts, best_q, scratch):
    """One target's LM attempts and final polish: ``(converged, ended_by_limit, steps, attempt, position_error,
    orientation_error, q)`` where ``q`` is the converged point or else ``best_q``, the best point found."""
    T, J, Jt, Jw, e, ew, M, A, y, q, trial, dq, free, all_free = scratch
    E = cur_perr = cur_oerr = E_ref = best_E = best_perr = best_oerr = np.inf
    mu = s.mu0
    attempt = it_attempt = it_total = no_progress = 0
    fresh, ended_by_limit, polishing, progress = True, False, False, 0.99
    best_q[:] = q0
    while True:
        if fresh and (polishing or attempt == 0):
            trial[:] = best_q if polishing else q0
        elif fresh:  # restart k starts from its uniform numbers, mapped only once it is tried
            restart_start(uniforms[min(attempt, uniforms.shape[0]) - 1], sample_range, trial)
        else:
            _lm_trial(q, Jw, ew, mu, lower, upper, s.max_step, free, all_free, dq, A, y, trial)
        R, p = walk(trial, P, J, J[:0])
        store_pose(T, R, p)
        E_t, perr, oerr = _residual(s.task, T, J, Tt, axis, sw, e, Jt, M)
        accept = fresh or E_t < E
        if accept:
            q[:], Jw[:, :], ew[:] = trial, Jt, e
            E, cur_perr, cur_oerr = E_t, perr, oerr
        if fresh:
            mu, it_attempt = s.mu0, 0
        else:
            mu = max(mu * (s.mu_down if accept else s.mu_up), s.mu_min)
            it_attempt += 1
            it_total += 1
        if E_t < best_E:
            best_q[:] = trial
            best_E, best_perr, best_oerr = E_t, perr, oerr
        if perr <= s.tol_position and oerr <= s.tol_orientation and accept:
            return True, ended_by_limit, it_total, attempt, cur_perr, cur_oerr, q
        # An attempt must cut its error by 1 % within `patience` steps, else the next start is tried;
        # after the last one the best point is polished until it stops improving at all.
        if fresh or E < progress * E_ref:
            E_ref, no_progress = E, 0
        else:
            no_progress += 1
        fresh = False
        at_limit = it_attempt >= s.iterations
        if at_limit or no_progress >= s.patience:
            if polishing:
                return False, ended_by_limit, it_total, attempt, best_perr, best_oerr, best_q
            ended_by_limit |= at_limit
            attempt += 1
            polishing = attempt >= n_attempts
            if polishing and s.polish == 0:
                return False, ended_by_limit, it_total, attempt, best_perr, best_oerr, best_q
            progress = 1.0 - 1e-6 if polishing else progress
            fresh = True
            E = E_ref = np.inf
            no_progress = 0


@njit(cache=True)
def solve_scratch(n, m):
    """The working arrays of :func:`solve_target` for ``n`` joints and ``m`` task rows, allocated once per batch."""
    k = min(m, n)
    return (np.empty((4, 4)), np.empty((6, n)), np.empty((m, n)), np.empty((m, n)), np.empty(m), np.empty(m),
            np.empty((3, 3)), np.empty((k, k)), np.empty(k), np.empty(n), np.empty(n), np.empty(n),
            np.ones(n, np.bool_), np.ones(n, np.bool_))


# One explicit signature (read-only strided inputs, which numba also accepts for writable C arrays) keeps a
# single compiled variant, loaded from the disk cache, whatever mix of frozen chain arrays, memoised
# draws and caller arrays comes in. It runs without the GIL (as the ahead-of-time build compiles it too), so that
# threads can share the targets of one batch (physai.ik).
@njit(numba.void(F2, F1, F1, F3, F1, F1, F2, F3, F2, SETTINGS_ARRAY, numba.float64[:, ::1],
                 numba.int64[:, ::1]), cache=True, nogil=True)
def solve_batch(P, lower, upper, T_target, axis, sw, q_first, uniforms, sample_range, settings, out, out_int):
    """Solve each target ``T_target[b] (4, 4)``; write row ``b`` of ``out`` and ``out_int``.

    ``P``: ``Chain.packed``; ``lower``, ``upper`` ``(n,)``; ``axis (3,)`` unit (tool frame); ``sw (m,)`` square
    roots of the row weights. Attempt 0 starts from ``q_first[b]`` (or its only row), attempt ``k`` from
    ``uniforms[b, k - 1]`` ``(B, restarts, n)`` numbers in [0, 1) mapped into ``sample_range (2, n)`` as
    :meth:`physai.chain.Chain.random_q` maps them (:func:`restart_start`); ``settings``: a :data:`SETTINGS` record
    (:func:`settings`).
    Outputs: ``out (B, n + 2)`` the converged point (or the best one found), its position and orientation errors;
    ``out_int (B, 3)`` steps over all attempts, restarts used, and the outcome (:data:`CONVERGED`,
    :data:`BEST_EFFORT` or :data:`ITERATION_LIMIT`). Each target's answer depends on its own inputs only.
    """
    s = settings[0]
    n = P.shape[0] - 1
    scratch = solve_scratch(n, sw.shape[0])
    best_q = np.empty(n)
    for b in range(T_target.shape[0]):
        Tt = T_target[b]
        # A provably unreachable position needs no search for a hidden solution: a few attempts find the closest point.
        d0, d1, d2 = Tt[0, 3] - s.base[0], Tt[1, 3] - s.base[1], Tt[2, 3] - s.base[2]
        n_attempts = s.attempts_far if np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) > s.reach else s.attempts
        q0 = q_first[b if q_first.shape[0] > 1 else 0]
        converged, limit, it_total, attempt, perr, oerr, q = solve_target(
            P, lower, upper, Tt, axis, sw, q0, uniforms[b], sample_range, s, n_attempts, best_q, scratch)
        out[b, :n] = q
        out[b, n], out[b, n + 1] = perr, oerr
        out_int[b, 0] = it_total
        out_int[b, 1] = min(attempt, uniforms.shape[1]) if converged else n_attempts - 1
        out_int[b, 2] = CONVERGED if converged else ITERATION_LIMIT if limit else BEST_EFFORT
