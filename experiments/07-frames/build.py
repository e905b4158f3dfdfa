"""Lesson 07, Build it: frames and homogeneous transforms, every conversion checked against SciPy, MuJoCo or Pinocchio.

The four functions in EXERCISE are written here from scratch in NumPy (``physai exercise 07 DIR`` blanks them for
you to type; ``physai check 07 DIR`` grades them); the steps below use them.

Run: uv run python experiments/07-frames/build.py   (writes build_output.txt, results.json and
build_frames.png)
"""

from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

try:
    import pinocchio as pin  # noqa: E402
except ImportError:  # the checks against Pinocchio are left out, and the lesson says how to add them
    pin = None
from physai import robots  # noqa: E402
from physai import transforms as tf  # noqa: E402
from physai.errors import InputError  # noqa: E402
from physai.kinematics import joint_frames  # noqa: E402
from physai.course.lesson import (  # noqa: E402
    Figure,
    fmt_row,
    full_run,
    out_dir,
    run_script,
    save_figure,
    save_results,
)

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
NO_PIN = "Pinocchio is not installed: pip install pin adds this check"
N_TWISTS = 1000
N_CHECK = 200  # random inputs each hand-written function is compared on
NOISE = 1e-6  # size of the noise added to a rotation in Step 5
DRIFTED = f"matrix_to_quat(R + {NOISE:g} noise)"  # Step 5's refused call, as printed
OMEGA_WORLD = np.array([1.0, 0.0, 0.0])  # rad/s about the world x axis: Step 6's angular velocity
SCRIPT = "build.py"

EXERCISE = ("skew", "rodrigues", "invert_transform", "twist_adjoint")


# ---- the functions you type -----------------------------------------------------------------------------------


def skew(v):
    """The cross-product matrix of ``v``: ``skew(v) @ u == np.cross(v, u)``. ``v: (3,)`` -> ``(3, 3)``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rodrigues(axis, angle):
    """Rotation by ``angle`` (rad, right-handed) about the unit ``axis: (3,)`` -> ``(3, 3)``, built from
    ``skew(axis)`` (no SciPy, no physai)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def invert_transform(T_a_b):
    """``T_b_a: (4, 4)`` from ``T_a_b: (4, 4)`` (metres), so that ``T_a_b @ T_b_a`` is the identity; built from
    its rotation ``R`` and translation ``p``, without a general matrix inverse."""
    R, p = T_a_b[:3, :3], T_a_b[:3, 3]
    T_b_a = np.eye(4)
    T_b_a[:3, :3] = R.T
    T_b_a[:3, 3] = -R.T @ p
    return T_b_a


def twist_adjoint(T_a_b):
    """``Ad(T_a_b): (6, 6)`` moving a twist ``(v, w)`` (m/s, rad/s) from frame b to frame a, from the rotation ``R``
    and translation ``p`` of ``T_a_b: (4, 4)``.

    In frame b, ``w`` is the angular velocity in b's axes and ``v`` the velocity of the body point at b's origin;
    ``Ad @ (v, w)`` is the same motion with a's axes and the body point at a's origin.
    """
    R, p = T_a_b[:3, :3], T_a_b[:3, 3]
    Ad = np.zeros((6, 6))
    Ad[:3, :3] = R
    Ad[:3, 3:] = skew(p) @ R
    Ad[3:, 3:] = R
    return Ad


# ---- the steps ------------------------------------------------------------------------------------------------


def random_transform(rng):
    """A random pose (4, 4): a uniform rotation and a translation of about 0.3 m."""
    return tf.make_transform(Rotation.random(random_state=rng).as_matrix(), 0.3 * rng.normal(size=3))


@dataclass(frozen=True)
class Exercise:
    """Step 0: the largest difference of each hand-written function from its reference over ``n`` inputs."""

    n: int
    err: dict[str, float | None]  # twist_adjoint's: None without Pinocchio


def exercise_step(n=N_CHECK) -> Exercise:
    """Step 0: the four hand-written functions against np.cross, SciPy, MuJoCo's mju_negPose and Pinocchio."""
    rng = np.random.default_rng(SEED + 2)
    err = dict.fromkeys(EXERCISE, 0.0)
    pos, quat = np.zeros(3), np.zeros(4)
    for _ in range(n):
        v, u, T = rng.normal(size=3), rng.normal(size=3), random_transform(rng)
        axis, angle = v / np.linalg.norm(v), rng.uniform(-np.pi, np.pi)
        twist = rng.normal(size=6)
        mujoco.mju_negPose(pos, quat, T[:3, 3], tf.matrix_to_quat(T[:3, :3]))
        err["skew"] = max(err["skew"], np.abs(skew(v) @ u - np.cross(v, u)).max())
        err["rodrigues"] = max(err["rodrigues"],
                               np.abs(rodrigues(axis, angle) - Rotation.from_rotvec(angle * axis).as_matrix()).max())
        Ti = invert_transform(T)
        err["invert_transform"] = max(err["invert_transform"], np.abs(Ti[:3, 3] - pos).max(),
                                      np.abs(Ti[:3, :3] - tf.quat_to_matrix(quat)).max())
        if pin is not None:
            err["twist_adjoint"] = max(err["twist_adjoint"],
                                       np.abs(twist_adjoint(T) @ twist - pin.SE3(T).act(pin.Motion(twist)).vector).max())
    return Exercise(n, {k: float(e) if k != "twist_adjoint" or pin is not None else None for k, e in err.items()})


@dataclass(frozen=True)
class FrameRow:
    """One joint frame of Step 1: its body's name, its origin ``p`` (m, world) and ``|p - MuJoCo xpos|``."""

    body: str
    p: np.ndarray
    err: float


@dataclass(frozen=True)
class Chain:
    """Step 1: the chain's joint frames, the tool pose ``T_tool`` (4x4, world) and its checks."""

    rows: tuple[FrameRow, ...]
    tool: str
    T_tool: np.ndarray
    tool_p: np.ndarray
    tool_err: float
    worst_body_err: float
    inverse_err: float
    world_in_tool: np.ndarray


def chain_step(m, chain, q=Q0) -> Chain:
    """Step 1: T_world_tool = T_world_j0 @ M_0 @ T_j0_j1 @ M_1 @ ... @ T_j4_tool, each joint frame vs MuJoCo's
    body position, the tool vs its site; T @ inverse(T) - I."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    T, rows = np.eye(4), []
    for i, name in enumerate(chain.joint_names):
        motion = tf.make_transform(rodrigues(chain.axis_joint[i], q[i] - chain.q_ref[i]), np.zeros(3))
        T = tf.compose(T, chain.T_prev_joint[i], motion)
        body = m.jnt_bodyid[m.joint(name).id]
        rows.append(FrameRow(m.body(body).name, T[:3, 3].copy(), float(np.abs(T[:3, 3] - d.xpos[body]).max())))
    T_tool = tf.compose(T, chain.T_last_tool)
    sid = m.site(chain.tool_name).id
    site = np.eye(4)
    site[:3, :3], site[:3, 3] = d.site_xmat[sid].reshape(3, 3), d.site_xpos[sid]
    T_tool_world = invert_transform(T_tool)
    return Chain(tuple(rows), chain.tool_name, T_tool, T_tool[:3, 3], float(np.abs(T_tool - site).max()),
                 max(r.err for r in rows),
                 float(np.abs(tf.compose(T_tool, T_tool_world) - np.eye(4)).max()), T_tool_world[:3, 3])


@dataclass(frozen=True)
class Spellings:
    """Step 2: one orientation as a quaternion (w, x, y, z), roll-pitch-yaw and a rotation vector (rad), each with
    its difference from MuJoCo or SciPy; ``misread_deg`` the angle (deg) of the scalar-order slip."""

    quat: np.ndarray
    quat_err: float
    scipy_quat: np.ndarray
    rpy: np.ndarray
    rpy_err: float
    XYZ: np.ndarray
    ZYX: np.ndarray  # rad, SciPy's intrinsic "ZYX" angles: roll-pitch-yaw reversed (yaw, pitch, roll)
    rotvec: np.ndarray
    rotvec_err: float
    angle: float
    misread_deg: float


def spellings_step(R) -> Spellings:
    """Step 2: one orientation as a quaternion, roll-pitch-yaw and a rotation vector, against MuJoCo and SciPy; and
    the rotation you get by handing MuJoCo's (w, x, y, z) to SciPy's default (x, y, z, w) reader."""
    mj_quat = np.zeros(4)
    mujoco.mju_mat2Quat(mj_quat, R.ravel())
    rot = Rotation.from_matrix(R)
    quat, rpy, rotvec = tf.matrix_to_quat(R), tf.matrix_to_rpy(R), tf.so3_log(R)
    misread = Rotation.from_quat(quat)  # the order slip: SciPy takes w as x, x as y, y as z, z as w
    return Spellings(quat, float(np.abs(quat - mj_quat).max()), rot.as_quat(), rpy,
                     float(np.abs(rpy - rot.as_euler("xyz")).max()), rot.as_euler("XYZ"), rot.as_euler("ZYX"), rotvec,
                     float(np.abs(rotvec - rot.as_rotvec()).max()), float(np.linalg.norm(rotvec)),
                     float(np.degrees((misread * rot.inv()).magnitude())))


@dataclass(frozen=True)
class RollOffset:
    """Step 2: the tool's roll (rad; ``at_zero_deg`` in degrees) at Q0 with wrist_roll at 0, and ``slope``, the
    change of the roll per radian of wrist_roll (-1: the joint turns about the tool's -x axis)."""

    at_zero: float
    at_zero_deg: float
    slope: float


def roll_step(chain) -> RollOffset:
    """Step 2: why the roll is not wrist_roll's angle: the roll at wrist_roll = 0 (the gripper's mounting) and its
    change per radian of wrist_roll, from two poses that differ only in wrist_roll."""
    q_zero = Q0.copy()
    q_zero[-1] = 0.0
    roll_zero, roll_q0 = (tf.matrix_to_rpy(joint_frames(chain, q)[1][:3, :3])[0] for q in (q_zero, Q0))
    return RollOffset(float(roll_zero), float(np.degrees(roll_zero)), float((roll_q0 - roll_zero) / Q0[-1]))


@dataclass(frozen=True)
class ExpRoundTrip:
    """Step 3: over ``n`` twists, the worst ``|se3_log(se3_exp(V)) - V|`` and ``|se3_exp - pin.exp6|``."""

    n: int
    round_trip: float
    pin: float | None  # None without Pinocchio


def exp_step(n=N_TWISTS) -> ExpRoundTrip:
    """Step 3: se3_exp / se3_log round trips over random twists with |w| < pi, and se3_exp vs pin.exp6."""
    V = np.random.default_rng(SEED).normal(size=(n, 6)) * [0.5, 0.5, 0.5, 1.0, 1.0, 1.0]
    V = V[np.linalg.norm(V[:, 3:], axis=1) < np.pi]
    T = tf.se3_exp(V)
    return ExpRoundTrip(len(V), float(np.abs(tf.se3_log(T) - V).max()),
                        None if pin is None else
                        max(float(np.abs(T[k] - pin.exp6(pin.Motion(V[k, :3], V[k, 3:])).homogeneous).max())
                            for k in range(len(V))))


@dataclass(frozen=True)
class Adjoint:
    """Step 4: a tool-frame twist (m/s, rad/s) and wrench (N, N m) in world terms, their differences from
    Pinocchio, and the power F.V (W) in both frames."""

    twist: np.ndarray
    wrench: np.ndarray
    twist_world: np.ndarray
    wrench_world: np.ndarray
    twist_pin: float | None  # None without Pinocchio
    wrench_pin: float | None
    power_tool: float
    power_world: float


def adjoint_step(T_world_tool) -> Adjoint:
    """Step 4: a tool-frame twist and wrench moved to the world frame with twist_adjoint, vs Pinocchio's SE3.act;
    the power F.V in both frames."""
    twist = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0])  # 5 cm/s along the tool's own z
    wrench = np.array([0.0, 0.0, -2.0, 0.0, 0.0, 0.0])  # 2 N pushing back along tool z, at the tool point
    tw = twist_adjoint(T_world_tool) @ twist
    wr = twist_adjoint(invert_transform(T_world_tool)).T @ wrench  # F_world = Ad(T_tool_world)^T F_tool
    if pin is None:
        return Adjoint(twist, wrench, tw, wr, None, None, float(wrench @ twist), float(wr @ tw))
    M = pin.SE3(T_world_tool)
    return Adjoint(twist, wrench, tw, wr, float(np.abs(tw - M.act(pin.Motion(twist)).vector).max()),
                   float(np.abs(wr - M.act(pin.Force(wrench)).vector).max()), float(wrench @ twist), float(wr @ tw))


@dataclass(frozen=True)
class Approach:
    """Step 4: which of the tool's axes (``axis``: "x", "y" or "z", "-" in front when reversed) points along the fingers, from the gripper body's
    origin to the tool point; that axis (``along``) and the tool's z axis (``z``) in world axes, and the cosine
    between the fingers' direction and that axis."""

    axis: str
    along: np.ndarray
    z: np.ndarray
    cos: float


def approach_step(ch: Chain) -> Approach:
    """Step 4: the tool axis closest to the direction from the gripper body's origin (the last joint frame) to the
    tool point, in world axes."""
    R = ch.T_tool[:3, :3]
    fingers = ch.tool_p - ch.rows[-1].p
    in_tool = R.T @ fingers / np.linalg.norm(fingers)
    k = int(np.argmax(np.abs(in_tool)))
    sign = np.sign(in_tool[k])
    return Approach(("-" if sign < 0 else "") + "xyz"[k], sign * R[:, k], R[:, 2].copy(), float(abs(in_tool[k])))


@dataclass(frozen=True)
class Refusal:
    """Step 5: the refusals' messages (``message`` for the drifted matrix, ``zero_message`` for a zero quaternion),
    the drift ``|R R^T - I|`` before and after orthonormalize, how far it moved the matrix, and the accepted
    quaternion."""

    message: str | None
    zero_message: str | None
    noise: float
    tol: float
    drift: float
    ortho: float
    moved: float
    accepted: np.ndarray


def _refusal(call) -> str | None:
    """The message of the InputError ``call()`` raises (None when it accepts)."""
    try:
        call()
    except InputError as exc:
        return str(exc)
    return None


def refuse_step(R) -> Refusal:
    """Step 5: what is not a rotation is refused (the messages); orthonormalize repairs a drifted matrix."""
    drifted = R + NOISE * np.random.default_rng(SEED + 1).normal(size=(3, 3))
    fixed = tf.orthonormalize(drifted)
    return Refusal(_refusal(lambda: tf.matrix_to_quat(drifted)), _refusal(lambda: tf.quat_to_matrix(np.zeros(4))),
                   NOISE, tf.ROTATION_TOL, float(np.abs(drifted @ drifted.T - np.eye(3)).max()),
                   float(np.abs(fixed @ fixed.T - np.eye(3)).max()), float(np.abs(fixed - drifted).max()),
                   tf.matrix_to_quat(fixed))


@dataclass(frozen=True)
class Rates:
    """Step 6: one angular velocity ``omega_world`` (rad/s, world axes) in the tool's axes (``body``) and as
    roll-pitch-yaw rates (``rpy_rates``, rad/s), and the norm of their difference."""

    omega_world: np.ndarray
    body: np.ndarray
    rpy_rates: np.ndarray
    gap: float


def rates_step(R, omega_world=OMEGA_WORLD) -> Rates:
    """Step 6: one angular velocity (world axes) written in the tool's axes (the body twist's angular part, R^T w)
    and as roll-pitch-yaw rates (B(phi)^-1 w, what an analytic Jacobian's rows hold): two different vectors."""
    body = R.T @ omega_world
    rpy_rates = np.linalg.solve(tf.rpy_rate_matrix(tf.matrix_to_rpy(R)), omega_world)
    return Rates(omega_world, body, rpy_rates, float(np.linalg.norm(body - rpy_rates)))


@dataclass(frozen=True)
class Broken:
    """Break it: MuJoCo's tool point (m, world) with every joint at zero; the chain's fixed factors multiplied in
    ``break_step``'s order (``home``) and right-to-left (``reversed``), each with its distance (m) from MuJoCo's; and
    ``|T @ T_inv - I|`` for an inverse that keeps R."""

    site: np.ndarray
    home: np.ndarray
    home_gap: float
    reversed: np.ndarray
    order_gap: float
    untransposed_err: float


def break_step(m, chain, T_world_tool) -> Broken:
    """Break it: the chain's fixed factors (every joint at zero) against MuJoCo's site, multiplied left-to-right and
    right-to-left; and an inverse that keeps R instead of R^T."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = chain.q_ref
    mujoco.mj_kinematics(m, d)
    site = d.site_xpos[m.site(chain.tool_name).id].copy()
    home = tf.compose(*chain.T_prev_joint, chain.T_last_tool)[:3, 3]  # the line Break it reverses
    reversed_p = tf.compose(chain.T_last_tool, *chain.T_prev_joint[::-1])[:3, 3]
    R, p = T_world_tool[:3, :3], T_world_tool[:3, 3]
    bad = tf.make_transform(R, -R @ p)
    return Broken(site, home, float(np.linalg.norm(home - site)), reversed_p, float(np.linalg.norm(reversed_p - site)),
                  float(np.abs(T_world_tool @ bad - np.eye(4)).max()))


@dataclass(frozen=True)
class Swap:
    """The first quiz at Q0: the elbow's origin (m, world) from ``T_world_shoulder @ T_shoulder_elbow`` (``right``)
    and from the swapped product (``swapped``), and the distance between them (m). Shoulder and elbow are the
    bodies ``shoulder`` and ``lower_arm`` (joints shoulder_pan and elbow_flex)."""

    shoulder: str
    elbow: str
    right: np.ndarray
    swapped: np.ndarray
    gap: float


def swap_step(chain, q=Q0) -> Swap:
    """The first quiz: T_world_elbow from the shoulder's and elbow's joint frames, multiplied in both orders."""
    frames = joint_frames(chain, q)[0]
    i, j = chain.joint_index("shoulder_pan"), chain.joint_index("elbow_flex")
    T_world_shoulder, T_world_elbow = frames[i], frames[j]
    T_shoulder_elbow = tf.compose(invert_transform(T_world_shoulder), T_world_elbow)
    right = tf.compose(T_world_shoulder, T_shoulder_elbow)[:3, 3]
    swapped = tf.compose(T_shoulder_elbow, T_world_shoulder)[:3, 3]
    return Swap("shoulder", "lower_arm", right, swapped, float(np.linalg.norm(swapped - right)))


# ---- printing, figure ------------------------------------------------------------------------------------------


def print_steps(chain, ex, ch, sp, xp, ad, rf, rt, br) -> None:
    print(f"\n== Step 0. Your functions against the references ({ex.n} random inputs each) ==")
    refs = {"skew": "np.cross", "rodrigues": "SciPy Rotation.from_rotvec", "invert_transform": "MuJoCo mju_negPose",
            "twist_adjoint": "Pinocchio SE3.act(Motion)"}
    for name, e in ex.err.items():
        print(f"{name:17s} vs {refs[name]:27s} " + (NO_PIN if e is None else f"max |difference| {e:.1e}"))
    print("\n== Step 1. A chain of transforms: T_world_tool = T_world_j0 @ M_0 @ T_j0_j1 @ M_1 @ ... @ T_j4_tool ==")
    print(f"{'frame':>14s} {'x':>8s} {'y':>8s} {'z':>8s}   |p - MuJoCo xpos|")
    for row in ch.rows:
        print(f"{row.body:>14s} {fmt_row(row.p)}   {row.err:.1e}")
    print(f"{chain.tool_name:>14s} {fmt_row(ch.T_tool[:3, 3])}   {ch.tool_err:.1e} (whole 4x4 vs the site)")
    # T @ T_inv = I holds only for the one inverse, which is R^T and -R^T p: the label is printed only then
    how = "(R^T and -R^T p)" if ch.inverse_err < 1e-12 else "(not the inverse)"
    print(f"T_world_tool @ invert_transform(T_world_tool) - I: {ch.inverse_err:.1e} {how}; the world "
          f"origin in tool coordinates: {fmt_row(ch.world_in_tool)}")
    print("\n== Step 2. One orientation, four spellings (tool at Q0) ==")
    print(f"quaternion (w,x,y,z): {fmt_row(sp.quat)}   |q - mju_mat2Quat| = {sp.quat_err:.1e}")
    print(f"SciPy as_quat() order (x,y,z,w): {fmt_row(sp.scipy_quat)}  <- same numbers, scalar last")
    print(f"roll, pitch, yaw (rad): {fmt_row(sp.rpy)}   |rpy - SciPy as_euler('xyz')| = {sp.rpy_err:.1e}")
    print(f"SciPy as_euler('XYZ') (intrinsic, a different convention): {fmt_row(sp.XYZ)}")
    print(f"SciPy as_euler('ZYX') (intrinsic, the same rotation as 'xyz' with the angles reversed): {fmt_row(sp.ZYX)}")
    print(f"rotation vector (rad): {fmt_row(sp.rotvec)}, angle {sp.angle:.4f} rad   "
          f"|w - SciPy as_rotvec| = {sp.rotvec_err:.1e}")
    print(f"(w,x,y,z) handed to SciPy's default from_quat (x,y,z,w): a rotation {sp.misread_deg:.1f} deg away")
    print(f"\n== Step 3. Exponential coordinates: round trips over {N_TWISTS} random twists ==")
    print(f"{xp.n} twists with |w| < pi: |se3_log(se3_exp(V)) - V| max {xp.round_trip:.1e}; "
          + (f"|se3_exp - pin.exp6| max {xp.pin:.1e}" if xp.pin is not None else f"se3_exp vs pin.exp6: {NO_PIN}"))
    print("\n== Step 4. Twists and wrenches between frames with twist_adjoint (tool at Q0) ==")
    print(f"twist in tool axes  {fmt_row(ad.twist)} -> world origin, world axes {fmt_row(ad.twist_world)}  "
          + (f"|d pin| {ad.twist_pin:.1e}" if pin is not None else ""))
    print(f"wrench in tool axes {fmt_row(ad.wrench)} -> about world origin {fmt_row(ad.wrench_world)}  "
          + (f"|d pin| {ad.wrench_pin:.1e}" if pin is not None else f"\n{NO_PIN}"))
    print(f"power F.V: tool frame {ad.power_tool:+.6f} W, world frame {ad.power_world:+.6f} W")
    print("\n== Step 5. What is not a rotation is refused ==")
    for label, message in [(DRIFTED, rf.message), ("quat_to_matrix([0, 0, 0, 0])", rf.zero_message)]:
        print(f"{label}: InputError: {message}")
    print(f"orthonormalize(R + noise): |R R^T - I| {rf.drift:.1e} -> {rf.ortho:.1e}, moved {rf.moved:.1e} "
          "from the input; matrix_to_quat accepts it")
    print(f"\n== Step 6. One angular velocity, w = {fmt_row(rt.omega_world, 4, 0)} rad/s (world axes) ==")
    print(f"in the tool's axes (body twist, R^T w):      {fmt_row(rt.body)}")
    print(f"as roll-pitch-yaw rates (B(phi)^-1 w):       {fmt_row(rt.rpy_rates)}   |difference| {rt.gap:.4f}")
    print_break(br)


def print_break(br) -> None:
    print("\n== Break it ==")
    print(f"MuJoCo's tool site with every joint at zero: {fmt_row(br.site)}")
    print(f"break_step's product of the fixed factors: tool at {fmt_row(br.home)}, {br.home_gap:.4f} m from MuJoCo's")
    print(f"an inverse that keeps R instead of R^T: |T @ T_inv - I| = {br.untransposed_err:.4f}")


def figure(chain, bodies, T_world_joint, T_world_tool, path) -> None:
    """Each joint frame labelled as the page's table names it (its body), seen from the side (along +y: the arm at
    Q0 stays within 2 cm of y = 0), in a type large enough to read on a phone."""
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    frames = [np.eye(4), *T_world_joint, T_world_tool]
    labels = ["world", *bodies, chain.tool_name]
    pts = np.array([T[:3, 3] for T in frames])
    ax.plot(pts[:, 0], pts[:, 2], color="0.5", lw=1.5, zorder=1)
    for T, label in zip(frames, labels):
        for k, c in enumerate("rgb"):  # each axis's x and z components: a y axis pointing at you looks short
            ax.annotate("", T[[0, 2], 3] + 0.035 * T[[0, 2], k], T[[0, 2], 3],
                        arrowprops=dict(arrowstyle="-|>", color=c, lw=2.2, mutation_scale=12), zorder=3)
        left = T[0, 3] < 0.1  # labels left of the frames near the base, right of the rest, the tool's below it
        # the wrist's label goes above it: on its right it would sit by the gripper's triad
        dx, dz, ha, va = ((0.0, -0.035, "center", "top") if label == chain.tool_name
                          else (0.0, 0.025, "center", "bottom") if label == "wrist"
                          else (-0.03 if left else 0.03, 0.0, "right" if left else "left", "center"))
        ax.text(T[0, 3] + dx, T[2, 3] + dz, label, fontsize=14, ha=ha, va=va, zorder=4,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=0.5))
    # the limits follow the frames and their labels, so no empty band wastes the width
    ax.set(xlim=(pts[:, 0].min() - 0.15, pts[:, 0].max() + 0.12), ylim=(-0.03, 0.28), aspect="equal")
    ax.set_xlabel("x (m)", fontsize=12)
    ax.set_ylabel("z (m)", fontsize=12)
    ax.set_title("seen from the side; x red, y green, z blue", fontsize=12)
    ax.tick_params(labelsize=11)
    ax.grid(color="0.9")
    fig.tight_layout()
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def main(full: bool = False) -> dict:
    """The lesson's build steps, printed; their numbers (returned) and figure saved. ``full``: no larger
    size here."""
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; seed {SEED}")
    ex, ch = exercise_step(), chain_step(m, chain)
    R = ch.T_tool[:3, :3]
    sp, xp, ad, rf, rt = spellings_step(R), exp_step(), adjoint_step(ch.T_tool), refuse_step(R), rates_step(R)
    br, sw, ap = break_step(m, chain, ch.T_tool), swap_step(chain), approach_step(ch)
    print_steps(chain, ex, ch, sp, xp, ad, rf, rt, br)
    print(f"first quiz: the {sw.elbow} (elbow) origin from T_world_shoulder @ T_shoulder_elbow {fmt_row(sw.right)}; "
          f"swapped {fmt_row(sw.swapped)}, {sw.gap:.4f} m away")
    ro = roll_step(chain)
    print(f"Step 2: roll at wrist_roll = 0: {ro.at_zero:.4f} rad ({ro.at_zero_deg:.1f} deg); per rad of wrist_roll "
          f"{ro.slope:+.4f}")
    print(f"Step 4: along the fingers is the tool's {ap.axis} axis, {fmt_row(ap.along)} in world axes (cos "
          f"{ap.cos:.3f}); its z axis is {fmt_row(ap.z)}")
    figure(chain, [row.body for row in ch.rows], joint_frames(chain, Q0)[0], ch.T_tool, HERE / "build_frames.png")
    figures = [
        Figure("build_frames.png",
               "The SO-101's joint frames at Q0 seen from the side, from the world through each joint to the tool, "
               "with x red, y green and z blue; axes along y point into the page and look short.",
               "Side view (x across, z up) of the SO-101's frames at the pose Q0: the world frame at the origin, one "
               "red-green-blue triad per joint along a grey polyline, each labelled with its body's name as in the "
               "table, and the gripperframe tool triad at the end of the chain, tilted downward; axes pointing "
               "towards or away from the viewer look short."),
    ]
    return save_results(HERE, SCRIPT, {"q0": Q0, "exercise": ex, "chain": ch, "spell": sp, "roll": ro, "exp": xp, "adjoint": ad,
                                       "refuse": rf, "rates": rt, "break": br, "swap": sw, "approach": ap,
                                       "pinocchio": pin is not None},
                        figures=figures)


if __name__ == "__main__":
    run_script(main, __file__, full_run())
