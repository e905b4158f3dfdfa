"""The screen (private to :mod:`physai.collision`): lower bounds of pair distances from the geoms' poses, so that
MuJoCo is asked only about pairs that may come close (compiled twin: :mod:`physai._numba_collision`)."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from physai.chain import frozen_array
from physai.collision._gjk import gjk_bracket

SEGMENT, BOX, SPHERE_ONLY = 0, 1, 2  # a geom's core shape in the screen: a swept segment, a box, its bounding sphere
_EXACT_TYPES = {int(mujoco.mjtGeom.mjGEOM_SPHERE), int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_BOX)}
_GOLDEN_STEPS = 50  # golden-section steps of the segment-box distance: the bracket shrinks to 0.618^50 = 4e-11
ENGINES = ("compiled", "numpy")  # the screen's two engines: physai._numba_collision, and Screen's NumPy reference
CLEAR, HIT, ASK = 0, 1, 2  # a configuration's verdict against the margin: kept, not kept, MuJoCo decides
GJK_ITERATIONS = 32  # GJK steps per undecided convex pair before MuJoCo decides it
GJK_BAND = 1e-6  # m: a GJK bracket decides a verdict only this far from the margin (MuJoCo's own GJK tolerance)
SAFE = 1e-9  # m: an exact screen distance decides a verdict only this far from the threshold (round-off)


@dataclass(frozen=True)
class Screen:
    """Lower bounds of pair distances from geom poses: MuJoCo is called only for pairs whose bound is below the cap.

    Each geom has a core that contains it: a segment swept by a radius (sphere, capsule, cylinder), a box (box,
    ellipsoid, a mesh's bounding box ``geom_aabb``), else its bounding sphere. A pair's bound is the larger of the
    bounding spheres' gap and the cores' distance: segment-segment in closed form (Ericson, *Real-Time Collision
    Detection*, 2005, section 5.1.9), segment-box by golden-section search (the distance from a point moving along a
    segment to a convex set is convex), box-box by their face normals as separating axes (a gap along any unit axis
    is a lower bound).
    Where both cores are the geoms themselves (sphere, capsule, box) and not box-box, the bound is the distance
    (``exact``), so a verdict needs no MuJoCo call. A pair of convex hulls (box, mesh, or a sphere or capsule as the
    hull of its centre or segment grown by its radius, a cylinder as its axis swept by a disk) that the bound leaves
    undecided is bracketed by GJK (:func:`gjk_bracket`), which decides it unless the bracket holds the margin within
    ``GJK_BAND``; hulls GJK finds overlapping are short of any margin (margins are >= 0), so MuJoCo is not asked
    for their depth."""

    g1: np.ndarray
    g2: np.ndarray
    rbound: np.ndarray  # (ngeom,) each geom's bounding radius
    exact: np.ndarray  # (P,) the cores' distance is the pair's distance
    kind: np.ndarray  # (ngeom,) SEGMENT, BOX or SPHERE_ONLY
    radius: np.ndarray  # (ngeom,) a segment's radius
    half: np.ndarray  # (ngeom, 3) a box's half-sizes; a segment's half-length in [2]
    centre: np.ndarray  # (ngeom, 3) the core's centre in the geom frame (a mesh's bounding box is off-centre)
    hull: np.ndarray  # (V, 3) every geom's hull points in its own frame, geom by geom
    hull_adr: np.ndarray  # (ngeom,) a geom's first row in hull
    hull_num: np.ndarray  # (ngeom,) its number of points (0: no hull; MuJoCo decides its undecided pairs)
    hull_radius: np.ndarray  # (ngeom,) the radius grown around its hull (sphere, capsule)
    hull_disk: np.ndarray  # (ngeom,) the radius of a disk in its xy plane that sweeps its hull (cylinder)

    @classmethod
    def of(cls, m: mujoco.MjModel, pairs: np.ndarray) -> Screen:
        G = m.ngeom
        kind, radius = np.full(G, SPHERE_ONLY), np.zeros(G)
        half, centre = np.zeros((G, 3)), np.zeros((G, 3))
        T = mujoco.mjtGeom
        for g in range(G):
            t, size = int(m.geom_type[g]), m.geom_size[g]
            if t in (int(T.mjGEOM_SPHERE), int(T.mjGEOM_CAPSULE), int(T.mjGEOM_CYLINDER)):
                kind[g], radius[g] = SEGMENT, size[0]
                half[g, 2] = 0.0 if t == int(T.mjGEOM_SPHERE) else size[1]
            elif t in (int(T.mjGEOM_BOX), int(T.mjGEOM_ELLIPSOID)):
                kind[g], half[g] = BOX, size
            elif t == int(T.mjGEOM_MESH):
                kind[g], centre[g], half[g] = BOX, m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
        g1, g2 = pairs[:, 0], pairs[:, 1]
        exact_geom = np.isin(m.geom_type, list(_EXACT_TYPES))
        exact = exact_geom[g1] & exact_geom[g2] & ~((kind[g1] == BOX) & (kind[g2] == BOX))
        hull, hull_adr, hull_num, hull_radius, hull_disk = _hulls(m)
        f8, i8 = np.float64, np.int64
        return cls(frozen_array(g1, i8), frozen_array(g2, i8), frozen_array(m.geom_rbound, f8), frozen_array(exact, bool),
                   frozen_array(kind, i8), frozen_array(radius, f8), frozen_array(half, f8), frozen_array(centre, f8), frozen_array(hull, f8),
                   frozen_array(hull_adr, i8), frozen_array(hull_num, i8), frozen_array(hull_radius, f8), frozen_array(hull_disk, f8))

    def lower(self, xpos: np.ndarray, xmat: np.ndarray, cap: float) -> np.ndarray:
        """``(K, P)`` lower bounds (m) of the pairs' distances from geom poses ``xpos (K, ngeom, 3)``,
        ``xmat (K, ngeom, 3, 3)``. Cheap bounds first: a pair is refined only while its bound stays below ``cap``
        (bounding spheres; then a box to the other's bounding sphere; then the cores)."""
        dc = xpos[:, self.g1] - xpos[:, self.g2]
        bound = np.sqrt(np.einsum("bki,bki->bk", dc, dc)) - self.rbound[self.g1] - self.rbound[self.g2]
        cap = np.broadcast_to(np.asarray(cap, float), self.g1.shape)  # one cap, or each pair's
        k, p = np.nonzero(bound < cap)
        a, b, cap = self.g1[p], self.g2[p], cap[p]
        refined = bound[k, p]
        for box, other in ((a, b), (b, a)):
            on = self.kind[box] == BOX
            refined[on] = np.maximum(refined[on], self._point_box(k[on], box[on], xpos[k[on], other[on]], xpos, xmat)
                                     - self.rbound[other[on]])
        low = refined < cap
        refined[low] = np.maximum(refined[low], self._cores(k[low], a[low], b[low], xpos, xmat))
        bound[k, p] = refined
        return bound

    def verdicts(self, xpos: np.ndarray, xmat: np.ndarray, margins: np.ndarray, unbounded: np.ndarray):
        """``(verdict (K,), ask (K, P), bound (K, P))`` from geom poses ``xpos (K, ngeom, 3)``, ``xmat (K, ngeom, 3,
        3)``: each configuration :data:`CLEAR` (every pair keeps its margin, ``margins (P,)`` m), :data:`HIT` (a pair
        does not) or :data:`ASK` (MuJoCo decides the pairs ``ask`` marks; none on a hit), and the pairs' lower bounds
        (m)."""
        bound = self.lower(xpos, xmat, margins + SAFE)
        clear = (bound >= margins + SAFE) & ~unbounded
        hit = self.exact & (bound < margins - SAFE) & ~unbounded
        convex = (self.hull_num[self.g1] > 0) & (self.hull_num[self.g2] > 0) & ~self.exact & ~unbounded
        for k, i in zip(*np.nonzero(~clear & ~hit & convex)):
            (A, ra, disk_a), (B, rb, disk_b) = (self._hull(xpos[k], xmat[k], g) for g in (self.g1[i], self.g2[i]))
            lo, hi = gjk_bracket(A, ra, B, rb, margins[i], GJK_BAND, GJK_ITERATIONS, disk_a, disk_b)
            # hulls found overlapping (hi = -ra - rb): the distance lies below every margin, which is >= 0
            clear[k, i], hit[k, i] = lo >= margins[i] + GJK_BAND, hi < margins[i] - GJK_BAND or hi <= -(ra + rb)
            bound[k, i] = max(bound[k, i], lo)
        ask = ~clear & ~hit & ~hit.any(axis=1, keepdims=True)
        verdict = np.where(hit.any(axis=1), HIT, np.where(ask.any(axis=1), ASK, CLEAR))
        return verdict, ask, np.where(unbounded, -np.inf, bound)

    def _hull(self, xpos, xmat, g):
        """Geom ``g``'s hull points in the world ``(k, 3)``, its radius, and its disk ``(normal, radius)`` or None."""
        local = self.hull[self.hull_adr[g]:self.hull_adr[g] + self.hull_num[g]]
        disk = (xmat[g][:, 2], self.hull_disk[g]) if self.hull_disk[g] > 0 else None
        return xpos[g] + local @ xmat[g].T, self.hull_radius[g], disk

    def _cores(self, k, a, b, xpos, xmat) -> np.ndarray:
        ka, kb = self.kind[a], self.kind[b]
        core = np.full(len(k), -np.inf)
        for sel, x, y, fn in (((ka == SEGMENT) & (kb == SEGMENT), a, b, self._segment_segment),
                              ((ka == SEGMENT) & (kb == BOX), a, b, self._segment_box),
                              ((ka == BOX) & (kb == SEGMENT), b, a, self._segment_box),
                              ((ka == BOX) & (kb == BOX), a, b, self._box_box)):
            if sel.any():
                core[sel] = fn(k[sel], x[sel], y[sel], xpos, xmat)
        return core

    def _point_box(self, k, g, point, xpos, xmat) -> np.ndarray:
        """Distance (m) from ``point (k, 3)`` to the box core of geom ``g``."""
        c, R = self._box(k, g, xpos, xmat)
        out = np.maximum(np.abs(np.einsum("kji,kj->ki", R, point - c)) - self.half[g], 0.0)
        return np.sqrt(np.einsum("ki,ki->k", out, out))

    def _segment(self, k, g, xpos, xmat):
        axis = xmat[k, g, :, 2] * self.half[g, 2:3]
        return xpos[k, g] - axis, xpos[k, g] + axis

    def _box(self, k, g, xpos, xmat):
        R = xmat[k, g]
        return xpos[k, g] + np.einsum("kij,kj->ki", R, self.centre[g]), R

    def _segment_segment(self, k, a, b, xpos, xmat):
        return segment_distance(*self._segment(k, a, xpos, xmat), *self._segment(k, b, xpos, xmat)) \
            - self.radius[a] - self.radius[b]

    def _segment_box(self, k, a, b, xpos, xmat):
        """Segment of geom ``a`` to box of geom ``b``: the golden-section minimum less its bracket's slack."""
        p0, p1 = self._segment(k, a, xpos, xmat)
        c, R = self._box(k, b, xpos, xmat)
        u, v = np.einsum("kji,kj->ki", R, p0 - c), np.einsum("kji,kj->ki", R, p1 - c)  # in the box frame
        h = self.half[b]

        def dist(t):
            out = np.maximum(np.abs(u + t[:, None] * (v - u)) - h, 0.0)
            return np.sqrt(np.einsum("ki,ki->k", out, out))

        lo, hi, w = np.zeros(len(k)), np.ones(len(k)), 0.5 * (np.sqrt(5.0) - 1.0)
        m1, m2 = hi - w * (hi - lo), lo + w * (hi - lo)
        f1, f2 = dist(m1), dist(m2)
        for _ in range(_GOLDEN_STEPS):  # keep the bracket holding the smaller value; one new evaluation a step
            left = f1 <= f2
            lo, hi = np.where(left, lo, m1), np.where(left, m2, hi)
            new = np.where(left, hi - w * (hi - lo), lo + w * (hi - lo))
            f_new = dist(new)
            m1, m2, f1, f2 = (np.where(left, new, m2), np.where(left, m1, new), np.where(left, f_new, f2),
                              np.where(left, f1, f_new))
        # the function is Lipschitz with constant |v - u|: the true minimum lies within that times the bracket
        return dist(0.5 * (lo + hi)) - np.linalg.norm(v - u, axis=1) * (hi - lo) - self.radius[a]

    def _box_box(self, k, a, b, xpos, xmat):
        """The largest gap between the boxes' projections on their 6 face normals (a lower bound; the 9 edge-edge
        axes would tighten it rarely and cost more than MuJoCo's call for the few pairs they would decide)."""
        ca, Ra = self._box(k, a, xpos, xmat)
        cb, Rb = self._box(k, b, xpos, xmat)
        C = np.abs(np.einsum("kia,kib->kab", Ra, Rb))  # |cosines| between A's axes (rows) and B's (columns)
        t = cb - ca
        gap_a = np.abs(np.einsum("kia,ki->ka", Ra, t)) - self.half[a] - np.einsum("kab,kb->ka", C, self.half[b])
        gap_b = np.abs(np.einsum("kib,ki->kb", Rb, t)) - self.half[b] - np.einsum("kab,ka->kb", C, self.half[a])
        return np.maximum(gap_a.max(axis=1), gap_b.max(axis=1))


def _hulls(m: mujoco.MjModel):
    """Every geom's hull points in its own frame, as MuJoCo collides it: a sphere's centre and a capsule's segment
    ends (grown by their radius), a cylinder's axis ends (swept by a disk of its radius), a box's corners, a mesh's
    vertices (whose convex hull MuJoCo uses). -> ``(hull (V, 3), hull_adr (ngeom,), hull_num (ngeom,),
    hull_radius (ngeom,), hull_disk (ngeom,))``."""
    T, points, radius, disk = mujoco.mjtGeom, [], np.zeros(m.ngeom), np.zeros(m.ngeom)
    for g in range(m.ngeom):
        t, size = int(m.geom_type[g]), m.geom_size[g]
        if t == int(T.mjGEOM_SPHERE):
            points.append(np.zeros((1, 3)))
            radius[g] = size[0]
        elif t in (int(T.mjGEOM_CAPSULE), int(T.mjGEOM_CYLINDER)):
            points.append(np.array([[0.0, 0.0, -size[1]], [0.0, 0.0, size[1]]]))
            (radius if t == int(T.mjGEOM_CAPSULE) else disk)[g] = size[0]
        elif t == int(T.mjGEOM_BOX):
            points.append(size * np.array(np.meshgrid(*[[-1.0, 1.0]] * 3, indexing="ij")).reshape(3, -1).T)
        elif t == int(T.mjGEOM_MESH):
            points.append(_mesh_hull(m, int(m.geom_dataid[g])))
        else:
            points.append(np.zeros((0, 3)))
    num = np.array([len(p) for p in points], dtype=np.int64)
    adr = np.concatenate([[0], np.cumsum(num)[:-1]]).astype(np.int64)
    return np.ascontiguousarray(np.concatenate(points)), adr, num, radius, disk


def _mesh_hull(m: mujoco.MjModel, mesh: int) -> np.ndarray:
    """The vertices ``(k, 3)`` of the convex hull MuJoCo collides for ``mesh``: its hull graph's vertices
    (``mesh_graph``: ``numvert, numface``, then ``vert_edgeadr (numvert,)``, then ``vert_globalid (numvert,)``), fewer
    than the mesh's own where ``maxhullvert`` reduced the hull; every vertex where MuJoCo keeps no graph."""
    adr, num = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
    vert = m.mesh_vert[adr:adr + num].astype(float)
    graph = int(m.mesh_graphadr[mesh])
    if graph < 0:
        return vert
    numvert = int(m.mesh_graph[graph])
    return vert[m.mesh_graph[graph + 2 + numvert:graph + 2 + 2 * numvert]]


def segment_distance(p1, q1, p2, q2) -> np.ndarray:
    """Distance between segments ``p1 q1`` and ``p2 q2`` (points ``(k, 3)``, m) -> ``(k,)`` (Ericson 2005, 5.1.9);
    a segment may be a point."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = np.einsum("ki,ki->k", d1, d1), np.einsum("ki,ki->k", d2, d2)
    b, c, f = np.einsum("ki,ki->k", d1, d2), np.einsum("ki,ki->k", d1, r), np.einsum("ki,ki->k", d2, r)
    tiny = 1e-18
    denom = a * e - b * b
    s = np.where(denom > tiny, np.clip((b * f - c * e) / np.where(denom > tiny, denom, 1.0), 0.0, 1.0), 0.0)
    t = np.where(e > tiny, (b * s + f) / np.where(e > tiny, e, 1.0), 0.0)
    safe_a = np.where(a > tiny, a, 1.0)
    s = np.where(t < 0, np.where(a > tiny, np.clip(-c / safe_a, 0.0, 1.0), 0.0), s)
    s = np.where(t > 1, np.where(a > tiny, np.clip((b - c) / safe_a, 0.0, 1.0), 0.0), s)
    # a point as the second segment: its only point, and the first segment's point closest to it
    s = np.where(e > tiny, s, np.where(a > tiny, np.clip(-c / safe_a, 0.0, 1.0), 0.0))
    t = np.clip(t, 0.0, 1.0)
    gap = p1 + s[:, None] * d1 - p2 - t[:, None] * d2
    return np.sqrt(np.einsum("ki,ki->k", gap, gap))

