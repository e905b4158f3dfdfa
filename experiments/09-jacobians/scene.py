"""Lesson 09, the robot: the SO-101 at Q0 rendered from its model, each column of the Jacobian's linear rows drawn
as an arrow at the tool: the tool's velocity when that one joint turns.

Run: uv run python experiments/09-jacobians/scene.py   (writes scene_output.txt, results.json and
scene_columns.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import fk, jacobian, tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Arrow, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # rad: Build it's pose
RATE = 1.0  # rad/s: each arrow is the tool's velocity (m/s) with this joint rate, drawn as the distance in 1 s
SCRIPT, FILE = "scene.py", "scene_columns.png"
SIZE = (330, 278)  # layout px: under a phone's column width, so the labels keep at least their size there
COLORS = ((0.85, 0.1, 0.1, 1), (0.95, 0.5, 0.0, 1), (0.1, 0.6, 0.2, 1), (0.1, 0.4, 0.95, 1), (0.6, 0.2, 0.8, 1))


def main(full: bool = False) -> list[Claim]:
    """Render the picture, print which backend drew it, save its record; no claims. ``full``: no larger size."""
    chain = robots.load("so101")
    p_tool, J_world = tool_pose(chain, Q0)[:3, 3], jacobian(chain, Q0)
    speeds = np.linalg.norm(J_world[:3], axis=0)  # m/s per rad/s: each column's length
    arrows = [Arrow(p_tool, p_tool + RATE * J_world[:3, i], c, f"{name}\n{RATE * s:.3f} m/s")
              for i, (name, c, s) in enumerate(zip(chain.joint_names, COLORS, speeds))]
    # framed near the tool but wide enough for the shoulder, where the lift's lever starts; from in front and to
    # the side, so the sideways pan arrow is not foreshortened to a stub; shifted so its label fits on the canvas
    lookat = 0.8 * p_tool + 0.2 * fk(chain, Q0).anchors[chain.joint_index("shoulder_lift")] + [0.0, -0.05, -0.04]
    pic = picture("so101", Pose(Q0), HERE / FILE, overlays=arrows, size=SIZE,
                  view=View(azimuth=60, elevation=-15, lookat=tuple(lookat), distance=0.8),
                  title=f"SO-101 at Q0: Jacobian columns x {RATE} rad/s")
    print(f"SO-101 at q = {fmt_row(Q0, 5, 1)} rad; |J[:3, i]| (m/rad): "
          + ", ".join(f"{n} {s:.3f}" for n, s in zip(chain.joint_names, speeds))
          + f"; {pic.drawn_by}")
    figure = Figure(FILE, pic.caption("The SO-101 at Q0 with the Jacobian's linear columns drawn at the tool: "
                                      "each arrow is the tool's velocity when that joint alone turns (the column "
                                      "times one joint rate for all five), labelled by the joint and its speed. The "
                                      "arrows are drawn in 3-D, so one pointing towards the camera looks shorter "
                                      "than its speed."),
                    pic.alt("at the pose Q0, the whole arm from base to gripper",
                            "five arrows from the tool point, one per joint (labelled shoulder_pan to wrist_roll "
                            "with its speed), "
                            "each the column J[:3, i] times the same joint rate; the shoulder_pan arrow points "
                            "sideways, the "
                            "lift and flex arrows lie in the arm's vertical plane, and the wrist_roll arrow is too "
                            "short to see because the roll axis passes close to the tool point"))
    save_results(HERE, SCRIPT, {"q": Q0, "rate": RATE, "column_norms": dict(zip(chain.joint_names, speeds)),
                                "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
