"""Fit the bundled Panda's collision primitives to Franka's collision meshes (shipped in rtb-data, MIT; the meshes
are franka_ros's, Apache-2.0): one or two capsules per link (two where
they take less than three quarters of one's volume), a box for the hand and each finger; for the wrist (link5 and
link7, :data:`PIECES`), convex pieces of the mesh instead.

The wrist folds link7 and the hand back beside link5 (joint 6 near its lower limit), into a hollow of link5 that a
capsule, or even the mesh's convex hull, fills: with capsules there, most wrist postures read as colliding although
the meshes keep clear. So link5 and link7 are cut into k-means clusters of their vertices (each cluster with every
vertex within 5 mm of it, so a face between clusters lies inside a piece), each piece its convex hull (a MuJoCo mesh
geom). :func:`wrist_sweep` states the fit: the smallest distance from link5 to link7 and the hand over joint 7, at a
few joint-6 angles, for the pieces, the capsules and the meshes' own surfaces (sampled).

Each primitive encloses every vertex of its link's mesh (so a clear verdict on the primitives is clear for the
meshes too); the printed fit states how much bigger it is: its volume over the mesh's convex hull volume, and the
largest distance from the primitive's surface to the hull (sampled). Run: ``uv run --group bench python
benchmarks/fit_panda_collision.py``; it prints the ``<mesh>`` and ``<geom>`` lines of physai/models/panda/panda.xml;
``... fit_panda_collision.py physai/models/panda/panda.xml`` prints the wrist sweep of that model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import rtbdata
import trimesh
from scipy.cluster.vq import kmeans2
from scipy.optimize import minimize
from scipy.spatial import cKDTree

MESHES = Path(rtbdata.__file__).parent / "meshes" / "FRANKA-EMIKA" / "Panda"
LINKS = [f"link{i}" for i in range(8)]
PIECES = {"link5": 6, "link7": 3}  # links fitted with convex pieces, and how many
OVERLAP = 0.005  # m: a piece holds every vertex within this of being nearest its cluster's centre


def _capsule_for_axis(V: np.ndarray, u: np.ndarray):
    """The smallest-radius enclosing capsule whose axis is parallel to ``u``: (a, b, R) end points and radius."""
    e1 = np.cross(u, [1.0, 0, 0] if abs(u[0]) < 0.9 else [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(u, e1)
    P = np.stack([V @ e1, V @ e2], axis=1)
    res = minimize(lambda c: np.max(np.linalg.norm(P - c, axis=1)), P.mean(axis=0), method="Nelder-Mead",
                   options={"xatol": 1e-6, "fatol": 1e-7, "maxiter": 4000})
    c = res.x
    r = np.linalg.norm(P - c, axis=1)
    R = r.max() + 1e-4
    t = V @ u
    half = np.sqrt(np.maximum(R * R - r * r, 0.0))
    t0, t1 = np.max(t - half), np.min(t + half)  # every point lies within R of the segment [t1, t0] along u
    lo, hi = min(t0, t1), max(t0, t1)
    if t0 < t1:  # a sphere would do: the capsule degenerates to a short one
        lo = hi = 0.5 * (t0 + t1)
    base = c[0] * e1 + c[1] * e2
    return base + lo * u, base + hi * u, R


def _capsule_volume(a, b, R):
    return np.pi * R * R * np.linalg.norm(b - a) + 4 / 3 * np.pi * R**3


def fit_capsule(V: np.ndarray):
    """Try the principal axes and the link frame's axes; keep the enclosing capsule of least volume."""
    w, U = np.linalg.eigh(np.cov((V - V.mean(0)).T))
    candidates = [U[:, k] for k in range(3)] + list(np.eye(3))
    fits = [_capsule_for_axis(V, u / np.linalg.norm(u)) for u in candidates]
    return min(fits, key=lambda f: _capsule_volume(*f))


def fit_capsules(V: np.ndarray, gain: float = 0.75):
    """One enclosing capsule, or two (the vertices split across a plane normal to a principal axis) where two take
    less than ``gain`` of one's volume: a link with a housing at each end is two capsules, not one fat one."""
    one = fit_capsule(V)
    best, best_volume = [one], gain * _capsule_volume(*one)
    _, U = np.linalg.eigh(np.cov((V - V.mean(0)).T))
    for u in U.T:
        t = V @ u
        for cut in np.quantile(t, np.linspace(0.25, 0.75, 11)):
            parts = [fit_capsule(V[t <= cut + 0.01]), fit_capsule(V[t >= cut - 0.01])]  # 1 cm overlap
            volume = sum(_capsule_volume(*c) for c in parts)
            if volume < best_volume:
                best, best_volume = parts, volume
    return best


def capsule_gap(mesh: trimesh.Trimesh, capsules, n: int = 4000) -> float:
    """Largest distance (m) from sampled capsule surface points outside the mesh's convex hull to that hull, measured
    to a dense sample of the hull's surface (an upper bound of the true distance, up to the sample's spacing)."""
    rng = np.random.default_rng(0)
    hull = mesh.convex_hull
    surface, _ = trimesh.sample.sample_surface(hull, 50_000, seed=0)
    tree, worst = cKDTree(surface), 0.0
    for a, b, R in capsules:
        s = rng.random(n)
        d = rng.normal(size=(n, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        pts = a + s[:, None] * (b - a) + R * d  # points on the capsule's surface (and some inside it)
        plane = pts @ hull.face_normals.T - np.sum(hull.face_normals * hull.triangles[:, 0], axis=1)
        outside = pts[np.max(plane, axis=1) > 0]
        if len(outside):
            worst = max(worst, float(tree.query(outside)[0].max()))
    return worst


def hull_pieces(V: np.ndarray, k: int) -> list[np.ndarray]:
    """The vertices of ``k`` convex hulls covering the points ``V (N, 3)``: k-means clusters (seeded), each widened by
    :data:`OVERLAP`."""
    centres, _ = kmeans2(V, k, seed=0, minit="++")
    d = np.linalg.norm(V[:, None] - centres[None], axis=2)
    return [np.asarray(trimesh.convex.convex_hull(V[d[:, j] <= d.min(axis=1) + OVERLAP]).vertices) for j in range(k)]


def wrist_sweep(model_path: Path, q6_values=(0.2, 0.4, 0.6, 0.8, 1.0)) -> None:
    """Print, per joint-6 angle, the smallest distance over joint 7 between link5 and link7 or the hand: in the
    model at ``model_path`` and between the meshes' surfaces (20,000 samples each: an upper bound within ~2 mm)."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(model_path))
    d = mujoco.MjData(m)
    geoms = {b: [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body(b).id] for b in ("link5", "link7", "hand")}
    surface = {b: trimesh.sample.sample_surface_even(trimesh.load(MESHES / f"{b}.stl"), 20000, seed=0)[0]
               for b in geoms}
    tree = cKDTree(surface["link5"])
    for q6 in q6_values:
        model_min = mesh_min = np.inf
        for q7 in np.linspace(m.jnt_range[6, 0], m.jnt_range[6, 1], 61):
            d.qpos[:] = 0.0
            d.qpos[5], d.qpos[6] = q6, q7
            mujoco.mj_kinematics(m, d)
            for a in geoms["link5"]:
                for b in geoms["link7"] + geoms["hand"]:
                    model_min = min(model_min, mujoco.mj_geomDistance(m, d, a, b, 1.0, None))
            R5, p5 = d.xmat[m.body("link5").id].reshape(3, 3), d.xpos[m.body("link5").id]
            for b in ("link7", "hand"):
                R, p = d.xmat[m.body(b).id].reshape(3, 3), d.xpos[m.body(b).id]
                mesh_min = min(mesh_min, tree.query(((surface[b] @ R.T + p) - p5) @ R5)[0].min())
        print(f"<!-- q6 = {q6:.1f} rad: link5 to link7 and hand {model_min * 1000:.1f} mm in the model, "
              f"{mesh_min * 1000:.1f} mm between the meshes -->")


def main() -> None:
    for link, k in PIECES.items():
        for j, hull in enumerate(hull_pieces(np.asarray(trimesh.load(MESHES / f"{link}.stl").vertices), k)):
            print(f'<mesh name="{link}_piece{j}" vertex="{" ".join(f"{x:.5f}" for x in hull.ravel())}"/>')
    for link in (x for x in LINKS if x not in PIECES):
        mesh = trimesh.load(MESHES / f"{link}.stl")
        capsules = fit_capsules(np.asarray(mesh.vertices))
        ratio = sum(_capsule_volume(*c) for c in capsules) / mesh.convex_hull.volume
        gap = capsule_gap(mesh, capsules)
        print(f"<!-- {link}: {len(capsules)} capsule(s), volume {ratio:.2f}x the mesh hull, surface at most "
              f"{gap * 1000:.0f} mm beyond -->")
        for a, b, R in capsules:
            ends = " ".join(f"{x:.4f}" for x in (*a, *b))
            print(f'<geom class="collision" type="capsule" size="{R:.4f}" fromto="{ends}"/>')
    for part in ("hand", "finger"):
        mesh = trimesh.load(MESHES / f"{part}.stl")
        lo, hi = mesh.bounds
        ratio = np.prod(hi - lo) / mesh.convex_hull.volume
        print(f"<!-- {part}: box volume {ratio:.2f}x the mesh hull -->")
        print(f'<geom class="collision" type="box" size="{" ".join(f"{x:.4f}" for x in (hi - lo) / 2 + 1e-4)}" '
              f'pos="{" ".join(f"{x:.4f}" for x in (hi + lo) / 2)}"/>')


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:  # a model file: state its wrist fit
        wrist_sweep(Path(sys.argv[1]))
    else:
        main()
