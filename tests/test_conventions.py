"""The lesson-09 "Use it" convention table on SO-101: physai vs MuJoCo vs Pinocchio vs Modern Robotics formulas,
and the analytic (RPY, quaternion) Jacobians vs JAX autodiff of physai's FK."""

import jax
import mujoco
import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm

from physai import conventions, jaxkin, robots
from physai import transforms as tf
from physai.errors import InputError, UnknownNameError
from physai.kinematics import fd_jacobian, jacobian, tool_pose
from conftest import mj_site

@pytest.fixture(scope="module")
def pin_so101():
    """Pinocchio's own model of so101.xml (its MJCF parser; the site becomes an operational frame)."""
    model = pin.buildModelFromMJCF(str(robots.model_path("so101")))
    return model, model.createData(), model.getFrameId("gripperframe")


def pin_q(model, chain, q):
    qp = pin.neutral(model)
    for name, qi in zip(chain.joint_names, q):
        qp[model.joints[model.getJointId(name)].idx_q] = qi
    return qp


def pin_jacobian(model, data, fid, qp, ref):
    pin.computeJointJacobians(model, data, qp)
    pin.updateFramePlacements(model, data)
    return pin.getFrameJacobian(model, data, fid, ref)


def mr_adjoint(T):
    """Modern Robotics' [Ad_T] for (w, v) twists."""
    R, p = T[:3, :3], T[:3, 3]
    P = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    return np.block([[R, np.zeros((3, 3))], [P @ R, R]])


def mr_space_jacobian(screws, theta):
    """MR (5.11): J_s columns Ad_{e^[S1]t1 ... e^[S_{i-1}]t_{i-1}} S_i, matrix exponentials by scipy.linalg.expm."""
    T, cols = np.eye(4), []
    for S, t in zip(screws, theta):
        cols.append(mr_adjoint(T) @ S)
        hat = np.zeros((4, 4))
        w, v = S[:3], S[3:]
        hat[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
        hat[:3, 3] = v
        T = T @ expm(hat * t)
    return np.column_stack(cols)


def mujoco_site(m, chain, q):
    """MuJoCo's site pose (4x4) and [jacp; jacr], computed from scratch (test_09_jacobians' reference)."""
    p, R, J = mj_site(m, chain, q)
    return tf.make_transform(R, p), J


def screw_axes_from_mujoco(m, chain):
    """Space-frame screw axes S_i = (w_i, -w_i x q_i) at the reference pose, read from MuJoCo's xaxis/xanchor."""
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    ids = [m.joint(n).id for n in chain.joint_names]
    return [np.r_[d.xaxis[j], -np.cross(d.xaxis[j], d.xanchor[j])] for j in ids]


def test_use_it_table_physai_mujoco_pinocchio_modern_robotics_on_so101(so101, so101_model, pin_so101):
    model, data, fid = pin_so101
    screws = screw_axes_from_mujoco(so101_model, so101)
    qs = np.vstack([[0.0, -0.6, 0.9, 0.4, 0.3], so101.random_q(np.random.default_rng(3), 30)])
    worst = dict.fromkeys(["world/mj", "world/pin", "local/pin", "space/pin", "space/MR", "body/pin", "body/MR", "pose"], 0.0)
    for q in qs:
        T_mj, J_mj = mujoco_site(so101_model, so101, q)
        qp = pin_q(model, so101, q)
        cols = [model.joints[model.getJointId(n)].idx_v for n in so101.joint_names]
        J_lwa = pin_jacobian(model, data, fid, qp, pin.LOCAL_WORLD_ALIGNED)[:, cols]
        J_loc = pin_jacobian(model, data, fid, qp, pin.LOCAL)[:, cols]
        J_wld = pin_jacobian(model, data, fid, qp, pin.WORLD)[:, cols]
        swap = np.r_[3:6, 0:3]  # Pinocchio's (v, w) rows -> Modern Robotics' (w, v)
        J_s_mr = mr_space_jacobian(screws, q - so101.q_ref)
        J_b_mr = mr_adjoint(np.linalg.inv(T_mj)) @ J_s_mr  # MR (5.22): J_b = [Ad_{T_bs}] J_s
        J = {f: conventions.frame_jacobian(so101, q, f) for f in conventions.FRAMES}
        for key, a, b in [
            ("world/mj", J["world"], J_mj),
            ("world/pin", J["world"], J_lwa),
            ("local/pin", J["local"], J_loc),
            ("space/pin", J["space"], J_wld[swap]),
            ("space/MR", J["space"], J_s_mr),
            ("body/pin", J["body"], J_loc[swap]),
            ("body/MR", J["body"], J_b_mr),
        ]:
            worst[key] = max(worst[key], np.abs(a - b).max())
        worst["pose"] = max(worst["pose"], np.abs(tool_pose(so101, q) - data.oMf[fid].homogeneous).max())
    assert all(v <= 1e-12 for v in worst.values()), worst


def test_world_default_is_unchanged_and_frames_are_checked(so101, rng):
    q = so101.random_q(rng)
    np.testing.assert_array_equal(conventions.frame_jacobian(so101, q), jacobian(so101, q))
    with pytest.raises(UnknownNameError, match="Valid frame names: body, local, space, world"):
        conventions.frame_jacobian(so101, q, "tool")


def test_frame_jacobians_broadcast_over_a_batch(so101, rng):
    qs = so101.random_q(rng, (4, 3))
    for f in conventions.FRAMES:
        J = conventions.frame_jacobian(so101, qs, f)
        assert J.shape == (4, 3, 6, 5)
        assert np.abs(J[2, 1] - conventions.frame_jacobian(so101, qs[2, 1], f)).max() <= 1e-15


# ---- analytic vs geometric, through JAX autodiff ---------------------------------------------------


def poses_away_from_representation_singularities(chain, seed, n=10):
    qs = chain.random_q(np.random.default_rng(seed), 4 * n)
    R = tool_pose(chain, qs)[:, :3, :3]
    ok = (np.abs(tf.matrix_to_rpy(R)[:, 1]) < 1.3) & (tf.matrix_to_quat(R)[:, 0] > 0.2)
    return qs[ok][:n]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["so101", "wxai_illustrative"])
def test_jax_jacfwd_of_rpy_fk_matches_geometric_position_rows_and_orientation_only_after_B(name):
    chain = robots.load(name, source="builtin")
    f = jax.jit(jax.jacfwd(lambda q: jaxkin.tool_position_rpy(chain, q)))
    for q in poses_away_from_representation_singularities(chain, 4):
        J_a = np.asarray(f(q))
        J_g = jacobian(chain, q)
        rpy = tf.matrix_to_rpy(tool_pose(chain, q)[:3, :3])
        assert np.abs(J_a[:3] - J_g[:3]).max() <= 1e-12
        assert np.abs(J_a[3:] - J_g[3:]).max() > 1e-3  # the lesson's "disagreement": rpy rates are not w
        assert np.abs(tf.rpy_rate_matrix(rpy) @ J_a[3:] - J_g[3:]).max() <= 1e-12
        assert np.abs(conventions.rpy_jacobian(chain, q) - J_a).max() <= 1e-11


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["so101", "wxai_illustrative"])
def test_jax_jacfwd_of_quaternion_fk_is_G_times_the_angular_rows(name):
    chain = robots.load(name, source="builtin")
    f = jax.jit(jax.jacfwd(lambda q: jaxkin.tool_position_quat(chain, q)))
    for q in poses_away_from_representation_singularities(chain, 5):
        J_a = np.asarray(f(q))
        J_g = jacobian(chain, q)
        quat = tf.matrix_to_quat(tool_pose(chain, q)[:3, :3])
        assert np.abs(J_a[:3] - J_g[:3]).max() <= 1e-12
        assert np.abs(conventions.quat_jacobian(chain, q) - J_a).max() <= 1e-12
        assert np.abs(4 * tf.quat_rate_matrix(quat).T @ J_a[3:] - J_g[3:]).max() <= 1e-12


def test_rpy_jacobian_matches_central_differences_of_matrix_to_rpy(so101):
    for q in poses_away_from_representation_singularities(so101, 6, 10):
        fd = fd_jacobian(lambda x: tf.matrix_to_rpy(tool_pose(so101, x)[:3, :3]), q, 1e-6)
        assert np.abs(conventions.rpy_jacobian(so101, q)[3:] - fd).max() <= 1e-8


def test_rpy_jacobian_refuses_gimbal_lock_where_quat_jacobian_is_fine():
    chain = robots.load("wxai_illustrative")
    q = np.array([0.0, -np.pi / 2, 0.0, 0.0, 0.0, 0.0])  # shoulder pitched: the tool x axis points straight up
    assert abs(tool_pose(chain, q)[2, 0]) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(InputError, match="gimbal lock"):
        conventions.rpy_jacobian(chain, q)
    assert np.isfinite(conventions.quat_jacobian(chain, q)).all()


def test_numeric_geometric_jacobian_matches_mj_jacSite_on_so101(so101, so101_model):
    for q in so101.random_q(np.random.default_rng(8), 10):
        _, J_mj = mujoco_site(so101_model, so101, q)
        J_num = conventions.numeric_geometric_jacobian(lambda x: tool_pose(so101, x), q, 1e-6)
        assert np.abs(J_num - J_mj).max() <= 1e-9
