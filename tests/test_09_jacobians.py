"""Lesson 09 Build it, pinned to MuJoCo (mj_jacSite, site_xpos/site_xmat) and to central differences."""

import re
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import spearmanr

from physai import mj, robots, statics
from physai.errors import InputError, PhysaiError, UnknownNameError, UnsupportedJointError
from physai.kinematics import chain_from_mujoco, fd_jacobian, fk, hinge_column, jacobian, tool_pose

from conftest import load_lesson, mj_site

LESSON = "09-jacobians"

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
    assert abs(float(np.linalg.norm(J_mj[:3, 1])) - 0.2202) <= 0.5e-4  # the course source's printed value


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
    assert abs(speed - 0.312) <= 5e-4  # the course source's printed value
    lesson_rows = {
        (0, 0, -2.0): [0.0000, 0.4385, 0.5194, 0.2586, 0.0042],
        (2.0, 0, 0): [0.0052, -0.0397, -0.2571, -0.1873, -0.0036],
        (0, 1.5, 0): [-0.3745, 0.0000, 0.0000, 0.0000, 0.0175],
    }
    for F, row in lesson_rows.items():
        tau = J[:3].T @ np.array(F)
        assert np.abs(tau - J_mj[:3].T @ np.array(F)).max() <= 1e-15
        np.testing.assert_allclose(tau, row, atol=5e-5 + 1e-12)


def test_build_steps_equal_mj_jacSite_and_every_build_claim_agrees(build, audit, so101, so101_model):
    poses = build.random_poses(so101, 10)
    column, jac = build.column_step(so101_model, so101), build.jacobian_step(so101_model, so101, poses)
    use, fd = build.use_step(so101), build.fd_step(so101, poses)
    J_mj = mj_site(so101_model, so101, Q0)[2]
    np.testing.assert_allclose(np.concatenate([column.linear, column.angular]), J_mj[:, 1], atol=1e-15)
    np.testing.assert_allclose(use.speed, np.linalg.norm(J_mj[:3] @ np.full(5, 5**-0.5)), atol=1e-15)
    np.testing.assert_allclose(use.velocity, J_mj[:3] @ np.full(5, 5**-0.5), atol=1e-15)
    for F, tau in zip(build.FORCES, use.tau):
        np.testing.assert_allclose(tau, J_mj[:3].T @ F, atol=1e-15)
    assert jac.linear <= 1e-14 and jac.angular <= 1e-14 and fd.median < 1e-10
    rows = audit.build_claims({"column": column, "jac": jac, "use": use, "fd": fd})
    assert len(rows) == 9 and {c.verdict for c in rows} == {"agree"}


def test_build_functions_written_from_scratch_match_mj_jacSite_on_the_wxai_too(build, wxai_chain, wxai_model):
    for q in wxai_chain.random_q(np.random.default_rng(3), 5):
        _, J_mj, _, _ = _wx_mj(wxai_model, wxai_chain, q)
        np.testing.assert_allclose(build.jacobian(wxai_chain, q), J_mj, atol=1e-14)
    a, o, p = np.array([0.0, 0.0, 1.0]), np.array([0.1, 0.2, 0.0]), np.array([0.4, 0.2, 0.3])
    # a z-axis hinge through (0.1, 0.2) turns a point 0.3 m along +x from its axis toward +y: velocity (0, 0.3, 0)
    np.testing.assert_allclose(build.hinge_column(a, o, p), [0.0, 0.3, 0.0, 0.0, 0.0, 1.0], atol=1e-15)


def test_build_fd_jacobian_is_central_on_a_closed_form(build):

    def f(x):
        return np.array([np.sin(x[0]) * x[1] ** 2, np.exp(x[1])])

    x = np.array([0.3, 0.7])
    exact = np.array([[np.cos(0.3) * 0.49, 2 * np.sin(0.3) * 0.7], [0.0, np.exp(0.7)]])
    # default step 1e-5: truncation eps^2 |f'''| / 6 ~ 3e-11 (|f'''| <= e^0.7), round-off eps_mach |f| / eps ~ 4e-11
    np.testing.assert_allclose(build.fd_jacobian(f, x), exact, atol=2e-10)
    # central: the error falls 100x when the step falls 10x (truncation ~ eps^2 times the third derivative / 6)
    e1, e2 = (np.abs(build.fd_jacobian(f, x, eps) - exact).max() for eps in (1e-2, 1e-3))
    assert 80 < e1 / e2 < 120


def test_build_results_quote_mj_jacSite(build, so101, so101_model):
    poses = build.random_poses(so101, 5)
    column, jac = build.column_step(so101_model, so101), build.jacobian_step(so101_model, so101, poses)
    use, fd = build.use_step(so101), build.fd_step(so101, poses)
    J_mj = mj_site(so101_model, so101, Q0)[2]
    np.testing.assert_allclose(column.linear, J_mj[:3, 1], atol=1e-15)
    np.testing.assert_allclose(column.lever, np.linalg.norm(J_mj[:3, 1]), atol=1e-15)
    np.testing.assert_allclose(use.tau, [J_mj[:3].T @ F for F in build.FORCES], atol=1e-15)
    np.testing.assert_allclose(use.lift_push_down, 2.0 * -J_mj[2, 1], atol=1e-15)
    assert column.vs_library <= 1e-15 and jac.vs_library <= 1e-14 and fd.median < 1e-10


def test_fd_jacobian_central_matches_analytic_below_1e_10(so101):
    qs = so101.random_q(np.random.default_rng(1), 50)
    errs = [np.abs(fd_jacobian(lambda x: fk(so101, x).p, q, 1e-5) - jacobian(so101, q)[:3]).max() for q in qs]
    assert np.median(errs) < 1e-10


def test_fd_jacobian_of_a_closed_form():
    f = lambda q: np.array([np.sin(q[0]) * q[1], q[1] ** 2])
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
    # bitwise: the same MuJoCo computation on the same pose
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


# ---- Experiment and Break it: every claim row against MuJoCo physics, mj_jacSite and closed forms --------------

DECADES = 10.0 ** -np.arange(1, 15)


@pytest.fixture(scope="module")
def velocity(ex, so101_model, so101):
    return ex.velocity_step(so101_model, so101)


@pytest.fixture(scope="module")
def sweep64(ex, so101_model, so101, velocity):
    return ex.sweep_step(so101_model, so101, velocity.poses)


def verdicts(claims):
    return {c.claim: c.verdict for c in claims}


def test_step1_speed_is_the_median_mj_jacSite_speed_and_the_sources_claims_hold(ex, velocity, so101_model, so101):
    speeds = [np.linalg.norm(mj_site(so101_model, so101, q)[2][:3] @ np.full(5, 5 ** -0.5)) for q in velocity.poses]
    np.testing.assert_allclose(velocity.speed, np.median(speeds), rtol=1e-13)
    assert abs(np.median(speeds) - 0.306) <= 5e-4
    assert set(verdicts(ex.velocity_claims(velocity)).values()) == {"agree"}


def test_velocity_map_matches_site_motion_to_first_order_in_dt(ex, so101_model, so101, velocity):
    rng = np.random.default_rng(1)
    qdots = rng.normal(size=(10, so101.n))
    qdots /= np.linalg.norm(qdots, axis=1, keepdims=True)
    lin, ang, _ = ex.velocity_map(so101_model, so101, velocity.poses[:10], qdots, dt=1e-6)
    lin10, ang10, _ = ex.velocity_map(so101_model, so101, velocity.poses[:10], qdots, dt=1e-5)
    assert lin < 1e-5 and ang < 1e-5
    # truncation error O(dt): ten times the step, about ten times the error
    assert 5 < lin10 / lin < 15 and 5 < ang10 / ang < 15


def test_sweep_truncation_cells_equal_central_differences_of_mujoco_site_xpos(ex, sweep64, velocity, so101_model,
                                                                            so101):
    m, d, sid, eps = so101_model, mujoco.MjData(so101_model), so101_model.site(so101.tool_name).id, 1e-3

    def site_xpos(q):
        d.qpos[list(so101.qpos_adr)] = q
        mujoco.mj_kinematics(m, d)
        return d.site_xpos[sid].copy()

    errs = []
    for q in velocity.poses:
        cols = [(site_xpos(q + eps * e) - site_xpos(q - eps * e)) / (2 * eps) for e in np.eye(5)]
        errs.append(np.abs(np.column_stack(cols) - mj_site(m, so101, q)[2][:3]).max())
    row = ex.TABLE_EPS.index(eps)
    np.testing.assert_allclose(sweep64.table[row, 2], np.median(errs), rtol=1e-5)
    assert abs(np.median(errs) - 4.2e-08) <= 0.05e-8  # the course source's printed value
    claims = verdicts(ex.sweep_claims(sweep64))
    assert len(claims) == 2 * (len(ex.TABLE_EPS) + 1) + 2 and set(claims.values()) == {"agree"}


def test_fd_sweep_against_mj_jacSite_is_V_shaped_with_minima_at_1e8_forward_1e5_central(ex, so101_model, so101,
                                                                                        velocity):
    med = ex.sweep(so101_model, so101, velocity.poses, DECADES)
    best = ex.best_steps(DECADES, med)
    # by exponent: 10.0 ** -k is not the literal 1e-k on every CPU (9.999999999999999e-06 with AVX-512)
    assert {k: round(np.log10(v)) for k, v in best.items()} == {"forward": -8, "central": -5}
    eps_mach = np.finfo(float).eps
    assert abs(np.log10(best["forward"] / np.sqrt(eps_mach))) < 1
    assert abs(np.log10(best["central"] / np.cbrt(eps_mach))) < 1
    fwd, cen = med[:, 0], med[:, 2]
    # right of the minimum truncation: 10x per decade forward, 100x central; left: round-off 10x per decade
    np.testing.assert_allclose(fwd[0] / fwd[2], 100, rtol=0.05)
    np.testing.assert_allclose(cen[0] / cen[2], 1e4, rtol=0.05)
    assert fwd[-1] > 1e5 * fwd.min() and cen[-1] > 1e8 * cen.min()
    # rotational columns: a hinge step rotates the site exactly, so only round-off remains
    assert med[0, 1] < 1e-13 and med[0, 3] < 1e-13


def test_float32_sweep_moves_the_minima_to_sqrt_and_cbrt_of_eps32(ex, so101_model, so101, velocity, sweep64):
    hard = ex.hard_step(so101_model, so101, velocity.poses[:10], sweep64.med)
    eps32 = np.finfo(np.float32).eps
    assert abs(np.log10(hard.best["forward"] / np.sqrt(eps32))) <= 1
    assert abs(np.log10(hard.best["central"] / np.cbrt(eps32))) <= 1
    easy, medium = SimpleNamespace(tau_pan=0.0), SimpleNamespace(stretched=SimpleNamespace(per_newton=0.41))
    assert verdicts(ex.exercise_claims(easy, medium, hard))[
        "Hard: float32 best steps near sqrt(eps_32), cbrt(eps_32)"] == "agree"


def test_servo_torques_in_simulation_equal_the_sources_JT_F_and_each_other(ex, so101):
    r = ex.servo_step(so101)
    for (source_tau, _), row in zip(ex.SOURCE_TAU, r.rows):
        np.testing.assert_allclose(row.servo, np.array(source_tau, dtype=float), atol=0.5e-4 + 1e-12)  # MuJoCo's
        np.testing.assert_allclose(row.tau, row.servo, atol=1e-12)
    assert [row.ncon for row in r.rows] == [0] * 4 and r.qdot < 1e-12
    assert r.standin_ncon > 0 and r.standin_miss > 0.01  # why the stand-in contacts are off
    assert set(verdicts(ex.servo_claims(r)).values()) == {"agree"}
    # the page's "on top of the torque holding the arm's weight": MuJoCo's qfrc_bias at rest, gravity on
    m = ex.so101_sim()
    d = mujoco.MjData(m)
    d.qpos[list(so101.qpos_adr)] = ex.Q_STEP3
    mujoco.mj_forward(m, d)
    g_lift = d.qfrc_bias[so101.dof_adr[1]]
    assert r.weight_lift == pytest.approx(abs(g_lift), abs=1e-12)
    assert np.sign(g_lift) == -np.sign(r.rows[0].tau[1]) and abs(g_lift) > 0.1  # adds to the push's servo torque
    # Step 3's answer: the lift servo holds -J^T F (mj_jacSite at the commanded pose) plus the weight (qfrc_bias)
    jz = mj_site(m, so101, ex.Q_STEP3)[2][2, 1]
    push = -float(jz * ex.FORCES[0][2])
    assert r.push_lift == pytest.approx(push, abs=1e-12) and r.hold_lift == pytest.approx(push + g_lift, abs=1e-12)
    assert push < 0 and g_lift < 0  # the page: both shares turn the lift the same way, and it writes g as -|g|
    # the page's "well inside its limit": the lift actuator's forcerange, read from the model by name
    lift_act = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, "shoulder_lift")
    assert abs(r.hold_lift) < 0.5 * m.actuator_forcerange[lift_act, 1]


def test_servos_supply_minus_the_generalised_force_mj_applyFT_gives_for_a_push_on_the_tool(ex, so101):
    """The page's sign convention: F is the push on the tool, J^T F what it puts on the joints, -J^T F the servos'."""
    m = ex.so101_sim(gravity=False, frictionloss=False)
    F = np.asarray(ex.FORCES[0], dtype=float)
    d = ex.hold(m, so101, ex.Q_STEP3, F, ex.HOLD_S)
    sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, so101.tool_name)
    push = np.zeros(m.nv)
    mujoco.mj_applyFT(m, d, F, np.zeros(3), d.site_xpos[sid], m.site_bodyid[sid], push)
    acts = list(statics.joint_actuators(m, so101))
    dofs = [m.jnt_dofadr[m.joint(name).id] for name in so101.joint_names]
    np.testing.assert_allclose(d.actuator_force[acts], -push[dofs], atol=1e-9)
    assert np.abs(push[dofs]).max() > 0.1


def test_payload_limits_equal_the_closed_form_from_mujoco_bias_forces_and_jacobian(ex, so101):
    r = ex.payload_step(so101)
    m = ex.so101_sim()
    d = mujoco.MjData(m)
    lim = m.actuator_forcerange[:, 1][list(range(5))]
    for p in r.poses:
        d.qpos[list(so101.qpos_adr)], d.qvel[:] = p.q, 0.0
        mujoco.mj_forward(m, d)
        g = d.qfrc_bias[list(so101.dof_adr)]  # gravity torques at rest
        Jz = mj_site(m, so101, p.q)[2][2]
        # servo torque tau(f) = g - f J_p^T (0, 0, -1) = g + f Jz stays within +-lim: the first joint to saturate
        loaded = np.abs(Jz) > 1e-12
        f = np.full(5, np.inf)
        f[loaded] = (np.sign(Jz[loaded]) * lim[loaded] - g[loaded]) / Jz[loaded]
        np.testing.assert_allclose([p.lift, p.elbow], g[[1, 2]], atol=1e-12)
        np.testing.assert_allclose(p.force, f.min(), rtol=1e-12)
        assert p.joint == so101.joint_names[int(np.argmin(f))]
        np.testing.assert_allclose(p.lever, np.linalg.norm(mj_site(m, so101, p.q)[2][:3, 1]), atol=1e-15)
        # the page's rule, read off its own table: at the saturating joint the push adds to the gravity torque
        # (g and Jz = -c of one sign), so f = (limit - |g|) / |c|
        key, i = {"shoulder_lift": "lift", "elbow_flex": "elbow"}[p.joint], so101.joint_index(p.joint)
        assert np.sign(g[i]) == np.sign(Jz[i])
        per_n = getattr(p, f"{key}_per_n")
        np.testing.assert_allclose(p.force, (lim[i] - abs(getattr(p, key))) / per_n, rtol=1e-12)
    assert set(verdicts(ex.payload_claims(r)).values()) == {"agree"}


def test_gravity_torque_the_page_reads_is_the_sum_of_link_com_jacobians_times_weights(ex, so101):
    """Reference: MuJoCo's mj_jacBodyCom per body. The page's g(q) = -sum_i J_com,i^T m_i g equals qfrc_bias at rest
    (MuJoCo's recursive Newton-Euler), and the payload table's gravity torques are its lift and elbow entries."""
    m = ex.so101_sim()
    d = mujoco.MjData(m)
    dof = list(so101.dof_adr)
    for p in ex.payload_step(so101).poses:
        d.qpos[list(so101.qpos_adr)], d.qvel[:] = p.q, 0.0
        mujoco.mj_forward(m, d)
        g = np.zeros(m.nv)
        for body in range(1, m.nbody):
            jacp = np.zeros((3, m.nv))
            mujoco.mj_jacBodyCom(m, d, jacp, None, body)
            g -= jacp.T @ (m.body_mass[body] * m.opt.gravity)
        np.testing.assert_allclose(d.qfrc_bias, g, atol=1e-12)
        np.testing.assert_allclose([p.lift, p.elbow], g[dof][[1, 2]], atol=1e-12)


def test_lerobot_jog_ends_on_the_goal_and_stays_on_the_line_by_mujocos_site(ex, so101, so101_model):
    """Reference: MuJoCo's site position of the bundled model at the jog's joint answers (an ideal servo)."""
    from physai.lerobot import RobotKinematics

    r = ex.jog_step()
    kin = RobotKinematics(str(robots.model_path("so101")), "gripperframe")
    q = np.r_[np.rad2deg(ex.Q_STEP3), 20.0]
    p0 = mj_site(so101_model, so101, ex.Q_STEP3)[0]
    T_goal = kin.forward_kinematics(q)
    off = []
    for _ in range(r.ticks):
        T_goal[0, 3] += r.step
        q = kin.inverse_kinematics(q, T_goal, orientation_weight=0.0)
        off.append(mj_site(so101_model, so101, np.deg2rad(q[:5]))[0] - p0)
    np.testing.assert_allclose(r.final_um, 1e6 * np.linalg.norm(off[-1] - [r.ticks * r.step, 0, 0]), atol=1e-6)
    np.testing.assert_allclose(r.deviation_um, 1e6 * max(np.hypot(o[1], o[2]) for o in off), atol=1e-6)
    assert r.final_um < 100 and r.deviation_um < 100 and r.gripper == (20.0, q[-1]) == (20.0, 20.0)


def test_stretched_pose_is_near_singular_but_loses_only_the_horizontal_direction_along_the_arm(ex, so101):
    """The check-yourself answer: sigma_min of mj_jacSite's J_p collapses stretched, and its lost direction (the
    left singular vector) is horizontal along the arm, so a downward push still meets the lift's full lever."""
    payload, m = ex.payload_step(so101), ex.so101_sim()
    for p in payload.poses:
        Jp = mj_site(m, so101, p.q)[2][:3]
        U, sigma, _ = np.linalg.svd(Jp)
        np.testing.assert_allclose(p.sigma_min, sigma[-1], rtol=1e-9, atol=1e-15)
        assert abs(abs(p.lost @ U[:, -1]) - 1.0) < 1e-9 and np.abs(p.lost).max() == p.lost.max()
    stretched, mid = payload.pose("stretched"), payload.pose("mid")
    assert stretched.sigma_min < mid.sigma_min / 10
    assert stretched.lost[0] > 0.99 and abs(stretched.lost[2]) < 0.1  # horizontal, along +x (the arm, pan at zero)
    assert stretched.lift_per_n > 0.4  # the downward push is not in the lost direction


def test_near_pose_holds_less_than_mid_because_the_elbow_saturates_with_the_longer_lever_mj_jacSite(ex, so101):
    """Break it's explanation: near and mid are limited by the elbow, whose horizontal lever (|mj_jacSite z entry|)
    and gravity torque (qfrc_bias at rest) are both larger folded; the lift lever is not what decides."""
    payload = ex.payload_step(so101)
    r = {name: payload.pose(name) for name in ex.POSES}
    m = ex.so101_sim()
    d = mujoco.MjData(m)
    elbow, lift = so101.joint_index("elbow_flex"), so101.joint_index("shoulder_lift")
    ref = {}
    for name in ("folded", "mid", "stretched"):
        d.qpos[list(so101.qpos_adr)], d.qvel[:] = ex.POSES[name], 0.0
        mujoco.mj_forward(m, d)
        Jz = mj_site(m, so101, ex.POSES[name])[2][2]
        ref[name] = {"g": np.abs(d.qfrc_bias[list(so101.dof_adr)]), "per_n": np.abs(Jz)}
        np.testing.assert_allclose([r[name].lift_per_n, r[name].elbow_per_n], np.abs(Jz[[lift, elbow]]),
                                   atol=1e-15)
    assert r["folded"].joint == r["mid"].joint == "elbow_flex" and r["stretched"].joint == "shoulder_lift"
    # the quiz on mid against stretched: stretched, the lift's lever and its gravity torque are both larger
    assert ref["stretched"]["per_n"][lift] > ref["mid"]["per_n"][lift]
    assert ref["stretched"]["g"][lift] > ref["mid"]["g"][lift]
    assert r["folded"].lever < r["mid"].lever and r["folded"].force < r["mid"].force  # the puzzle
    assert ref["folded"]["per_n"][elbow] > ref["mid"]["per_n"][elbow]
    assert ref["folded"]["g"][elbow] > ref["mid"]["g"][elbow]
    for name in ("folded", "mid"):
        np.testing.assert_allclose(r[name].limit_per_n, ref[name]["per_n"][elbow], atol=1e-15)
        np.testing.assert_allclose(r[name].limit_gravity, ref[name]["g"][elbow], atol=1e-12)


def test_fd_figure_step_grows_to_the_right_legend_inside_and_truncation_right_of_the_minimum(ex, sweep64, tmp_path):
    """The page says truncation rules to the right of the minimum and round-off to the left: the figure's x axis
    must increase to the right, and in the run's sweep the error must rise with the step right of each minimum."""
    layout = ex.plot_sweep(sweep64.med, np.float64, tmp_path / "fd.png", ex.N_POSES)
    assert layout["xlim"][0] < layout["xlim"][1] and layout["legend_inside"]
    text = (Path(ex.__file__).parent / "lesson.md").read_text()
    assert "To the right of the minimum, where\nthe steps are larger, truncation rules" in text
    grid, med = ex.EPS_GRID, sweep64.med
    for j, order in ((0, 1), (2, 2)):  # forward and central Jp: truncation O(eps), O(eps^2)
        best = int(np.argmin(med[:, j]))
        right = grid > 10 * grid[best]  # clear of the minimum's bend
        slope = np.polyfit(np.log10(grid[right]), np.log10(med[right, j]), 1)[0]
        assert abs(slope - order) < 0.15, (j, slope)
        left = grid < grid[best] / 10
        slope = np.polyfit(np.log10(grid[left]), np.log10(med[left, j]), 1)[0]
        assert abs(slope + 1) < 0.15, (j, slope)  # round-off ~ eps_mach / eps


def test_hard_exercise_figure_is_shown_only_in_its_answer(ex):
    """The float32 sweep answers the Hard exercise, so the page shows it nowhere before that exercise's answer."""
    text = (Path(ex.__file__).parent / "lesson.md").read_text()
    hard = text.index('exercise("Hard"')
    assert text.count("fd_step_sweep_float32.png") == 1 and text.index("fd_step_sweep_float32.png") > hard
    assert "float32" not in text[text.index("## Experiment"):text.index("## Break it")]


def test_arm_holds_at_0p9_and_falls_at_1p1_times_the_limit_in_simulation(ex, so101):
    limit = ex.payload_step(so101).pose("stretched").force
    r = ex.fall_step(so101, limit)
    lim = ex.so101_sim().actuator_forcerange[1, 1]
    assert r.at(0.9).drop < 3e-3 and abs(r.at(0.9).lift) < lim
    assert r.at(1.1).drop > 0.1 and r.at(1.1).lift == pytest.approx(-lim, abs=1e-12)  # the servo clamps
    # the page's "sags by at most" reads row 2: the 0.9 row, the largest drop below the limit
    assert r.rows[2].fraction == 0.9 and max(row.drop for row in r.rows if row.fraction < 1) == r.rows[2].drop
    assert set(verdicts(ex.fall_claims(r)).values()) == {"agree"}
    # why the page says Break it runs with the stand-in contacts off: on, they saturate the lift at zero load
    _, lift_on = ex.fall(ex.so101_sim(standin_contacts=True), so101, ex.POSES["stretched"], 0.0)
    assert lift_on == pytest.approx(-lim, abs=1e-12) and abs(r.at(0.0).lift) < 0.5 * lim


def test_exercises_pan_torque_is_zero_and_stretched_lever_is_mj_jacSites(ex, so101_model, so101):
    easy, medium = ex.easy_step(so101_model, so101), ex.medium_step(so101_model, so101, n_grid=5)
    J = mj_site(so101_model, so101, ex.Q_STEP3)[2]
    assert abs(J[2, 0]) < 1e-15 and abs(easy.tau_pan) < 1e-15
    # the sideways pushes: the pan's moment a . (r x F), with r from MuJoCo's site_xpos and xanchor
    p, _, _, d = _wx_mj(so101_model, so101, ex.Q_STEP3)  # MuJoCo's site and joint frames (any arm)
    pan = so101_model.joint("shoulder_pan").id
    r = p - d.xanchor[pan]
    np.testing.assert_allclose(easy.r, r, atol=1e-15)
    for key, F in (("tau_x", ex.FORCES[1]), ("tau_y", ex.FORCES[2])):
        np.testing.assert_allclose(getattr(easy, key), d.xaxis[pan] @ np.cross(r, F), atol=1e-15)
    assert abs(easy.tau_x) < 0.05 * abs(easy.tau_y)  # the page's "barely" against "heavily"
    J_str = mj_site(so101_model, so101, ex.POSES["stretched"])[2]
    np.testing.assert_allclose(medium.stretched.per_newton, abs(J_str[2, 1]), atol=1e-15)
    best = medium.best
    assert abs(J_str[2, 1]) - 1e-9 <= best.per_newton <= best.distance + 1e-15  # a lever within its distance
    claims = verdicts(ex.exercise_claims(easy, medium, SimpleNamespace(best={"forward": 3e-4, "central": 5e-3})))
    assert claims["Easy: pan torque for F = (0, 0, -2) N is exactly 0.0000"] == "agree"
    assert claims["Medium: lift torque per newton down, stretched pose"] == "agree"


def test_medium_search_finds_the_optimum_of_an_independent_multistart_on_mj_jacSite(ex, so101_model, so101):
    """Reference: SciPy's L-BFGS-B from 60 uniform starts within the joint limits (pan 0) on MuJoCo's mj_jacSite
    lift entry, with no grid. The run's best pose must reach the same maximum, and its value is mj_jacSite's."""
    medium = ex.medium_step(so101_model, so101)
    lift, free = 1, [1, 2, 3, 4]
    bounds = list(zip(so101.lower[free], so101.upper[free]))

    def per_newton(x):
        return abs(mj_site(so101_model, so101, np.r_[0.0, x])[2][2, lift])

    starts = np.random.default_rng(7).uniform(*np.array(bounds).T, (60, 4))
    ref = min((minimize(lambda x: -per_newton(x), x0, method="L-BFGS-B", bounds=bounds) for x0 in starts),
              key=lambda r: r.fun)
    best = medium.best
    # L-BFGS-B's finite-difference gradient stops within ~1e-8 of the top of a quadratic-topped maximum
    assert best.per_newton == pytest.approx(-ref.fun, abs=1e-8)
    assert best.per_newton >= -ref.fun - 1e-12  # the run's polish is at least as good as the reference's
    np.testing.assert_allclose(best.q[free], ref.x, atol=1e-3)
    p, _, J = mj_site(so101_model, so101, best.q)
    assert best.per_newton == pytest.approx(abs(J[2, lift]), abs=1e-15)
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = best.q
    mujoco.mj_kinematics(so101_model, d)
    r = p - d.xanchor[so101_model.joint("shoulder_lift").id]
    assert best.reach == "forwards" and r[0] > 0  # MuJoCo's world +x, where the arm faces at pan 0
    assert best.per_newton > medium.stretched.per_newton  # the page's "beats the stretched pose"
    # the page's "a family, one for every pan angle": mj_jacSite's lift entry at the best pose with the pan swept
    swept = [abs(mj_site(so101_model, so101, np.r_[pan, best.q[1:]])[2][2, lift])
             for pan in np.linspace(so101.lower[0], so101.upper[0], 9)]
    np.testing.assert_allclose(swept, best.per_newton, atol=1e-15)
    assert medium.pan_spread == pytest.approx(np.ptp(swept), abs=1e-15) and medium.pan_spread < 1e-14


# ---- WidowX AI variant (wxai.py): each claim row against MuJoCo's model of the Trossen arm ------------------


@pytest.fixture(scope="module")
def wx():
    return load_lesson("09-jacobians", "wxai.py")


@pytest.fixture(scope="module")
def wxai_chain():
    return robots.load("wxai")


@pytest.fixture(scope="module")
def wxai_model(wx):
    return mujoco.MjModel.from_xml_path(str(wx.WXAI))


def _wx_mj(m, chain, q):
    """MuJoCo's reference at q (any arm; the WidowX AI's tests use it most): site position, [jacp; jacr] and the bias forces at rest (gravity torques)."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_forward(m, d)
    sid = m.site(chain.tool_name).id
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    mujoco.mj_jacSite(m, d, jp, jr, sid)
    dof = list(chain.dof_adr)
    return d.site_xpos[sid].copy(), np.r_[jp, jr][:, dof], d.qfrc_bias[dof].copy(), d


def test_wxai_linear_entries_stay_below_0p77_and_the_base_column_is_the_radius(wx, wxai_model, wxai_chain):
    r = wx.velocity_step(wxai_chain, n_poses=200)
    ref = max(np.abs(_wx_mj(wxai_model, wxai_chain, q)[1][:3]).max()
              for q in wxai_chain.random_q(np.random.default_rng(0), 200))
    np.testing.assert_allclose(r.max_entry, ref, atol=1e-14)
    assert ref <= 0.77
    p = _wx_mj(wxai_model, wxai_chain, wx.solve_pose(wxai_chain, 0.30, 0.25, 0.9))[0]
    np.testing.assert_allclose(r.sweep_speed, np.hypot(p[0], p[1]), atol=1e-14)  # base axis is vertical at 0
    np.testing.assert_allclose(np.hypot(p[0], p[1]), 0.3, atol=1e-9)


def test_wxai_entry_bound_is_each_columns_own_lever_not_the_reach_from_the_shoulder(wx, wxai_model, wxai_chain):
    """The page's statistic, recomputed from MuJoCo's xaxis/xanchor/site_xpos and mj_jacSite on the same poses:
    every entry is within its column's lever, and the base column's lever passes the tool's distance from the
    shoulder by at most the shoulder anchor's distance from the base axis (which is why it can exceed the reach)."""
    r = wx.velocity_step(wxai_chain)
    m, d = wxai_model, mujoco.MjData(wxai_model)
    jnt = [m.joint(n).id for n in wxai_chain.joint_names]
    entries, levers, shoulder, offset = [], [], [], []
    for q in wxai_chain.random_q(np.random.default_rng(wx.SEED), wx.N_VELOCITY_POSES):
        p, J, _, d = _wx_mj(m, wxai_chain, q)
        axes, anchors = d.xaxis[jnt], d.xanchor[jnt]
        lev = np.linalg.norm(np.cross(axes, p - anchors), axis=1)
        assert (np.abs(J[:3]) <= lev + 1e-12).all()
        entries.append(np.abs(J[:3]).max())
        levers.append(lev)
        shoulder.append(np.linalg.norm(p - anchors[1]))
        offset.append(np.linalg.norm(np.cross(axes[0], anchors[1] - anchors[0])))
        assert lev[0] <= shoulder[-1] + offset[-1] + 1e-12  # triangle inequality about the base axis
    levers = np.array(levers)
    np.testing.assert_allclose(r.max_entry, max(entries), atol=1e-12)
    np.testing.assert_allclose(r.max_lever, levers.max(), atol=1e-12)
    np.testing.assert_allclose(r.max_shoulder, max(shoulder), atol=1e-12)
    np.testing.assert_allclose(r.shoulder_offset, offset[0], atol=1e-12)
    assert r.lever_joint == r.entry_joint == "joint_0" and r.slack <= 1e-12
    assert r.max_lever > r.max_shoulder > r.lever_shoulder  # what the page says of these poses


def test_wxai_payload_map_colour_scale_spans_the_collapse_it_shows(wx, wxai_model, wxai_chain):
    """The median limits near the base and at full reach must sit inside the colour range and far apart on it."""
    r = wx.payload_map_step(wxai_model, wxai_chain, grid=(11, 9))
    lo, hi = r.colour_kg
    near, far = r.bins[0].median, r.bins[-1].median
    assert lo <= far < near <= hi and (near - far) / (hi - lo) > 0.4
    assert (r.kg > hi).mean() <= 0.25 + 1e-12  # only the top quartile shares the top colour
    np.testing.assert_allclose(r.upper_quartile_kg, np.percentile(r.kg, 75), rtol=0, atol=0)
    assert r.upper_quartile_kg <= hi < r.upper_quartile_kg + 0.5  # the caption: the quartile, rounded up to 0.5 kg


def test_wxai_payload_map_names_the_first_servo_out_as_the_closed_form_on_mujocos_bias_and_jacobian(
        wx, wxai_model, wxai_chain):
    """Reference: MuJoCo's qfrc_bias g and mj_jacSite at each pose of the map's grid; the servos supply g + f J_z
    (J_z the vertical row), so joint i reaches its limit L_i at f_i = (sign(J_zi) L_i - g_i) / J_zi, and the first
    joint out is the one with the smallest f_i. The page's "wrist near the base, shoulder far out"."""
    grid = (11, 9)
    r = wx.payload_map_step(wxai_model, wxai_chain, grid=grid)
    c = wxai_chain
    by_joint = {int(j): k for k, j in enumerate(wxai_model.actuator_trnid[:, 0])}  # MuJoCo: actuator k drives joint j
    limits = np.array([wxai_model.actuator_forcerange[by_joint[wxai_model.joint(n).id], 1] for n in c.joint_names])
    reach, kg, first = [], [], []
    for a in np.linspace(c.lower[1], c.upper[1], grid[0]):
        for b in np.linspace(c.lower[2], c.upper[2], grid[1]):
            p, J, g, _ = _wx_mj(wxai_model, c, np.array([0.0, a, b, 0.0, 0.0, 0.0]))
            if p[2] >= 0:
                Jz = J[2]
                f = np.where(np.abs(Jz) > 1e-12, (np.sign(Jz) * limits - g) / np.where(Jz == 0, 1, Jz), np.inf)
                reach.append(np.hypot(p[0], p[1]))
                kg.append(f.min() / wx.G0)
                first.append(c.joint_names[int(np.argmin(f))])
    reach, kg, first = np.array(reach), np.array(kg), np.array(first)
    assert r.limited_by == {n: int(np.sum(first == n)) for n in c.joint_names if np.any(first == n)}
    for b in r.bins:
        s = (reach >= b.lo) & (reach < b.hi)
        np.testing.assert_allclose(b.min, kg[s].min(), rtol=1e-12)
        assert b.min_joint == first[s][np.argmin(kg[s])]
    assert r.bins[0].min_joint == "joint_3" and r.bins[-1].min_joint == "joint_1"
    assert r.limited_by["joint_3"] > r.n / 2
    mins = [b.min for b in r.bins]  # "the smallest hardly moves until the tool is far out"
    assert np.ptp(mins[:3]) < 0.01 * mins[0] and mins[-1] < min(mins[:3])


def test_wxai_wrist_limited_poses_are_weakest_with_the_forearm_level(wx, wxai_model, wxai_chain):
    """The page: at one reach the limit varies with height because joint_3's lever, wrist straight, is longest with
    the forearm level. Reference: the wrist-to-tool line's pitch from MuJoCo (joint_3's anchor to the site) and the
    closed-form limit on qfrc_bias and mj_jacSite, over the grid's joint_3-limited poses."""
    c, m = wxai_chain, wxai_model
    by_joint = {int(j): k for k, j in enumerate(m.actuator_trnid[:, 0])}
    limits = np.array([m.actuator_forcerange[by_joint[m.joint(n).id], 1] for n in c.joint_names])
    pitch, kg = [], []
    for a in np.linspace(c.lower[1], c.upper[1], 15):
        for b in np.linspace(c.lower[2], c.upper[2], 13):
            p, J, g, d = _wx_mj(m, c, np.array([0.0, a, b, 0.0, 0.0, 0.0]))
            Jz = J[2]
            f = np.where(np.abs(Jz) > 1e-12, (np.sign(Jz) * limits - g) / np.where(Jz == 0, 1, Jz), np.inf)
            if p[2] >= 0 and c.joint_names[int(np.argmin(f))] == "joint_3":
                fore = p - d.xanchor[m.joint("joint_3").id]  # the wrist-to-tool line, along the forearm
                pitch.append(abs(np.arctan2(fore[2], np.hypot(fore[0], fore[1]))))
                kg.append(f.min())
    pitch, kg = np.array(pitch), np.array(kg)
    # the limit grows as the forearm tilts away from level (up and down differ a little: the rank, not the value)
    assert spearmanr(pitch, kg).statistic > 0.8
    assert pitch[np.argmin(kg)] < 0.1 and kg.max() > kg.min() + 0.5 * wx.G0


def test_wxai_payload_statics_equal_mujoco_bias_forces_and_jacobian(wx, wxai_model, wxai_chain):
    r = wx.statics_step(wxai_model, wxai_chain)
    m = wxai_model
    for row in (r.straight, r.within):
        p, J, g, d = _wx_mj(m, wxai_chain, row.q)
        anchor = d.xanchor[m.joint("joint_1").id]
        np.testing.assert_allclose(row.lever, p[0] - anchor[0], atol=1e-12)
        np.testing.assert_allclose(row.tau_payload, 1.5 * 9.80665 * J[2, 1], atol=1e-12)  # servos hold -J^T (0, 0, -mg)
        np.testing.assert_allclose(row.tau_links, g[1], atol=1e-12)
        np.testing.assert_allclose([row.payload, row.links, row.total],
                                   np.abs([1.5 * 9.80665 * J[2, 1], g[1], 1.5 * 9.80665 * J[2, 1] + g[1]]), atol=1e-12)
    assert abs(r.straight.lever - 0.769) <= 5e-4 and abs(r.straight.payload - 11.3) <= 0.05
    assert 0.5 < r.within.total / 27 < 1 and m.actuator_forcerange[1, 1] == 27
    np.testing.assert_allclose(r.share, r.within.total / m.actuator_forcerange[1, 1], rtol=1e-15)


def test_wxai_model_compensates_gravity_outside_the_servo_and_holds_a_payload_over_the_limit_mujoco(wx, wxai_model,
                                                                                                    wxai_chain):
    """The page: the model's bodies have gravcomp=1 and its joints actuatorgravcomp, so the forcerange clamps only the
    position servo; MuJoCo, holding 1.4 x the page's payload limit at the longest lever within the limits for 2 s,
    keeps every arm servo inside its forcerange while the shoulder joint gets more than 27 N m in all."""
    m, r = wxai_model, wx.statics_step(wxai_model, wxai_chain)
    dof, bodies = list(wxai_chain.dof_adr), [m.jnt_bodyid[m.dof_jntid[i]] for i in wxai_chain.dof_adr]
    assert np.all(m.body_gravcomp[bodies] == 1) and np.all(m.jnt_actgravcomp[m.dof_jntid[dof]] == 1)
    assert not np.any(m.jnt_actfrclimited[m.dof_jntid[dof]])  # nothing clamps the servo plus gravcomp together
    d = mujoco.MjData(m)
    d.qpos[list(wxai_chain.qpos_adr)] = r.within.q
    d.ctrl[:len(dof)] = r.within.q
    mujoco.mj_forward(m, d)
    sid = m.site(wxai_chain.tool_name).id
    body, p0 = m.site_bodyid[sid], d.site_xpos[sid].copy()
    weight = np.array([0.0, 0.0, -1.4 * r.within.kg * 9.80665])
    for _ in range(round(2.0 / m.opt.timestep)):
        d.xfrc_applied[body] = np.r_[weight, np.cross(d.site_xpos[sid] - d.xipos[body], weight)]
        mujoco.mj_step(m, d)
    force, limit = d.actuator_force[:len(dof)], m.actuator_forcerange[:len(dof), 1]
    assert np.all(np.abs(force) < limit - 0.5)  # no servo clamped
    assert abs(d.qfrc_actuator[dof[1]]) > limit[1] and np.linalg.norm(d.qvel[dof]) < 1e-3  # held, at rest
    assert p0[2] - d.site_xpos[sid][2] < 0.2  # a sag of the finite servo spring, not a fall


def test_wxai_payload_limit_shrinks_with_extension_on_a_coarse_map(wx, wxai_model, wxai_chain):
    r = wx.payload_map_step(wxai_model, wxai_chain, grid=(11, 9))
    near, far = r.bins[0].median, r.bins[-1].median
    assert far < 2 / 3 * near
    claims = verdicts(wx.statics_claims(wx.velocity_step(wxai_chain, 50), wx.statics_step(wxai_model, wxai_chain), r))
    assert set(claims.values()) == {"agree"}


def test_wxai_descent_deviation_is_second_order_in_the_step_and_the_path_is_mujocos(wx, wxai_model, wxai_chain):
    r = wx.descent_step(wxai_chain)
    edge = r.starts[1]
    fast, slow = (r.row(edge, tick).feedback for tick in wx.TICKS)
    for q, p in zip(fast.run.q[::10], fast.run.p[::10]):  # the tool path is MuJoCo's site position
        np.testing.assert_allclose(p, _wx_mj(wxai_model, wxai_chain, q)[0], atol=1e-12)
    assert 1e-7 < fast.max_deviation < 1e-5
    np.testing.assert_allclose(slow.max_deviation / fast.max_deviation, 100, rtol=0.3)
    assert slow.max_deviation < wx.REPEATABILITY < r.row(edge, "5 Hz (10 mm steps)").open.max_deviation
    np.testing.assert_allclose(r.edge_ratio, slow.max_deviation / fast.max_deviation, rtol=1e-12)
    # the page's servo lags, kv/kp read from the model's actuators by name: joints 0-3 share one, the wrist's 4-5 another
    kv_kp = {j: wxai_model.actuator(j).biasprm[2] / wxai_model.actuator(j).gainprm[0] for j in wxai_chain.joint_names}
    assert [-kv_kp[j] for j in ("joint_0", "joint_1", "joint_2", "joint_3")] == [r.lag] * 4 and r.lag == 0.05
    assert [-kv_kp[j] for j in ("joint_4", "joint_5")] == [r.lag_wrist] * 2 and r.lag_wrist == 0.1


def test_the_descent_figure_draws_each_ticks_worst_distance_by_a_loop_over_the_ticks(wx):
    """The figure's points against a plain loop: per tick of dt, the largest deviation among the samples inside it
    and the depth by its end; the lone sample at the run's end opens no tick."""
    rng = np.random.default_rng(0)
    dt, substeps, ticks = 0.2, 7, 10
    t = np.arange(ticks * substeps + 1) * dt / substeps
    depth, dev = 0.05 * t, rng.random(t.size)
    got_depth, got_dev = wx.tick_peaks(t, depth, dev, dt)
    want = [(depth[k * substeps:(k + 1) * substeps].max(), dev[k * substeps:(k + 1) * substeps].max())
            for k in range(ticks)]
    np.testing.assert_array_equal(np.column_stack([got_depth, got_dev]), want)


def test_wxai_open_loop_deviation_grows_like_the_step_and_a_faster_guard_stops_nearer_the_impact_peak(wx, wxai_chain):
    r = wx.descent_step(wxai_chain)
    edge = r.starts[1]
    fast, slow = (r.row(edge, tick).open for tick in wx.TICKS)
    np.testing.assert_allclose(slow.max_deviation / fast.max_deviation, 10, rtol=0.3)  # not 100: no feedback
    g = wx.guard_step(wxai_chain, rates=(50, 500))
    fast, slow = g.at(500), g.at(50)
    assert fast.stop_ms < slow.stop_ms and fast.true > slow.true
    assert abs(fast.peak - slow.peak) < 0.1 * slow.peak  # the same impact, caught earlier on its decay
    peaks = [row.peak for row in g.rows]  # the caption's "the highest N % above the lowest"
    np.testing.assert_allclose(g.peak_spread, max(peaks) / min(peaks) - 1, rtol=1e-15)
    assert fast.pre > 0.1  # the free-air estimate is not zero
    for row in g.rows:  # the table's ticks counted from contact to the stopping tick, which falls within the last one
        ticks = row.sim.t[(row.sim.t >= row.t_on) & (row.sim.t <= row.sim.t[row.sim.stop_tick])]
        assert row.cycles == len(ticks) >= 1
        assert (row.cycles - 1) * 1e3 / row.hz <= row.stop_ms < row.cycles * 1e3 / row.hz
        # the figure's true-force series at the stop instant is the table's "true at stop": the tick's own
        # reading comes first there, and MuJoCo's contact force of the state the stopping tick read follows it
        t, f_z = wx.true_force_trace(row.sim)
        at_stop = f_z[t == row.sim.t[row.sim.stop_tick]]
        assert at_stop[0] == row.true and at_stop[1] < at_stop[0]  # the stop command relaxes the contact
        assert t[np.argmax(f_z != 0)] == row.t_on and np.all(np.diff(t) >= 0)


def test_wxai_force_estimate_error_grows_with_joint_friction_and_contact_is_caught_in_two_cycles(wx, wxai_chain):
    force = wx.force_step(wxai_chain, frictions=(0.0, 0.1, 0.5), press_x=(0.40,))
    bands = [force.at(fr).band for fr in (0.0, 0.1, 0.5)]
    assert bands[0] < bands[1] < bands[2] and 0.15 <= bands[1] <= 0.35
    guard = wx.guard_step(wxai_chain, rates=(50,))
    row = guard.at(50)
    assert 1 <= row.cycles <= 2 and row.hat > wx.THRESHOLD and row.true > 0
    desc = wx.descent_step(wxai_chain)
    claims = verdicts(wx.motion_claims(desc, force, guard))
    assert claims["10 mm steps (5 Hz) visibly bow near the edge"] == "disagree"  # per-tick feedback keeps it < 1 mm
    assert [v for k, v in claims.items() if not k.startswith("10 mm")] == ["agree"] * 4


# ---- the pages of lessons 07-09 teach: no audit of their source in the body, a why for every wrong answer ----------

LESSONS = Path(__file__).resolve().parent.parent / "experiments"


@pytest.mark.parametrize("folder", ["07-frames", "08-forward-kinematics", "09-jacobians"])
def test_page_names_no_source_document_and_every_wrong_quiz_option_says_why(folder):
    text = (LESSONS / folder / "lesson.md").read_text()
    body = text.split("+++", 2)[2]
    for word in (r"\bseed", r"\berrat", r"the track says", r"WidowX AI lesson", r"\bthe tests\b", r"\bgrader"):
        assert not re.search(word, body, re.IGNORECASE), word
    assert "erratum(" not in body
    assert not re.search(r"`physai (exercise|check)", body)  # from a clone: `uv run physai ...`
    quizzes = re.findall(r"{% call quiz\(.*?%}(.*?){% endcall %}", body, re.DOTALL)
    assert quizzes
    for quiz in quizzes:
        lines = [line for line in quiz.strip().splitlines() if line.strip()]
        wrong = [k for k, line in enumerate(lines) if line.startswith("- ")]
        assert len(wrong) == 2 and all(lines[k + 1].startswith("! ") for k in wrong), quiz[:80]


@pytest.mark.parametrize("folder, level, refs", [
    ("07-frames", "Easy", ["R.build.chain.world_in_tool"]),
    ("07-frames", "Medium", ["R.build.rates.body", "R.build.rates.rpy_rates"]),
    ("08-forward-kinematics", "Medium", ["R.build.exercises.top.joint", "R.build.exercises.top.move"]),
    ("09-jacobians", "Easy", ["R.experiment.easy.r", "R.experiment.easy.tau_x"]),
])  # lesson 09's Hard: test_hard_exercise_figure_is_shown_only_in_its_answer
def test_an_exercises_answer_is_given_nowhere_before_it_on_its_page(folder, level, refs):
    text = (LESSONS / folder / "lesson.md").read_text()
    start = text.index(f'{{% call exercise("{level}"')
    answer = text[start:text.index("{% endcall %}", start)]
    for ref in refs:
        assert ref in answer and ref not in text[:start] + text[start + len(answer):], ref


def test_scene_pictures_the_jacobian_columns_with_the_short_roll_column(run_lesson, tmp_path, so101_model, so101):
    """scene.py: the picture exists; its column lengths are MuJoCo's mj_jacSite columns, and wrist_roll's is the
    short one the alt text says (under a tenth of every other)."""
    from conftest import check_picture

    _, saved = run_lesson(load_lesson(LESSON, "scene.py"), False)
    check_picture(tmp_path, saved["picture"], "so101")
    J = mj_site(so101_model, so101, np.array(saved["q"]))[2]
    norms = saved["column_norms"]
    np.testing.assert_allclose([norms[n] for n in so101.joint_names], np.linalg.norm(J[:3], axis=0), atol=1e-12)
    assert all(norms["wrist_roll"] < 0.1 * norms[n] for n in so101.joint_names[:-1])


def test_fold_titles_keep_their_maths_through_jinjas_string_escapes():
    """Jinja reads a call's title as a string literal with Python's escapes ("\\top" is a tab and "op"): every title
    evaluated by jinja2 itself has no control character, so its LaTeX reaches the page as written."""
    import jinja2

    source = (Path(__file__).resolve().parent.parent / "experiments" / LESSON / "lesson.md").read_text()
    titles = [t for line in re.findall(r"\{%-?\s*call .*", source) for t in re.findall(r'"((?:[^"\\]|\\.)*)"', line)]
    assert any("top" in t for t in titles)  # the fold on -J^T F is among them
    for t in titles:
        rendered = jinja2.Environment().from_string('{{ "' + t + '" }}').render()
        assert not re.search(r"[\x00-\x1f]", rendered), t
