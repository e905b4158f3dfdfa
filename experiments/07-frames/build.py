"""Lesson 07, Build it: frames and homogeneous transforms, every conversion checked against SciPy, MuJoCo or Pinocchio.

Run: uv run python experiments/07-frames/build.py   (writes build_output.txt, claims.json and build_frames.png)
"""


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
from physai.lesson import Claim, fmt_row, out_dir, publish_claims, run_script, verdict  # noqa: E402

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
N_TWISTS = 1000
LESSON, SCRIPT = "07", "build.py"


def chain_step(m, chain, q=Q0) -> dict:
    """Step 1: T_world_tool = T_world_j0 @ M_0 @ T_j0_j1 @ M_1 @ ... @ T_j4_tool, each joint frame vs MuJoCo's
    body position, the tool vs its site; the same factors right-to-left; T @ inverse(T) - I."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    T, rows = np.eye(4), []
    for i, name in enumerate(chain.joint_names):
        motion = tf.make_transform(tf.rotation_about_axis(chain.axis_joint[i], q[i] - chain.q_ref[i]), np.zeros(3))
        T = tf.compose(T, chain.T_prev_joint[i], motion)
        body = m.jnt_bodyid[m.joint(name).id]
        rows.append((m.body(body).name, T[:3, 3].copy(), float(np.abs(T[:3, 3] - d.xpos[body]).max())))
    T_tool = tf.compose(T, chain.T_last_tool)
    sid = m.site(chain.tool_name).id
    site = np.eye(4)
    site[:3, :3], site[:3, 3] = d.site_xmat[sid].reshape(3, 3), d.site_xpos[sid]
    return {"rows": rows, "T_tool": T_tool, "tool_err": float(np.abs(T_tool - site).max()),
            "reversed": tf.compose(chain.T_last_tool, *chain.T_prev_joint[::-1])[:3, 3],
            "inverse_err": float(np.abs(tf.compose(T_tool, tf.inverse(T_tool)) - np.eye(4)).max())}


def spellings_step(R) -> dict:
    """Step 2: one orientation as a quaternion, roll-pitch-yaw and a rotation vector, against MuJoCo and SciPy."""
    mj_quat = np.zeros(4)
    mujoco.mju_mat2Quat(mj_quat, R.ravel())
    rot = Rotation.from_matrix(R)
    quat, rpy, rotvec = tf.matrix_to_quat(R), tf.matrix_to_rpy(R), tf.so3_log(R)
    return {"quat": quat, "quat_err": float(np.abs(quat - mj_quat).max()), "scipy_quat": rot.as_quat(),
            "rpy": rpy, "rpy_err": float(np.abs(rpy - rot.as_euler("xyz")).max()), "XYZ": rot.as_euler("XYZ"),
            "rotvec": rotvec, "rotvec_err": float(np.abs(rotvec - rot.as_rotvec()).max())}


def exp_step(n=N_TWISTS) -> dict:
    """Step 3: se3_exp / se3_log round trips over random twists with |w| < pi, and se3_exp vs pin.exp6."""
    V = np.random.default_rng(SEED).normal(size=(n, 6)) * [0.5, 0.5, 0.5, 1.0, 1.0, 1.0]
    V = V[np.linalg.norm(V[:, 3:], axis=1) < np.pi]
    T = tf.se3_exp(V)
    return {"n": len(V), "round_trip": float(np.abs(tf.se3_log(T) - V).max()),
            "pin": max(float(np.abs(T[k] - pin.exp6(pin.Motion(V[k, :3], V[k, 3:])).homogeneous).max())
                       for k in range(len(V)))}


def adjoint_step(T_world_tool) -> dict:
    """Step 4: a tool-frame twist and wrench moved to the world frame, vs Pinocchio's SE3.act; power F.V."""
    twist = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0])  # 5 cm/s along the tool's own z
    wrench = np.array([0.0, 0.0, -2.0, 0.0, 0.0, 0.0])  # 2 N pushing back along tool z, at the tool point
    M = pin.SE3(T_world_tool)
    tw, wr = tf.transform_twist(T_world_tool, twist), tf.transform_wrench(T_world_tool, wrench)
    return {"twist": twist, "wrench": wrench, "twist_world": tw, "wrench_world": wr,
            "twist_pin": float(np.abs(tw - M.act(pin.Motion(twist)).vector).max()),
            "wrench_pin": float(np.abs(wr - M.act(pin.Force(wrench)).vector).max()),
            "power_tool": float(wrench @ twist), "power_world": float(wr @ tw)}


def refuse_step(R) -> dict:
    """Step 5: what is not a rotation is refused (the messages); orthonormalize repairs a drifted matrix."""
    drifted = R + 1e-6 * np.random.default_rng(SEED + 1).normal(size=(3, 3))
    messages = {}
    for label, call in [("matrix_to_quat(R + 1e-6 noise)", lambda: tf.matrix_to_quat(drifted)),
                        ("quat_to_matrix([0, 0, 0, 0])", lambda: tf.quat_to_matrix(np.zeros(4)))]:
        try:
            call()
            messages[label] = None
        except InputError as exc:
            messages[label] = str(exc)
    fixed = tf.orthonormalize(drifted)
    return {"messages": messages, "ortho": float(np.abs(fixed @ fixed.T - np.eye(3)).max()),
            "moved": float(np.abs(fixed - drifted).max()), "accepted": tf.matrix_to_quat(fixed)}


def print_steps(chain, ch, sp, ex, ad, rf) -> None:
    print("\n== Step 1. A chain of transforms: T_world_tool = T_world_j0 @ M_0 @ T_j0_j1 @ M_1 @ ... @ T_j4_tool ==")
    print(f"{'frame':>14s} {'x':>8s} {'y':>8s} {'z':>8s}   |p - MuJoCo xpos|")
    for body, p, err in ch["rows"]:
        print(f"{body:>14s} {fmt_row(p)}   {err:.1e}")
    print(f"{chain.tool_name:>14s} {fmt_row(ch['T_tool'][:3, 3])}   {ch['tool_err']:.1e} (whole 4x4 vs the site)")
    print(f"same factors multiplied right-to-left: tool at {fmt_row(ch['reversed'])} (order matters)")
    print(f"T_world_tool @ inverse(T_world_tool) - I: {ch['inverse_err']:.1e} (inverse uses R^T and -R^T p)")
    print("\n== Step 2. One orientation, four spellings (tool at Q0) ==")
    print(f"quaternion (w,x,y,z): {fmt_row(sp['quat'])}   |q - mju_mat2Quat| = {sp['quat_err']:.1e}")
    print(f"SciPy as_quat() order (x,y,z,w): {fmt_row(sp['scipy_quat'])}  <- same numbers, scalar last")
    print(f"roll, pitch, yaw (rad): {fmt_row(sp['rpy'])}   |rpy - SciPy as_euler('xyz')| = {sp['rpy_err']:.1e}")
    print(f"SciPy as_euler('XYZ') (intrinsic, a different convention): {fmt_row(sp['XYZ'])}")
    print(f"rotation vector (rad): {fmt_row(sp['rotvec'])}, angle {np.linalg.norm(sp['rotvec']):.4f} rad   "
          f"|w - SciPy as_rotvec| = {sp['rotvec_err']:.1e}")
    print(f"\n== Step 3. Exponential coordinates: round trips over {N_TWISTS} random twists ==")
    print(f"{ex['n']} twists with |w| < pi: |se3_log(se3_exp(V)) - V| max {ex['round_trip']:.1e}; "
          f"|se3_exp - pin.exp6| max {ex['pin']:.1e}")
    print("\n== Step 4. Twists and wrenches between frames (tool at Q0) ==")
    print(f"twist in tool axes  {fmt_row(ad['twist'])} -> world origin, world axes {fmt_row(ad['twist_world'])}  "
          f"|d pin| {ad['twist_pin']:.1e}")
    print(f"wrench in tool axes {fmt_row(ad['wrench'])} -> about world origin {fmt_row(ad['wrench_world'])}  "
          f"|d pin| {ad['wrench_pin']:.1e}")
    print(f"power F.V: tool frame {ad['power_tool']:+.6f} W, world frame {ad['power_world']:+.6f} W")
    print("\n== Step 5. What is not a rotation is refused ==")
    for label, message in rf["messages"].items():
        print(f"{label}: InputError: {message}")
    print(f"orthonormalize(R + noise): |R R^T - I| {rf['ortho']:.1e}, moved {rf['moved']:.1e} from the input; "
          "matrix_to_quat accepts it")


def claims(ch) -> list[Claim]:
    """The track overview's statement about this lesson, measured on the SO-101 chain."""
    return [Claim(LESSON, "a 4x4 matrix moves you between frames; the algebra is matrix multiplication",
                  "T_world_tool = product of 4x4 transforms", f"|product - MuJoCo site pose| = {ch['tool_err']:.1e}",
                  verdict(ch["tool_err"] <= 1e-14), "the product of the chain's 4x4s equals MuJoCo's site pose to "
                  "1e-14", SCRIPT)]


def figure(chain, T_world_joint, T_world_tool, path) -> None:
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
    ax.set(xlabel="x (m)", ylabel="y (m)", zlabel="z (m)",
           title="SO-101 joint frames at q = (0, -0.6, 0.9, 0.4, 0.3)\nx red, y green, z blue")
    ax.set_box_aspect(np.ptp(pts, axis=0) + 0.06)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; seed {SEED}")
    ch = chain_step(m, chain)
    R = ch["T_tool"][:3, :3]
    sp, ex, ad, rf = spellings_step(R), exp_step(), adjoint_step(ch["T_tool"]), refuse_step(R)
    print_steps(chain, ch, sp, ex, ad, rf)
    rows = claims(ch)
    publish_claims(HERE, rows, SCRIPT, heading="The track's statement against this run")
    figure(chain, joint_frames(chain, Q0)[0], ch["T_tool"], HERE / "build_frames.png")
    print("\nfigure: build_frames.png (the SO-101's joint frames at Q0, x red, y green, z blue)")


if __name__ == "__main__":
    run_script(main, __file__)
