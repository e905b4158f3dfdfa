"""Lesson 13, the robot: two IK answers of the SO-101 for one target, elbow up and elbow down, and their average,
which a network trained on both by squared error learns to predict, rendered from the model.

Run: uv run python experiments/13-learned-controllers/scene.py   (writes scene_output.txt, results.json and
scene_elbows.png)
"""

import numpy as np

from physai import robots
from physai.ik import solve_ik
from physai.kinematics import tool_pose
from physai.lesson import Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.pictures import Box, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q_UP = np.array([0.0, -1.0, 1.2, 0.5, 0.0])  # rad: an elbow-up posture whose tool point is the target
START_DOWN = np.array([0.0, 0.6, -0.9, 0.9, 0.0])  # rad: IK's start on the elbow-down side
SCRIPT, FILE = "scene.py", "scene_elbows.png"


def main(full: bool = False) -> list:
    """Solve for the other elbow, average the two, picture all three; no claims. ``full``: no larger size."""
    chain = robots.load("so101")
    target = tool_pose(chain, Q_UP)[:3, 3]
    q_down = solve_ik(chain, target, START_DOWN, task="position").q
    q_mean = 0.5 * (Q_UP + q_down)
    miss = float(np.linalg.norm(tool_pose(chain, q_mean)[:3, 3] - target))
    down_err = float(np.linalg.norm(tool_pose(chain, q_down)[:3, 3] - target))
    pic = picture("so101", [Pose(q_mean), Pose(Q_UP, alpha=0.35, rgba=(0.2, 0.5, 0.95, 1)),
                            Pose(q_down, alpha=0.35, rgba=(0.1, 0.7, 0.3, 1))], HERE / FILE,
                  overlays=[Box(target, np.full(3, 0.007), (0.9, 0.1, 0.1, 1), "target")],
                  view=View(azimuth=90, elevation=-5), title="SO-101: elbow up (blue), elbow down (green), average (yellow)")
    print(f"target {fmt_row(target)} m; elbow down {fmt_row(q_down, 7, 3)} rad reaches it to {down_err:.1e} m; "
          f"the average posture misses by {1000 * miss:.0f} mm; {FILE} drawn by {pic.backend}"
          + (f" ({pic.why})" if pic.why else ""))
    figure = Figure(FILE, pic.caption(f"Two answers for one target (red cube): elbow up (blue ghost) and elbow down "
                                      f"(green ghost); their average (solid) is what a network trained by squared "
                                      f"error on both learns, and its tool misses the target by {1000 * miss:.0f} mm."),
                    pic.alt("in three postures for one target: elbow up, elbow down, and the joint-wise average of "
                            "the two",
                            "the target as a small red cube, the elbow-up and elbow-down answers as see-through "
                            "blue and green arms both touching it, and the averaged arm in solid yellow whose "
                            "gripper stops short of the cube"))
    save_results(HERE, SCRIPT, {"target": target, "q_up": Q_UP, "q_down": q_down, "q_mean": q_mean,
                                "down_err": down_err, "miss": miss, "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
