"""Lesson 12, the robot: the Panda at its ready pose and the family of postures its self-motion passes through
while the tool holds still, overlaid as ghosts, rendered from the model.

Run: uv run python experiments/12-null-space/scene.py   (writes scene_output.txt, results.json and
scene_self_motion.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import joint_frames, tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.nullspace import posture_cost, self_motion
from physai.course.pictures import Box, Polyline, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
PANDA_READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
SWING = 2.0  # rad: the posture objective pulls joint1 this far either way, which swings the elbow
STEPS = 80  # the most self-motion steps each way (each walk reaches the cost's lowest point before; a ghost there)
STEP = 0.02  # rad: the largest joint change per step
SETTLED = 1e-6  # rad: a step that changes no joint by more than this has stopped the walk
ELBOW = 3  # joint4's index: the Panda's elbow
SCRIPT, FILE = "scene.py", "scene_self_motion.png"


def main(full: bool = False) -> list[Claim]:
    """Run the self-motion both ways from the ready pose, picture the ghosts; no claims. ``full``: no larger size."""
    chain = robots.load("panda")
    ends, drift, elbow, settled, last, cost = [], 0.0, [], 0, 0.0, []  # one ghost each way
    for sign in (-1, 1):
        q_pref = PANDA_READY.copy()
        q_pref[0] += sign * SWING
        run = self_motion(chain, PANDA_READY, posture_cost(chain, q_pref), steps=STEPS, step=STEP)
        ends.append(run.q[-1])
        drift = max(drift, float(run.pose_drift.max()))
        moved = np.abs(np.diff(run.q, axis=0)).max(axis=1)  # (STEPS,) rad, each step's largest joint change
        still = moved < SETTLED  # from the first still step on the walk sits at the cost's lowest point
        settled = max(settled, int(np.argmax(still)) + 1 if still.any() else STEPS + 1)  # steps count from 1
        last = max(last, float(moved[-1]))
        cost.append(run.cost[[0, -1]])
        path = joint_frames(chain, run.q)[0][:, ELBOW, :3, 3]
        elbow.append(path[::-1] if sign < 0 else path[1:])
    ghosts = [Pose(q, alpha=0.3, rgba=(0.3, 0.55, 0.95, 1)) for q in ends]
    p_tool = tool_pose(chain, PANDA_READY)[:3, 3]
    elbow_ready = joint_frames(chain, PANDA_READY)[0][ELBOW, :3, 3]
    elbow = np.concatenate(elbow)
    sweep_mm = 1000 * float(np.linalg.norm(elbow[-1] - elbow[0]))  # from one ghost's elbow to the other's
    pic = picture("panda", [Pose(PANDA_READY, alpha=0.6), *ghosts], HERE / FILE,
                  overlays=[Polyline(elbow),
                            # cubes mark where the elbow starts and where each walk stops: the swing reads at a glance
                            Box(elbow_ready, np.full(3, 0.018), (0.35, 0.35, 0.35, 1), "elbow at ready"),
                            *(Box(p, np.full(3, 0.018), (0.1, 0.25, 0.8, 1), f"elbow, walk {i} stops")
                              for i, p in enumerate((elbow[0], elbow[-1]), 1)),
                            Box(p_tool, np.full(3, 0.02), (0.9, 0.1, 0.1, 1), "hand, held")],
                  view=View(azimuth=0, elevation=-55, distance=1.4),  # from behind and above: the arc spreads across
                  title="Panda: self-motion at ready (ghosts blue), tool held still")
    cost_start, cost_end = np.max(cost, axis=0)  # rad^2; the walks mirror each other
    print(f"Panda ready {fmt_row(PANDA_READY, 6, 3)} rad, tool at {fmt_row(p_tool)} m; two ghosts where the two "
          f"walks stop, the elbow {sweep_mm:.0f} mm apart between them, tool drift at most {drift:.1e} m; "
          f"{pic.drawn_by}")
    print(f"posture cost 1/2 |q - q_pref|^2 (q_pref: ready, joint1 ±{SWING:.1f} rad) from {cost_start:.3f} to "
          f"{cost_end:.3f} rad^2; the walks stand still (every joint < {SETTLED:g} rad per step) from step {settled} "
          f"of {STEPS}, the last step moves a joint at most {last:.1e} rad: stopped at the cost's lowest point")
    figure = Figure(FILE, pic.caption("The Panda at ready (grey) and where two walks along its self-motion stop "
                                      "(blue ghosts), with the elbow's path (magenta) from where one walk stops "
                                      "(blue cube) through where both start (grey cube) to where the other stops (blue cube), and the hand (red cube): the "
                                      "elbow swings, the hand stays."),
                    pic.alt("seen from behind and above, at the ready pose in see-through grey, "
                            "with two see-through blue copies where two walks along its self-motion stop, "
                            "each at the lowest posture cost it can reach",
                            "the ghost arms splaying out to either side at the elbow and meeting at the hand, which every copy "
                            "holds in the same place (a small red cube); a magenta line traces the elbow's path from "
                            "a blue cube on one side, through a grey cube at the ready elbow, to a blue cube on the other"))
    save_results(HERE, SCRIPT, {"q": PANDA_READY, "ghosts": np.array(ends), "drift": drift, "elbow_path": elbow,
                                "elbow_sweep_mm": sweep_mm, "swing": SWING, "steps": STEPS, "step": STEP,
                                "joint1_reached": float(abs(ends[1][0] - PANDA_READY[0])),
                                "settled": SETTLED, "settled_step": settled, "stopped_early": settled <= STEPS,
                                "last_step": last,
                                "cost_start": float(cost_start), "cost_end": float(cost_end),
                                "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
