"""physai.course.pictures: the labels' pixels pinned to where MuJoCo's rasteriser draws a marker, and the fallback drawing
used (and said) when no OpenGL backend renders."""

import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from physai import robots
from physai.course import pictures
from physai.kinematics import tool_pose

pytestmark = pytest.mark.skipif(pictures.gl_backend() is None, reason="no OpenGL backend renders here")


def red_centroid(image) -> np.ndarray:
    """(column, row) of the pixels where red dominates, pixel centres at +0.5."""
    img = image.astype(int)
    mask = (img[..., 0] > 80) & (img[..., 0] > 2 * img[..., 1]) & (img[..., 0] > 2 * img[..., 2])
    rows, cols = np.nonzero(mask)
    assert len(rows) > 10
    return np.array([cols.mean() + 0.5, rows.mean() + 0.5])


@pytest.mark.parametrize("lookat, azimuth", [((0.1, 0.0, 0.1), 135.0), ((0.2, 0.05, 0.05), 60.0)])
def test_camera_pixels_land_on_a_sphere_mujoco_draws_at_the_tool_site(lookat, azimuth):
    """A small red sphere at the SO-101's tool site, rendered by MuJoCo: the centre of its red pixels lies within
    1.5 px of camera_pixels' projection of the site (MuJoCo's site_xpos). The first eye camera alone, which is what
    the scene holds before averaging, misses by tens of pixels: the check can fail."""
    chain = robots.load("so101")
    q = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
    spec = pictures.scene_spec("so101")
    spec.worldbody.add_geom(name="marker", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.006, 0, 0], rgba=[1, 0, 0, 1],
                            pos=tool_pose(chain, q)[:3, 3], contype=0, conaffinity=0, group=1)
    m = spec.compile()
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    site = d.site_xpos[m.site(chain.tool_name).id]
    opt = mujoco.MjvOption()
    opt.geomgroup[:] = [1, 1, 0, 0, 0, 0]  # the floor, the arm (made invisible below) and the marker
    for g in range(m.ngeom):
        if g != m.geom("marker").id and m.geom_group[g] == 1:
            m.geom_rgba[g, 3] = 0  # the arm out of the way of the marker
    W, H = 320, 240
    cam = pictures.free_camera(np.array([site, site + 0.1]), pictures.View(azimuth, -20, lookat, 0.6))
    with mujoco.Renderer(m, H, W) as r:
        r.update_scene(d, cam, opt)
        image = r.render()
        px = pictures.camera_pixels(r.scene, site, W, H)[0]
        c0, c1 = r.scene.camera[0], r.scene.camera[1]
    centroid = red_centroid(image)
    assert np.abs(centroid - px).max() <= 1.5
    assert np.linalg.norm(np.subtract(c0.pos, c1.pos)) > 0  # two eyes: their average is the rendered pinhole


def test_picture_labels_the_joints_where_the_camera_projects_their_anchors(tmp_path):
    """picture() returns each joint label's pixel; they are camera_pixels of MuJoCo's joint anchors (xanchor)."""
    import matplotlib.image as mpimg

    chain = robots.load("so101")
    q = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
    pic = pictures.picture("so101", pictures.Pose(q), tmp_path / "a.png", joint_names=True, size=(200, 150))
    assert pic.rendered and (tmp_path / "a.png").is_file()
    m = robots.mujoco_model("so101")
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    px = np.array([pic.pixels[name] for name in chain.joint_names])
    width_px, height_px = pictures.PIXEL_DENSITY * 200, pictures.PIXEL_DENSITY * 150
    assert mpimg.imread(tmp_path / "a.png").shape[:2] == (height_px, width_px)
    assert px.shape == (5, 2) and np.all((px >= 0) & (px <= [width_px, height_px]))
    assert np.ptp(px[:, 1]) > 10  # the labels spread over the arm, not a single point


def test_without_opengl_the_picture_is_drawn_from_the_chain_and_says_so(tmp_path):
    """MUJOCO_GL=disable: the same call draws with matplotlib and names the reason; the lesson does not fail."""
    code = ("import numpy as np; from physai.course.pictures import picture, Pose; "
            f"p = picture('so101', Pose(np.zeros(5)), r'{tmp_path / 'b.png'}'); print(p.backend, '|', p.why)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=os.environ | {"MUJOCO_GL": "disable"}).stdout
    assert out.startswith("matplotlib | MUJOCO_GL=disable") and (tmp_path / "b.png").is_file()


def test_an_arrow_inside_the_arm_is_drawn_over_it(tmp_path):
    """A red arrow wholly inside the SO-101's shoulder block (MuJoCo would hide it) is drawn on top: the pixels
    around camera_pixels' projection of its middle are red."""
    import matplotlib.image as mpimg

    chain = robots.load("so101")
    q = np.zeros(5)
    m = robots.mujoco_model("so101")
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    body = m.joint(chain.joint_names[0]).bodyid[0]  # the shoulder, the block the pan servo turns
    boxes = [g for g in range(m.ngeom) if m.geom_bodyid[g] == body and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX]
    g = max(boxes, key=lambda g: np.prod(m.geom_size[g]))  # its largest box
    base, half = d.geom_xpos[g], 0.5 * m.geom_size[g].min()  # an arrow this long fits inside it any way round
    arrow = pictures.Arrow(base - [half, 0, 0], base + [half, 0, 0], (1.0, 0.0, 0.0, 1.0), "mid")
    pic = pictures.picture("so101", pictures.Pose(q), tmp_path / "c.png", overlays=[arrow],
                           view=pictures.View(90, -10, tuple(base), 0.3), size=(200, 150))
    image = (mpimg.imread(tmp_path / "c.png")[..., :3] * 255).astype(int)
    col, row = np.round(pic.pixels["mid"]).astype(int)  # the label sits at the arrow's end
    patch = image[row - 2:row + 3, col - 6:col + 1]  # back along the shaft, towards the middle
    assert np.any((patch[..., 0] > 120) & (patch[..., 1] < 60) & (patch[..., 2] < 60))


def test_a_tinted_first_pose_recolours_the_arm_and_not_the_floor(tmp_path):
    """The floor is a geom of the world body: a pose's tint leaves it (the reference: an untinted render's pixel)."""
    import matplotlib.image as mpimg

    q = np.zeros(5)
    view = pictures.View(135, -30, (0.15, 0.0, 0.1), 0.9)
    images = []
    for name, pose in (("plain", pictures.Pose(q)), ("red", pictures.Pose(q, rgba=(1.0, 0.0, 0.0, 1.0)))):
        pictures.picture("so101", pose, tmp_path / f"{name}.png", view=view, size=(200, 150))
        images.append((mpimg.imread(tmp_path / f"{name}.png")[..., :3] * 255).astype(int))
    plain, red = images
    corner = (slice(-12, None), slice(0, 12))  # the floor below the arm, in the bottom-left corner
    assert np.abs(plain[corner] - red[corner]).max() <= 2  # the floor kept its colour
    assert np.any((red[..., 0] > 150) & (red[..., 1] < 60) & (red[..., 2] < 60))  # the arm turned red
