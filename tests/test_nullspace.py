"""physai.nullspace (lesson 12): null-space tools pinned to NumPy's pinv/solve (closed forms), central differences,
MuJoCo and brute-force constrained least squares."""

import mujoco
import numpy as np
import pytest
from conftest import PANDA_XML

from physai import _avoid_step, ik, robots
from physai import nullspace as ns
from physai.errors import InputError
from physai.kinematics import BodySpec, JointSpec, chain_from_bodies, fd_jacobian, jacobian, tool_pose
from physai.singularity import damped_solve
from physai.transforms import pose_error


@pytest.fixture(scope="module")
def planar3r():
    return robots.load("planar3r")


def pose_coords(chain, q, T0):
    """Tool position and rotation-vector change from the pose ``T0``: 6 numbers that are 0 at ``T0``."""
    return -pose_error(tool_pose(chain, q), T0)


def test_projector_annihilates_the_task_jacobian_to_1e12(panda, so101, planar3r, rng):
    cases = [(panda, slice(0, 6)), (so101, slice(0, 3)), (planar3r, slice(0, 2))]
    for chain, rows in cases:
        for q in chain.random_q(rng, 20):
            J = jacobian(chain, q)[rows]
            N = ns.projector(J)
            assert np.abs(J @ N).max() <= 1e-12
            assert np.abs(N @ N - N).max() <= 1e-12  # a projector
            assert np.abs(N - N.T).max() <= 1e-12  # orthogonal (unweighted)
            sigma = np.linalg.svd(J, compute_uv=False)
            rank = int(np.sum(sigma > ns.RCOND * sigma[0]))
            assert np.trace(N) == pytest.approx(chain.n - rank, abs=1e-12)  # dimension of the null space
            Nw = ns.projector(J, weights=rng.uniform(0.5, 3.0, chain.n))
            assert np.abs(J @ Nw).max() <= 1e-12
            assert np.abs(Nw @ Nw - Nw).max() <= 1e-12


def test_projector_batched_equals_one_at_a_time(panda, rng):
    qs = panda.random_q(rng, 5)
    Nb = ns.projector(jacobian(panda, qs))
    for q, N in zip(qs, Nb):
        assert np.abs(ns.projector(jacobian(panda, q)) - N).max() <= 1e-14


def test_pinv_matches_numpy_pinv_weighted_closed_form_and_damped_solve(panda, rng):
    J = jacobian(panda, panda.random_q(rng))
    assert np.abs(ns.pinv(J) - np.linalg.pinv(J)).max() <= 1e-12
    w = rng.uniform(0.5, 3.0, 7)
    Winv = np.diag(1 / w)
    closed = Winv @ J.T @ np.linalg.inv(J @ Winv @ J.T)
    assert np.abs(ns.pinv(J, weights=w) - closed).max() <= 1e-10
    A = rng.normal(size=(7, 7))
    W = A @ A.T + 7 * np.eye(7)  # a full SPD weight
    closed = np.linalg.solve(W, J.T) @ np.linalg.inv(J @ np.linalg.solve(W, J.T))
    assert np.abs(ns.pinv(J, weights=W) - closed).max() <= 1e-10
    v = rng.normal(size=6)
    lam = 0.05
    dls = J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(6), v)
    assert np.abs(ns.pinv(J, lam=lam) @ v - dls).max() <= 1e-12
    assert np.abs(ns.pinv(J, lam=lam) @ v - damped_solve(J, v, lam)).max() <= 1e-12


def test_weighted_pinv_is_the_minimum_weighted_norm_solution_scipy(panda, rng):
    from scipy.optimize import minimize

    J = jacobian(panda, panda.random_q(rng))[:3]
    w = np.array([5.0, 1, 1, 1, 1, 1, 0.2])
    v = np.array([0.1, -0.05, 0.02])
    ref = minimize(lambda x: x @ (w * x), np.zeros(7), constraints={"type": "eq", "fun": lambda x: J @ x - v},
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 500}).x
    assert np.abs(ns.pinv(J, weights=w) @ v - ref).max() <= 1e-6


def test_projected_step_leaves_the_primary_unchanged_to_first_order_central_differences(panda, so101, rng):
    h = 1e-5
    for chain, task_rows, obj in ((panda, slice(0, 6), ns.joint_limit_cost(panda)),
                                  (so101, slice(0, 3), ns.manipulability_cost(so101))):
        for q in chain.random_q(rng, 10, inset=0.1):
            T0 = tool_pose(chain, q)
            J = jacobian(chain, q)[task_rows]
            g = obj.gradient(q)
            d_null = ns.redundant_rate(J, np.zeros(J.shape[0]), -g / np.abs(g).max())
            d_raw = -g / np.abs(g).max()
            rate = (pose_coords(chain, q + h * d_null, T0)
                    - pose_coords(chain, q - h * d_null, T0))[task_rows] / (2 * h)
            raw = (pose_coords(chain, q + h * d_raw, T0) - pose_coords(chain, q - h * d_raw, T0))[task_rows] / (2 * h)
            assert np.abs(rate).max() <= 1e-9
            assert np.abs(raw).max() > 1e-4  # the unprojected gradient would move the task
            assert np.linalg.norm(d_null) > 1e-3  # ... and the projected one is not trivially zero


def test_redundant_rate_tracks_the_task_for_any_secondary_velocity(panda, rng):
    q = panda.random_q(rng)
    J = jacobian(panda, q)
    v = rng.normal(size=6)
    for _ in range(5):
        qdot0 = 10 * rng.normal(size=7)
        assert np.abs(J @ ns.redundant_rate(J, v, qdot0) - v).max() <= 1e-12
    # damped task part: equal to physai.singularity.damped_solve, and the secondary still adds no task motion
    qdot0 = rng.normal(size=7)
    lam = 0.1
    diff = ns.redundant_rate(J, v, qdot0, lam=lam) - damped_solve(J, v, lam)
    assert np.abs(J @ diff).max() <= 1e-12


def test_jacobian_derivative_matches_central_differences_hinges_and_slides(panda, so101, rng):
    z, x = (0, 0, 1), (1, 0, 0)
    mixed = chain_from_bodies("mixed", [
        BodySpec("b1", (0, 0, 0.1), joints=(JointSpec("h1", "hinge", z),)),
        BodySpec("b2", (0.2, 0, 0), joints=(JointSpec("s1", "slide", x),)),
        BodySpec("b3", (0.1, 0.05, 0), (0.9, 0.1, 0.3, 0.2), joints=(JointSpec("h2", "hinge", (0, 1, 0)),)),
        BodySpec("b4", (0, 0.1, 0.1), joints=(JointSpec("s2", "slide", (0, 0.6, 0.8)),)),
        BodySpec("b5", (0.1, 0, 0), joints=(JointSpec("h3", "hinge", x),)),
    ], tool_pos=(0.05, 0.02, 0.1))
    for chain in (panda, so101, mixed):
        for q in chain.random_q(rng, 5):
            H = ns.jacobian_derivative(jacobian(chain, q))
            H_fd = np.moveaxis(fd_jacobian(lambda p: jacobian(chain, p), q), -1, 0)
            assert np.abs(H - H_fd).max() <= 1e-9


def test_manipulability_is_sqrt_det_and_its_gradient_matches_central_differences(panda, so101, planar3r, rng):
    xy = np.eye(6)[:2]
    for chain, block in ((panda, "full"), (panda, "position"), (so101, "position"), (planar3r, xy)):
        obj = ns.manipulability_cost(chain, block)
        for q in chain.random_q(rng, 5, inset=0.05):
            J = jacobian(chain, q)
            Jb = xy @ J if block is xy else J[:3] if block == "position" else np.r_[J[:3], 0.3 * J[3:]]
            assert abs(ns.manipulability(chain, q, block) - np.sqrt(np.linalg.det(Jb @ Jb.T))) <= 1e-12
            g_fd = fd_jacobian(obj.value, q)
            assert np.abs(obj.gradient(q) - g_fd).max() <= 1e-9


def test_planar3r_manipulability_closed_form(planar3r, rng):
    # 2-D position task of a planar 3R: w^2 = sum of the 2x2 minors squared (Cauchy-Binet)
    for q in planar3r.random_q(rng, 5):
        J = jacobian(planar3r, q)[:2]
        minors = [np.linalg.det(J[:, [i, j]]) for i, j in ((0, 1), (0, 2), (1, 2))]
        assert abs(ns.manipulability(planar3r, q, np.eye(6)[:2]) - np.sqrt(np.sum(np.square(minors)))) <= 1e-14


def test_joint_limit_and_posture_gradients_match_central_differences(panda, rng):
    for obj in (ns.joint_limit_cost(panda), ns.posture_cost(panda, panda.random_q(rng), rng.uniform(0, 2, 7))):
        for q in panda.random_q(rng, 5):
            g = obj.gradient(q)
            assert np.abs(g - fd_jacobian(obj.value, q)).max() <= 1e-10 * max(1.0, np.abs(g).max())
            assert np.shape(obj.value(panda.random_q(rng, (2, 3)))) == (2, 3)


def test_limit_margin_and_joint_limit_cost_closed_forms(panda):
    centre = 0.5 * (panda.lower + panda.upper)
    assert ns.limit_margin(panda, centre) == pytest.approx(0.5, abs=1e-15)
    assert ns.joint_limit_cost(panda).value(centre) == pytest.approx(0.0, abs=1e-15)
    assert ns.limit_margin(panda, panda.lower) == 0.0  # exact: q - lower with q = lower
    assert ns.joint_limit_cost(panda).value(panda.upper) == pytest.approx(1 / 8, abs=1e-15)


def test_elbow_point_and_its_jacobian_match_mujoco_link4(panda, rng):
    m = mujoco.MjModel.from_xml_path(str(PANDA_XML))
    d = mujoco.MjData(m)
    bid = m.body("link4").id
    for q in panda.random_q(rng, 5):
        d.qpos[list(panda.qpos_adr)] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        jp = np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jp, None, d.xpos[bid], bid)
        x, Jx = ns.point_jacobian(panda, q, 3)
        assert np.abs(x - d.xpos[bid]).max() <= 1e-14
        assert np.abs(Jx - jp[:, list(panda.dof_adr)]).max() <= 1e-14


def _constrained_lstsq(J1, v1, J2, v2):
    """Brute-force reference: min |J2 x - v2| subject to J1 x = v1, minimum norm, via a null-space basis from SciPy."""
    from scipy.linalg import null_space

    x1 = np.linalg.lstsq(J1, v1, rcond=None)[0]
    Z = null_space(J1)
    y = np.linalg.lstsq(J2 @ Z, v2 - J2 @ x1, rcond=None)[0]
    return x1 + Z @ y


def test_priority_primary_exact_secondary_constrained_least_squares_and_order_matters(so101, rng):
    for q in so101.random_q(rng, 10, inset=0.1):
        J = jacobian(so101, q)
        Jp, Jo = J[:3], J[3:]  # 3 + 3 rows on 5 joints: the two tasks conflict
        vp, vo = rng.normal(size=3), rng.normal(size=3)
        qd = ns.priority_rate(Jp, vp, Jo, vo)
        assert np.abs(Jp @ qd - vp).max() <= 1e-10  # primary met exactly
        assert np.abs(qd - _constrained_lstsq(Jp, vp, Jo, vo)).max() <= 1e-8
        swapped = ns.priority_rate(Jo, vo, Jp, vp)
        assert np.abs(Jo @ swapped - vo).max() <= 1e-10  # now orientation wins ...
        assert np.linalg.norm(Jp @ swapped - vp) > 1e-6  # ... and position gives way
        assert np.linalg.norm(Jo @ qd - vo) > 1e-6


def test_priority_with_compatible_tasks_meets_both(panda, rng):
    q = panda.random_q(rng, inset=0.2)
    J1 = jacobian(panda, q)
    J2 = ns.point_jacobian(panda, q, 3)[1][2:]  # elbow height
    v1, v2 = rng.normal(size=6), rng.normal(size=1)  # 6 + 1 rows on 7 joints: both feasible
    qd = ns.priority_rate(J1, v1, J2, v2)
    assert np.abs(J1 @ qd - v1).max() <= 1e-10
    assert np.abs(J2 @ qd - v2).max() <= 1e-9


def test_singular_secondary_task_is_bounded_when_damped(panda, rng):
    q = panda.random_q(rng, inset=0.2)
    J1 = jacobian(panda, q)
    n1 = ns.null_basis(J1)[:, 0]
    v1, v2 = rng.normal(size=6), np.array([1.0])
    lam = 0.01
    for eps in (1e-3, 1e-6, 1e-9):
        # a secondary row almost in J1's row space: J2 N1 has the single singular value eps
        J2 = (J1[0] + eps * n1)[None]
        undamped = ns.priority_rate(J1, v1, J2, v2)
        damped = ns.priority_rate(J1, v1, J2, v2, lam2=lam)
        base = np.linalg.pinv(J1) @ v1
        residual = abs(v2[0] - J2[0] @ base)
        for qd in (undamped, damped):  # the primary never suffers (to round-off relative to |qdot|)
            assert np.abs(J1 @ qd - v1).max() <= 1e-14 * max(1.0, np.linalg.norm(qd)) * np.linalg.norm(J1, 2)
        assert np.linalg.norm(undamped - base) == pytest.approx(residual / eps, rel=1e-6)  # blows up as 1/sigma
        assert np.linalg.norm(damped - base) <= residual / (2 * lam) * (1 + 1e-12)  # bounded filter gain


def test_damped_projector_is_continuous_but_leaks_at_most_lam_over_2(panda, rng):
    J = jacobian(panda, panda.random_q(rng))
    lam = 0.05
    N_lam = ns.projector(J, lam=lam)
    assert np.linalg.norm(J @ N_lam, 2) <= lam / 2 * (1 + 1e-12)
    U, S, Vt = np.linalg.svd(J)
    expected = np.eye(7) - Vt[:6].T @ np.diag(S**2 / (S**2 + lam**2)) @ Vt[:6]
    assert np.abs(N_lam - expected).max() <= 1e-12


def test_solve_ik_redundant_keeps_primary_and_lowers_the_cost(so101, planar3r, rng):
    targets = tool_pose(so101, so101.random_q(rng, 10))[:, :3, 3]
    obj = ns.joint_limit_cost(so101)
    plain = ik.solve_ik_batch(so101, targets, task="position", rng=np.random.default_rng(0))
    res = ik.solve_ik_batch(so101, targets, task="position", prefer=ns.Prefer(obj), rng=np.random.default_rng(0))
    for r, start, t in zip(res, plain, targets):
        assert r.converged == start.converged
        assert r.converged
        assert np.linalg.norm(tool_pose(so101, r.q)[:3, 3] - t) <= 1e-4
        assert r.cost <= obj.value(start.q)
        assert obj.value(r.q) == pytest.approx(r.cost, abs=1e-15)
        assert np.all((r.q >= so101.lower) & (r.q <= so101.upper))
    assert np.mean([r.cost < obj.value(start.q) - 1e-6 for r, start in zip(res, plain)]) >= 0.5
    assert set(res.reason) <= set(ik.REASONS)  # one reason vocabulary for every IK path
    posture = ns.posture_cost(planar3r, np.zeros(3))
    one = ik.solve_ik(planar3r, [0.6, 0.3, 0.0], task="position", prefer=ns.Prefer(posture))
    assert one.converged
    # stationary for the posture cost on the self-motion: the projected gradient vanishes there
    J = jacobian(planar3r, one.q)[:3]
    g = posture.gradient(one.q)
    assert np.linalg.norm(ns.projector(J) @ g) <= 1e-3 * np.linalg.norm(g)


def test_inputs_are_checked_at_the_boundary(panda, planar3r):
    J = jacobian(panda, panda.q_ref)
    with pytest.raises(InputError, match="weights"):
        ns.pinv(J, weights=np.ones(6))
    with pytest.raises(InputError, match="positive"):
        ns.pinv(J, weights=-np.ones(7))
    with pytest.raises(InputError, match="no limited joint"):
        ns.joint_limit_cost(planar3r)
    with pytest.raises(InputError, match="J2"):
        ns.priority_rate(J, np.zeros(6), np.ones((1, 5)), np.zeros(1))
    with pytest.raises(InputError, match="objective"):
        ns.Prefer(None)
    with pytest.raises(InputError, match="finite"):
        ns.redundant_rate(J, np.full(6, np.nan))


def test_planar3r_tip_closed_form(planar3r, rng):
    L1, L2, L3 = 0.5, 0.3, 0.2
    for q in planar3r.random_q(rng, 10):
        a = np.cumsum(q)
        p = [L1 * np.cos(a[0]) + L2 * np.cos(a[1]) + L3 * np.cos(a[2]),
             L1 * np.sin(a[0]) + L2 * np.sin(a[1]) + L3 * np.sin(a[2]), 0.0]
        assert np.abs(tool_pose(planar3r, q)[:3, 3] - p).max() <= 1e-15


@pytest.mark.parametrize("f", [ns.pinv, ns.projector])
@pytest.mark.parametrize("option,value", [("lam", np.nan), ("lam", -0.1), ("lam", np.inf), ("rcond", np.nan),
                                          ("rcond", -1.0)])
def test_pseudoinverse_options_are_refused_naming_the_option(f, option, value):
    J = np.random.default_rng(12).normal(size=(3, 5))
    with pytest.raises(InputError, match=f"^{option}: "):
        f(J, **{option: value})


@pytest.mark.parametrize("option,value", [("iterations", 2.5), ("iterations", -1), ("step", np.nan),
                                          ("min_step", 0.0)])
def test_null_space_solver_options_are_refused_naming_the_option(panda, option, value):
    with pytest.raises(InputError, match=f"^{option}: "):
        ns.Prefer(ns.joint_limit_cost(panda), **{option: value})


def test_null_space_refinement_accepts_a_target_rigid_to_1e_7(panda):
    """The IK target check (one tolerance) holds for the refinement too: it once re-checked at 1e-9 and crashed."""
    T_t = tool_pose(panda, panda.random_q(np.random.default_rng(13)), engine="numpy")
    T_t[:3, :3] += 1e-7 * np.array([[0.3, -0.5, 0.2], [0.1, 0.4, -0.6], [-0.2, 0.3, 0.5]])
    res = ik.solve_ik(panda, T_t, prefer=ns.Prefer(ns.joint_limit_cost(panda)), solver=ik.Solver(restarts=5))
    if res.converged:  # the answer's position against the target as given
        assert np.linalg.norm(tool_pose(panda, res.q, engine="numpy")[:3, 3] - T_t[:3, 3]) <= 1e-4


def test_self_motion_refuses_a_start_in_collision_and_a_world_of_another_chain(so101, panda):
    """A post centred on the SO-101's tool at q_ref: MuJoCo's mj_geomDistance says the gripper overlaps it there, and
    self_motion refuses that start naming q0; the same world handed to the Panda is refused naming avoid."""
    from physai import collision

    p_tool = tool_pose(so101, so101.q_ref)[:3, 3]
    world = collision.collision_world(
        collision.scene("so101", [collision.Obstacle("post", "box", (0.02, 0.02, 0.05), tuple(p_tool))]), so101)
    m, d = world.model, mujoco.MjData(world.model)
    d.qpos[world.qpos_adr] = so101.q_ref
    mujoco.mj_kinematics(m, d)
    post = m.geom("post").id
    assert min(mujoco.mj_geomDistance(m, d, post, int(g), 1.0, None) for g in world.arm_geoms) < 0
    with pytest.raises(InputError, match="q0: the start configuration is in collision"):
        ns.self_motion(so101, so101.q_ref, ns.posture_cost(so101, so101.q_ref), steps=1, avoid=world)
    with pytest.raises(InputError, match="avoid: the world was built for chain"):
        ns.self_motion(panda, panda.q_ref, ns.posture_cost(panda, panda.q_ref), steps=1, avoid=world)


def _post_world():
    from physai import collision

    chain = robots.load("so101")
    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    return collision.collision_world(collision.scene("so101", [post]), chain)


def test_avoidance_step_bad_input_names_the_option():
    world = _post_world()
    q = world.chain.q_ref
    J = jacobian(world.chain, q)
    for kwargs, name in (({"gain": 0.0}, "gain"), ({"gain": 1.5}, "gain"), ({"lam": -1.0}, "lam"),
                         ({"influence": float("nan")}, "influence")):
        with pytest.raises(InputError, match=name):
            ns.avoidance_step(world, q, J, np.zeros(5), **kwargs)
    with pytest.raises(InputError, match="dq"):
        ns.avoidance_step(world, q, J, np.zeros(4))
    with pytest.raises(InputError, match="world"):
        ns.avoidance_step(object(), q, J, np.zeros(5))


def test_collision_geometry_no_longer_carries_the_controller_step():
    # the step lives beside control and nullspace; geometry does not import it
    from physai import collision

    assert not hasattr(collision, "avoidance_step") and not hasattr(collision, "DAMPER_GAIN")
    assert "_avoid_step" not in vars(collision)


def test_avoidance_step_closing_bound_holds_for_every_pair_by_mj_geomDistance(rng):
    # The look-ahead's bound on how far each pair closes along q + s dq, against MuJoCo's distances of every pair
    # (self pairs included) at 20 points of the path, for steps up to 0.3 rad per joint.
    from conftest import mujoco_distances

    world = _post_world()
    chain = world.chain
    for _ in range(10):
        q = chain.random_q(rng)
        dq = rng.uniform(-0.3, 0.3, chain.n)
        L, M = _avoid_step._levers(world, q)
        d0 = mujoco_distances(world, q, 10.0)
        for s in np.linspace(0.05, 1.0, 20):
            closed = d0 - mujoco_distances(world, q + s * dq, 10.0)
            assert np.all(closed <= _avoid_step._travel(L, M, world.hinge, dq, s) + 1e-9)


def test_avoidance_step_holds_self_pairs_to_self_margin_by_mj_geomDistance(rng):
    # A standing-still step (dq = 0) meets every damper G dq >= -gain (d_i - m_i) exactly where each pair keeps its
    # own clearance m_i, so it passes untouched at postures where robot pairs sit between self_margin (0) and the
    # obstacle margin (1 cm) while the post keeps its margin (held to the obstacle margin, the damper would push the
    # arm's own pairs apart). MuJoCo measures the pairs.
    from conftest import mujoco_distances

    world = _post_world()
    chain = world.chain
    self_within = 0
    for q in chain.random_q(rng, 600):
        d = mujoco_distances(world, q)
        if np.any(d <= 1e-6):  # touching: the sweep leaves such a step alone either way
            continue
        J = jacobian(chain, q)[:3]
        dq, scale = ns.avoidance_step(world, q, J, np.zeros(chain.n))
        close_self = np.any(world.pair_self & (d < world.margin))
        close_post = np.any(~world.pair_self & (d < world.margin))
        if close_self and not close_post:
            self_within += 1
            np.testing.assert_array_equal(dq, 0.0)
    assert self_within >= 3
