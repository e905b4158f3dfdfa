"""Lesson 07, Build it: frames and homogeneous transforms, every conversion checked against SciPy, MuJoCo or Pinocchio.

Run: uv run python experiments/07-frames/build.py   (writes build_output.txt and build_frames.png beside this file)
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from physai import robots  # noqa: E402
from physai import transforms as tf  # noqa: E402
from physai.errors import InputError  # noqa: E402
from physai.kinematics import joint_frames  # noqa: E402
from physai.lesson import fmt_row, transcript  # noqa: E402

HERE = Path(__file__).resolve().parent
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0


def main() -> None:
    rng = np.random.default_rng(SEED)
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; seed {SEED}")

    print("\n== Step 1. A chain of transforms: T_world_tool = T_world_j0 @ M_0 @ T_j0_j1 @ M_1 @ ... @ T_j4_tool ==")
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = Q0
    mujoco.mj_kinematics(m, d)
    T_world = np.eye(4)
    print(f"{'frame':>14s} {'x':>8s} {'y':>8s} {'z':>8s}   |p - MuJoCo xpos|")
    for i, name in enumerate(chain.joint_names):
        motion = tf.make_transform(tf.rotation_about_axis(chain.axis_joint[i], Q0[i] - chain.q_ref[i]), np.zeros(3))
        T_world = tf.compose(T_world, chain.T_prev_joint[i], motion)
        body = m.jnt_bodyid[m.joint(name).id]
        print(f"{m.body(body).name:>14s} {fmt_row(T_world[:3, 3])}   {np.abs(T_world[:3, 3] - d.xpos[body]).max():.1e}")
    T_world_tool = tf.compose(T_world, chain.T_last_tool)
    sid = m.site(chain.tool_name).id
    print(f"{chain.tool_name:>14s} {fmt_row(T_world_tool[:3, 3])}   {np.abs(T_world_tool[:3, 3] - d.site_xpos[sid]).max():.1e}")
    reversed_order = tf.compose(chain.T_last_tool, *chain.T_prev_joint[::-1])
    print(f"same factors multiplied right-to-left: tool at {fmt_row(reversed_order[:3, 3])} (order matters)")
    err_inv = np.abs(tf.compose(T_world_tool, tf.inverse(T_world_tool)) - np.eye(4)).max()
    print(f"T_world_tool @ inverse(T_world_tool) - I: {err_inv:.1e} (inverse uses R^T and -R^T p)")

    print("\n== Step 2. One orientation, four spellings (tool at Q0) ==")
    R = T_world_tool[:3, :3]
    quat = tf.matrix_to_quat(R)
    rpy = tf.matrix_to_rpy(R)
    rotvec = tf.so3_log(R)
    mj_quat = np.zeros(4)
    mujoco.mju_mat2Quat(mj_quat, R.ravel())
    print(f"quaternion (w,x,y,z): {fmt_row(quat)}   |q - mju_mat2Quat| = {np.abs(quat - mj_quat).max():.1e}")
    print(f"SciPy as_quat() order (x,y,z,w): {fmt_row(Rotation.from_matrix(R).as_quat())}  <- same numbers, scalar last")
    print(f"roll, pitch, yaw (rad): {fmt_row(rpy)}   |rpy - SciPy as_euler('xyz')| = "
          f"{np.abs(rpy - Rotation.from_matrix(R).as_euler('xyz')).max():.1e}")
    print(f"SciPy as_euler('XYZ') (intrinsic, a different convention): {fmt_row(Rotation.from_matrix(R).as_euler('XYZ'))}")
    print(f"rotation vector (rad): {fmt_row(rotvec)}, angle {np.linalg.norm(rotvec):.4f} rad   "
          f"|w - SciPy as_rotvec| = {np.abs(rotvec - Rotation.from_matrix(R).as_rotvec()).max():.1e}")

    print("\n== Step 3. Exponential coordinates: round trips over 1000 random twists ==")
    V = rng.normal(size=(1000, 6)) * [0.5, 0.5, 0.5, 1.0, 1.0, 1.0]
    V = V[np.linalg.norm(V[:, 3:], axis=1) < np.pi]
    T = tf.se3_exp(V)
    pin_err = max(np.abs(T[k] - pin.exp6(pin.Motion(V[k, :3], V[k, 3:])).homogeneous).max() for k in range(len(V)))
    print(f"{len(V)} twists with |w| < pi: |se3_log(se3_exp(V)) - V| max {np.abs(tf.se3_log(T) - V).max():.1e}; "
          f"|se3_exp - pin.exp6| max {pin_err:.1e}")

    print("\n== Step 4. Twists and wrenches between frames (tool at Q0) ==")
    twist_tool = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0])  # 5 cm/s along the tool's own z
    wrench_tool = np.array([0.0, 0.0, -2.0, 0.0, 0.0, 0.0])  # 2 N pushing back along tool z, at the tool point
    twist_world = tf.transform_twist(T_world_tool, twist_tool)
    wrench_world = tf.transform_wrench(T_world_tool, wrench_tool)
    M = pin.SE3(T_world_tool)
    print(f"twist in tool axes  {fmt_row(twist_tool)} -> world origin, world axes {fmt_row(twist_world)}  "
          f"|d pin| {np.abs(twist_world - M.act(pin.Motion(twist_tool)).vector).max():.1e}")
    print(f"wrench in tool axes {fmt_row(wrench_tool)} -> about world origin {fmt_row(wrench_world)}  "
          f"|d pin| {np.abs(wrench_world - M.act(pin.Force(wrench_tool)).vector).max():.1e}")
    print(f"power F.V: tool frame {wrench_tool @ twist_tool:+.6f} W, world frame {wrench_world @ twist_world:+.6f} W")

    print("\n== Step 5. What is not a rotation is refused ==")
    drifted = R + 1e-6 * rng.normal(size=(3, 3))
    for label, call in [("matrix_to_quat(R + 1e-6 noise)", lambda: tf.matrix_to_quat(drifted)),
                        ("quat_to_matrix([0, 0, 0, 0])", lambda: tf.quat_to_matrix(np.zeros(4)))]:
        try:
            call()
        except InputError as exc:
            print(f"{label}: InputError: {exc}")
    fixed = tf.orthonormalize(drifted)
    print(f"orthonormalize(R + noise): |R R^T - I| {np.abs(fixed @ fixed.T - np.eye(3)).max():.1e}, "
          f"moved {np.abs(fixed - drifted).max():.1e} from the input; matrix_to_quat accepts it")

    figure(chain, T_world_joint=joint_frames(chain, Q0)[0], T_world_tool=T_world_tool)


def figure(chain, T_world_joint, T_world_tool) -> None:
    fig = plt.figure(figsize=(6, 6))
    ax = fig.add_subplot(projection="3d")
    frames = [np.eye(4), *T_world_joint, T_world_tool]
    labels = ["world", *chain.joint_names, chain.tool_name]
    pts = np.array([T[:3, 3] for T in frames])
    ax.plot(*pts.T, color="0.6", lw=1)
    for T, label in zip(frames, labels):
        for k, c in enumerate("rgb"):
            ax.quiver(*T[:3, 3], *(0.03 * T[:3, k]), color=c, lw=1.5)
        ax.text(*T[:3, 3], f" {label}", fontsize=7)
    ax.set(xlabel="x (m)", ylabel="y (m)", zlabel="z (m)", title="SO-101 joint frames at q = (0, -0.6, 0.9, 0.4, 0.3)\nx red, y green, z blue")
    ax.set_box_aspect(np.ptp(pts, axis=0) + 0.06)
    out = HERE / "build_frames.png"
    fig.savefig(out, dpi=120)
    print(f"\nfigure: {out.name}")


if __name__ == "__main__":
    with transcript(HERE / "build_output.txt"):
        main()
