"""The GJK distance bracket (physai.collision.gjk_bracket, compiled twin physai._numba_gjk.gjk_bracket) pinned to
MuJoCo's mj_geomDistance on boxes, capsules, spheres and the Panda's convex mesh pieces, and to closed forms."""

import mujoco
import numpy as np
import pytest

from physai import collision as C
from physai._numba_gjk import gjk_bracket

IDENTITY, ORIGIN = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
MARGIN = 0.01  # m: the screen's threshold
NO_STOP = 10.0  # m: a band wider than any distance here: the verdict is never decided, the bracket converges
PIECES = ("link5_piece0", "link5_piece5")  # the largest and the smallest convex piece (342 and 80 vertices)
GEOMS = {"box": '<geom type="box" size="0.04 0.03 0.05"/>', "box2": '<geom type="box" size="0.06 0.02 0.03"/>',
         "capsule": '<geom type="capsule" size="0.02 0.04"/>', "sphere": '<geom type="sphere" size="0.03"/>',
         "mesh0": '<geom type="mesh" mesh="piece0"/>', "mesh1": '<geom type="mesh" mesh="piece1"/>',
         "cylinder": '<geom type="cylinder" size="0.025 0.04"/>',
         "cylinder2": '<geom type="cylinder" size="0.03 0.02"/>'}
PAIRS = [("box", "box2"), ("box", "mesh0"), ("mesh0", "mesh1"), ("capsule", "mesh0"), ("sphere", "mesh1"),
         ("capsule", "box"), ("sphere", "box"), ("capsule", "cylinder"), ("cylinder", "mesh0"), ("box", "cylinder"),
         ("cylinder", "cylinder2")]
POSES = 300


@pytest.fixture(scope="module")
def panda():
    return C.scene("panda")


def mesh_vertices(m, k):
    return m.mesh_vert[m.mesh_vertadr[k]:m.mesh_vertadr[k] + m.mesh_vertnum[k]].astype(float)


def pair_model(panda, g1, g2):
    """Two free-floating geoms; the meshes are the Panda's pieces, given by their vertices."""
    vertices = [" ".join(map(repr, mesh_vertices(panda, panda.mesh(name).id).ravel().tolist())) for name in PIECES]
    meshes = "".join(f'<mesh name="piece{i}" vertex="{v}"/>' for i, v in enumerate(vertices))
    return mujoco.MjModel.from_xml_string(
        f"<mujoco><asset>{meshes}</asset><worldbody><body><freejoint/>{GEOMS[g1]}</body>"
        f"<body><freejoint/>{GEOMS[g2]}</body></worldbody></mujoco>")


def hull(m, g):
    """Geom ``g`` as points in its own frame, a radius and a disk's radius: box corners, a capsule's segment ends, a
    cylinder's axis ends swept by a disk, a sphere's centre, a mesh's vertices (MuJoCo's mesh_vert, in the geom's
    frame: test_mesh_vertices_are_in_the_geom_frame)."""
    size, kind, T = m.geom_size[g], int(m.geom_type[g]), mujoco.mjtGeom
    if kind == T.mjGEOM_BOX:
        return np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]) * size, 0.0, 0.0
    if kind == T.mjGEOM_MESH:
        return mesh_vertices(m, m.geom_dataid[g]), 0.0, 0.0
    ends = np.array([[0.0, 0.0, -size[1]], [0.0, 0.0, size[1]]])
    if kind == T.mjGEOM_CAPSULE:
        return ends, float(size[0]), 0.0
    if kind == T.mjGEOM_CYLINDER:
        return ends, 0.0, float(size[0])
    return np.zeros((1, 3)), float(size[0]), 0.0


def pose(d, g):
    return tuple(d.geom_xmat[g].tolist()), tuple(d.geom_xpos[g].tolist())


def world(V, R, x):
    """``R @ v + x`` for each row of ``V``, summed in the compiled support's order."""
    R = np.reshape(R, (3, 3))
    return V[:, :1] * R[:, 0] + V[:, 1:2] * R[:, 1] + V[:, 2:] * R[:, 2] + np.array(x)


def random_poses(m, d, rng, count):
    """Random orientations and offsets (~60 mm); every other separated pose is slid along MuJoCo's normal to a gap
    of 0-20 mm (a convex pair's distance changes by exactly the slide there). Yields MuJoCo's distance."""
    fromto = np.zeros(6)
    for k in range(count):
        quats = rng.normal(size=(2, 4))
        d.qpos[:] = np.concatenate([np.zeros(3), quats[0] / np.linalg.norm(quats[0]), rng.normal(size=3) * 0.06,
                                    quats[1] / np.linalg.norm(quats[1])])
        mujoco.mj_kinematics(m, d)
        dist = mujoco.mj_geomDistance(m, d, 0, 1, 1.0, fromto)
        if k % 2 and dist > 0:
            normal = (fromto[3:] - fromto[:3]) / dist
            d.qpos[7:10] += (rng.uniform(0.0, 0.02) - dist) * normal
            mujoco.mj_kinematics(m, d)
            dist = mujoco.mj_geomDistance(m, d, 0, 1, 1.0, fromto)
        yield dist


def piece_geom(m):
    return int(np.flatnonzero(m.geom_dataid == m.mesh(PIECES[0]).id)[0])


def test_mesh_vertices_are_in_the_geom_frame(panda):
    # a ball beside a Panda mesh piece in the shipped model: MuJoCo's distance is that of the ball's centre to the
    # hull of the piece's mesh_vert placed by geom_xmat and geom_xpos, less its radius
    d = mujoco.MjData(panda)
    mujoco.mj_kinematics(panda, d)
    ball = d.geom_xpos[piece_geom(panda)] + np.array([0.03, 0.1, 0.02])
    m = C.scene("panda", [C.Obstacle("ball", "sphere", (0.02,), ball)])
    g, d = piece_geom(m), mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    expected = mujoco.mj_geomDistance(m, d, g, m.geom("ball").id, 1.0, None)
    lo, hi = gjk_bracket(mesh_vertices(m, m.geom_dataid[g]), *pose(d, g), 0.0, ball[None], IDENTITY, ORIGIN, 0.02,
                         0.0, NO_STOP, 1000)
    assert 0.03 < expected < 0.2
    assert lo - m.opt.ccd_tolerance <= expected <= hi + m.opt.ccd_tolerance and hi - lo <= 1e-6


@pytest.mark.parametrize("g1, g2", PAIRS)
def test_gjk_bracket_holds_mj_geomDistance(panda, g1, g2):
    m = pair_model(panda, g1, g2)
    d = mujoco.MjData(m)
    (Va, ra, da), (Vb, rb, db) = hull(m, 0), hull(m, 1)
    disks = {"da": da, "db": db}
    # MuJoCo's GJK stops within its ccd_tolerance (1e-6 m) of the distance; on these samples its distances lay
    # within ~1e-16 m of the rigorous brackets, so its stated tolerance is a generous bound that still catches a
    # wrong bracket (a missed face or vertex is off by millimetres)
    tol = m.opt.ccd_tolerance
    overlapping = near = 0
    for dist in random_poses(m, d, np.random.default_rng(7), POSES):
        poses = pose(d, 0) + (ra,) + (Vb,) + pose(d, 1) + (rb,)
        tight = gjk_bracket(Va, *poses, 0.0, NO_STOP, 1000, **disks)
        if tight == (-np.inf, -ra - rb):
            # the hulls overlap: MuJoCo's depth is then its collider's estimate (a capsule's segment inside a box
            # comes out up to 1.5 mm less deep than its radius), so only the verdict is compared
            assert dist < tol
        else:
            assert tight[1] - tight[0] <= 1e-6 and tight[0] - tol <= dist <= tight[1] + tol
            lo, hi = gjk_bracket(Va, *poses, MARGIN, 0.002, 64, **disks)
            assert lo - tol <= dist <= hi + tol
        overlapping += dist < 0
        near += 0 < dist < 0.02
        if dist > tol:
            lo, hi = gjk_bracket(Va, *poses, 0.0, NO_STOP, 1000, **disks)
            assert hi - lo <= 1e-6 and lo - tol <= dist <= hi + tol
    assert overlapping > POSES // 10 and near > POSES // 5  # the sample exercises penetration and near contact


@pytest.mark.parametrize("g1, g2", PAIRS)
def test_gjk_numba_equals_numpy_reference(panda, g1, g2):
    # the same world points both ways (the compiled function at the identity pose, so a disk lies in the world's
    # xy plane for both): the same iterations, so equal to round-off; (lo = -inf) must agree exactly. On any CPU:
    # the reference sums its dot products in the compiled order, never through BLAS (whose AVX-512 kernel rounds
    # them otherwise, and a last-bit change picks another support point: brackets ~3e-6 m apart)
    m = pair_model(panda, g1, g2)
    d = mujoco.MjData(m)
    (Va, ra, da), (Vb, rb, db) = hull(m, 0), hull(m, 1)
    disk_a, disk_b = (((np.array([0.0, 0.0, 1.0]), r) if r else None) for r in (da, db))
    for _ in random_poses(m, d, np.random.default_rng(3), 60):
        A, B = world(Va, *pose(d, 0)), world(Vb, *pose(d, 1))
        for threshold, band, max_iter in ((MARGIN, 0.002, 64), (0.0, NO_STOP, 1000), (MARGIN, 0.0, 3)):
            ours = gjk_bracket(A, IDENTITY, ORIGIN, ra, B, IDENTITY, ORIGIN, rb, threshold, band, max_iter, da, db)
            ref = C.gjk_bracket(A, ra, B, rb, threshold, band, max_iter, disk_a, disk_b)
            assert (ours[0] == -np.inf) == (ref[0] == -np.inf)
            np.testing.assert_allclose(np.nan_to_num(ours, neginf=0.0), np.nan_to_num(ref, neginf=0.0), rtol=0,
                                       atol=1e-12)


def rotation(rng):
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def both(A, ra, B, rb, threshold=0.0, band=NO_STOP, max_iter=1000):
    """The compiled and the reference bracket of world points."""
    return (gjk_bracket(A, IDENTITY, ORIGIN, ra, B, IDENTITY, ORIGIN, rb, threshold, band, max_iter),
            C.gjk_bracket(A, ra, B, rb, threshold, band, max_iter))


def test_gjk_sphere_sphere_closed_form(rng):
    for _ in range(20):
        p, q, (ra, rb) = rng.normal(size=3), rng.normal(size=3), rng.uniform(0, 0.3, 2)
        for lo, hi in both(p[None], ra, q[None], rb):  # one iteration: v = p - q, the distance itself
            np.testing.assert_allclose([lo, hi], np.linalg.norm(p - q) - ra - rb, rtol=0, atol=1e-15)


def test_gjk_box_to_point_along_face_normal_closed_form(rng):
    half = np.array([0.04, 0.03, 0.05])
    corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]) * half
    for _ in range(20):
        R, x = rotation(rng), rng.normal(size=3)
        axis, gap = rng.integers(3), rng.uniform(1e-4, 0.5)
        local = rng.uniform(-1, 1, 3) * half  # over the face, then out along its normal
        local[axis] = half[axis] + gap
        point = R @ local + x
        for lo, hi in both(corners @ R.T + x, 0.0, point[None], 0.01):
            # converged (the bracket narrower than 1e-9 m) about the distance, to the round-off of placing the
            # points (coordinates ~1 m: 1e-15 m)
            assert hi - lo <= 1e-9 and lo - 1e-14 <= gap - 0.01 <= hi + 1e-14


def test_gjk_point_to_segment_closed_form(rng):
    for _ in range(20):
        a, b, p = rng.normal(size=(3, 3))
        t = np.clip((p - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0)
        expected = np.linalg.norm(a + t * (b - a) - p) - 0.02
        for lo, hi in both(np.stack([a, b]), 0.02, p[None], 0.0):
            np.testing.assert_allclose([lo, hi], expected, rtol=0, atol=1e-9)


def test_gjk_overlapping_shapes_give_negative_hi(rng):
    cube = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]) * 0.05
    for _ in range(20):
        R, x = rotation(rng), rng.uniform(-0.03, 0.03, 3)  # centres 52 mm apart at most: the cubes overlap
        for lo, hi in both(cube, 0.005, cube @ R.T + x, 0.002):  # no depth computed: hi is less the radii
            assert lo == -np.inf and hi == -(0.005 + 0.002)  # exactly: -ra - rb
    # hulls 2 cm apart, their radii 1.5 cm each: the inflated shapes overlap by 1 cm
    for lo, hi in both(cube, 0.015, cube + [0.12, 0.0, 0.0], 0.015):
        np.testing.assert_allclose([lo, hi], -0.01, rtol=0, atol=1e-9)


def test_gjk_flat_hulls_closed_form():
    # coplanar squares (every simplex of the difference is flat): 3 cm apart, then overlapping in their plane
    square = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.1, 0.1, 0.0]])
    for lo, hi in both(square, 0.0, square + [0.13, 0.02, 0.0], 0.0):
        np.testing.assert_allclose([lo, hi], 0.03, rtol=0, atol=1e-9)
    for lo, hi in both(square, 0.0, square + [0.05, 0.02, 0.0], 0.0):
        assert lo == -np.inf and hi <= 1e-12


def test_gjk_stops_once_the_verdict_is_decided(panda):
    m = panda
    V = mesh_vertices(m, m.mesh(PIECES[0]).id)
    R, far, near = IDENTITY, (0.5, 0.2, 0.1), (0.01, 0.0, 0.005)
    # a far pair: decided against the margin within 3 iterations, and the same bracket with room for more
    # (bitwise: the loop stopped there)
    lo, hi = gjk_bracket(V, R, ORIGIN, 0.0, V, R, far, 0.0, MARGIN, 0.002, 3)
    assert lo >= MARGIN + 0.002 and hi - lo > 1e-6
    assert gjk_bracket(V, R, ORIGIN, 0.0, V, R, far, 0.0, MARGIN, 0.002, 100) == (lo, hi)
    assert C.gjk_bracket(world(V, R, ORIGIN), 0.0, world(V, R, far), 0.0, MARGIN, 0.002, 100) == (lo, hi)
    # a deep overlap (the piece and itself shifted by a centimetre): decided at once
    lo, hi = gjk_bracket(V, R, ORIGIN, 0.0, V, R, near, 0.0, MARGIN, 0.002, 3)
    assert hi < MARGIN - 0.002
    assert gjk_bracket(V, R, ORIGIN, 0.0, V, R, near, 0.0, MARGIN, 0.002, 100) == (lo, hi)
