"""Lesson 09 Build it, pinned to MuJoCo (mj_jacSite, site_xpos/site_xmat) and to central differences."""

import mujoco
import numpy as np
import pytest

from physai import mj, robots
from physai.errors import InputError, PhysaiError, UnknownNameError, UnsupportedJointError
from physai.kinematics import chain_from_mujoco, fd_jacobian, fk, hinge_column, jacobian, tool_pose

from conftest import mj_site

Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])


def test_chain_has_the_five_arm_joints_and_limits_from_the_model(so101, so101_model):
    assert so101.joint_names == ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
    ids = [so101_model.joint(n).id for n in so101.joint_names]
    np.testing.assert_array_equal(so101.lower, so101_model.jnt_range[ids, 0])
    np.testing.assert_array_equal(so101.upper, so101_model.jnt_range[ids, 1])


def test_shoulder_lift_column_matches_mj_jacSite_at_lesson_pose(so101, so101_model):
    axes, anchors, p = fk(so101, Q0)
    col = hinge_column(axes[1], anchors[1], p)
    _, _, J_mj = mj_site(so101_model, so101, Q0)
    assert np.abs(col - J_mj[:, 1]).max() <= 1e-15
    # the lesson's printed column and lever, reproduced by MuJoCo itself
    np.testing.assert_allclose(J_mj[:, 1], [-0.0198, 0, -0.2193, 0, 1, 0], atol=5e-5)
    assert round(float(np.linalg.norm(J_mj[:3, 1])), 4) == 0.2202


def test_jacobian_matches_mj_jacSite_at_50_random_poses(so101, so101_model):
    qs = so101.random_q(np.random.default_rng(0), 50)
    for q in qs:
        _, _, J_mj = mj_site(so101_model, so101, q)
        J = jacobian(so101, q)
        assert np.abs(J[:3] - J_mj[:3]).max() <= 1e-14
        assert np.abs(J[3:] - J_mj[3:]).max() <= 1e-14


def test_tool_pose_matches_mujoco_site(so101, so101_model, rng):
    for q in so101.random_q(rng, 50):
        p_mj, R_mj, _ = mj_site(so101_model, so101, q)
        T = tool_pose(so101, q)
        assert np.abs(T[:3, 3] - p_mj).max() <= 1e-14
        assert np.abs(T[:3, :3] - R_mj).max() <= 1e-14
        np.testing.assert_array_equal(T[3], [0, 0, 0, 1])


def test_lesson_step3_speed_and_torques_from_mj_jacSite(so101, so101_model):
    _, _, J_mj = mj_site(so101_model, so101, Q0)
    J = jacobian(so101, Q0)
    speed = np.linalg.norm(J[:3] @ (np.ones(5) / np.sqrt(5)))
    assert speed == pytest.approx(np.linalg.norm(J_mj[:3] @ (np.ones(5) / np.sqrt(5))), abs=1e-15)
    assert round(speed, 3) == 0.312
    lesson_rows = {
        (0, 0, -2.0): [0.0000, 0.4385, 0.5194, 0.2586, 0.0042],
        (2.0, 0, 0): [0.0052, -0.0397, -0.2571, -0.1873, -0.0036],
        (0, 1.5, 0): [-0.3745, 0.0000, 0.0000, 0.0000, 0.0175],
    }
    for F, row in lesson_rows.items():
        tau = J[:3].T @ np.array(F)
        assert np.abs(tau - J_mj[:3].T @ np.array(F)).max() <= 1e-15
        np.testing.assert_allclose(tau, row, atol=5e-5 + 1e-12)


def test_fd_jacobian_central_matches_analytic_below_1e_10(so101):
    qs = so101.random_q(np.random.default_rng(1), 50)
    errs = [np.abs(fd_jacobian(lambda x: fk(so101, x).p, q, 1e-5) - jacobian(so101, q)[:3]).max() for q in qs]
    assert np.median(errs) < 1e-10


def test_fd_jacobian_of_a_closed_form():
    f = lambda q: np.array([np.sin(q[0]) * q[1], q[1] ** 2])  # noqa: E731
    q = np.array([0.3, 2.0])
    exact = np.array([[np.cos(0.3) * 2.0, np.sin(0.3)], [0.0, 4.0]])
    np.testing.assert_allclose(fd_jacobian(f, q), exact, atol=1e-10)


def test_batched_calls_equal_looped_calls(so101, rng):
    qs = so101.random_q(rng, (4, 3))
    Jb, (ab, ob, pb), Tb = jacobian(so101, qs), fk(so101, qs), tool_pose(so101, qs)
    assert Jb.shape == (4, 3, 6, 5) and ab.shape == (4, 3, 5, 3) and pb.shape == (4, 3, 3)
    for idx in np.ndindex(4, 3):
        np.testing.assert_array_equal(Jb[idx], jacobian(so101, qs[idx]))
        np.testing.assert_array_equal(Tb[idx], tool_pose(so101, qs[idx]))
        np.testing.assert_array_equal(ob[idx], fk(so101, qs[idx]).anchors)


def test_builtin_so101_equals_menagerie_model(so101, rng):
    builtin = robots.load("so101", source="builtin")
    assert builtin.joint_names == so101.joint_names
    np.testing.assert_allclose(builtin.lower, so101.lower, atol=0)
    qs = so101.random_q(rng, 200)
    assert np.abs(tool_pose(builtin, qs) - tool_pose(so101, qs)).max() <= 1e-12
    assert np.abs(jacobian(builtin, qs) - jacobian(so101, qs)).max() <= 1e-12


def test_stale_data_trap_in_raw_mujoco_and_guarded_in_physai(so101, so101_model):
    m = so101_model
    d = mujoco.MjData(m)
    q_a, q_b = Q0, Q0 + 0.4
    sid = m.site("gripperframe").id
    d.qpos[list(so101.qpos_adr)] = q_a
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    d.qpos[list(so101.qpos_adr)] = q_b  # the trap: new qpos, no recompute
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    mujoco.mj_jacSite(m, d, jp, jr, sid)
    stale = np.r_[jp, jr][:, list(so101.dof_adr)]
    _, _, J_a = mj_site(m, so101, q_a)
    _, _, J_b = mj_site(m, so101, q_b)
    np.testing.assert_array_equal(stale, J_a)  # raw MuJoCo silently returns the previous pose's Jacobian
    assert np.abs(stale - J_b).max() > 1e-2
    # physai's helper takes q and recomputes: same d, no stale answer
    assert np.abs(mj.site_jacobian(m, so101, q_b, d) - J_b).max() == 0.0
    assert np.abs(mj.site_pose(m, so101, q_b, d)[:3, 3] - mj_site(m, so101, q_b)[0]).max() == 0.0


def test_chain_is_immutable(so101):
    with pytest.raises(Exception):
        so101.lower[0] = 0.0
    with pytest.raises(Exception):
        so101.name = "other"


@pytest.mark.parametrize(
    "q, fragment",
    [(np.zeros(4), "expected shape (..., 5)"), ([0, 0, np.nan, 0, 0], "finite"), ("abc", "array of numbers")],
)
def test_bad_q_is_refused_with_a_message_naming_q(so101, q, fragment):
    for f in (fk, jacobian, tool_pose):
        with pytest.raises(InputError, match="q") as info:
            f(so101, q)
        assert fragment in str(info.value)
        assert isinstance(info.value, ValueError) and isinstance(info.value, PhysaiError)


def test_unknown_site_lists_valid_sites(so101_model):
    with pytest.raises(UnknownNameError) as info:
        chain_from_mujoco(so101_model, "gripper_frame")
    assert "gripperframe" in str(info.value) and "gripper_frame" in str(info.value)
    assert isinstance(info.value, KeyError)


def test_unknown_robot_lists_valid_names():
    with pytest.raises(UnknownNameError, match="so101"):
        robots.load("so100")


def test_unsupported_joint_type_is_refused():
    m = mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody><body><joint name="ball" type="ball"/><geom size=".1"/>
        <body pos="0 0 1"><joint name="h" axis="0 1 0"/><geom size=".1"/><site name="tip" pos="1 0 0"/></body>
        </body></worldbody></mujoco>"""
    )
    with pytest.raises(UnsupportedJointError, match="'ball'"):
        chain_from_mujoco(m, "tip")


def test_slide_joint_column_matches_mj_jacSite():
    m = mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody><body pos="0.1 0 0.2"><joint name="s" type="slide" axis="1 1 0"/><geom size=".1"/>
        <body pos="0 0 0.3" euler="0.3 0.2 0.1"><joint name="h" axis="0 1 0" pos="0.05 0 0" ref="0.2"/><geom size=".1"/>
        <site name="tip" pos="0.4 0.1 0" euler="0.5 0 0"/></body></body></worldbody></mujoco>"""
    )
    chain = chain_from_mujoco(m, "tip")
    assert chain.joint_types == ("slide", "hinge")
    for q in np.random.default_rng(3).uniform(-1, 1, (20, 2)):
        p_mj, R_mj, J_mj = mj_site(m, chain, q)
        assert np.abs(jacobian(chain, q) - J_mj).max() <= 1e-14
        assert np.abs(tool_pose(chain, q)[:3, 3] - p_mj).max() <= 1e-14
        assert np.abs(tool_pose(chain, q)[:3, :3] - R_mj).max() <= 1e-14


def test_missing_menagerie_model_names_menagerie_root(monkeypatch, tmp_path):
    from physai.errors import ModelNotFoundError

    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="MENAGERIE_ROOT"):
        robots.load("so101", source="menagerie")
    assert robots.load("so101").source.startswith("bundled")  # the default never reaches for Menagerie


def test_tool_pose_and_jacobian_equals_separate_calls(so101, rng):
    from physai.kinematics import tool_pose_and_jacobian

    qs = so101.random_q(rng, 7)
    T, J = tool_pose_and_jacobian(so101, qs)
    np.testing.assert_array_equal(T, tool_pose(so101, qs))
    np.testing.assert_array_equal(J, jacobian(so101, qs))
