"""Lesson 13, the robot: two of the SO-101's many IK answers for one target, the wrist held high and held low, and their
joint-wise average, which a network trained on both by squared error learns to predict, rendered from the model.

Run: uv run python experiments/13-learned-controllers/scene.py   (writes scene_output.txt, results.json and
scene_average.png)
"""

import numpy as np

from physai import robots
from physai.ik import Solver, solve_ik
from physai.kinematics import tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Box, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q_A = np.array([0.3, -0.2, 0.3, 1.0, 0.0])  # rad: a posture whose tool point is the target, the wrist high
START_B = np.array([-0.31, 1.70, -0.29, -1.05, 1.55])  # rad: IK's start that lands on the other answer
SCRIPT, FILE = "scene.py", "scene_average.png"
BLUE, GREEN, YELLOW = (0.2, 0.45, 0.95, 1), (0.1, 0.7, 0.3, 1), (0.85, 0.65, 0.1, 1)  # YELLOW: the model's own


def main(full: bool = False) -> list[Claim]:
    """Solve for the other answer, average the two, picture all three; no claims. ``full``: no larger size."""
    chain = robots.load("so101")
    target = tool_pose(chain, Q_A)[:3, 3]
    q_b = solve_ik(chain, target, START_B, task="position", solver=Solver(restarts=0)).q
    q_mean = 0.5 * (Q_A + q_b)
    miss = float(np.linalg.norm(tool_pose(chain, q_mean)[:3, 3] - target))
    b_err = float(np.linalg.norm(tool_pose(chain, q_b)[:3, 3] - target))
    # A's and B's tool tips both sit on the target, so one label names the two; the average's tip has its own
    tips = [Box(target, np.full(3, 0.007), (0.9, 0.1, 0.1, 1), "target = tool tips of A and B"),
            Box(tool_pose(chain, q_mean)[:3, 3], np.full(3, 0.006), YELLOW, "tool tip of the average")]
    # the average first and untinted: the first pose's tint would also colour the floor
    pic = picture("so101", [Pose(q_mean), Pose(Q_A, alpha=0.45, rgba=BLUE), Pose(q_b, alpha=0.45, rgba=GREEN)],
                  HERE / FILE,
                  overlays=tips,
                  view=View(azimuth=75, elevation=-15),
                  title="SO-101: answers A (blue) and B (green), their average (yellow)")
    print(f"target {fmt_row(target)} m; the other answer {fmt_row(q_b, 7, 3)} rad reaches it to {b_err:.1e} m; "
          f"the average posture misses by {1000 * miss:.0f} mm; {pic.drawn_by}")
    figure = Figure(FILE, pic.caption("Two of the many answers for one target (red cube): five joints for a "
                                      "three-dimensional point leave a two-parameter family of them, the redundancy "
                                      "of lesson 12. A holds the wrist high (blue ghost), B low (green ghost); their "
                                      "joint-wise average (solid yellow) is what a network trained by squared error "
                                      f"on both learns, and its tool tip (yellow cube) misses the target by "
                                      f"{1000 * miss:.0f} mm, a miss that depends on which pair is averaged. Each "
                                      "arm's joint angles are in the table below the picture."),
                    pic.alt("in three postures for one target: two of its many IK answers, the wrist held high and "
                            "held low, and the joint-wise average of the two",
                            "the target as a small red cube, the two answers as see-through blue and green "
                            "arms whose tool tips touch it, the averaged arm in solid yellow whose tool tip, a small "
                            f"yellow cube, ends {1000 * miss:.0f} mm from the red one; both cubes labelled"))
    save_results(HERE, SCRIPT, {"joints": chain.joint_names, "target": target, "q_a": Q_A, "q_b": q_b,
                                "q_mean": q_mean, "b_err": b_err, "miss": miss, "picture": pic.record()},
                 figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
