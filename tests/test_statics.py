"""physai.statics against MuJoCo (mj_applyFT, mj_jacBodyCom, actuator forceranges) and closed forms."""

import mujoco
import numpy as np
import pytest

from physai import mj, statics
from physai.errors import InputError

STRETCHED = np.array([0.0, 1.3, -1.3, 0.0, 0.0])


def test_joint_torques_match_mj_applyFT(so101_model, so101, rng):
    m, d = so101_model, mujoco.MjData(so101_model)
    body = m.site_bodyid[m.site(so101.tool_name).id]
    for q in so101.random_q(rng, 20):
        F, M = rng.normal(size=3), rng.normal(size=3)
        J = mj.site_jacobian(m, so101, q, d)
        ref = np.zeros(m.nv)
        mujoco.mj_applyFT(m, d, F, M, d.site_xpos[m.site(so101.tool_name).id].copy(), body, ref)
        np.testing.assert_allclose(statics.joint_torques(J, np.r_[F, M]), ref[list(so101.dof_adr)], atol=1e-15)


def test_joint_torques_batches_and_validates(so101, rng):
    from physai.kinematics import jacobian

    qs = so101.random_q(rng, (4, 3))
    J, w = jacobian(so101, qs), rng.normal(size=(4, 3, 6))
    tau = statics.joint_torques(J, w)
    assert tau.shape == (4, 3, so101.n)
    np.testing.assert_allclose(tau[2, 1], J[2, 1].T @ w[2, 1], atol=1e-15)
    with pytest.raises(InputError, match="wrench"):
        statics.joint_torques(J, np.ones(3))
    with pytest.raises(InputError, match="J"):
        statics.joint_torques(np.ones((3, 5)), np.ones(6))


def test_gravity_torques_equal_sum_of_body_weights_through_com_jacobians(so101_model, so101, rng):
    m = so101_model
    for q in so101.random_q(rng, 10):
        d = mujoco.MjData(m)
        d.qvel[:] = rng.normal(size=m.nv)  # must be ignored
        g = statics.gravity_torques(m, so101, q, d)
        ref = np.zeros(m.nv)
        for b in range(1, m.nbody):
            jacp = np.zeros((3, m.nv))
            mujoco.mj_jacBodyCom(m, d, jacp, None, b)
            ref -= jacp.T @ (m.body_mass[b] * m.opt.gravity)
        np.testing.assert_allclose(g, ref[list(so101.dof_adr)], atol=1e-14)


def test_actuator_limits_are_the_servo_forceranges(so101_model, so101):
    ids = statics.joint_actuators(so101_model, so101)
    assert [so101_model.actuator(a).name for a in ids] == list(so101.joint_names)
    np.testing.assert_array_equal(statics.actuator_force_limits(so101_model, so101),
                                  so101_model.actuator_forcerange[list(ids), 1])


def test_max_tip_force_closed_form_and_limit_is_tight(rng):
    # joint 0: f <= (2 - 0.5) / 0.1 = 15; joint 1: f <= (2 + (-1)) / 0.2 = 5; joint 2 unloaded
    assert statics.max_tip_force([0.5, -1.0, 3.0], [0.1, -0.2, 0.0], [2.0, 2.0, 2.0]) == (pytest.approx(5.0), 1)
    assert statics.max_tip_force([0.5], [0.0], [2.0]) == (np.inf, -1)
    for _ in range(100):
        g, c, lim = rng.normal(size=5), rng.normal(size=5), rng.uniform(3, 4, size=5)
        f, i = statics.max_tip_force(g, c, lim)
        tau = g + f * c
        assert abs(abs(tau[i]) - lim[i]) < 1e-12 and np.all(np.abs(tau) <= lim + 1e-12)
        assert np.any(np.abs(g + (f + 1e-6) * c) > lim)
    with pytest.raises(InputError, match="limits"):
        statics.max_tip_force([0.0, 0.0], [1.0, 1.0], [1.0, -1.0])


def test_payload_limit_per_newton_is_the_jacobian_vertical_row(so101_model, so101):
    res = statics.payload_limit(so101_model, so101, STRETCHED, direction=(0, 0, -5.0))
    J = mj.site_jacobian(so101_model, so101, STRETCHED)
    np.testing.assert_allclose(res.per_newton, J[2], atol=1e-15)
    assert res.gravity[so101.joint_index("shoulder_pan")] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(InputError, match="direction"):
        statics.payload_limit(so101_model, so101, STRETCHED, direction=(0, 0, 0))


def test_push_at_site_equals_mj_applyFT_at_the_site(so101_model, so101, rng):
    m = so101_model
    sid = m.site(so101.tool_name).id
    q, F = so101.random_q(rng), rng.normal(size=3)
    a = mujoco.MjData(m)
    a.qpos[list(so101.qpos_adr)] = q
    statics.push_at_site(m, a, so101.tool_name, F)
    mujoco.mj_forward(m, a)
    b = mujoco.MjData(m)
    b.qpos[list(so101.qpos_adr)] = q
    mujoco.mj_kinematics(m, b)
    mujoco.mj_comPos(m, b)
    mujoco.mj_applyFT(m, b, F, np.zeros(3), b.site_xpos[sid].copy(), m.site_bodyid[sid], b.qfrc_applied)
    mujoco.mj_forward(m, b)
    np.testing.assert_allclose(a.qacc, b.qacc, atol=1e-9)
