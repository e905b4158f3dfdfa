"""Lesson 10, the robot: the SO-101 at Q0 and stretched out, rendered from its model, each with its manipulability
ellipsoid at the tool: the tool velocities that joint rates of unit norm can give (the semi-axes are the singular
values of the Jacobian's linear rows along their left singular vectors).

Run: uv run python experiments/10-singularities/scene.py   (writes scene_output.txt, results.json and
scene_ellipsoid.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import jacobian, tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Ellipsoid, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # rad: lesson 09's SO-101 pose
Q_STRETCHED = np.array([0.0, 1.0, -1.24, 0.0, 0.0])  # rad: reaching forward, upper arm, forearm and wrist in one line
SCALE = 0.3  # s: each ellipsoid is drawn at this scale (m per m/s), so 1 rad/s of joint norm reads in 0.3 s
STRETCHED_RGBA = (0.85, 0.12, 0.12, 1.0)  # red: tells the stretched ghost from the solid Q0 arm
SCRIPT, FILE = "scene.py", "scene_ellipsoid.png"


def ellipsoid(chain, q) -> tuple[Ellipsoid, np.ndarray]:
    """The manipulability ellipsoid of ``q``'s linear Jacobian rows at the tool, scaled by SCALE; and its singular
    values (m/rad)."""
    U, S, _ = np.linalg.svd(jacobian(chain, q)[:3])
    return Ellipsoid(tool_pose(chain, q)[:3, 3], SCALE * U * S), S


def main(full: bool = False) -> list[Claim]:
    """Render the picture, print which backend drew it, save its record; no claims. ``full``: no larger size."""
    chain = robots.load("so101")
    (e0, s0), (e1, s1) = ellipsoid(chain, Q0), ellipsoid(chain, Q_STRETCHED)
    pic = picture("so101", [Pose(Q0), Pose(Q_STRETCHED, alpha=0.45, rgba=STRETCHED_RGBA)], HERE / FILE, overlays=[e0, e1],
                  view=View(azimuth=122, elevation=-25), title="SO-101: manipulability ellipsoids at the tool")
    print(f"Q0 = {fmt_row(Q0, 5, 2)} rad: singular values {fmt_row(s0, 6, 4)} m/rad")
    print(f"stretched {fmt_row(Q_STRETCHED, 5, 2)} rad: singular values {fmt_row(s1, 6, 4)} m/rad")
    print(pic.drawn_by)
    axes = lambda s: ", ".join(f"{x:.4f}" for x in s)
    figure = Figure(FILE, pic.caption("The SO-101 at Q0 (solid) and stretched out forward (see-through, red), each with "
                                      "its manipulability ellipsoid at the tool, both drawn to the one scale the text "
                                      "states: at Q0 all three axes are open; stretched out, two stay open and the one along the arm "
                                      "has closed to a flat disc."),
                    pic.alt("at Q0 (solid) and stretched out forward, upper arm, forearm and wrist almost in one line "
                            "(see-through, tinted red)",
                            f"a translucent blue ellipsoid at each pose's tool, its semi-axes the singular values of "
                            f"the Jacobian's linear rows along their directions: at Q0 semi-axes {axes(s0)} m/rad; "
                            f"stretched out {axes(s1)} m/rad, a flat disc whose thin axis lies along the arm"))
    save_results(HERE, SCRIPT, {"q": Q0, "q_stretched": Q_STRETCHED, "scale": SCALE, "sigma": s0,
                                "sigma_stretched": s1, "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
