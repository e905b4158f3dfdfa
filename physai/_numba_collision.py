"""Compiled engine of the collision screen (private): :meth:`physai.collision._screen.Screen.lower` and
:meth:`physai.collision.CollisionWorld.geom_poses`, one compiled loop over the configurations.

The NumPy reference vectorises over configurations and pairs, which costs array traffic per stage; here each pair
is screened on scalars and stops at the first stage that clears it. Tested equal to the reference
(tests/test_collision.py). Layouts: ``T_local (ngeom, 12)`` a geom's pose in the frame of the last chain joint that
moves it (``last``; a fixed geom's in the world, ``last = -1``), rotation row-major in 0-8, translation in 9-11.
"""

from __future__ import annotations

import numba
import numpy as np

from physai._jit import njit
from physai._numba_gjk import gjk_bracket
from physai._numba_kin import apply, dot, mul, norm, place, sub, transpose_apply, rodrigues

SEGMENT, BOX = 0, 1  # a geom's core (physai.collision._screen.Screen); anything else is screened by its bounding sphere
GOLDEN_STEPS = 50  # as physai.collision._screen._GOLDEN_STEPS
CLEAR, HIT, ASK = 0, 1, 2  # a verdict against the margin: kept, not kept, MuJoCo decides (physai.collision)
GJK_ITERATIONS = 32  # as physai.collision._screen.GJK_ITERATIONS

_RO = {"readonly": True}
F1, F2 = (numba.types.Array(numba.float64, d, "A", **_RO) for d in (1, 2))
I1, I2 = (numba.types.Array(numba.int64, d, "A", **_RO) for d in (1, 2))
PACKED = numba.types.Array(numba.float64, 2, "C", readonly=True)
B1, B2 = numba.types.Array(numba.boolean, 1, "A", **_RO), numba.boolean[:, ::1]


@njit(cache=True, inline="always")
def _outside(local, h):
    """Distance from a point in a box's frame to the box of half-sizes ``h``."""
    x = max(abs(local[0]) - h[0], 0.0)
    y = max(abs(local[1]) - h[1], 0.0)
    z = max(abs(local[2]) - h[2], 0.0)
    return np.sqrt(x * x + y * y + z * z)


@njit(cache=True)
def _segment_distance(p1, q1, p2, q2):
    """Twin of :func:`physai.collision.segment_distance` for one pair of segments."""
    d1, d2, r = sub(q1, p1), sub(q2, p2), sub(p1, p2)
    a, e, b, c, f = dot(d1, d1), dot(d2, d2), dot(d1, d2), dot(d1, r), dot(d2, r)
    tiny = 1e-18
    denom = a * e - b * b
    s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > tiny else 0.0
    t = (b * s + f) / e if e > tiny else 0.0
    if t < 0.0 or e <= tiny:
        s = min(max(-c / a, 0.0), 1.0) if a > tiny else 0.0
    elif t > 1.0:
        s = min(max((b - c) / a, 0.0), 1.0) if a > tiny else 0.0
    t = min(max(t, 0.0), 1.0)
    g = (p1[0] + s * d1[0] - p2[0] - t * d2[0], p1[1] + s * d1[1] - p2[1] - t * d2[1],
         p1[2] + s * d1[2] - p2[2] - t * d2[2])
    return norm(g)


@njit(cache=True)
def _segment_box(u, v, h):
    """Lower bound of the distance from segment ``u v`` (box frame) to the box ``h``: the golden-section search of
    :meth:`physai.collision._screen.Screen._segment_box`, less its bracket's slack."""
    w = 0.5 * (np.sqrt(5.0) - 1.0)
    d = sub(v, u)
    lo, hi = 0.0, 1.0
    m1, m2 = hi - w * (hi - lo), lo + w * (hi - lo)
    f1 = _outside((u[0] + m1 * d[0], u[1] + m1 * d[1], u[2] + m1 * d[2]), h)
    f2 = _outside((u[0] + m2 * d[0], u[1] + m2 * d[1], u[2] + m2 * d[2]), h)
    for _ in range(GOLDEN_STEPS):
        if f1 <= f2:
            hi = m2
            new = hi - w * (hi - lo)
            m1, m2, f2 = new, m1, f1
            f1 = _outside((u[0] + new * d[0], u[1] + new * d[1], u[2] + new * d[2]), h)
        else:
            lo = m1
            new = lo + w * (hi - lo)
            m1, m2, f1 = m2, new, f2
            f2 = _outside((u[0] + new * d[0], u[1] + new * d[1], u[2] + new * d[2]), h)
    mid = 0.5 * (lo + hi)
    return _outside((u[0] + mid * d[0], u[1] + mid * d[1], u[2] + mid * d[2]), h) - norm(d) * (hi - lo)


@njit(cache=True)
def _box_box(ca, Ra, ha, cb, Rb, hb):
    """The largest gap over both boxes' face normals (:meth:`physai.collision._screen.Screen._box_box`)."""
    t = sub(cb, ca)
    best = -np.inf
    for i in range(3):
        # A's axis i is column i of Ra; B's axis j is column j of Rb
        gap = abs(Ra[i] * t[0] + Ra[3 + i] * t[1] + Ra[6 + i] * t[2]) - ha[i]
        gap_b = abs(Rb[i] * t[0] + Rb[3 + i] * t[1] + Rb[6 + i] * t[2]) - hb[i]
        for j in range(3):
            gap -= hb[j] * abs(Ra[i] * Rb[j] + Ra[3 + i] * Rb[3 + j] + Ra[6 + i] * Rb[6 + j])
            gap_b -= ha[j] * abs(Ra[j] * Rb[i] + Ra[3 + j] * Rb[3 + i] + Ra[6 + j] * Rb[6 + i])
        best = max(best, gap, gap_b)
    return best


@njit(cache=True, inline="always")
def _ends(x, R, half):
    """A segment core's end points: its centre -+ half its length along its z axis."""
    a = (R[2] * half, R[5] * half, R[8] * half)
    return (x[0] - a[0], x[1] - a[1], x[2] - a[2]), (x[0] + a[0], x[1] + a[1], x[2] + a[2])


@njit(cache=True)
def _core(ka, xa, Ra, ga, kb, xb, Rb, gb, radius, half, centre):
    """The cores' distance (a lower bound) of geoms ``ga`` (kind ``ka``) and ``gb``; -inf if either has none."""
    if kb == SEGMENT and ka == BOX:
        ka, xa, Ra, ga, kb, xb, Rb, gb = kb, xb, Rb, gb, ka, xa, Ra, ga
    if ka == SEGMENT and kb == SEGMENT:
        p1, q1 = _ends(xa, Ra, half[ga, 2])
        p2, q2 = _ends(xb, Rb, half[gb, 2])
        return _segment_distance(p1, q1, p2, q2) - radius[ga] - radius[gb]
    if ka == BOX and kb == BOX:
        ca = _box_centre(xa, Ra, centre[ga])
        cb = _box_centre(xb, Rb, centre[gb])
        return _box_box(ca, Ra, (half[ga, 0], half[ga, 1], half[ga, 2]), cb, Rb,
                        (half[gb, 0], half[gb, 1], half[gb, 2]))
    if ka == SEGMENT and kb == BOX:
        p0, p1 = _ends(xa, Ra, half[ga, 2])
        cb = _box_centre(xb, Rb, centre[gb])
        u, v = transpose_apply(Rb, sub(p0, cb)), transpose_apply(Rb, sub(p1, cb))
        return _segment_box(u, v, (half[gb, 0], half[gb, 1], half[gb, 2])) - radius[ga]
    return -np.inf


@njit(cache=True, inline="always")
def _box_centre(x, R, c):
    o = apply(R, (c[0], c[1], c[2]))
    return (x[0] + o[0], x[1] + o[1], x[2] + o[2])


@njit(cache=True)
def _point_box(x, R, g, point, half, centre):
    """Distance from ``point`` to geom ``g``'s box core at pose ``(x, R)``."""
    c = _box_centre(x, R, centre[g])
    return _outside(transpose_apply(R, sub(point, c)), (half[g, 0], half[g, 1], half[g, 2]))


@njit(cache=True)
def poses(q, P, last, T_local, R_geom, x_geom):
    """Every geom's world pose at ``q``: the chain's joint frames (the walk of :func:`physai._numba_kin.walk`)
    composed with each geom's ``T_local``."""
    n, G = q.shape[0], last.shape[0]
    frames = np.empty((n, 12))
    R, p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    for i in range(n):
        m = P[i]
        R, p = place(R, p, m)
        u, d = (m[12], m[13], m[14]), q[i] - m[15]
        if m[16] != 0.0:
            R = mul(R, rodrigues(u, d))
        else:
            a = apply(R, u)
            p = (p[0] + d * a[0], p[1] + d * a[1], p[2] + d * a[2])
        for k in range(9):
            frames[i, k] = R[k]
        frames[i, 9], frames[i, 10], frames[i, 11] = p[0], p[1], p[2]
    for g in range(G):
        j = last[g]
        if j < 0:
            R_geom[g, :] = T_local[g, :9]
            x_geom[g, :] = T_local[g, 9:]
            continue
        f = frames[j]
        Rg, xg = place((f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]), (f[9], f[10], f[11]), T_local[g])
        for k in range(9):
            R_geom[g, k] = Rg[k]
        x_geom[g, 0], x_geom[g, 1], x_geom[g, 2] = xg[0], xg[1], xg[2]


@njit(cache=True, inline="always")
def _sphere_gap(a, b, x_geom, rbound):
    """The bounding spheres' gap of geoms ``a`` and ``b``: the first, cheapest bound."""
    d0, d1, d2 = x_geom[a, 0] - x_geom[b, 0], x_geom[a, 1] - x_geom[b, 1], x_geom[a, 2] - x_geom[b, 2]
    return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - rbound[a] - rbound[b]


@njit(cache=True, inline="always")
def _pose(g, x_geom, R_geom):
    return ((x_geom[g, 0], x_geom[g, 1], x_geom[g, 2]),
            (R_geom[g, 0], R_geom[g, 1], R_geom[g, 2], R_geom[g, 3], R_geom[g, 4], R_geom[g, 5], R_geom[g, 6],
             R_geom[g, 7], R_geom[g, 8]))


@njit(cache=True, inline="always")
def _refined(a, b, bound, x_geom, R_geom, kind, radius, half, centre, rbound, cap):
    """The bound of pair ``(a, b)`` past the spheres' gap ``bound``: a box to the other's bounding sphere, then the
    cores, while below ``cap``."""
    xa, Ra = _pose(a, x_geom, R_geom)
    xb, Rb = _pose(b, x_geom, R_geom)
    if kind[a] == BOX:
        bound = max(bound, _point_box(xa, Ra, a, xb, half, centre) - rbound[b])
    if kind[b] == BOX:
        bound = max(bound, _point_box(xb, Rb, b, xa, half, centre) - rbound[a])
    if bound < cap:
        bound = max(bound, _core(kind[a], xa, Ra, a, kind[b], xb, Rb, b, radius, half, centre))
    return bound


@njit(numba.void(F2, PACKED, I1, F2, I2, I1, F1, F2, F2, F1, numba.float64, numba.float64[:, ::1]),
      cache=True, nogil=True)
def screen(Q, P, last, T_local, pairs, kind, radius, half, centre, rbound, cap, out):
    """Lower bounds ``out (K, npairs)`` (m) of the pairs' distances at each configuration ``Q[k] (n,)``, refined
    stage by stage (bounding spheres, a box to the other's bounding sphere, the cores) while below ``cap``."""
    G = last.shape[0]
    R_geom, x_geom = np.empty((G, 9)), np.empty((G, 3))
    for k in range(Q.shape[0]):
        poses(Q[k], P, last, T_local, R_geom, x_geom)
        for i in range(pairs.shape[0]):
            a, b = pairs[i, 0], pairs[i, 1]
            bound = _sphere_gap(a, b, x_geom, rbound)
            if bound < cap:
                bound = _refined(a, b, bound, x_geom, R_geom, kind, radius, half, centre, rbound, cap)
            out[k, i] = bound


@njit(cache=True, inline="always")
def _near_verdict(i, a, b, bound, x_geom, R_geom, screen_arrays, hulls, margin, safe, band):
    """``(verdict, bound)`` of pair ``i`` = ``(a, b)`` whose spheres' gap ``bound`` falls short of the margin:
    :data:`CLEAR`, :data:`HIT` or :data:`ASK` (MuJoCo decides) (:meth:`physai.collision._screen.Screen.verdicts`)."""
    kind, radius, half, centre, rbound, exact = screen_arrays
    hull, hull_adr, hull_num, hull_radius, hull_disk = hulls
    bound = _refined(a, b, bound, x_geom, R_geom, kind, radius, half, centre, rbound, margin + safe)
    if bound >= margin + safe:
        return CLEAR, bound
    if exact[i]:
        return (HIT if bound < margin - safe else ASK), bound
    if hull_num[a] > 0 and hull_num[b] > 0:
        xa, Ra = _pose(a, x_geom, R_geom)
        xb, Rb = _pose(b, x_geom, R_geom)
        lo, hi = gjk_bracket(hull[hull_adr[a]:hull_adr[a] + hull_num[a]], Ra, xa, hull_radius[a],
                             hull[hull_adr[b]:hull_adr[b] + hull_num[b]], Rb, xb, hull_radius[b], margin, band,
                             GJK_ITERATIONS, hull_disk[a], hull_disk[b])
        if lo >= margin + band:
            return CLEAR, lo
        if hi < margin - band or hi <= -(hull_radius[a] + hull_radius[b]):  # overlapping cores: below any margin
            return HIT, bound
        bound = max(bound, lo)
    return ASK, bound


@njit(cache=True)
def config_verdict(k, pairs, x_geom, R_geom, unbounded, screen_arrays, hulls, margins, safe, band, ask, bound):
    """One configuration's verdict from its geom poses: :data:`HIT` at the first pair decided short of its margin
    (``margins (npairs,)``, m), else :data:`ASK` if any pair needs MuJoCo (``ask[k]`` marks them, ``bound[k]`` their
    lower bounds), else :data:`CLEAR`."""
    verdict, rbound = CLEAR, screen_arrays[4]
    for i in range(pairs.shape[0]):
        a, b = pairs[i, 0], pairs[i, 1]
        if unbounded[i]:
            v, bound[k, i] = ASK, -np.inf
        else:
            gap = _sphere_gap(a, b, x_geom, rbound)
            v, bound[k, i] = CLEAR, gap
            if gap < margins[i] + safe:
                v, bound[k, i] = _near_verdict(i, a, b, gap, x_geom, R_geom, screen_arrays, hulls, margins[i], safe,
                                               band)
        if v == HIT:
            ask[k, :] = False
            return HIT
        ask[k, i] = v == ASK
        if v == ASK:
            verdict = ASK
    return verdict


@njit(numba.void(F2, PACKED, I1, F2, I2, I1, F1, F2, F2, F1, B1, B1, F2, I1, I1, F1, F1, F1,
                 numba.float64, numba.float64, numba.int64[::1], B2, numba.float64[:, ::1]), cache=True, nogil=True)
def verdicts(Q, P, last, T_local, pairs, kind, radius, half, centre, rbound, exact, unbounded, hull, hull_adr,
             hull_num, hull_radius, hull_disk, margins, safe, band, out, ask, bound):
    """Each configuration's verdict ``out (K,)`` against each pair's margin ``margins (npairs,)``
    (:func:`config_verdict`), with the pairs left to
    MuJoCo ``ask (K, npairs)`` and their lower bounds ``bound (K, npairs)`` (m). ``hull (V, 3)`` every geom's points
    in its own frame (``hull_adr``, ``hull_num`` per geom; 0 points: no hull), swept by a disk of radius
    ``hull_disk`` in the geom's xy plane and grown by ``hull_radius``."""
    G = last.shape[0]
    R_geom, x_geom = np.empty((G, 9)), np.empty((G, 3))
    screen_arrays = (kind, radius, half, centre, rbound, exact)
    hulls = (hull, hull_adr, hull_num, hull_radius, hull_disk)
    for k in range(Q.shape[0]):
        poses(Q[k], P, last, T_local, R_geom, x_geom)
        out[k] = config_verdict(k, pairs, x_geom, R_geom, unbounded, screen_arrays, hulls, margins, safe, band, ask,
                                bound)
