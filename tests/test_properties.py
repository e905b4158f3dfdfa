"""Properties that must hold for every input, checked with hypothesis on random arms and random poses.

References: MuJoCo (random MJCF chains compiled by MuJoCo itself), central differences, the identity
of a rigid transform with its inverse, and the batch == loop identity. Examples are derandomized so
CI sees the same cases every run; tolerances come from the numerics and are derived beside each check.
"""

import mujoco
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from conftest import mj_site

from physai import mj
from physai import transforms as tf
from physai.ik import solve_ik
from physai.kinematics import (
    chain_from_mujoco,
    fd_jacobian,
    fk,
    jacobian,
    joint_frames,
    tool_pose,
    tool_pose_and_jacobian,
)

FEW = settings(max_examples=25, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow])

coord = st.floats(-0.4, 0.4, allow_nan=False, allow_infinity=False)
vec3 = st.tuples(coord, coord, coord)
direction = st.tuples(*[st.floats(-1, 1)] * 3).filter(lambda v: np.linalg.norm(v) > 0.1)
quaternion = st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda v: np.linalg.norm(v) > 0.1)


def _attr(values) -> str:
    return " ".join(repr(float(v)) for v in values)  # repr round-trips, so MuJoCo parses the same doubles


@st.composite
def mjcf_arms(draw, unlimited_hinges=False):
    """MJCF text of a random serial arm: 1-4 bodies with random poses, 0-2 hinge/slide joints each, a tool site."""
    n_bodies = draw(st.integers(1, 4))
    bodies, n_joints = [], 0
    for b in range(n_bodies):
        joints = []
        for k in range(draw(st.integers(0, 2)) or (1 if b == n_bodies - 1 and n_joints == 0 else 0)):
            jtype = draw(st.sampled_from(["hinge", "slide"]))
            limited = jtype == "slide" or (not unlimited_hinges and draw(st.booleans()))
            lo = draw(st.floats(-2.0, 0.0))
            rng = f' range="{_attr([lo, lo + draw(st.floats(0.2, 3.0))])}"' if limited else ' limited="false"'
            joints.append(f'<joint name="j{b}_{k}" type="{jtype}" axis="{_attr(draw(direction))}" '
                          f'pos="{_attr(draw(vec3))}" ref="{draw(st.floats(-1, 1))!r}"{rng}/>')
            n_joints += 1
        bodies.append(f'<body name="b{b}" pos="{_attr(draw(vec3))}" quat="{_attr(draw(quaternion))}">'
                      + "".join(joints) + '<geom size=".02"/>')
    site = f'<site name="tool" pos="{_attr(draw(vec3))}" quat="{_attr(draw(quaternion))}"/>'
    # armature keeps the mass matrix regular, so MuJoCo's compiler neither warns nor writes MUJOCO_LOG.TXT
    return ('<mujoco><compiler angle="radian" autolimits="true"/><default><joint armature="0.01"/></default><worldbody>'
            + "".join(bodies) + site + "</body>" * n_bodies + "</worldbody></mujoco>")


def arm(xml):
    m = mujoco.MjModel.from_xml_string(xml)
    return m, chain_from_mujoco(m, "tool")


def q_inside_limits(data, chain, margin=0.0):
    """One ``q`` inside the limits (shrunk by ``margin``); unlimited joints in [-pi, pi]."""
    lo = np.where(np.isfinite(chain.lower), chain.lower + margin, -np.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper - margin, np.pi)
    return np.array([data.draw(st.floats(a, b)) for a, b in zip(lo, hi)])


# ---- random arms against MuJoCo -------------------------------------------------------------------


@FEW
@given(xml=mjcf_arms(), data=st.data())
def test_random_arm_pose_and_jacobian_equal_mujoco(xml, data):
    m, chain = arm(xml)
    q = q_inside_limits(data, chain)
    p_mj, R_mj, J_mj = mj_site(m, chain, q)
    T, J = tool_pose(chain, q), jacobian(chain, q)
    # coordinates below ~2 m, four chained 4x4 products: round-off ~ 1e-15, MuJoCo uses its own quaternion path
    assert np.abs(T[:3, 3] - p_mj).max() <= 1e-13
    assert np.abs(T[:3, :3] - R_mj).max() <= 1e-13
    assert np.abs(J - J_mj).max() <= 1e-13


# ---- central differences --------------------------------------------------------------------------

EPS = 1e-5


def angular_fd(chain, q):
    """Angular rows by central differences: omega_i = vee(dR/dq_i R^T)."""
    R = tool_pose(chain, q)[:3, :3]
    dR = fd_jacobian(lambda x: tool_pose(chain, x)[:3, :3].ravel(), q, EPS).T.reshape(-1, 3, 3)
    return tf.vee(dR @ R.T).T


def assert_jacobian_matches_central_differences(chain, q):
    J = jacobian(chain, q)
    # error of a central difference: eps^2/6 |f'''| + eps_mach |f| / eps ~ 1.7e-11 |f'''| + 2e-11 |f| for
    # reach and derivatives of order 1 (m, rad); 150 random arms measured at most 4.2e-11
    assert np.abs(fd_jacobian(lambda x: fk(chain, x).p, q, EPS) - J[:3]).max() <= 1e-10
    assert np.abs(angular_fd(chain, q) - J[3:]).max() <= 1e-10


@FEW
@given(xml=mjcf_arms(), data=st.data())
def test_random_arm_jacobian_matches_central_differences_inside_limits(xml, data):
    _, chain = arm(xml)
    assert_jacobian_matches_central_differences(chain, q_inside_limits(data, chain, margin=EPS))


@FEW
@given(data=st.data())
def test_so101_jacobian_matches_central_differences_inside_limits(so101, data):
    assert_jacobian_matches_central_differences(so101, q_inside_limits(data, so101, margin=EPS))


# ---- periodicity ----------------------------------------------------------------------------------


@FEW
@given(xml=mjcf_arms(unlimited_hinges=True), data=st.data())
def test_pose_is_invariant_to_whole_turns_of_unlimited_hinges(xml, data):
    _, chain = arm(xml)
    q = q_inside_limits(data, chain)
    turns = np.array([data.draw(st.integers(-3, 3)) if t == "hinge" else 0 for t in chain.joint_types])
    # sin/cos of an angle near 6 pi carry ~ulp(20) ~ 4e-15 of argument error
    assert np.abs(tool_pose(chain, q + 2 * np.pi * turns) - tool_pose(chain, q)).max() <= 1e-13


# ---- batched == looped ----------------------------------------------------------------------------


@FEW
@given(shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), seed=st.integers(0, 2**32 - 1))
def test_batched_calls_equal_looped_calls_for_any_batch_shape(so101, shape, seed):
    qs = so101.random_q(np.random.default_rng(seed), shape)
    T, J = tool_pose_and_jacobian(so101, qs)
    frames, _ = joint_frames(so101, qs)
    axes, anchors, p = fk(so101, qs)
    assert T.shape == shape + (4, 4) and J.shape == shape + (6, 5) and frames.shape == shape + (5, 4, 4)
    assert axes.shape == anchors.shape == shape + (5, 3) and p.shape == shape + (3,)
    for idx in np.ndindex(*shape):
        np.testing.assert_array_equal(T[idx], tool_pose(so101, qs[idx]))
        np.testing.assert_array_equal(J[idx], jacobian(so101, qs[idx]))
        np.testing.assert_array_equal(frames[idx], joint_frames(so101, qs[idx])[0])
        np.testing.assert_array_equal(anchors[idx], fk(so101, qs[idx]).anchors)


# ---- transforms -----------------------------------------------------------------------------------

translation_10m = st.tuples(*[st.floats(-10, 10)] * 3)


@st.composite
def rigid_transforms(draw):
    return tf.make_transform(tf.quat_to_matrix(np.array(draw(quaternion))), np.array(draw(translation_10m)))


@settings(FEW, max_examples=60)
@given(T=rigid_transforms())
def test_transform_times_its_inverse_is_identity(T):
    # |p| <= 17 m: R^T p and its product with R each round off ~ 3 * 17 * 1.1e-16 ~ 6e-15
    assert np.abs(T @ tf.inverse(T) - np.eye(4)).max() <= 2e-14
    assert np.abs(tf.compose(tf.inverse(T), T) - np.eye(4)).max() <= 2e-14
    assert np.abs(tf.inverse(tf.inverse(T)) - T).max() <= 2e-14


@settings(FEW, max_examples=60)
@given(T=rigid_transforms())
def test_se3_exp_of_log_is_the_transform(T):
    # angles up to pi and |p| <= 17 m: G(w)^-1 p then G(w) v each round off ~ 17 * few eps
    assert np.abs(tf.se3_exp(tf.se3_log(T)) - T).max() <= 1e-13


@settings(FEW, max_examples=60)
@given(v=translation_10m, w=direction, angle=st.floats(0.0, 3.0))
def test_se3_log_of_exp_is_the_twist_below_pi(v, w, angle):
    twist = np.r_[v, angle * np.array(w) / np.linalg.norm(w)]
    assert np.abs(tf.se3_log(tf.se3_exp(twist)) - twist).max() <= 1e-12


@settings(FEW, max_examples=60)
@given(q=quaternion)
def test_quaternion_round_trip_up_to_sign(q):
    q = np.array(q) / np.linalg.norm(q)
    back = tf.matrix_to_quat(tf.quat_to_matrix(q))
    assert min(np.abs(back - q).max(), np.abs(back + q).max()) <= 1e-14
    R = tf.quat_to_matrix(q)
    assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-15 * 4 and abs(np.linalg.det(R) - 1) <= 1e-14


@settings(FEW, max_examples=60)
@given(axis=direction, angle=st.floats(-10, 10), v=vec3)
def test_rodrigues_is_a_rotation_and_skew_matches_cross(axis, angle, v):
    a = np.array(axis) / np.linalg.norm(axis)
    R = tf.rotation_about_axis(a, angle)
    assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-14 and abs(np.linalg.det(R) - 1) <= 1e-14
    assert np.abs(R @ a - a).max() <= 1e-14  # the axis is fixed
    assert np.abs(tf.skew(a) @ np.array(v) - np.cross(a, v)).max() <= 1e-15
    np.testing.assert_array_equal(tf.vee(tf.skew(np.array(v))), np.array(v))


# ---- inverse kinematics round trip ----------------------------------------------------------------


@settings(FEW, max_examples=15)
@given(data=st.data())
def test_ik_round_trip_reaches_the_pose_of_a_random_q_checked_in_mujoco(so101, so101_model, data):
    # q -> T = FK(q) -> solve_ik -> MuJoCo's site pose at the solution: a target made by FK is reachable,
    # so the solver must converge; the check uses MuJoCo, not physai's FK, and the solver's own tolerances
    T_target = tool_pose(so101, q_inside_limits(data, so101, margin=0.05))
    r = solve_ik(so101, T_target, rng=np.random.default_rng(0))
    T_mj = mj.site_pose(so101_model, so101, r.q)
    assert r.converged
    assert np.linalg.norm(T_mj[:3, 3] - T_target[:3, 3]) <= 1e-4
    assert np.linalg.norm(tf.so3_log(T_target[:3, :3] @ T_mj[:3, :3].T)) <= 1e-3
    np.testing.assert_array_equal(so101.check_q(r.q, "r.q", within_limits=True), r.q)
