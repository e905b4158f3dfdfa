"""Grader of lesson 07's Build it (``physai check 07 DIR``): each function you typed against an independent reference
(np.cross, SciPy's Rotation, MuJoCo's mju_negPose, a twist moved between frames by its definition), with a hint
naming the likely mistake."""

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from physai import transforms as tf
from physai.course.exercise import Hint, close, shaped

OWN = {"skew": ("physai.transforms.skew",), "rodrigues": ("physai.transforms.rotation_about_axis",
                                                        "physai.transforms.so3_exp"),
       "invert_transform": ("physai.transforms.inverse",), "twist_adjoint": ("physai.transforms.adjoint",)}
TOL = 1e-12  # every reference is exact to round-off; 1e-12 leaves room for any sane order of operations
N = 20  # random inputs per check


def _cases(rng, n=N):
    """Random inputs drawn from ``rng``: vectors, unit axes with angles in (-pi, pi), poses, twists; then the edge
    cases: the zero vector, the angle 0 and pi, the identity pose."""
    for _ in range(n):
        v = rng.normal(size=3)
        T = tf.make_transform(Rotation.random(random_state=rng).as_matrix(), 0.3 * rng.normal(size=3))
        yield v, rng.normal(size=3), v / np.linalg.norm(v), rng.uniform(-np.pi, np.pi), T, rng.normal(size=6)
    yield np.zeros(3), rng.normal(size=3), np.array([0.0, 0.0, 1.0]), 0.0, np.eye(4), rng.normal(size=6)
    yield np.array([0.0, 1.0, 0.0]), rng.normal(size=3), np.array([0.0, 1.0, 0.0]), np.pi, np.eye(4), np.zeros(6)


def _close(a, b) -> bool:
    return close(a, b, TOL)


def check_skew(build, rng) -> None:
    for v, u, *_ in _cases(rng):
        S = shaped(build.skew(v), (3, 3), "skew(v)")
        if _close(S @ u, np.cross(v, u)):
            continue
        if _close(S @ u, np.cross(u, v)):
            raise Hint("skew(v) @ u gives u x v: the signs are swapped (you built the transpose, -skew(v))")
        raise Hint("skew(v) @ u differs from np.cross(v, u): the first row is (0, -z, y), the second (z, 0, -x)")


def check_rodrigues(build, rng) -> None:
    for _, _, axis, angle, *_ in _cases(rng):
        R = shaped(build.rodrigues(axis, angle), (3, 3), "rodrigues(axis, angle)")
        ref = Rotation.from_rotvec(angle * axis).as_matrix()
        if _close(R, ref):
            continue
        if _close(R, ref.T):
            raise Hint("a transposed rotation: it turns by -angle (the sign of the sin(angle) K term is flipped)")
        if _close(R, Rotation.from_rotvec(np.radians(angle) * axis).as_matrix()):
            raise Hint("the angle is in radians already: do not convert it from degrees")
        if np.abs(R @ R.T - np.eye(3)).max() > 1e-9:
            raise Hint("not a rotation (R R^T != I): check the (1 - cos(angle)) K @ K term and its sign")
        raise Hint("a rotation, but not this one: R = I + sin(angle) K + (1 - cos(angle)) K @ K with K = skew(axis)")


def check_invert_transform(build, rng) -> None:
    pos, quat = np.zeros(3), np.zeros(4)
    for *_, T, _ in _cases(rng):
        Ti = shaped(build.invert_transform(T), (4, 4), "invert_transform(T)")
        mujoco.mju_negPose(pos, quat, T[:3, 3], tf.matrix_to_quat(T[:3, :3]))
        ref = tf.make_transform(tf.quat_to_matrix(quat), pos)
        if _close(Ti, ref):
            continue
        R, p = T[:3, :3], T[:3, 3]
        if not _close(Ti[:3, :3], ref[:3, :3]):
            hint = "a transposed rotation: the inverse's rotation is R^T, not R" if _close(Ti[:3, :3], R) else \
                "the rotation block of the inverse is R^T"
            raise Hint(hint)
        if _close(Ti[:3, 3], -p):
            raise Hint("translation -p: p is in frame a's axes; bring it into b's axes first: -R^T p")
        if _close(Ti[:3, 3], R.T @ p):
            raise Hint("the sign of the translation: the inverse moves back, -R^T p")
        if _close(Ti[:3, 3], -R @ p):
            raise Hint("translation -R p: a transposed rotation in the translation, it is -R^T p")
        if not _close(Ti[3], [0, 0, 0, 1]):
            raise Hint("the bottom row of a homogeneous transform stays [0, 0, 0, 1]")
        raise Hint("the translation of the inverse is -R^T p")


def check_twist_adjoint(build, rng) -> None:
    for *_, T, twist in _cases(rng):
        Ad = shaped(build.twist_adjoint(T), (6, 6), "twist_adjoint(T)")
        R, p, v, w = T[:3, :3], T[:3, 3], twist[:3], twist[3:]
        ref = np.concatenate([R @ v + np.cross(p, R @ w), R @ w])  # the twist moved to frame a, by definition
        if _close(Ad @ twist, ref):
            continue
        P = tf.skew(p)
        if not (_close(Ad[:3, :3], R) and _close(Ad[3:, 3:], R)):
            raise Hint("both diagonal blocks are R (T's rotation): they turn the axes of v and of w")
        if _close(Ad[3:, :3], P @ R) or _close(Ad[3:, :3], -P @ R):
            raise Hint("skew(p) @ R sits in the lower-left block: that is Modern Robotics' (w, v) order; with "
                       "(v, w) it belongs top-right")
        if _close(Ad[:3, 3:], -P @ R):
            raise Hint("the sign of the skew(p) @ R block: v_a = R v_b + p x (R w_b)")
        if _close(Ad[:3, 3:], R @ P):
            raise Hint("the order in the top-right block: skew(p) @ R, not R @ skew(p) (p is in frame a's axes)")
        raise Hint("Ad = [[R, skew(p) @ R], [0, R]] for a twist (v, w)")


EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "skew": "skew(np.array([1.0, 2.0, 3.0]))",
    "rodrigues": "rodrigues(np.array([0.0, 0.0, 1.0]), np.pi / 2)",
    "invert_transform": "invert_transform(np.array([[0.0, -1, 0, 0.1], [1, 0, 0, 0.2], [0, 0, 1, 0.3], [0, 0, 0, 1]]))",
    "twist_adjoint": "twist_adjoint(np.array([[0.0, -1, 0, 0.1], [1, 0, 0, 0.2], [0, 0, 1, 0.3], [0, 0, 0, 1]]))",
}

MUTATIONS = [
    ("    R, p = T_a_b[:3, :3], T_a_b[:3, 3]\n    T_b_a = np.eye(4)",
     "    T_a_b[:3, 3] *= -1\n    R, p = T_a_b[:3, :3], -T_a_b[:3, 3]\n    T_b_a = np.eye(4)", "in place"),
    ("return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])",
     "return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]], dtype=np.float32)", "float64"),
    ("    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)",
     "    return (np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)).tolist()", "tolist"),
    ("np.eye(3) + np.sin(angle) * K", "np.eye(3) - np.sin(angle) * K", "transposed"),
    ("T_b_a[:3, 3] = -R.T @ p", "T_b_a[:3, 3] = R.T @ p", "sign"),
    ("T_b_a[:3, :3] = R.T", "T_b_a[:3, :3] = R", "transposed"),
    ("Ad[:3, 3:] = skew(p) @ R", "Ad[:3, 3:] = -skew(p) @ R", "sign"),
    ("Ad[:3, 3:] = skew(p) @ R", "Ad[3:, :3] = skew(p) @ R", "lower-left"),
    ("return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])",
     "return np.array([[0.0, z, -y], [-z, 0.0, x], [y, -x, 0.0]])", "swapped"),
]
