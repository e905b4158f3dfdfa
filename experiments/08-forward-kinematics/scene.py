"""Lesson 08, the robot: the SO-101 at Q0 rendered from its model, each joint's axis and name drawn on it, and the
path the tool takes as shoulder_lift turns alone.

Run: uv run python experiments/08-forward-kinematics/scene.py   (writes scene_output.txt, results.json and
scene_axes.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Ellipsoid, Polyline, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # rad: Build it's pose
SWEEP = 0.3  # rad either side of Q0 that shoulder_lift turns through for the drawn tool path
DOT = 0.007  # m: the radius of the dot drawn at the tool point
SCRIPT, FILE = "scene.py", "scene_axes.png"


def main(full: bool = False) -> list[Claim]:
    """Render the picture, print which backend drew it, save its record; no claims. ``full``: no larger size."""
    chain = robots.load("so101")
    lift = chain.joint_index("shoulder_lift")
    q_path = np.repeat(Q0[None], 25, axis=0)
    q_path[:, lift] += np.linspace(-SWEEP, SWEEP, len(q_path))
    path = tool_pose(chain, q_path)[:, :3, 3]
    tool = tool_pose(chain, Q0)[:3, 3]  # the arc's centre: the middle of the sweep
    dot = Ellipsoid(tool, DOT * np.eye(3), rgba=(0.1, 0.1, 0.1, 1.0), label="tool point at Q0")
    pic = picture("so101", Pose(Q0), HERE / FILE, overlays=[Polyline(path, label="tool path"), dot],
                  joint_names=True, joint_axes=True, view=View(azimuth=120, elevation=-15),
                  title="SO-101 at Q0: joint axes (blue)")
    print(f"SO-101 at q = {fmt_row(Q0, 5, 1)} rad; tool path over shoulder_lift +-{SWEEP} rad, "
          f"{1000 * np.linalg.norm(path[-1] - path[0]):.0f} mm end to end; {pic.drawn_by}")
    figure = Figure(FILE, pic.caption("The SO-101 at Q0: each joint's positive axis as a labelled blue arrow "
                                      "(shoulder_pan's points down, so a positive pan turns clockwise seen from "
                                      "above), the tool point at Q0 as a black dot, and the tool's arc as "
                                      "shoulder_lift alone turns either way from there."),
                    pic.alt("at the pose Q0, standing on the floor",
                            "a blue arrow along each joint's positive axis through its anchor, labelled shoulder_pan, "
                            "shoulder_lift, elbow_flex, wrist_flex and wrist_roll (the pan axis vertical and pointing "
                            "down, the three "
                            "flex axes parallel and horizontal, the roll axis along the wrist and gripper), a black "
                            "dot labelled "
                            "tool point at Q0, and a magenta arc through it of the tool point's path as shoulder_lift "
                            "turns"))
    save_results(HERE, SCRIPT, {"q": Q0, "sweep": SWEEP, "path_chord": float(np.linalg.norm(path[-1] - path[0])),
                                "tool": tool,
                                "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
