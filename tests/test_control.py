"""physai.control (lesson 09's WidowX AI variant): resolved-rate control, force estimation and the guarded descent, pinned to MuJoCo and closed forms."""

import mujoco
import numpy as np
import pytest

from conftest import WXAI_XML
from physai import transforms as tf
from physai import control, mj, robots, singularity, statics
from physai.errors import InputError
from physai.kinematics import jacobian, tool_pose


TABLE = dict(center=(0.5, 0.0), half_size=(0.15, 0.3, 0.02), top_z=0.05)
Q_MID = np.array([0.0, 2.0853, 2.0206, -1.3, 0.0, 0.0])  # tool near (0.45, 0, 0.13), pointing down-ish
Q_EDGE = np.array([0.0, 2.2434, 2.1981, -0.4, 0.0, 0.0])  # tool near (0.66, 0, 0.25)


@pytest.fixture(scope="module")
def wxai():
    return robots.load(WXAI_XML, site="ee_site")


@pytest.fixture(scope="module")
def table_model():
    return control.table_scene(WXAI_XML, **TABLE)


@pytest.mark.parametrize("q0", [Q_MID, Q_EDGE], ids=["mid", "edge"])
def test_follow_line_1mm_steps_tracks_within_1e5_m_and_holds_orientation_fk_reference(wxai, q0):
    res = control.follow_line(wxai, q0, [0.0, 0.0, -0.05], 1.0, 0.02)
    T0 = tool_pose(wxai, q0)
    p_ref = T0[:3, 3] + np.outer(res.run.t, [0.0, 0.0, -0.05])
    T_end = tool_pose(wxai, res.run.q)
    assert np.max(np.linalg.norm(T_end[:, :3, 3] - p_ref, axis=1)) < 1e-5  # independent of LineResult's own bookkeeping
    assert res.max_deviation < 1e-5
    assert np.max(np.linalg.norm(tf.pose_error(T_end, T0)[:, 3:], axis=1)) < 1e-4  # rad
    assert res.run.health.sigma_min.shape == (50,) and np.all(res.run.health.vel_scale == 1.0)  # exact: no scaling


def test_follow_line_error_second_order_in_step(wxai):
    small = control.follow_line(wxai, Q_EDGE, [0.0, 0.0, -0.05], 1.0, 0.01).max_deviation
    large = control.follow_line(wxai, Q_EDGE, [0.0, 0.0, -0.05], 1.0, 0.1).max_deviation
    assert 50 < large / small < 200  # 10x the step -> ~100x the error


def test_scale_to_limit_preserves_direction_and_respects_limit_in_ticks(wxai, rng):
    settings = control.StepSettings(block="position", lambda_max=1e-6, sigma_healthy=1e-9)  # exact inverse
    for q in wxai.random_q(rng, 50):
        J = jacobian(wxai, q)
        v = rng.normal(size=3)
        v *= 20.0 / np.linalg.norm(v)  # 20 m/s: far beyond what 6.28 rad/s allows, scaling is active
        dq, h = control.tick(J, np.r_[v, 0.0, 0.0, 0.0], 1.0, settings)
        exact = np.linalg.pinv(J[:3]) @ v
        cos = dq @ exact / (np.linalg.norm(dq) * np.linalg.norm(exact))
        assert abs(cos - 1.0) < 1e-12
        assert np.max(np.abs(dq)) <= settings.qdot_limit * (1 + 1e-15)
        assert h.vel_scale < 1.0


def test_damped_tick_near_singularity_respects_1_over_2_lambda_bound():
    ill = robots.load("wxai_illustrative")
    q = np.array([0.0, 0.0, -np.arctan2(0.30, 0.06) + 0.02, 0.0, 0.0, 0.0])  # 0.02 rad from the straight arm
    J = jacobian(ill, q)
    assert singularity.health(J).sigma_min < 0.005
    v = 0.05 * np.linalg.svd(J[:3])[0][:, -1]
    dq, h = control.tick(J, np.r_[v, 0.0, 0.0, 0.0], 1.0, control.StepSettings(block="position"))
    assert np.linalg.norm(dq) <= np.linalg.norm(v) / (2 * h.lam) + 1e-15
    assert np.linalg.norm(np.linalg.pinv(J[:3]) @ v) > 10.0  # the undamped rate the damping avoided


def _static_contact(m, chain, q):
    """MuJoCo inverse dynamics at rest: the joint torques that hold ``q`` in contact, and the contact force."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_inverse(m, d)
    return d.qfrc_inverse[list(chain.dof_adr)].copy(), control.contact_force(m, d, [m.geom("table").id])


@pytest.mark.parametrize("x", [0.40, 0.45, 0.50])
def test_estimate_wrench_exact_without_friction_mujoco_inverse_dynamics(wxai, x):
    m = control.table_scene(WXAI_XML, **TABLE)
    m.dof_frictionloss[:] = 0.0
    q_touch = Q_MID.copy()
    T = tool_pose(wxai, q_touch)
    # Move the tool to x, 0.2 mm into the table, by resolved-rate steps (a few ticks of the follower).
    target = np.r_[x, 0.0, TABLE["top_z"] - 2e-4]
    run = control.follow_line(wxai, q_touch, (target - T[:3, 3]) / 1.0, 1.0, 0.01)
    q = run.run.q[-1]
    assert np.all((wxai.lower < q) & (q < wxai.upper))  # no joint-limit constraint force in the balance
    tau, F_true = _static_contact(m, wxai, q)
    assert F_true[2] > 1.0  # a real contact
    F_hat = control.estimate_wrench(mj.site_jacobian(m, wxai, q), statics.gravity_torques(m, wxai, q) - tau)
    np.testing.assert_allclose(F_hat[:3], F_true, rtol=0, atol=1e-9 * max(1.0, np.linalg.norm(F_true)))


def test_guarded_descent_stops_within_two_cycles_of_contact(wxai, table_model):
    dt = 0.02
    twist = control.tracking_twist(control.line_reference(tool_pose(wxai, Q_MID), [0.0, 0.0, -0.05], ramp=0.2), dt)
    sim = control.closed_loop(table_model, wxai, Q_MID, twist, dt, 3.0, guard=lambda w: w[2] > 2.0,
                              hold=0.1, probe=[table_model.geom("table").id])
    assert sim.reason == "guard"
    touching = np.linalg.norm(sim.sim_force, axis=1) > 0
    t_on = sim.sim_t[np.argmax(touching)]
    assert sim.t[sim.stop_tick] >= t_on  # no false trigger before contact
    cycles = np.sum((sim.t >= t_on) & (np.arange(len(sim.t)) <= sim.stop_tick))
    assert 1 <= cycles <= 2
    assert sim.q_cmd.shape == (sim.stop_tick + 1, 6) and len(sim.health.lam) == sim.stop_tick


def test_closed_loop_rejects_tick_not_multiple_of_timestep(wxai, table_model):
    with pytest.raises(InputError, match="dt"):
        control.closed_loop(table_model, wxai, Q_MID, lambda *a: np.zeros(6), 0.003, 0.1)


def test_estimate_wrench_validates_shape():
    with pytest.raises(InputError, match="tau_ext"):
        control.estimate_wrench(np.eye(6), np.ones(5))


def test_table_scene_of_a_model_mujoco_warns_about_writes_no_log_file(tmp_path, monkeypatch):
    """MuJoCo's own warning handler appends to ./MUJOCO_LOG.TXT; table_scene reports a Python warning instead."""
    monkeypatch.chdir(tmp_path)
    arm = tmp_path / "nan_arm.xml"
    arm.write_text('<mujoco><worldbody><body pos="0 0 nan"><joint name="j"/><geom size=".1"/></body>'
                   '</worldbody></mujoco>')
    with pytest.warns(UserWarning, match="nan_arm.xml: MuJoCo warns: XML contains a 'NaN'"):
        m = control.table_scene(str(arm), [0.3, 0.0], [0.1, 0.1, 0.02], 0.1)
    assert m.geom("table").id >= 0 and np.isnan(m.body_pos).any()  # compiled, NaN kept: MuJoCo only warned
    assert list(tmp_path.iterdir()) == [arm]


def test_follow_line_with_avoid_keeps_the_margin_by_mj_geomDistance():
    # The SO-101's tool driven along a line into a post: without avoid= the gripper enters it; with it every tick
    # keeps the margin to first order (MuJoCo's distances, no physai code in the verdict) and the run logs them.
    from physai import collision

    chain = robots.load("so101")
    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    world = collision.collision_world(collision.scene("so101", [post]), chain)
    q0 = chain.q_ref.copy()
    p0 = tool_pose(chain, q0)[:3, 3]
    velocity = (np.array([0.2, 0.1, 0.12]) - p0) / 1.0  # reaches the post's middle after 1 s
    m, d = world.model, mujoco.MjData(world.model)
    arm = [int(g) for g in world.arm_geoms if m.geom_contype[g]]

    def to_post(q):
        d.qpos[world.qpos_adr] = q
        mujoco.mj_kinematics(m, d)
        return min(mujoco.mj_geomDistance(m, d, m.geom("post").id, g, 1.0, None) for g in arm)

    free = control.follow_line(chain, q0, velocity, 1.2, 0.02, settings=control.StepSettings(block="position"))
    safe = control.follow_line(chain, q0, velocity, 1.2, 0.02, settings=control.StepSettings(block="position"),
                               avoid=world)
    assert min(map(to_post, free.run.q)) < 0
    clear = np.array([to_post(q) for q in safe.run.q])
    assert clear.min() >= world.margin - 1e-4  # the damper's first-order bound at 50 Hz
    assert free.run.clearance is None and safe.run.clearance.min() <= clear.min() + 1e-12


# Posts the SO-101's tool is driven at (toward its middle) or past, 10 cm per tick: (post x, y), velocity (m/s).
FAST_POSTS = [((0.2, 0.1), None), ((0.22, -0.1), None), ((0.28, 0.12), None), ((0.2, 0.08), (-0.25, 0.0, -0.12))]


@pytest.mark.parametrize("xy, velocity", FAST_POSTS)
def test_follow_line_at_10cm_per_tick_never_penetrates_by_mj_geomDistance(xy, velocity):
    # The damper once looked only margin + 5 cm ahead, so one 10 cm tick jumped into the post. Now every tick looks
    # ahead by its travel and is swept: MuJoCo's distances along the straight joint path of every tick (what a
    # zero-order hold drives) stay above half the margin, where the same line without avoid= goes through the post.
    from conftest import mujoco_distances
    from physai import collision

    chain = robots.load("so101")
    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (*xy, 0.15))
    world = collision.collision_world(collision.scene("so101", [post]), chain)
    q0 = chain.q_ref.copy()
    p0 = tool_pose(chain, q0)[:3, 3]
    v = np.array([xy[0], xy[1], 0.12]) - p0 if velocity is None else np.array(velocity)
    dt = 0.1 / np.linalg.norm(v)  # s: 10 cm of the line per tick
    settings = control.StepSettings(block="position")

    def swept(q):  # every pair's distance at 11 points of each tick's joint-space segment (m)
        s = np.linspace(0.0, 1.0, 11)[:, None, None]
        path = (q[:-1] + s * np.diff(q, axis=0)).reshape(-1, chain.n)
        return np.array([mujoco_distances(world, x, 1.0) for x in path])

    free = control.follow_line(chain, q0, v, 12 * dt, dt, settings=settings)
    safe = control.follow_line(chain, q0, v, 12 * dt, dt, settings=settings, avoid=world)
    assert swept(free.run.q).min() < -0.01  # through the post by more than a centimetre
    assert swept(safe.run.q).min() >= 0.5 * world.margin - 1e-9


def test_a_control_tick_checks_once_and_takes_one_svd(monkeypatch):
    # resolved_rate checks its arguments once; each tick then checks only twist_fn's twist and takes one SVD of the
    # Jacobian block, shared by the damped step and (with avoid=) the null-space projector. 1 tick against 11.
    from test_ik import _count_checks

    from physai import collision

    chain = robots.load("so101")
    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    world = collision.collision_world(collision.scene("so101", [post]), chain)
    calls = _count_checks(monkeypatch)
    svd = np.linalg.svd

    def counted_svd(*a, **k):
        calls["svd"] += 1
        return svd(*a, **k)

    monkeypatch.setattr(np.linalg, "svd", counted_svd)
    twist = np.array([0.02, 0.0, 0.0, 0.0, 0.0, 0.0])  # m/s along x, far from the post: no damper acts
    for avoid in (None, world):
        counts = []
        for n_ticks in (1, 11):
            calls.update(check_q=0, check=0, svd=0)
            control.resolved_rate(chain, chain.q_ref, lambda k, t, q, T: twist, 0.01, n_ticks, avoid=avoid)
            counts.append(dict(calls))
        assert counts[1]["check"] - counts[0]["check"] == 10  # the twist of each tick
        assert counts[1]["check_q"] == counts[0]["check_q"]
        assert counts[1]["svd"] - counts[0]["svd"] == 10
