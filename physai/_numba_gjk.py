"""Compiled twin (private) of :func:`physai.collision.gjk_bracket`: bounds of the signed distance between two
convex hulls of points, each inflated by a radius, for the collision screen's compiled kernel.

Each hull is given in its geom's frame, ``V (n, 3)`` C-contiguous, with the geom's world pose ``(R, x)`` (``R`` a
row-major 9-tuple, world point ``R @ v + x``), so a support point costs one rotated direction and one pass over
the points. The simplex is a ``(4, 3)`` array of Minkowski points; the nearest-point steps follow the reference
line by line (tested equal to it, tests/test_gjk.py).
"""

from __future__ import annotations

import numpy as np

from physai._jit import njit
from physai._numba_kin import apply, dot, norm, sub, transpose_apply

CONVERGED = 1e-9  # as physai.collision.GJK_CONVERGED
TOUCH = 1e-12  # as physai.collision.GJK_TOUCH
FLAT = 1e-10  # as physai.collision.GJK_FLAT
FACES = ((0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 3, 2, 0))  # as physai.collision._gjk._TETRA_FACES


@njit(cache=True, inline="always")
def _row(W, i):
    return (W[i, 0], W[i, 1], W[i, 2])


@njit(cache=True, inline="always")
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, inline="always")
def _combine(wa, a, wb, b, wc, c):
    """``wa a + wb b + wc c`` in the reference's order of operations."""
    return (wa * a[0] + wb * b[0] + wc * c[0], wa * a[1] + wb * b[1] + wc * c[1], wa * a[2] + wb * b[2] + wc * c[2])


@njit(cache=True)
def _support(V, R, x, d, disk):
    """The world point of the hull ``V`` at pose ``(R, x)``, swept by a disk of radius ``disk`` in its local xy
    plane, farthest along the world direction ``d``."""
    dl = transpose_apply(R, d)
    best, k = -np.inf, 0
    for i in range(V.shape[0]):
        s = V[i, 0] * dl[0] + V[i, 1] * dl[1] + V[i, 2] * dl[2]
        if s > best:
            best, k = s, i
    px, py = V[k, 0], V[k, 1]
    across = np.sqrt(dl[0] * dl[0] + dl[1] * dl[1])
    if disk > 0.0 and across > 0.0:
        px, py = px + disk * dl[0] / across, py + disk * dl[1] / across
    p = apply(R, (px, py, V[k, 2]))
    return (p[0] + x[0], p[1] + x[1], p[2] + x[2])


@njit(cache=True, inline="always")
def _decided(lo, hi, threshold, band):
    return lo >= threshold + band or hi < threshold - band or hi - lo <= CONVERGED


@njit(cache=True)
def _segment_weights(a, b):
    ab = sub(b, a)
    den = dot(ab, ab)
    t = min(max(-dot(a, ab) / den, 0.0), 1.0) if den > 0.0 else 1.0
    return 1.0 - t, t


@njit(cache=True, inline="always")
def _ratio(num, den):
    return num / den if den > 0.0 else 0.0


@njit(cache=True)
def _nearest_edge(a, b, c):
    s1, t1 = _segment_weights(a, b)
    s2, t2 = _segment_weights(a, c)
    s3, t3 = _segment_weights(b, c)
    best, out = np.inf, (0.0, 0.0, 0.0)
    for w in ((s1, t1, 0.0), (s2, 0.0, t2), (0.0, s3, t3)):
        n = norm(_combine(w[0], a, w[1], b, w[2], c))
        if n < best:
            best, out = n, w
    return out


@njit(cache=True)
def _triangle_weights(a, b, c):
    """Twin of :func:`physai.collision._gjk._gjk_triangle_weights` (Ericson 2005, 5.1.5)."""
    ab, ac = sub(b, a), sub(c, a)
    d1, d2 = -dot(ab, a), -dot(ac, a)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    d3, d4 = -dot(ab, b), -dot(ac, b)
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = _ratio(d1, d1 - d3)
        return 1.0 - t, t, 0.0
    d5, d6 = -dot(ab, c), -dot(ac, c)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = _ratio(d2, d2 - d6)
        return 1.0 - t, 0.0, t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = _ratio(d4 - d3, (d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - t, t
    den = va + vb + vc
    if den > 0.0:
        return va / den, vb / den, vc / den
    return _nearest_edge(a, b, c)


@njit(cache=True)
def _tetrahedron_weights(W):
    """Twin of :func:`physai.collision._gjk._gjk_tetrahedron_weights` (Ericson 2005, 5.1.6): the four weights, and
    whether a face held the nearest point (False: the origin is inside)."""
    a, b, c, d = _row(W, 0), _row(W, 1), _row(W, 2), _row(W, 3)
    volume = dot(_cross(sub(b, a), sub(c, a)), sub(d, a))
    flat = abs(volume) <= FLAT * norm(sub(b, a)) * norm(sub(c, a)) * norm(sub(d, a))
    best, found = np.inf, False
    weights = np.zeros(4)
    for i, j, k, o in FACES:
        p, q, s = _row(W, i), _row(W, j), _row(W, k)
        n = _cross(sub(q, p), sub(s, p))
        if flat or -dot(n, p) * dot(n, sub(_row(W, o), p)) < 0.0:
            w = _triangle_weights(p, q, s)
            x = _combine(w[0], p, w[1], q, w[2], s)
            if dot(x, x) < best:
                best, found = dot(x, x), True
                weights[:] = 0.0
                weights[i], weights[j], weights[k] = w[0], w[1], w[2]
    return weights, found


@njit(cache=True)
def _nearest(W, n):
    """Twin of :func:`physai.collision._gjk._gjk_nearest` on the first ``n`` rows of ``W``, compacted in place to the
    corners kept: ``(kept, v)``; ``kept = -1`` for a tetrahedron holding the origin."""
    weights = np.zeros(4)
    if n == 2:
        weights[0], weights[1] = _segment_weights(_row(W, 0), _row(W, 1))
    elif n == 3:
        weights[0], weights[1], weights[2] = _triangle_weights(_row(W, 0), _row(W, 1), _row(W, 2))
    else:
        weights, found = _tetrahedron_weights(W)
        if not found:
            return -1, (0.0, 0.0, 0.0)
    kept, v = 0, (0.0, 0.0, 0.0)
    for i in range(n):
        lam = weights[i]
        if lam > 0.0:
            v = (v[0] + lam * W[i, 0], v[1] + lam * W[i, 1], v[2] + lam * W[i, 2])
            W[kept, 0], W[kept, 1], W[kept, 2] = W[i, 0], W[i, 1], W[i, 2]
            kept += 1
    return kept, v


@njit(cache=True)
def _known(W, n, w):
    for i in range(n):
        if W[i, 0] == w[0] and W[i, 1] == w[1] and W[i, 2] == w[2]:
            return True
    return False


@njit(cache=True)
def gjk_bracket(Va, Ra, xa, ra, Vb, Rb, xb, rb, threshold, band, max_iter, da=0.0, db=0.0):
    """Twin of :func:`physai.collision.gjk_bracket`: ``(lo, hi)`` (m) for the hulls ``Va (na, 3)``, ``Vb (nb, 3)``
    (each in its geom's frame, m) at world poses ``(Ra, xa)``, ``(Rb, xb)``, swept by disks of radii ``da``, ``db``
    in their frames' xy planes (a cylinder: its axis's ends and its radius) and inflated by ``ra``, ``rb``."""
    r = ra + rb
    W = np.empty((4, 3))
    pa, pb = apply(Ra, (Va[0, 0], Va[0, 1], Va[0, 2])), apply(Rb, (Vb[0, 0], Vb[0, 1], Vb[0, 2]))
    v = sub((pa[0] + xa[0], pa[1] + xa[1], pa[2] + xa[2]), (pb[0] + xb[0], pb[1] + xb[1], pb[2] + xb[2]))
    W[0, 0], W[0, 1], W[0, 2] = v[0], v[1], v[2]
    n, lo = 1, -np.inf
    hi = norm(v) - r
    for _ in range(max_iter):
        nv = norm(v)
        if nv < TOUCH:
            break
        w = sub(_support(Va, Ra, xa, (-v[0], -v[1], -v[2]), da), _support(Vb, Rb, xb, v, db))
        gap = dot(v, w) / nv
        if gap > 0.0:
            lo = max(lo, gap - r)
        if _decided(lo, hi, threshold, band) or _known(W, n, w):
            break
        W[n, 0], W[n, 1], W[n, 2] = w[0], w[1], w[2]
        n, v = _nearest(W, n + 1)
        if n < 0:
            return -np.inf, -r
        hi = min(hi, norm(v) - r)
        if norm(v) >= nv or _decided(lo, hi, threshold, band):
            break
    return lo, hi
