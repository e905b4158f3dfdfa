"""Lesson 10, the robot: the SO-101 at Q0 and stretched out, rendered from its model, each with its manipulability
ellipsoid at the tool: the tool velocities that joint rates of unit norm can give (the semi-axes are the singular
values of the Jacobian's linear rows along their left singular vectors), and those semi-axes drawn as labelled arrows.

Run: uv run python experiments/10-singularities/scene.py   (writes scene_output.txt, results.json,
scene_ellipsoid.png and scene_stretched.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import jacobian, tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Arrow, Ellipsoid, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # rad: lesson 09's SO-101 pose
Q_STRETCHED = np.array([0.0, 1.0, -1.24, 0.0, 0.0])  # rad: reaching forward, upper arm, forearm and wrist in one line
SCALE = 0.4  # s: each ellipsoid is drawn at this scale (m per m/s), so 1 rad/s of joint norm reads in 0.4 s
# Both cameras are centred on the tool at one distance, so the two ellipsoids show at one scale on screen too.
# Q0's looks along the middle axis u2 (sideways, world y at Q0), tilted a few degrees: the long axis u1 and the short
# u3 lie across the view, so the outline's short half-axis is the sigma_3 arrow
DISTANCE = 0.65  # m
VIEW = dict(azimuth=90.0, elevation=-8.0, distance=DISTANCE)
# the stretched arm from its side: looking along the arm would hide it behind the disc, and the thin axis along it
# could not be seen
VIEW_STRETCHED = dict(azimuth=60.0, elevation=-15.0, distance=DISTANCE)
ELLIPSOID_RGBA = (0.1, 0.4, 1.0, 0.55)
AXIS_RGBA = ((0.85, 0.1, 0.1, 1.0), (0.1, 0.6, 0.15, 1.0), (0.55, 0.1, 0.7, 1.0))  # sigma_1, sigma_2, sigma_3
# a small layout size: the labels' fixed type then stays legible when the picture is shrunk to a phone's width
SIZE = (380, 285)
SCRIPT = "scene.py"
FILES = {"q0": "scene_ellipsoid.png", "stretched": "scene_stretched.png"}


def ellipsoid(chain, q) -> tuple[Ellipsoid, np.ndarray]:
    """The manipulability ellipsoid of ``q``'s linear Jacobian rows at the tool, scaled by SCALE; and its singular
    values (m/rad)."""
    U, S, _ = np.linalg.svd(jacobian(chain, q)[:3])
    return Ellipsoid(tool_pose(chain, q)[:3, 3], SCALE * U * S, ELLIPSOID_RGBA), S


def semi_axes(e: Ellipsoid, sigma: np.ndarray) -> list[Arrow]:
    """Each semi-axis of ``e`` as an arrow from its centre, labelled with its singular value (m/rad, two digits: the
    labels must stay legible on a phone)."""
    return [Arrow(e.center, e.center + e.axes[:, i], AXIS_RGBA[i], f"σ{i + 1} = {sigma[i]:.2g}") for i in range(3)]


def main(full: bool = False) -> list[Claim]:
    """Render the two pictures, print which backend drew them, save their record; no claims. ``full``: no larger
    size."""
    chain = robots.load("so101")
    pics, sigmas = {}, {}
    for key, q, title in (("q0", Q0, "at Q0: a thin lens"),
                          ("stretched", Q_STRETCHED, "stretched out: a flat disc")):
        e, sigmas[key] = ellipsoid(chain, q)
        view = View(lookat=tuple(e.center), **(VIEW if key == "q0" else VIEW_STRETCHED))
        pics[key] = picture("so101", Pose(q), HERE / FILES[key], overlays=[e, *semi_axes(e, sigmas[key])],
                            view=view, title=title, size=SIZE)
    s0, s1 = sigmas["q0"], sigmas["stretched"]
    print(f"Q0 = {fmt_row(Q0, 5, 2)} rad: singular values {fmt_row(s0, 6, 4)} m/rad")
    print(f"stretched {fmt_row(Q_STRETCHED, 5, 2)} rad: singular values {fmt_row(s1, 6, 4)} m/rad")
    for pic in pics.values():
        print(pic.drawn_by)
    axes = lambda s: ", ".join(f"{x:.2g}" for x in s)
    figures = [
        Figure(FILES["q0"], pics["q0"].caption(
            "The SO-101 at Q0 with its manipulability ellipsoid at the tool, seen edge-on along its middle axis: "
            f"a thin lens, the longest axis (σ1) {s0[0] / s0[2]:.0f} times the shortest (σ3, toward and away from "
            "the base), thin but not closed. The middle axis (σ2, sideways) points at the camera. Each "
            "semi-axis is an arrow labelled with its singular value (m/rad), drawn to the scale the text states."),
            pics["q0"].alt("at Q0",
                           f"a translucent blue lens-shaped ellipsoid at the tool, seen edge-on, its three semi-axes drawn as red, green and "
                           f"purple arrows labelled with their singular values {axes(s0)} m/rad")),
        Figure(FILES["stretched"], pics["stretched"].caption(
            "The SO-101 stretched out forward, seen from its side, the ellipsoid drawn to the same scale and from the same "
            "camera distance as at Q0: "
            f"two axes open, wider than at Q0, and the one along the arm (σ3) {s1[0] / s1[2]:.0f} times shorter than "
            "σ1, so the ellipsoid is a flat disc standing across the arm's end, its σ3 arrow too short to see."),
            pics["stretched"].alt("stretched out forward, upper arm, forearm and wrist almost in one line",
                                  f"a translucent blue flat disc at the tool, its semi-axes drawn as arrows labelled "
                                  f"{axes(s1)} m/rad; the thin axis lies along the arm")),
    ]
    save_results(HERE, SCRIPT, {"q": Q0, "q_stretched": Q_STRETCHED, "scale": SCALE, "sigma": s0,
                                "sigma_stretched": s1, "ratio": s0[0] / s0[2],
                                "ratio_stretched": s1[0] / s1[2], "picture": pics["q0"].record(),
                                "picture_stretched": pics["stretched"].record()}, figures=figures)
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
