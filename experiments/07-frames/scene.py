"""Lesson 07, the robot: the SO-101 at Q0 rendered from its model, with the world frame, each joint frame and the
tool frame drawn on it (x red, y green, z blue).

Run: uv run python experiments/07-frames/scene.py   (writes scene_output.txt, results.json and scene_frames.png)
"""

import numpy as np

from physai import robots
from physai.kinematics import joint_frames
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Frame, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # rad: Build it's pose
SCRIPT, FILE = "scene.py", "scene_frames.png"


def main(full: bool = False) -> list[Claim]:
    """Render the picture, print which backend drew it, save its record; no claims. ``full``: no larger size."""
    chain, model = robots.load("so101"), robots.mujoco_model("so101")
    T_world_joint, T_world_tool = joint_frames(chain, Q0)
    # each frame named as Build it's table names it (the body the joint turns); short labels read on a phone
    labels = [model.body(model.joint(j).bodyid[0]).name for j in chain.joint_names]
    frames = ([Frame(np.eye(4), 0.1, "world")] + [Frame(T, 0.05, lab) for T, lab in zip(T_world_joint, labels)]
              + [Frame(T_world_tool, 0.05, chain.tool_name)])
    pic = picture("so101", Pose(Q0), HERE / FILE, overlays=frames,
                  # the camera close on the arm and a narrow image: shown at a phone's width, the labels keep their size
                  view=View(azimuth=-125, elevation=-15, lookat=(0.13, 0.0, 0.12), distance=0.42), size=(340, 280),
                  title="SO-101 at Q0: world, joint and tool frames")
    print(f"SO-101 at q = {fmt_row(Q0, 5, 1)} rad; {pic.drawn_by}")
    figure = Figure(FILE, pic.caption("The SO-101 at Q0 with the world frame at its base, a small frame at each "
                                      "joint (labelled by the body it turns, as in Build it's table) and the tool "
                                      "frame at the gripper."),
                    pic.alt("at the pose Q0, standing on the floor",
                            "red-green-blue axis triads for the world frame at the base, for each of the five joints "
                            "(labelled by the body each turns, from shoulder to gripper) and for the tool frame "
                            "gripperframe at the fingertips"))
    save_results(HERE, SCRIPT, {"q": Q0, "picture": pic.record(), "label_pixels": pic.pixels}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
