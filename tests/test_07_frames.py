"""Lesson 07: physai.transforms pinned to SciPy's Rotation, MuJoCo's mju_* functions, scipy.linalg.expm and Pinocchio."""

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation, Slerp

from physai import transforms as tf
from physai.errors import InputError

LESSON = "07-frames"

N = 200


@pytest.fixture
def rots(rng):
    return Rotation.random(N, random_state=np.random.default_rng(7))


def mj_quat2mat(q):
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, q)
    return out.reshape(3, 3)


def test_quat_matrix_round_trip_matches_scipy_and_mju(rots):
    q = rots.as_quat(scalar_first=True)
    R = tf.quat_to_matrix(q)
    assert np.abs(R - rots.as_matrix()).max() <= 1e-15
    assert max(np.abs(mj_quat2mat(qi) - Ri).max() for qi, Ri in zip(q, R)) <= 1e-15
    q_back = tf.matrix_to_quat(R)
    canon = np.where(q[:, :1] < 0, -q, q)
    assert np.abs(q_back - canon).max() <= 1e-15
    mjq = np.zeros(4)
    for Ri, qi in zip(R, q_back):
        mujoco.mju_mat2Quat(mjq, Ri.ravel())
        assert np.abs(np.sign(mjq[0] or 1) * mjq - qi).max() <= 1e-15


def test_matrix_to_quat_is_accurate_at_180_degrees_unlike_the_trace_formula():
    for axis in np.eye(3):
        R = Rotation.from_rotvec(np.pi * axis).as_matrix()
        q = tf.matrix_to_quat(R)
        assert np.abs(tf.quat_to_matrix(q) - R).max() <= 1e-15


def test_so3_exp_log_match_scipy_rotvec_and_mju_quat2vel(rots):
    w = rots.as_rotvec()
    assert np.abs(tf.so3_exp(w) - rots.as_matrix()).max() <= 1e-14
    assert np.abs(tf.so3_log(rots.as_matrix()) - w).max() <= 1e-12
    vel = np.zeros(3)
    for qi, wi in zip(rots.as_quat(scalar_first=True), w):
        mujoco.mju_quat2Vel(vel, qi, 1.0)
        np.testing.assert_allclose(vel, wi, atol=1e-12)


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 1e-2 * 0.999, 1e-2 * 1.001, 1.0, np.pi - 1e-9, np.pi])
def test_so3_exp_log_near_0_and_pi_match_scipy(angle):
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    R_ref = Rotation.from_rotvec(angle * axis).as_matrix()
    assert np.abs(tf.so3_exp(angle * axis) - R_ref).max() <= 1e-15
    w = tf.so3_log(R_ref)
    if angle == np.pi:  # +-w are the same rotation at pi
        w = w * np.sign(w @ axis)
    assert np.abs(w - angle * axis).max() <= 1e-12


def test_se3_exp_matches_scipy_expm_and_pinocchio_exp6(rng):
    for _ in range(50):
        V = rng.normal(size=6) * [1, 1, 1, 1.5, 1.5, 1.5]
        hat = np.zeros((4, 4))
        hat[:3, :3], hat[:3, 3] = tf.skew(V[3:]), V[:3]
        T = tf.se3_exp(V)
        assert np.abs(T - expm(hat)).max() <= 1e-12
        assert np.abs(T - pin.exp6(pin.Motion(V[:3], V[3:])).homogeneous).max() <= 1e-12
        if np.linalg.norm(V[3:]) < np.pi:
            assert np.abs(tf.se3_log(T) - V).max() <= 1e-12
            assert np.abs(tf.se3_log(T) - pin.log6(pin.SE3(T)).vector).max() <= 1e-12


@pytest.mark.parametrize("scale", [0.0, 1e-9, 5e-5, 2e-4, 5e-3, 2e-2])
def test_se3_exp_log_small_angles_match_expm(scale, rng):
    V = np.r_[rng.normal(size=3), scale * rng.normal(size=3)]
    hat = np.zeros((4, 4))
    hat[:3, :3], hat[:3, 3] = tf.skew(V[3:]), V[:3]
    assert np.abs(tf.se3_exp(V) - expm(hat)).max() <= 1e-15
    assert np.abs(tf.se3_log(tf.se3_exp(V)) - V).max() <= 1e-13


def random_T(rng, n=None):
    shape = () if n is None else (n,)
    R = Rotation.random(n, random_state=rng).as_matrix()
    return tf.make_transform(R, rng.normal(size=shape + (3,)))


def test_adjoint_twist_and_wrench_match_pinocchio(rng):
    for _ in range(50):
        T_a_b = random_T(rng)
        V_b, F_b = rng.normal(size=6), rng.normal(size=6)
        M = pin.SE3(T_a_b)
        assert np.abs(tf.adjoint(T_a_b) - M.action).max() <= 1e-14
        assert np.abs(tf.transform_twist(T_a_b, V_b) - M.act(pin.Motion(V_b)).vector).max() <= 1e-14
        assert np.abs(tf.transform_wrench(T_a_b, F_b) - M.act(pin.Force(F_b)).vector).max() <= 1e-14
        # power is frame-independent
        assert tf.transform_wrench(T_a_b, F_b) @ tf.transform_twist(T_a_b, V_b) == pytest.approx(F_b @ V_b, abs=1e-13)


def test_adjoint_composes_and_inverts(rng):
    T_a_b, T_b_c = random_T(rng), random_T(rng)
    assert np.abs(tf.adjoint(T_a_b) @ tf.adjoint(T_b_c) - tf.adjoint(T_a_b @ T_b_c)).max() <= 1e-14
    assert np.abs(tf.adjoint(tf.inverse(T_a_b)) - np.linalg.inv(tf.adjoint(T_a_b))).max() <= 1e-13


def test_twist_change_of_frame_is_the_velocity_of_a_moving_pose(rng):
    """Finite differences of T_a_b(t) = T_a_b exp(t V_b) give the twist Ad(T_a_b) V_b at a's origin."""
    T_a_b, V_b, h = random_T(rng), rng.normal(size=6), 1e-6
    dT = (T_a_b @ tf.se3_exp(h * V_b) - T_a_b @ tf.se3_exp(-h * V_b)) / (2 * h)
    spatial = dT @ tf.inverse(T_a_b)  # [V_a] = dT T^-1
    V_a_fd = np.r_[spatial[:3, 3], tf.vee(spatial[:3, :3])]
    assert np.abs(tf.transform_twist(T_a_b, V_b) - V_a_fd).max() <= 1e-9


def test_rpy_matches_scipy_extrinsic_xyz_mujoco_XYZ_and_pinocchio(rng):
    rpy = rng.uniform([-np.pi, -1.5, -np.pi], [np.pi, 1.5, np.pi], size=(N, 3))
    R = tf.rpy_to_matrix(rpy)
    assert np.abs(R - Rotation.from_euler("xyz", rpy).as_matrix()).max() <= 1e-15
    assert np.abs(tf.matrix_to_rpy(R) - Rotation.from_matrix(R).as_euler("xyz")).max() <= 1e-12
    q = np.zeros(4)
    for e, Ri in zip(rpy[:20], R[:20]):
        mujoco.mju_euler2Quat(q, e, "XYZ")
        assert np.abs(mj_quat2mat(q) - Ri).max() <= 1e-15
        assert np.abs(pin.rpy.rpyToMatrix(*e) - Ri).max() <= 1e-15
        assert np.abs(pin.rpy.matrixToRpy(Ri) - tf.matrix_to_rpy(Ri)).max() <= 1e-12


@pytest.mark.parametrize("pitch", [np.pi / 2, -np.pi / 2, np.pi / 2 - 1e-9, -np.pi / 2 + 1e-7])
def test_matrix_to_rpy_round_trips_at_gimbal_lock(pitch):
    R = Rotation.from_euler("xyz", [0.7, pitch, -0.4]).as_matrix()
    rpy = tf.matrix_to_rpy(R)
    assert abs(rpy[1] - pitch) <= 1e-7
    assert np.abs(tf.rpy_to_matrix(rpy) - R).max() <= 2e-8


def test_rpy_rate_matrix_maps_rpy_rates_to_angular_velocity_by_finite_differences(rng):
    for _ in range(20):
        rpy, rate, h = rng.uniform(-1.4, 1.4, 3), rng.normal(size=3), 1e-6
        dR = (tf.rpy_to_matrix(rpy + h * rate) - tf.rpy_to_matrix(rpy - h * rate)) / (2 * h)
        w_fd = tf.vee(dR @ tf.rpy_to_matrix(rpy).T)
        assert np.abs(tf.rpy_rate_matrix(rpy) @ rate - w_fd).max() <= 1e-9
    assert np.linalg.det(tf.rpy_rate_matrix([0.3, np.pi / 2, 0.2])) == pytest.approx(0.0, abs=1e-15)


def test_rpy_rate_matrix_is_the_closed_form_lesson_07_displays(rng):
    for phi, theta, psi in rng.uniform(-3, 3, (20, 3)):
        cp, sp, ct, st = np.cos(psi), np.sin(psi), np.cos(theta), np.sin(theta)
        B = np.array([[cp * ct, -sp, 0.0], [sp * ct, cp, 0.0], [-st, 0.0, 1.0]])
        assert np.abs(tf.rpy_rate_matrix([phi, theta, psi]) - B).max() <= 1e-15


def test_rpy_rates_of_step_6_are_no_unit_vector_and_map_back_to_omega(build, so101_model, so101):
    R = build.chain_step(so101_model, so101).T_tool[:3, :3]
    rt = build.rates_step(R)
    np.testing.assert_allclose(tf.rpy_rate_matrix(tf.matrix_to_rpy(R)) @ rt.rpy_rates, rt.omega_world,
                               atol=1e-14)
    assert np.linalg.norm(rt.body) == pytest.approx(1.0, abs=1e-14)
    assert abs(np.linalg.norm(rt.rpy_rates) - 1.0) > 0.1
    assert np.abs(rt.body - rt.rpy_rates).min() > 0.1  # no component matches


def test_quat_multiply_conjugate_match_mju_and_scipy(rots):
    q = rots.as_quat(scalar_first=True)
    p = np.roll(q, 1, axis=0)
    prod = tf.quat_multiply(q, p)
    ref = (rots * Rotation.from_quat(p, scalar_first=True)).as_matrix()
    assert np.abs(tf.quat_to_matrix(prod) - ref).max() <= 1e-15
    out = np.zeros(4)
    for a, b, c in zip(q, p, prod):
        mujoco.mju_mulQuat(out, a, b)
        assert np.abs(out - c).max() <= 1e-15
        mujoco.mju_negQuat(out, a)
        assert np.abs(out - tf.quat_conjugate(a)).max() == 0.0  # bitwise: a sign flip is exact in both
    assert np.abs(tf.quat_multiply(q, tf.quat_conjugate(q)) - [1, 0, 0, 0]).max() <= 1e-15


def test_quat_slerp_matches_scipy_slerp(rng):
    for _ in range(20):
        ends = Rotation.random(2, random_state=rng)
        t = np.linspace(0, 1, 11)
        ref = Slerp([0, 1], ends)(t).as_matrix()
        q0, q1 = ends.as_quat(scalar_first=True)
        got = tf.quat_to_matrix(tf.quat_slerp(q0, q1, t))
        assert np.abs(got - ref).max() <= 1e-14
        # the short arc, whichever sign the caller's q1 has
        assert np.abs(tf.quat_to_matrix(tf.quat_slerp(q0, -q1, t)) - ref).max() <= 1e-14
    q = Rotation.random(random_state=rng).as_quat(scalar_first=True)
    assert np.abs(tf.quat_slerp(q, q, 0.3) - q).max() <= 1e-15


def test_quat_rate_matrix_matches_mju_derivQuat_and_finite_differences(rots, rng):
    out, h = np.zeros(4), 1e-6
    for q in rots.as_quat(scalar_first=True)[:50]:
        w_world = rng.normal(size=3)
        mujoco.mju_derivQuat(out, q, w_world)  # computes 0.5 (0, w) * q: w in world axes
        assert np.abs(tf.quat_rate_matrix(q) @ w_world - out).max() <= 1e-15
        # q(t) = exp(t w) q rotates at w in world axes
        q_fd = (tf.quat_multiply(tf.matrix_to_quat(tf.so3_exp(h * w_world)), q)
                - tf.quat_multiply(tf.matrix_to_quat(tf.so3_exp(-h * w_world)), q)) / (2 * h)
        assert np.abs(tf.quat_rate_matrix(q) @ w_world - q_fd).max() <= 1e-9
        assert np.abs(4 * tf.quat_rate_matrix(q).T @ tf.quat_rate_matrix(q) - np.eye(3)).max() <= 1e-15


def test_transform_inverse_and_compose_match_mju_pose_functions(rng):
    T_a_b, T_b_c = random_T(rng), random_T(rng)
    pos, quat = np.zeros(3), np.zeros(4)
    qa, qb = tf.matrix_to_quat(T_a_b[:3, :3]), tf.matrix_to_quat(T_b_c[:3, :3])
    mujoco.mju_mulPose(pos, quat, T_a_b[:3, 3], qa, T_b_c[:3, 3], qb)
    T = tf.compose(T_a_b, T_b_c)
    assert np.abs(T[:3, 3] - pos).max() <= 1e-15
    assert np.abs(T[:3, :3] - tf.quat_to_matrix(quat)).max() <= 1e-15
    mujoco.mju_negPose(pos, quat, T_a_b[:3, 3], qa)
    Ti = tf.inverse(T_a_b)
    assert np.abs(Ti[:3, 3] - pos).max() <= 1e-15
    assert np.abs(Ti[:3, :3] - tf.quat_to_matrix(quat)).max() <= 1e-15


def test_orthonormalize_is_the_nearest_rotation_and_idempotent(rng):
    R = Rotation.random(20, random_state=rng).as_matrix()
    noisy = R + 1e-3 * rng.normal(size=R.shape)
    P = tf.orthonormalize(noisy)
    assert np.abs(P @ np.swapaxes(P, -1, -2) - np.eye(3)).max() <= 4e-15
    assert np.all(np.linalg.det(P) > 0)
    assert np.abs(tf.orthonormalize(P) - P).max() <= 1e-15
    # nearest: no random rotation near P is closer to the noisy matrix (Frobenius)
    for Mi, Pi in zip(noisy, P):
        d = np.linalg.norm(Mi - Pi)
        nearby = Rotation.from_rotvec(1e-3 * rng.normal(size=(50, 3))).as_matrix() @ Pi
        assert np.all(np.linalg.norm(nearby - Mi, axis=(1, 2)) >= d)


def test_invalid_rotations_are_refused_with_clear_errors():
    R = np.diag([1.0, 1.0, 1.0 + 1e-6])
    for f in (tf.matrix_to_quat, tf.so3_log, tf.matrix_to_rpy):
        with pytest.raises(InputError, match="not a rotation matrix.*orthonormalize"):
            f(R)
    with pytest.raises(InputError, match="reflection"):
        tf.matrix_to_quat(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(InputError, match="zero quaternion"):
        tf.quat_to_matrix([0, 0, 0, 0])
    with pytest.raises(InputError, match="zero quaternion"):
        tf.quat_slerp([0, 0, 0, 0], [1, 0, 0, 0], 0.5)
    T = np.eye(4)
    T[:3, :3] = [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]
    for f in (tf.inverse, tf.adjoint, tf.se3_log):
        with pytest.raises(InputError, match="not a rotation matrix"):
            f(T)
    with pytest.raises(InputError, match="rank < 2"):
        tf.orthonormalize(np.zeros((3, 3)))
    with pytest.raises(InputError, match=r"expected shape \(\.\.\., 3\)"):
        tf.so3_exp([1.0, 2.0])


def test_pose_error_matches_scipy_rotvec_and_translation_difference():
    rng = np.random.default_rng(21)
    R = Rotation.random(20, random_state=1)
    R_ref = Rotation.random(20, random_state=2)
    p, p_ref = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    e = tf.pose_error(tf.make_transform(R.as_matrix(), p), tf.make_transform(R_ref.as_matrix(), p_ref))
    np.testing.assert_allclose(e[:, :3], p_ref - p, atol=1e-15)
    np.testing.assert_allclose(e[:, 3:], (R_ref * R.inv()).as_rotvec(), atol=1e-12)


# ---- the lesson's steps and its claim row, against MuJoCo, SciPy and Pinocchio ----------------------------------


def test_build_chain_of_4x4s_is_mujocos_site_pose_and_the_track_claim_agrees(build, audit, so101_model, so101):
    ch = build.chain_step(so101_model, so101)
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = build.Q0
    mujoco.mj_kinematics(so101_model, d)
    sid = so101_model.site(so101.tool_name).id
    np.testing.assert_allclose(ch.T_tool[:3, 3], d.site_xpos[sid], atol=1e-15)
    np.testing.assert_allclose(ch.T_tool[:3, :3], d.site_xmat[sid].reshape(3, 3), atol=1e-15)
    assert max(row.err for row in ch.rows) <= 1e-15
    sp = build.spellings_step(ch.T_tool[:3, :3])
    rot = Rotation.from_matrix(d.site_xmat[sid].reshape(3, 3))
    np.testing.assert_allclose(sp.rotvec, rot.as_rotvec(), atol=1e-15)
    ours, ref = sp.quat[[1, 2, 3, 0]], rot.as_quat()  # SciPy writes (x, y, z, w)
    np.testing.assert_allclose(ours * np.sign(ours[3]), ref * np.sign(ref[3]), atol=1e-15)
    ad = build.adjoint_step(ch.T_tool)
    np.testing.assert_allclose(ad.power_world, ad.power_tool, atol=1e-15)  # power is frame-invariant
    # the quiz's words: 2 N pushing back against a 5 cm/s motion along the tool's z axis: F . V = -2 * 0.05 W
    np.testing.assert_allclose(ad.power_tool, -2.0 * 0.05, rtol=1e-15)
    assert [c.verdict for c in audit.build_claims({"chain": ch})] == ["agree"]


def test_experiment_drift_stays_at_round_off_against_the_exact_rotation(ex):
    r = ex.drift(n_steps=3000)
    theta = np.linalg.norm(ex.STEP_ROTVEC)
    exact = Rotation.from_rotvec(ex.STEP_ROTVEC / theta * ((3000 * theta) % (2 * np.pi))).as_matrix()
    for R in (*r.Rs, *tf.quat_to_matrix(r.qs)):
        assert ex.angle_between(R, exact) < 1e-12
    rows = ex.drift_rows(r)
    assert rows[1].shape < 1e-15 and rows[3].shape < 1e-15  # the final matrices, right after the last fix
    assert rows[2].shape > 100 * rows[3].shape  # the raw quaternion drifts too, and normalising removes it


def test_drift_figure_samples_the_fixed_matrix_just_before_each_fix_as_a_plain_loop_does(ex):
    """The figure's fixed points: a plain float64 loop that records |R R^T - I| and then projects with NumPy's SVD
    (the nearest rotation) gives the same shape errors to a factor of 2; the first equals the raw one (no fix yet),
    and none is the round-off left right after a fix."""
    n, dR = 3000, tf.so3_exp(ex.STEP_ROTVEC)
    r, R, loop = ex.drift(n_steps=n), np.eye(3), []
    for k in range(1, n + 1):
        R = R @ dR
        if k % ex.FIX_EVERY == 0:
            loop.append(np.abs(R @ R.T - np.eye(3)).max())
            U, _, Vt = np.linalg.svd(R)
            R = U @ Vt
    assert r.trace["R fixed"][0] == r.trace["R raw"][0]
    np.testing.assert_allclose(np.log(r.trace["R fixed"]), np.log(loop), atol=np.log(2))
    assert min(r.trace["R fixed"]) > 1e-14 and min(r.trace["q fixed"]) > 1e-14


def test_drift_table_gives_the_fixed_ones_right_after_and_just_before_the_last_fix(ex):
    """The table's two shape-error columns: a plain float64 loop of the same step, projected with NumPy's SVD every
    FIX_EVERY steps, is at round-off right after the last fix and, just before it, within a factor of 2 of the
    table's value; the raw rows have no fix, so both columns are the same."""
    n, dR = 3000, tf.so3_exp(ex.STEP_ROTVEC)
    rows, R = ex.drift_rows(ex.drift(n_steps=n)), np.eye(3)
    for k in range(1, n + 1):
        R = R @ dR
        if k % ex.FIX_EVERY == 0:
            before = np.abs(R @ R.T - np.eye(3)).max()
            U, _, Vt = np.linalg.svd(R)
            R = U @ Vt
    assert [row.fixed for row in rows] == [False, True, False, True]
    assert rows[0].before == rows[0].shape and rows[2].before == rows[2].shape
    assert rows[1].shape < 1e-15 and np.abs(R @ R.T - np.eye(3)).max() < 1e-15
    assert abs(np.log(rows[1].before / before)) < np.log(2) and rows[1].before > 10 * rows[1].shape
    assert rows[3].before > 10 * rows[3].shape


def test_the_same_step_built_by_scipy_drifts_at_its_own_rate(ex):
    """The page's aside: a plain loop of SciPy's matrix of the step gives the same shape error as the run's, and
    differs from physai's step (the two round differently)."""
    n, dR, R = 3000, Rotation.from_rotvec(ex.STEP_ROTVEC).as_matrix(), np.eye(3)
    for _ in range(n):
        R = R @ dR
    other = ex.other_step_drift(n)
    assert other == pytest.approx(np.abs(R @ R.T - np.eye(3)).max(), rel=1e-6)
    assert other != ex.drift_rows(ex.drift(n_steps=n))[0].shape


def test_compositions_to_physais_tolerance_extrapolate_a_plain_loops_growth(ex):
    """The quiz's range: each step's (physai's and SciPy's matrix of the same rotation vector) raw shape error after
    3000 steps, extrapolated linearly to physai's tolerance, predicts the shape error a plain float64 loop of that
    step reaches at 30000 steps to 20 per cent (the growth is linear), and the two counts differ (the range depends
    on how the step rounds). Hours are that count at the loop rate."""
    n, long = 3000, 30000
    ours = ex.to_tolerance(ex.drift_rows(ex.drift(n_steps=n))[0].shape, n)
    scipys = ex.to_tolerance(ex.other_step_drift(n), n)
    assert ours.tol == scipys.tol == tf.ROTATION_TOL
    assert abs(np.log(ours.n / scipys.n)) > np.log(1.5)
    for to, step in ((ours, tf.so3_exp(ex.STEP_ROTVEC)), (scipys, Rotation.from_rotvec(ex.STEP_ROTVEC).as_matrix())):
        assert to.hours == pytest.approx(to.n / to.hz / 3600, rel=1e-15)
        R = np.eye(3)
        for _ in range(long):
            R = R @ step
        predicted = to.tol * long / to.n
        assert abs(np.log(np.abs(R @ R.T - np.eye(3)).max() / predicted)) < np.log(1.2)


# ---- the functions the learner types, and the numbers the lesson page quotes ----------------------------------


def test_build_exercise_functions_match_numpy_inverse_scipy_and_pinocchio_action(build, rng):
    for _ in range(20):
        v, u = rng.normal(size=3), rng.normal(size=3)
        T = random_T(rng)
        np.testing.assert_allclose(build.skew(v) @ u, np.cross(v, u), atol=1e-15)
        angle = rng.uniform(-np.pi, np.pi)
        axis = v / np.linalg.norm(v)
        np.testing.assert_allclose(build.rodrigues(axis, angle), Rotation.from_rotvec(angle * axis).as_matrix(),
                                   atol=1e-15)
        np.testing.assert_allclose(build.invert_transform(T), np.linalg.inv(T), atol=1e-14)
        np.testing.assert_allclose(build.twist_adjoint(T), pin.SE3(T).action, atol=1e-15)


def test_extrinsic_xyz_is_intrinsic_ZYX_with_the_angles_reversed_in_scipy(build, so101_model, so101, rng):
    """The page's sentence: SciPy's extrinsic "xyz" (roll, pitch, yaw) and intrinsic "ZYX" (yaw, pitch, roll) build
    the same matrix, and the ZYX angles the page prints are Step 2's roll-pitch-yaw reversed."""
    for a in rng.uniform([-np.pi, -1.5, -np.pi], [np.pi, 1.5, np.pi], size=(50, 3)):
        np.testing.assert_allclose(Rotation.from_euler("xyz", a).as_matrix(),
                                   Rotation.from_euler("ZYX", a[::-1]).as_matrix(), atol=1e-15)
    sp = build.spellings_step(build.chain_step(so101_model, so101).T_tool[:3, :3])
    np.testing.assert_allclose(sp.ZYX, sp.rpy[::-1], atol=1e-12)


def test_step2_pitch_is_the_sum_of_the_parallel_pitch_joints_and_yaw_zero_from_mujoco(build, so101_model, so101):
    """Step 2's sentence: at Q0 SciPy's roll-pitch-yaw of MuJoCo's site rotation has pitch q1 + q2 + q3 and yaw 0,
    because MuJoCo's three pitch-joint axes are parallel (same direction in the world) and the pan is at 0."""
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = build.Q0
    mujoco.mj_kinematics(so101_model, d)
    R = d.site_xmat[so101_model.site(so101.tool_name).id].reshape(3, 3)
    roll, pitch, yaw = Rotation.from_matrix(R).as_euler("xyz")
    assert build.Q0[0] == 0.0
    assert pitch == pytest.approx(build.Q0[1] + build.Q0[2] + build.Q0[3], abs=1e-12) and abs(yaw) < 1e-12
    axes = [d.xaxis[so101_model.joint(j).id] for j in ("shoulder_lift", "elbow_flex", "wrist_flex")]
    for a in axes[1:]:
        np.testing.assert_allclose(a, axes[0], atol=1e-12)
    sp = build.spellings_step(build.chain_step(so101_model, so101).T_tool[:3, :3])
    np.testing.assert_allclose(sp.rpy, [roll, pitch, yaw], atol=1e-12)


def test_step2_roll_is_the_mounting_offset_minus_wrist_roll_from_mujoco_and_scipy(build, so101_model, so101):
    """Step 2's clause: SciPy's roll of MuJoCo's tool site is its value at wrist_roll = 0 minus wrist_roll (pitch and
    yaw unchanged), because MuJoCo's wrist_roll axis is the site's -x axis; the page's numbers are those."""
    d = mujoco.MjData(so101_model)
    sid, jid = so101_model.site(so101.tool_name).id, so101_model.joint("wrist_roll").id
    rpy = {}
    for wrist_roll in (0.0, build.Q0[-1], -0.7):
        d.qpos[list(so101.qpos_adr)] = [*build.Q0[:-1], wrist_roll]
        mujoco.mj_kinematics(so101_model, d)
        R = d.site_xmat[sid].reshape(3, 3)
        np.testing.assert_allclose(d.xaxis[jid], -R[:, 0], atol=1e-12)
        rpy[wrist_roll] = Rotation.from_matrix(R).as_euler("xyz")
    for wrist_roll, angles in rpy.items():
        np.testing.assert_allclose(angles, rpy[0.0] - [wrist_roll, 0.0, 0.0], atol=1e-12)
    ro = build.roll_step(so101)
    assert ro.at_zero == pytest.approx(rpy[0.0][0], abs=1e-12) and ro.slope == pytest.approx(-1.0, abs=1e-9)
    assert ro.at_zero_deg == pytest.approx(np.degrees(rpy[0.0][0]), rel=1e-12)


def test_step4_fingers_point_along_the_tool_x_axis_not_z_in_mujocos_poses(build, so101_model, so101):
    """Step 4's sentence: from MuJoCo's gripper body origin to its tool site, written in the site's axes, the
    direction is within 10 degrees of the site's x axis; the page's two world vectors are the site's x and z columns."""
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = build.Q0
    mujoco.mj_kinematics(so101_model, d)
    sid = so101_model.site(so101.tool_name).id
    R = d.site_xmat[sid].reshape(3, 3)
    fingers = d.site_xpos[sid] - d.xpos[so101_model.body("gripper").id]
    cos = R[:, 0] @ fingers / np.linalg.norm(fingers)
    assert cos > np.cos(np.radians(10))
    ap = build.approach_step(build.chain_step(so101_model, so101))
    assert ap.axis == "x" and ap.cos == pytest.approx(cos, abs=1e-12)
    np.testing.assert_allclose(ap.along, R[:, 0], atol=1e-15)
    np.testing.assert_allclose(ap.z, R[:, 2], atol=1e-15)


def test_quaternion_order_slip_is_the_angle_mujoco_gives_for_the_reordered_quaternion(build, so101_model, so101):
    sp = build.spellings_step(build.chain_step(so101_model, so101).T_tool[:3, :3])
    w, x, y, z = sp.quat
    R_right, R_wrong = np.zeros(9), np.zeros(9)
    mujoco.mju_quat2Mat(R_right, np.array([w, x, y, z]))
    mujoco.mju_quat2Mat(R_wrong, np.array([z, w, x, y]))  # SciPy's (x, y, z, w) reading of (w, x, y, z)
    cos = (np.trace(R_right.reshape(3, 3).T @ R_wrong.reshape(3, 3)) - 1) / 2
    np.testing.assert_allclose(sp.misread_deg, np.degrees(np.arccos(np.clip(cos, -1, 1))), atol=1e-6)


def test_body_rate_is_pinocchios_actInv_and_rpy_rates_are_finite_differences_of_scipy_euler(build, rng):
    R = Rotation.random(random_state=rng).as_matrix()
    rt = build.rates_step(R)
    w = rt.omega_world
    np.testing.assert_allclose(rt.body, pin.SE3(R, np.zeros(3)).actInv(pin.Motion(np.zeros(3), w)).angular,
                               atol=1e-15)
    h = 1e-6
    euler = [Rotation.from_rotvec(s * h * w) * Rotation.from_matrix(R) for s in (1, -1)]
    fd = (euler[0].as_euler("xyz") - euler[1].as_euler("xyz")) / (2 * h)
    # round-off of the difference, eps_mach / h, grows as 1/cos(pitch) through the Euler map; truncation ~h^2 is far
    # below it (over 500 random rotations the error stays under 2 eps_mach / (h |cos(pitch)|))
    pitch = Rotation.from_matrix(R).as_euler("xyz")[1]
    np.testing.assert_allclose(rt.rpy_rates, fd, atol=10 * np.finfo(float).eps / (h * abs(np.cos(pitch))))
    assert rt.gap > 0.1  # the two are different vectors (the erratum)


def test_first_quiz_swapped_product_is_measured_from_mujocos_bodies(build, so101_model, so101):
    """The first quiz: T_world_shoulder and T_shoulder_elbow from MuJoCo's body poses (xpos, xmat) at Q0; the right
    product puts the elbow on MuJoCo's lower_arm body, the swapped one the page's distance away."""
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = build.Q0
    mujoco.mj_kinematics(so101_model, d)

    def pose(body):
        b = so101_model.body(body).id
        return tf.make_transform(d.xmat[b].reshape(3, 3), d.xpos[b])

    T_ws, T_we = pose("shoulder"), pose("lower_arm")
    T_se = np.linalg.inv(T_ws) @ T_we
    sw = build.swap_step(so101)
    assert (sw.shoulder, sw.elbow) == ("shoulder", "lower_arm")
    np.testing.assert_allclose(sw.right, T_we[:3, 3], atol=1e-14)
    np.testing.assert_allclose(sw.swapped, (T_se @ T_ws)[:3, 3], atol=1e-14)
    assert sw.gap == pytest.approx(np.linalg.norm((T_se @ T_ws)[:3, 3] - T_we[:3, 3]), abs=1e-14)
    assert sw.gap > 0.1 and sw.swapped[2] < 0  # the page: below the floor (z = 0, where the base stands)


def test_break_left_to_right_fixed_factors_are_mujocos_site_at_zero(build, so101_model, so101):
    ch = build.chain_step(so101_model, so101)
    br = build.break_step(so101_model, so101, ch.T_tool)
    d = mujoco.MjData(so101_model)
    mujoco.mj_kinematics(so101_model, d)  # qpos = 0 = q_ref for the SO-101
    site = d.site_xpos[so101_model.site(so101.tool_name).id]
    np.testing.assert_allclose(br.site, site, atol=0.0)
    np.testing.assert_allclose(br.home, site, atol=1e-15)
    assert br.home_gap <= 1e-15
    np.testing.assert_allclose(ch.world_in_tool, np.linalg.inv(ch.T_tool)[:3, 3], atol=1e-15)
    # the fixed factors from MuJoCo alone: each joint body in its parent joint body at q = 0, then the site
    bodies = so101_model.jnt_bodyid[[so101_model.joint(n).id for n in so101.joint_names]]
    def pose(xmat, xpos):
        return np.r_[np.c_[xmat.reshape(3, 3), xpos], [[0.0, 0.0, 0.0, 1.0]]]

    frames = [np.eye(4)] + [pose(d.xmat[b], d.xpos[b]) for b in bodies]
    site_T = pose(d.site_xmat[so101_model.site(so101.tool_name).id], site)
    factors = [np.linalg.inv(a) @ b for a, b in zip(frames[:-1], frames[1:])] + [np.linalg.inv(frames[-1]) @ site_T]
    np.testing.assert_allclose(br.reversed, np.linalg.multi_dot(factors[::-1])[:3, 3], atol=1e-14)
    np.testing.assert_allclose(br.order_gap, np.linalg.norm(site - br.reversed), atol=1e-15)
    assert br.untransposed_err > 0.1


def test_t_prev_joint_is_each_bodys_pos_and_quat_in_the_mjcf_and_the_reversed_tool_is_below_the_floor(build,
                                                                                                        so101_model,
                                                                                                        so101):
    """Step 1's clause: each joint sits at its body's origin, so T_prev_joint[i] is that body's pos and quat in the
    model (MuJoCo's body_pos, body_quat); Break it's reversed product puts the tool below z = 0, the floor."""
    m = so101_model
    for T, name in zip(so101.T_prev_joint, so101.joint_names):
        j = m.joint(name)
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, m.body_quat[j.bodyid[0]])
        assert np.abs(m.jnt_pos[j.id]).max() == 0.0
        np.testing.assert_allclose(T[:3, 3], m.body_pos[j.bodyid[0]], atol=1e-15)
        np.testing.assert_allclose(T[:3, :3], R.reshape(3, 3), atol=1e-15)
    ch = build.chain_step(m, so101)
    assert build.break_step(m, so101, ch.T_tool).reversed[2] < 0


def test_step1_prints_the_inverse_label_only_for_the_inverse(build, so101_model, so101, capsys, tmp_path, monkeypatch):
    """The transcript's "(R^T and -R^T p)" is printed only when T @ invert_transform(T) is the identity."""
    edited = _edited(build, "    T_b_a[:3, :3] = R.T\n    T_b_a[:3, 3] = -R.T @ p",
                     "    T_b_a[:3, :3] = R\n    T_b_a[:3, 3] = -R @ p", tmp_path, monkeypatch)
    for module, shown in ((build, True), (edited, False)):
        ch = module.chain_step(so101_model, so101)
        R = ch.T_tool[:3, :3]
        module.print_steps(so101, module.exercise_step(n=2), ch, module.spellings_step(R), module.exp_step(n=5),
                           module.adjoint_step(ch.T_tool), module.refuse_step(R), module.rates_step(R),
                           module.break_step(so101_model, so101, ch.T_tool))
        out = capsys.readouterr().out
        assert ("(R^T and -R^T p)" in out) is shown
        assert "right-to-left" not in out  # the wrong order is the learner's edit to make, not printed before it


def _edited(build, old, new, tmp_path, monkeypatch):
    """A copy of build.py with its one ``old`` replaced by ``new``, imported."""
    import importlib.util
    import sys
    from pathlib import Path

    source = Path(build.__file__).read_text()
    assert source.count(old) == 1  # the code the learner changes is there, once
    copy = tmp_path / "build.py"
    copy.write_text(source.replace(old, new))
    spec = importlib.util.spec_from_file_location("lesson_07_edited_build", copy)
    edited = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, edited)
    spec.loader.exec_module(edited)
    return edited


def test_break_it_edit_as_the_page_words_it_prints_the_pages_distance(build, so101_model, so101, capsys, tmp_path,
                                                                       monkeypatch):
    """Break it, "Multiply in the wrong order": the page's two code spans applied to a copy of build.py (the first
    replaced by the second), run, print the reversed product's distance from MuJoCo's site at q = 0, as the page
    states it (the unedited run's order_gap, to the page's 4 decimals); unedited, the same line prints 0.0000."""
    import re
    from pathlib import Path

    page = (Path(build.__file__).parent / "lesson.md").read_text()
    para = page[page.index("**Multiply in the wrong order.**"):].split("\n\n")[0]
    old, new = [c for c in re.findall(r"`([^`]+)`", para.replace("\n", " ")) if "tf.compose(" in c][:2]
    edited = _edited(build, old, new, tmp_path, monkeypatch)
    ch = build.chain_step(so101_model, so101)
    br = build.break_step(so101_model, so101, ch.T_tool)
    capsys.readouterr()
    build.print_break(br)
    edited.print_break(edited.break_step(so101_model, so101, ch.T_tool))
    before, after = [re.search(r"break_step's product.*?, ([0-9.]+) m from MuJoCo's", out).group(1)
                     for out in capsys.readouterr().out.split("== Break it ==")[1:]]
    assert before == "0.0000"
    assert after == f"{br.order_gap:.4f}"


def test_break_it_forgotten_transpose_is_the_error_the_page_states(build, so101_model, so101, tmp_path, monkeypatch):
    """Break it, "Forget the transpose": R for R.T in both lines of invert_transform; Step 1's T @ invert_transform(T)
    - I then has the largest entry the page prints (break_step's inverse that keeps R), where NumPy's inverse gives
    the identity."""
    edited = _edited(build, "    T_b_a[:3, :3] = R.T\n    T_b_a[:3, 3] = -R.T @ p",
                     "    T_b_a[:3, :3] = R\n    T_b_a[:3, 3] = -R @ p", tmp_path, monkeypatch)
    ch = build.chain_step(so101_model, so101)
    br = build.break_step(so101_model, so101, ch.T_tool)
    assert ch.inverse_err < 1e-14
    np.testing.assert_allclose(edited.chain_step(so101_model, so101).inverse_err, br.untransposed_err, atol=1e-15)
    np.testing.assert_allclose(np.abs(ch.T_tool @ np.linalg.inv(ch.T_tool) - np.eye(4)).max(), 0.0, atol=1e-14)


def test_repeated_step_drifts_linearly_and_varying_steps_like_a_random_walk_in_an_independent_loop(ex):
    """The Experiment's growth table, against a plain float64 loop whose steps come from SciPy's from_rotvec (same
    generator draws): one repeated step's shape error grows in proportion to N (exponent ~1), varying steps' like a
    random walk (~0.5). The varying steps' errors match the loop's to a factor of 2; the repeated step's only in order
of magnitude, since its bias is set by how that one step was rounded, and SciPy rounds it differently."""
    checkpoints, chains = (1_000, 3_000, 10_000), 16
    g = ex.growth(checkpoints, chains)
    w = ex.SIGMA * np.random.default_rng(ex.SEED).normal(size=(checkpoints[-1], chains, 3))
    steps = Rotation.from_rotvec(w.reshape(-1, 3)).as_matrix().reshape(*w.shape[:2], 3, 3)
    one = Rotation.from_rotvec(ex.STEP_ROTVEC).as_matrix()
    R, R1, varying, repeated = np.tile(np.eye(3), (chains, 1, 1)), np.eye(3), [], []
    for k in range(1, checkpoints[-1] + 1):
        R, R1 = np.einsum("cij,cjk->cik", R, steps[k - 1]), R1 @ one
        if k in checkpoints:
            varying.append(np.sqrt(np.mean(np.abs(R @ R.transpose(0, 2, 1) - np.eye(3)).max(axis=(1, 2)) ** 2)))
            repeated.append(np.abs(R1 @ R1.T - np.eye(3)).max())
    np.testing.assert_allclose(np.log(g.varying), np.log(varying), atol=np.log(2))
    np.testing.assert_allclose(np.log(g.repeated), np.log(repeated), atol=np.log(10))
    span = np.log(checkpoints[-1] / checkpoints[0])
    for ours, loop in ((g.slope["repeated"], np.log(repeated[-1] / repeated[0]) / span),
                       (g.slope["varying"], np.log(varying[-1] / varying[0]) / span)):
        assert abs(ours - loop) < 0.3
    assert 0.85 < g.slope["repeated"] < 1.15 and 0.25 < g.slope["varying"] < 0.75
    assert g.repeated[-1] > 10 * g.varying[-1]


def test_float32_reorthonormalised_stays_near_its_own_round_off_above_float64s_tolerance(ex):
    """Break it: re-orthonormalising the float32 matrix holds its shape error at a few float32 epsilons, above
    physai's float64 tolerance, and leaves the angle error where the raw matrix has it."""
    f32 = ex.drift_float32(n_steps=3000)
    eps32 = np.finfo(np.float32).eps
    assert tf.ROTATION_TOL < f32.fixed_ortho < 10 * eps32 < f32.R_ortho
    assert f32.fixed_before > 10 * f32.fixed_ortho


def test_float32_fixed_matrix_just_before_and_right_after_a_fix_as_a_plain_loop_gives(ex):
    """Break it's two numbers: a plain float32 loop, projected every FIX_EVERY steps with NumPy's SVD in float64 and
    stored back in float32, gives the run's shape error just before the last fix to a factor of 2, and right after
    it the same few float32 epsilons."""
    n, eps32 = 3000, np.finfo(np.float32).eps
    dR, R = Rotation.from_rotvec(ex.STEP_ROTVEC).as_matrix().astype(np.float32), np.eye(3, dtype=np.float32)
    for k in range(1, n + 1):
        R = R @ dR
        if k % ex.FIX_EVERY == 0:
            R64 = R.astype(float)
            before = np.abs(R64 @ R64.T - np.eye(3)).max()
            U, _, Vt = np.linalg.svd(R64)
            R = (U @ Vt).astype(np.float32)
    R64 = R.astype(float)
    f32 = ex.drift_float32(n_steps=n)
    assert abs(np.log(f32.fixed_before / before)) < np.log(2)
    assert f32.fixed_ortho < 10 * eps32 and np.abs(R64 @ R64.T - np.eye(3)).max() < 10 * eps32
    assert f32.fixed_angle == pytest.approx(f32.R_angle, rel=0.5)


def test_a_rotation_only_rounded_to_float32_fails_float64s_tolerance(ex):
    """Break it: the exact step, rounded to float32, is a rotation to about float32's epsilon (SciPy's matrix of the
    same rotation vector, rounded and measured here) and so beyond physai's float64 tolerance, which refuses it; the
    same matrix, orthonormalised in float64, is accepted."""
    f32 = ex.drift_float32(n_steps=10)
    R32 = Rotation.from_rotvec(ex.STEP_ROTVEC).as_matrix().astype(np.float32).astype(float)
    shape = np.abs(R32 @ R32.T - np.eye(3)).max()
    assert f32.eps32 == np.finfo(np.float32).eps
    assert f32.cast_ortho == pytest.approx(shape, rel=0.5, abs=f32.eps32)
    assert tf.ROTATION_TOL < f32.cast_ortho < 2 * f32.eps32
    assert f32.cast_refused
    with pytest.raises(InputError):
        tf.matrix_to_quat(R32)
    tf.matrix_to_quat(tf.orthonormalize(R32))


def test_float32_drift_is_orders_above_float64_for_the_same_compositions(ex):
    f32, f64 = ex.drift_float32(n_steps=3000), ex.drift(n_steps=3000)
    worst64 = max(r.vs_exact for r in ex.drift_rows(f64))
    eps32 = np.finfo(np.float32).eps
    assert f32.R_angle > 100 * worst64 and f32.R_ortho > eps32
    assert f32.R_angle < 3000 * 10 * eps32  # at most ~10 float32 roundings per step, all in one direction


def test_scene_pictures_the_so101_with_its_frames(run_lesson, tmp_path, so101_model, so101):
    """scene.py: the picture exists and says how it was made; each joint frame is labelled as Step 1's table names it
    (MuJoCo's body of that joint)."""
    from conftest import check_picture, load_lesson

    _, saved = run_lesson(load_lesson(LESSON, "scene.py"), False)
    check_picture(tmp_path, saved["picture"], "so101")
    assert saved["q"] == [0.0, -0.6, 0.9, 0.4, 0.3]
    if saved["picture"]["rendered"]:  # the two shoulder labels stand apart: more than 2.5 label heights (28 px)
        px = saved["label_pixels"]
        assert np.hypot(*np.subtract(px["shoulder"], px["upper_arm"])) > 70
        m = so101_model
        assert {m.body(m.joint(j).bodyid[0]).name for j in so101.joint_names} <= set(px)


def test_without_pinocchio_the_steps_leave_its_checks_out_and_say_how_to_install_it(build, monkeypatch):
    """Pinocchio is a test and bench dependency, not the course's: without it the lesson runs, its checks against
    Pinocchio are None (the page says how to add them), and the other references still give numbers."""
    monkeypatch.setattr(build, "pin", None)
    ex, xp = build.exercise_step(n=5), build.exp_step(n=20)
    ad = build.adjoint_step(tf.make_transform(Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix(), [0.1, 0.2, 0.3]))
    assert ex.err["twist_adjoint"] is None and xp.pin is None and (ad.twist_pin, ad.wrench_pin) == (None, None)
    assert all(e < 1e-12 for k, e in ex.err.items() if k != "twist_adjoint") and xp.round_trip < 1e-12
    assert ad.power_tool == pytest.approx(ad.power_world, abs=1e-15)  # F.V is the same in both frames
    assert "pip install pin" in build.NO_PIN


def test_frame_figure_labels_clear_each_other_and_stay_inside_the_plot(build, monkeypatch, so101_model, so101):
    """build_frames.png's layout, once drawn: one label per frame (the world, the joints' bodies as Step 1's table
    names them, MuJoCo's, and the tool), in type of at least 14 pt (the figure is 5.6 in wide: at 375 px that reads as
    a 12 px font), no two labels overlapping, every label and every arrow tip inside the axes; each frame drawn at its
    origin's x and z (MuJoCo's xpos of the body)."""
    import matplotlib.pyplot as plt

    from physai.kinematics import joint_frames

    figs = []
    monkeypatch.setattr(build, "save_figure", lambda fig, path, **kw: figs.append(fig))
    monkeypatch.setattr(build.plt, "close", lambda fig: None)
    ch = build.chain_step(so101_model, so101)
    build.figure(so101, [row.body for row in ch.rows], joint_frames(so101, build.Q0)[0], ch.T_tool, None)
    fig = figs[0]
    fig.canvas.draw()
    renderer, ax = fig.canvas.get_renderer(), fig.axes[0]
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = build.Q0
    mujoco.mj_kinematics(so101_model, d)
    bodies = [so101_model.body(so101_model.joint(j).bodyid[0]).name for j in so101.joint_names]
    labels = [t for t in ax.texts if t.get_text()]
    arrows = [t for t in ax.texts if not t.get_text()]  # annotations with an arrow and no text
    assert [t.get_text() for t in labels] == ["world", *bodies, so101.tool_name]
    box = ax.get_window_extent(renderer)
    extents = [t.get_window_extent(renderer) for t in labels]
    for k, (t, e) in enumerate(zip(labels, extents)):
        assert t.get_fontsize() >= 14
        assert not any(e.overlaps(o) for o in extents[k + 1:]), t.get_text()
        assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, t.get_text()
    assert len(arrows) == 3 * (so101.n + 2)
    assert all(box.contains(*p) for p in ax.transData.transform([a.xy for a in arrows]))
    xpos = np.array(ax.lines[0].get_xydata())
    np.testing.assert_allclose(xpos[1:-1], d.xpos[[so101_model.body(b).id for b in bodies]][:, [0, 2]], atol=1e-12)
    plt.close(fig)


def test_step1_table_keeps_frame_names_whole_and_fits_375_px(site, chromium):
    """At 375 px the site lets code in a table cell break anywhere; Step 1's frame names are kept whole (each name one
    line box in Chromium), and the table (the origin as one vector that wraps at its commas) still fits the screen:
    its wrapper does not scroll."""
    import json

    path, sync_api = chromium
    rows = json.loads((site / LESSON / "results.json").read_text())["build"]["chain"]
    names = [row["body"] for row in rows["rows"]] + [rows["tool"]]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox"])
        page = browser.new_context(viewport={"width": 375, "height": 900}).new_page()
        page.goto((site / LESSON / "index.html").as_uri())
        cells = page.evaluate("""() => [...document.querySelectorAll('td code')].map(c => {
            const wrap = c.closest('.table-wrap');
            return [c.innerText, c.getClientRects().length, wrap.scrollWidth > wrap.clientWidth];
        })""")
        browser.close()
    seen = {name: (lines, scrolls) for name, lines, scrolls in cells if name in names}
    assert set(seen) == set(names)
    assert all(seen[name] == (1, False) for name in names), seen
