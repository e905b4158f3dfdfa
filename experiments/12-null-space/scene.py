"""Lesson 12, the robot: the Panda at its ready pose and the family of postures its self-motion passes through
while the tool holds still, overlaid as ghosts, rendered from the model.

Run: uv run python experiments/12-null-space/scene.py   (writes scene_output.txt, results.json and
scene_self_motion.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import tool_pose
from physai.lesson import Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.nullspace import posture_cost, self_motion
from physai.pictures import Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
PANDA_READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
SWING = 1.0  # rad: the posture objective pulls joint1 this far either way, which swings the elbow
STEPS, GHOSTS = 60, 3  # self-motion steps each way; ghosts drawn each way
SCRIPT, FILE = "scene.py", "scene_self_motion.png"


def main(full: bool = False) -> list:
    """Run the self-motion both ways from the ready pose, picture the ghosts; no claims. ``full``: no larger size."""
    chain = robots.load("panda")
    ends, drift = [], 0.0
    for sign in (-1, 1):
        q_pref = PANDA_READY.copy()
        q_pref[0] += sign * SWING
        run = self_motion(chain, PANDA_READY, posture_cost(chain, q_pref), steps=STEPS)
        ends.append(run.q[np.linspace(STEPS // GHOSTS, STEPS, GHOSTS).astype(int)])
        drift = max(drift, float(run.pose_drift.max()))
    ghosts = [Pose(q, alpha=0.2, rgba=(0.3, 0.55, 0.95, 1)) for q in np.concatenate(ends)]
    p_tool = tool_pose(chain, PANDA_READY)[:3, 3]
    pic = picture("panda", [Pose(PANDA_READY), *ghosts], HERE / FILE, view=View(azimuth=200, elevation=-15, distance=1.9),
                  title="Panda: self-motion at ready (ghosts blue), tool held still")
    print(f"Panda ready {fmt_row(PANDA_READY, 6, 3)} rad, tool at {fmt_row(p_tool)} m; {2 * GHOSTS} ghosts along the "
          f"self-motion, tool drift at most {drift:.1e} m; {FILE} drawn by {pic.backend}"
          + (f" ({pic.why})" if pic.why else ""))
    figure = Figure(FILE, pic.caption("The Panda at its ready pose (solid) and postures along its self-motion "
                                      "(blue ghosts): the elbow swings round while the hand stays where it is."),
                    pic.alt("at the ready pose (0, -pi/4, 0, -3pi/4, 0, pi/2, pi/4) rad, solid, with six "
                            "see-through blue copies along its self-motion",
                            "the ghost arms fanning out at the elbow and meeting at the hand, which every copy "
                            "holds in the same place"))
    save_results(HERE, SCRIPT, {"q": PANDA_READY, "ghosts": np.concatenate(ends), "drift": drift,
                                "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
