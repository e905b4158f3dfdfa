"""Grader of lesson 08's Build it (``physai check 08 DIR``): your walk of the SO-101 chain against MuJoCo's own
kinematics (``xpos``, ``xmat``, ``xaxis``, ``xanchor``, the site), with a hint naming the likely mistake."""

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from physai import transforms as tf
from physai.course.exercise import Hint, arms, close, parts, poses, shaped

TOL = 1e-12  # MuJoCo and a correct walk agree to ~1e-15; 1e-12 leaves room for any order of the products
OWN = {"walk_chain": ("physai.kinematics.fk", "physai.kinematics.joint_frames", "physai.kinematics.tool_pose"),
       "axes_and_anchors": ("physai.kinematics.fk",)}


def _mujoco(m, chain, q):
    """MuJoCo's joint frames (n, 4, 4) (the joint body's rotation, origin at the joint's anchor), world axes and
    anchors (n, 3) and the tool site (4, 4) at ``q``."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    jids = [m.joint(name).id for name in chain.joint_names]
    frames = tf.make_transform(d.xmat[m.jnt_bodyid[jids]].reshape(-1, 3, 3), d.xanchor[jids])
    sid = m.site(chain.tool_name).id
    site = tf.make_transform(d.site_xmat[sid].reshape(3, 3), d.site_xpos[sid])
    return frames, d.xaxis[jids].copy(), d.xanchor[jids].copy(), site


def _close(a, b) -> bool:
    return close(a, b, TOL)


def _rotation(axis, angle) -> np.ndarray:
    return tf.make_transform(Rotation.from_rotvec(angle * np.asarray(axis)).as_matrix(), np.zeros(3))


def check_joint_transform(build, rng) -> None:
    for arm in arms(rng):  # MuJoCo's pose of each joint frame in the previous one is the reference
        chain = arm.chain
        for q in poses(chain, rng):
            frames, *_ = _mujoco(arm.model, chain, q)
            for i in range(chain.n):
                T_prev = np.eye(4) if i == 0 else frames[i - 1]
                ref = tf.inverse(T_prev) @ frames[i]
                T_prev_joint, axis, angle = chain.T_prev_joint[i], chain.axis_joint[i], q[i] - chain.q_ref[i]
                out = shaped(build.joint_transform(np.array(T_prev_joint), np.array(axis), angle), (4, 4),
                             "joint_transform(T_prev_joint, axis, angle)")
                if _close(out, ref):
                    continue
                M = _rotation(axis, angle)
                where = f"{arm.label}, joint {chain.joint_names[i]} (axis {np.round(axis, 3)})"
                if _close(out, M @ T_prev_joint):
                    raise Hint(f"{where}: wrong multiplication order: the placement first, then the joint's own "
                               "motion (T_prev_joint @ M, not M @ T_prev_joint)")
                if _close(out, T_prev_joint @ M.T):
                    raise Hint(f"{where}: a transposed rotation: the joint turns by -angle (check the sign of the "
                               "sin term)")
                if _close(out, T_prev_joint):
                    raise Hint(f"{where}: the joint's own motion is missing: multiply T_prev_joint by the rotation "
                               "about axis")
                if _close(out, T_prev_joint @ _rotation([0, 0, 1], angle)):
                    raise Hint(f"{where}: the rotation is about z whatever the axis: turn about the joint's own "
                               "axis (the WidowX AI's are z, y, -y, -y, -z, x)")
                raise Hint(f"{where}: not MuJoCo's pose of the joint frame in its parent; expected "
                           "T_prev_joint @ [[Rot(axis, angle), 0], [0, 1]]")


def _cases(rng):
    """Each arm at its poses: ``(chain, q, MuJoCo's frames, axes, anchors and site at q, where)``."""
    for arm in arms(rng):
        for q in poses(arm.chain, rng):
            yield arm.chain, q, _mujoco(arm.model, arm.chain, q), f"{arm.label} at q = {np.round(q, 3)}"


def check_walk_chain(build, rng) -> None:
    for chain, q, (ref, _, _, site), where in _cases(rng):
        out = parts(build.walk_chain(chain, q), 2, "walk_chain", "(T_world_joint (n, 4, 4), T_world_tool (4, 4))")
        frames = shaped(out[0], (chain.n, 4, 4), "walk_chain(...)[0]")
        tool = shaped(out[1], (4, 4), "walk_chain(...)[1]")
        if not _close(frames, ref):
            raise Hint(f"{where}: {_transform_fails(build, rng)}{_walk_mistake(chain, q, frames, ref)}")
        if _close(tool, frames[-1]):
            raise Hint(f"{where}: the tool is the last joint frame times T_last_tool (the tool offset is missing)")
        if not _close(tool, site):
            raise Hint(f"{where}: the joint frames are right but the tool is not: T_world_tool = "
                       "T_world_joint[-1] @ T_last_tool")


def _transform_fails(build, rng) -> str:
    """'' if the learner's joint_transform passes its own check, else the lead of a hint saying so."""
    try:
        check_joint_transform(build, rng)
    except Hint:
        return "joint_transform fails its own check and walk_chain calls it, so fix joint_transform first; then: "
    return ""


def _walk(chain, angles, backwards=False) -> np.ndarray:
    """The joint frames of ``chain`` with joint i turned by ``angles[i]`` (optionally multiplied on the left)."""
    T, frames = np.eye(4), []
    for i in range(chain.n):
        step = chain.T_prev_joint[i] @ _rotation(chain.axis_joint[i], angles[i])
        T = step @ T if backwards else T @ step
        frames.append(T)
    return np.array(frames)


def _walk_mistake(chain, q, frames, ref) -> str:
    """The likeliest slip that produced ``frames`` instead of MuJoCo's ``ref``."""
    if _close(frames[1:], ref[:-1]):
        return ("off-by-one frame: frame i is joint i-1's frame (one joint early); record the frame after "
                "multiplying by joint i's transform")
    if _close(frames[:-1], ref[1:]):
        return "off-by-one frame: frame i is joint i+1's frame (one joint late)"
    if _close(frames[:, :3, 3], ref[:, :3, 3]):
        return "positions right, rotations wrong: record each frame after the joint's own rotation"
    if _close(frames, _walk(chain, q - chain.q_ref, backwards=True)):
        return ("wrong multiplication order: each new joint goes on the right, T_world_joint_i = "
                "T_world_joint_(i-1) @ T_prev_this")
    if _close(frames, _walk(chain, q)) or _close(frames, _walk(chain, q + chain.q_ref)):
        return "q_ref is left out: joint i turns by q[i] - chain.q_ref[i] (nonzero on this arm)"
    if _close(frames[0], ref[0]):
        return "the first frame is right, later ones are not: carry T forward (T = T @ joint transform)"
    return "frame 0 is wrong already: T_world_joint_0 = T_prev_joint[0] @ Rot(axis_0, q_0 - q_ref_0)"


def check_axes_and_anchors(build, rng) -> None:
    for chain, _, (frames, axes_ref, anchors_ref, _), where in _cases(rng):
        out = parts(build.axes_and_anchors(chain, frames), 2, "axes_and_anchors", "(axes (n, 3), anchors (n, 3))")
        axes = shaped(out[0], (chain.n, 3), "axes_and_anchors(...)[0]")
        anchors = shaped(out[1], (chain.n, 3), "axes_and_anchors(...)[1]")
        if not _close(axes, axes_ref):
            if _close(axes, chain.axis_joint):
                raise Hint(f"{where}: the axes are still in each joint's own frame: turn them into world axes "
                           "with the frame's rotation, R_world_joint @ axis_joint")
            if _close(axes, np.einsum("nji,nj->ni", frames[:, :3, :3], chain.axis_joint)):
                raise Hint(f"{where}: a transposed rotation: world axis = R @ axis_joint, not R^T @ axis_joint")
            if _close(axes, frames[:, :3, 2]):
                raise Hint(f"{where}: the frame's z column is the axis only where axis_joint is (0, 0, 1); use "
                           "R_world_joint @ chain.axis_joint[i] (the WidowX AI's axes include y, -y and x)")
            if _close(axes[:-1], axes_ref[1:]):
                raise Hint(f"{where}: off-by-one frame: joint i's axis is read from joint i+1's frame")
            raise Hint(f"{where}: axis i is frames[i][:3, :3] @ chain.axis_joint[i]")
        if not _close(anchors, anchors_ref):
            if _close(anchors[:-1], anchors_ref[1:]):
                raise Hint(f"{where}: off-by-one frame: joint i's anchor is read from joint i+1's frame")
            raise Hint(f"{where}: anchor i is the origin of frame i: frames[i][:3, 3]")


EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "joint_transform": "joint_transform(np.eye(4), np.array([0.0, 1.0, 0.0]), 0.5)",
    "walk_chain": "walk_chain(robots.load(\"so101\"), np.array([0.0, -0.6, 0.9, 0.4, 0.3]))[1]  # the tool's pose",
    "axes_and_anchors": "axes_and_anchors(robots.load(\"so101\"), walk_chain(robots.load(\"so101\"), np.zeros(5))[0])",
}

MUTATIONS = [
    ("        T = T @ joint_transform(chain.T_prev_joint[i], chain.axis_joint[i], q[i] - chain.q_ref[i])\n"
     "        frames.append(T)\n",
     "        q[i] -= chain.q_ref[i]\n"
     "        T = T @ joint_transform(chain.T_prev_joint[i], chain.axis_joint[i], q[i])\n"
     "        frames.append(T)\n", "in place"),
    ("tf.rotation_about_axis(axis, angle)", "tf.rotation_about_axis(axis, -angle)", "transposed"),
    ("tf.rotation_about_axis(axis, angle)", "tf.rotation_about_axis([0.0, 0.0, 1.0], angle)", "about z"),
    ("q[i] - chain.q_ref[i])\n        frames.append(T)", "q[i])\n        frames.append(T)", "q_ref"),
    ("axes = np.array([T[:3, :3] @ a for T, a in zip(T_world_joint, chain.axis_joint)])",
     "axes = T_world_joint[:, :3, 2]", "z column"),
    ("return T_prev_joint @ M", "return M @ T_prev_joint", "order"),
    ("axes = np.array([T[:3, :3] @ a for", "axes = np.array([T[:3, :3].T @ a for", "transposed"),
    ("        T = T @ joint_transform(chain.T_prev_joint[i], chain.axis_joint[i], q[i] - chain.q_ref[i])\n"
     "        frames.append(T)\n",
     "        frames.append(T)\n"
     "        T = T @ joint_transform(chain.T_prev_joint[i], chain.axis_joint[i], q[i] - chain.q_ref[i])\n",
     "off-by-one"),
    ("return np.array(frames), T @ chain.T_last_tool", "return np.array(frames), T", "tool offset"),
]
