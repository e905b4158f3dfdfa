"""The GJK distance bracket of two convex hulls (private to :mod:`physai.collision`; Gilbert, Johnson and Keerthi
1988; Ericson 2005, ch. 9), the NumPy reference of :mod:`physai._numba_gjk`."""

from __future__ import annotations

import numpy as np


GJK_CONVERGED = 1e-9  # m: a bracket this narrow stops the iteration
GJK_TOUCH = 1e-12  # m: a Minkowski point this close to the origin: the hulls touch
GJK_FLAT = 1e-10  # a tetrahedron whose volume over its edges' product is below this is treated as flat
_TETRA_FACES = ((0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 3, 2, 0))  # a face's three corners, then the fourth


def gjk_bracket(A_world, ra: float, B_world, rb: float, threshold: float, band: float, max_iter: int,
                disk_a=None, disk_b=None) -> tuple[float, float]:
    """Bounds ``(lo, hi)`` (m) of the signed distance between the convex hull of ``A_world (na, 3)`` inflated by the
    radius ``ra >= 0`` and the hull of ``B_world (nb, 3)`` inflated by ``rb`` (points in the world frame, m). A hull
    may be swept by a disk, ``disk_a = (normal (3,), radius)`` (a cylinder: its axis's two ends, and its radius).

    GJK on the Minkowski difference ``A - B``: ``hi = |v| - ra - rb`` with ``v`` its simplex's point nearest the
    origin (a convex combination of support points, so a point of the difference: an upper bound); ``lo`` the
    best ``v.w / |v| - ra - rb`` over the iterations, ``w`` the support point along ``-v`` (a plane separating the
    origin from the difference: a lower bound, whatever the simplex did), ``-inf`` until such a plane separates
    them. Hulls found overlapping give ``(-inf, -ra - rb)`` (no penetration depth is computed). Stops once the
    verdict against ``threshold`` is decided (``lo >= threshold + band`` or ``hi < threshold - band``), the
    bracket is narrower than :data:`GJK_CONVERGED`, no progress is made, or after ``max_iter`` iterations.

    Examples
    --------
    A box of half-size 0.1 m (its eight corners) and a ball of radius 0.05 m centred 0.25 m out along its x axis:

    >>> from physai.collision import gjk_bracket
    >>> corners = [[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)]
    >>> lo, hi = gjk_bracket(corners, 0.0, [[0.25, 0.05, 0.0]], 0.05, threshold=0.0, band=1.0, max_iter=50)
    >>> print(f"{lo:.6f} {hi:.6f}")
    0.100000 0.100000

    Against a 10 mm margin it stops as soon as the bracket clears it:

    >>> lo, hi = gjk_bracket(corners, 0.0, [[0.25, 0.05, 0.0]], 0.05, threshold=0.01, band=0.0, max_iter=50)
    >>> bool(lo >= 0.01), bool(hi - lo > 1e-3)
    (True, True)
    """
    A, B = np.asarray(A_world, float), np.asarray(B_world, float)
    r = ra + rb
    simplex = [A[0] - B[0]]
    v, lo = simplex[0], -np.inf
    hi = _gjk_length(v) - r
    for _ in range(max_iter):
        nv = _gjk_length(v)
        if nv < GJK_TOUCH:
            break
        w = _gjk_support(A, -v, disk_a) - _gjk_support(B, v, disk_b)
        gap = _gjk_dot(v, w) / nv
        if gap > 0.0:  # the plane through w normal to v separates the origin from A - B
            lo = max(lo, gap - r)
        if _gjk_decided(lo, hi, threshold, band) or any(np.array_equal(w, s) for s in simplex):
            break
        simplex, v = _gjk_nearest(simplex + [w])
        if v is None:
            return -np.inf, -r
        hi = min(hi, _gjk_length(v) - r)
        if _gjk_length(v) >= nv or _gjk_decided(lo, hi, threshold, band):
            break
    return lo, hi


def _gjk_length(v: np.ndarray) -> float:
    return float(np.sqrt(_gjk_dot(v, v)))


def _gjk_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` of two 3-vectors, summed left to right as the compiled twin sums it. Not ``a @ b``: NumPy hands that
    to its BLAS, whose kernel (picked per CPU: FMA, another order on AVX-512) rounds differently, and GJK's path
    (which support point, which simplex) follows the last bit of these sums."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _gjk_support(P: np.ndarray, d: np.ndarray, disk=None) -> np.ndarray:
    """The point of ``P (n, 3)`` (swept by ``disk = (normal, radius)``, if given) farthest along ``d (3,)`` (the
    first of equals)."""
    # GJK meets ties as a rule (v comes out normal to a hull's edge): summed in the compiled twin's order, the
    # products round alike there, so both pick the same point
    p = P[np.argmax(P[:, 0] * d[0] + P[:, 1] * d[1] + P[:, 2] * d[2])]
    if disk is None:
        return p
    normal, radius = disk
    across = d - _gjk_dot(d, normal) * normal  # d's part in the disk's plane: the rim point it reaches
    length = _gjk_length(across)
    return p + radius * across / length if length > 0.0 else p


def _gjk_decided(lo: float, hi: float, threshold: float, band: float) -> bool:
    return lo >= threshold + band or hi < threshold - band or hi - lo <= GJK_CONVERGED


def _gjk_nearest(simplex: list) -> tuple[list, np.ndarray | None]:
    """The simplex's point nearest the origin ``v (3,)`` and the corners it needs (those of nonzero weight);
    ``v = None`` for a tetrahedron holding the origin."""
    weights = (_gjk_segment_weights(*simplex) if len(simplex) == 2 else _gjk_triangle_weights(*simplex)
               if len(simplex) == 3 else _gjk_tetrahedron_weights(simplex))
    if weights is None:
        return simplex, None
    kept = [(lam, s) for lam, s in zip(weights, simplex) if lam > 0.0]
    return [s for _, s in kept], sum(lam * s for lam, s in kept)


def _gjk_segment_weights(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Weights of ``a, b`` of the point of segment ``a b`` nearest the origin."""
    ab = b - a
    den = _gjk_dot(ab, ab)
    t = min(max(-_gjk_dot(a, ab) / den, 0.0), 1.0) if den > 0.0 else 1.0
    return 1.0 - t, t


def _gjk_ratio(num: float, den: float) -> float:
    """``num / den`` for a parameter in [0, 1]; 0 for a degenerate (zero-length) edge."""
    return num / den if den > 0.0 else 0.0


def _gjk_triangle_weights(a, b, c) -> tuple[float, float, float]:
    """Weights of ``a, b, c`` of the point of triangle ``a b c`` nearest the origin, by its Voronoi regions
    (Ericson 2005, 5.1.5); a degenerate triangle gives its nearest edge."""
    ab, ac = b - a, c - a
    d1, d2 = -_gjk_dot(ab, a), -_gjk_dot(ac, a)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    d3, d4 = -_gjk_dot(ab, b), -_gjk_dot(ac, b)
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = _gjk_ratio(d1, d1 - d3)
        return 1.0 - t, t, 0.0
    d5, d6 = -_gjk_dot(ab, c), -_gjk_dot(ac, c)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = _gjk_ratio(d2, d2 - d6)
        return 1.0 - t, 0.0, t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = _gjk_ratio(d4 - d3, (d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - t, t
    den = va + vb + vc
    if den > 0.0:
        return va / den, vb / den, vc / den
    return _gjk_nearest_edge(a, b, c)


def _gjk_nearest_edge(a, b, c) -> tuple[float, float, float]:
    """Weights of the point nearest the origin on the edges of a flat triangle ``a b c``."""
    s1, t1 = _gjk_segment_weights(a, b)
    s2, t2 = _gjk_segment_weights(a, c)
    s3, t3 = _gjk_segment_weights(b, c)
    best = min(((s1, t1, 0.0), (s2, 0.0, t2), (0.0, s3, t3)),
               key=lambda w: _gjk_length(w[0] * a + w[1] * b + w[2] * c))
    return best


def _gjk_tetrahedron_weights(simplex: list) -> tuple[float, ...] | None:
    """Weights of the four corners of the point of tetrahedron ``simplex`` nearest the origin, from the faces the
    origin lies outside of (Ericson 2005, 5.1.6); ``None`` when it lies inside none (the origin is inside). A flat
    tetrahedron is never said to hold the origin: all its faces are searched."""
    a, b, c, d = simplex
    volume = _gjk_dot(np.cross(b - a, c - a), d - a)
    flat = abs(volume) <= GJK_FLAT * _gjk_length(b - a) * _gjk_length(c - a) * _gjk_length(d - a)
    best, weights = np.inf, None
    for i, j, k, o in _TETRA_FACES:
        p, q, s = simplex[i], simplex[j], simplex[k]
        n = np.cross(q - p, s - p)
        if flat or -_gjk_dot(n, p) * _gjk_dot(n, simplex[o] - p) < 0.0:
            w = _gjk_triangle_weights(p, q, s)
            x = w[0] * p + w[1] * q + w[2] * s
            if _gjk_dot(x, x) < best:
                best, weights = _gjk_dot(x, x), [0.0] * 4
                weights[i], weights[j], weights[k] = w
    return None if weights is None else tuple(weights)
