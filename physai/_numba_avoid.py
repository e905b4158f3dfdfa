"""Compiled engine of the restarts of :mod:`physai._avoid_ik` (private): a colliding target's restart draws tried in
turn, each converged answer judged against the world in the same loop, until one keeps the margin.

The reference is the batched rounds of :func:`physai._avoid_ik._restart_rounds` (plain solves, then
:meth:`physai.collision.CollisionWorld.clear`); this loop gives the same answers (tests/test_collision.py) without
solving draws past a target's first clear answer, and without a round trip through Python per round. An answer the
screen cannot decide (:data:`physai._numba_collision.ASK`) ends the loop for that target: MuJoCo decides it, and a
colliding verdict resumes the loop at the next draw.
"""

from __future__ import annotations

import numba
import numpy as np

from physai._jit import njit
from physai._numba_collision import B1, F1, F2, I1, I2, PACKED, ASK, CLEAR, HIT, poses, config_verdict
from physai._numba_ik import F3, SETTINGS_ARRAY, solve_target, restart_start, solve_scratch

EXHAUSTED, RUN = 3, 4  # as physai._avoid_ik: a target's draws spent without a clear answer; a target to run

_I1W, _F2W, _F3W = numba.int64[::1], numba.float64[:, ::1], numba.float64[:, :, ::1]


@njit(numba.void(PACKED, F1, F1, F3, F1, F1, F3, F2, SETTINGS_ARRAY, numba.int64,
                 I1, F2, I2, I1, F1, F2, F2, F1, B1, B1, F2, I1, I1, F1, F1, F1,
                 numba.float64, numba.float64, _I1W, _I1W, _I1W, _I1W, _F2W, _F3W), cache=True, nogil=True)
def restarts(P, lower, upper, T_target, axis, sw, uniforms, sample_range, settings, stop,
             last, T_local, pairs, kind, radius, half, centre, rbound, exact, unbounded, hull, hull_adr, hull_num,
             hull_radius, hull_disk, margins, safe, band, next_draw, status, steps, ncand, out, cand):
    """For each target ``b``: one plain attempt (``settings`` with one attempt) from each restart draw
    ``next_draw[b] .. stop - 1`` in turn (``uniforms[b, j]`` mapped into ``sample_range``), until a converged
    answer is :data:`CLEAR` or :data:`ASK`; its ``q``, position and orientation errors in ``out[b] (n + 2)``.

    State, read and written per target: ``next_draw`` the next draw to try; ``status`` :data:`RUN` (the rows
    this call runs; others are skipped), then CLEAR, ASK or :data:`EXHAUSTED`; ``steps`` LM steps spent;
    ``cand (B, R, n)`` colliding answers found (``ncand`` of them, at most ``R``). The world's arrays are those of
    :func:`physai._numba_collision.verdicts`.
    """
    s = settings[0]
    n = P.shape[0] - 1
    scratch = solve_scratch(n, sw.shape[0])
    best_q, start = np.empty(n), np.empty(n)
    G = last.shape[0]
    R_geom, x_geom = np.empty((G, 9)), np.empty((G, 3))
    ask, bound = np.zeros((1, pairs.shape[0]), np.bool_), np.empty((1, pairs.shape[0]))
    screen_arrays = (kind, radius, half, centre, rbound, exact)
    hulls = (hull, hull_adr, hull_num, hull_radius, hull_disk)
    for b in range(T_target.shape[0]):
        if status[b] != RUN:
            continue
        status[b] = EXHAUSTED
        while next_draw[b] < stop:
            restart_start(uniforms[b, next_draw[b]], sample_range, start)
            next_draw[b] += 1
            converged, _, it, _, perr, oerr, q = solve_target(P, lower, upper, T_target[b], axis, sw, start,
                                                               uniforms[b, :0], sample_range, s, 1, best_q, scratch)
            steps[b] += it
            if not converged:
                continue
            poses(q, P, last, T_local, R_geom, x_geom)
            verdict = config_verdict(0, pairs, x_geom, R_geom, unbounded, screen_arrays, hulls, margins, safe, band,
                                     ask, bound)
            if verdict == HIT:
                if ncand[b] < cand.shape[1]:
                    cand[b, ncand[b]] = q
                    ncand[b] += 1
                continue
            out[b, :n] = q
            out[b, n], out[b, n + 1] = perr, oerr
            status[b] = CLEAR if verdict == CLEAR else ASK
            break
