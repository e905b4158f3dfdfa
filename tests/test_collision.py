"""physai.collision pinned to MuJoCo: distances against mj_geomDistance called directly, verdicts against the
contacts of mj_collision, gradients against central differences; collision-aware IK answers checked by MuJoCo."""

import mujoco
import numpy as np
import pytest
from conftest import mujoco_distances

import physai
from physai import _avoid_ik, _ik_solve, _threads, ik
from physai import collision as C
from physai.collision import _screen as screen
from physai.chain import BodySpec, JointSpec, chain_from_bodies
from physai.errors import InputError, PhysaiError


OBSTACLES = {
    "so101": [C.Obstacle("table", "box", (0.4, 0.4, 0.02), (0.0, 0.0, -0.02)),
              C.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))],
    "wxai": [C.Obstacle("table", "box", (0.6, 0.6, 0.02), (0.0, 0.0, -0.02)),
             C.Obstacle("post", "capsule", (0.03, 0.15), (0.3, 0.15, 0.15))],
    "panda": [C.Obstacle("table", "box", (0.8, 0.8, 0.02), (0.0, 0.0, -0.02)),
              C.Obstacle("post", "capsule", (0.05, 0.3), (0.45, 0.3, 0.3))],
}


@pytest.fixture(scope="module", params=sorted(OBSTACLES))
def world(request):
    robot = request.param
    return C.collision_world(C.scene(robot, OBSTACLES[robot]), physai.load(robot))


def test_distances_equal_mj_geomDistance_for_every_pair(world, rng):
    q = world.chain.random_q(rng, 40)
    D = world.distances(q)
    assert D.shape == (40, len(world.pairs))
    for k in range(len(q)):  # the same MuJoCo call on the same poses: equal to round-off
        np.testing.assert_allclose(D[k], mujoco_distances(world, q[k]), rtol=0, atol=1e-12)
    assert (D < 0).any() and (D < world.distmax).any()  # the sample exercises penetration and near pairs


def test_penetration_verdict_agrees_with_mj_collision_contacts(world, rng):
    # mj_collision (MuJoCo's own broad and narrow phase, the model's filters) on the original model: a pair of the
    # world penetrates exactly when MuJoCo reports a contact of negative depth for it.
    m, d = world.model, mujoco.MjData(world.model)
    index = {tuple(p): i for i, p in enumerate(world.pairs.tolist())}
    for q in world.chain.random_q(rng, 20):
        d.qpos[world.qpos_adr] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        touching = {index[p] for p in (tuple(sorted(map(int, c.geom))) for c in d.contact[:d.ncon]
                                       if c.dist < -1e-6) if p in index}
        ours = set(np.flatnonzero(world.distances(q) < -1e-6).tolist())
        assert touching <= ours
        assert ours <= set(np.flatnonzero(mujoco_distances(world, q) < 0).tolist())


def test_gradients_match_central_differences_of_mj_geomDistance(world, rng):
    h = 1e-6
    checked = 0
    for q in world.chain.random_q(rng, 15):
        d, G = world.distances_and_gradients(q)
        G_fd = np.stack([(world.distances(q + h * e) - world.distances(q - h * e)) / (2 * h)
                         for e in np.eye(world.chain.n)], axis=-1)
        # separated pairs resolved on both sides of the difference; box corners make penetration depth kinked
        ok = (d > 1e-4) & (d < world.distmax - 1e-3)
        np.testing.assert_allclose(G[ok], G_fd[ok], atol=1e-5)
        checked += ok.sum()
    assert checked > 20


SHAPES = """<mujoco><worldbody>
  <geom name="slab" type="box" size="0.3 0.2 0.02" pos="0.2 0.1 -0.1" euler="0.3 0.2 0.5"/>
  <geom name="ball" type="sphere" size="0.05" pos="0.3 -0.2 0.2"/>
  <geom name="egg" type="ellipsoid" size="0.08 0.04 0.03" pos="-0.25 0.1 0.15" euler="0.5 0 1"/>
  <geom name="drum" type="cylinder" size="0.04 0.1" pos="0.0 0.35 0.1" euler="1 0.4 0"/>
  <body name="l1"><joint name="j1" axis="0 0 1"/><geom name="g1" type="capsule" size="0.03" fromto="0 0 0 0.25 0 0"/>
    <body name="l2" pos="0.25 0 0"><joint name="j2" axis="0 1 0"/>
      <geom name="g2" type="box" size="0.12 0.03 0.02" pos="0.12 0 0" euler="0 0.2 0.3"/>
      <body name="l3" pos="0.25 0 0"><joint name="j3" axis="1 0 0"/>
        <geom name="g3" type="sphere" size="0.04"/><geom name="g4" type="cylinder" size="0.02 0.05" pos="0.05 0 0"/>
        <geom name="g5" type="ellipsoid" size="0.03 0.05 0.02" pos="0.1 0 0"/><site name="tip" pos="0.15 0 0"/>
  </body></body></body></worldbody></mujoco>"""


@pytest.fixture(scope="module", params=sorted(OBSTACLES) + ["shapes"])
def any_world(request):
    if request.param == "shapes":
        m = mujoco.MjModel.from_xml_string(SHAPES)
        return C.collision_world(m, physai.chain_from_mujoco(m, "tip"), samples=1)
    return C.collision_world(C.scene(request.param, OBSTACLES[request.param]), physai.load(request.param))


def all_mujoco_distances(world, q):
    return np.array([mujoco_distances(world, qk, cap=10.0) for qk in q])


def test_geom_poses_equal_mj_kinematics(any_world, rng):
    m, d = any_world.model, mujoco.MjData(any_world.model)
    q = any_world.chain.random_q(rng, 20)
    xpos, xmat = any_world.geom_poses(q)
    for k in range(len(q)):
        d.qpos[any_world.qpos_adr] = q[k]
        mujoco.mj_kinematics(m, d)
        np.testing.assert_allclose(xpos[k], d.geom_xpos, rtol=0, atol=1e-13)
        np.testing.assert_allclose(xmat[k].reshape(-1, 9), d.geom_xmat, rtol=0, atol=1e-13)


def test_screen_bounds_never_exceed_mj_geomDistance_and_equal_it_for_primitives(any_world, rng):
    q = any_world.chain.random_q(rng, 60)
    D = all_mujoco_distances(any_world, q)
    cap = 10.0  # refine every pair
    for engine in ("numpy", "compiled"):
        bound = any_world.bounds(q, cap, engine=engine)
        apart = bound >= 0  # a bound of a penetrating pair is only known to lie below the cap
        assert np.all(bound[apart] <= D[apart] + 1e-12)
        # sphere, capsule and box pairs (not box-box): the bound is the distance, less the golden-section search's
        # slack, at most 1.5 x a segment's length (< 1 m here) x its final bracket 0.618^50 = 3.5e-11
        exact = any_world.screen.exact & (D > 1e-6)
        np.testing.assert_allclose(bound[exact], D[exact], rtol=0, atol=1e-10)
    assert (D < 0).any() and np.any(any_world.screen.exact)


def test_compiled_screen_equals_the_numpy_reference(any_world, rng):
    q = any_world.chain.random_q(rng, 60)
    for cap in (0.0, any_world.margin, any_world.distmax, 10.0):
        np.testing.assert_allclose(any_world.bounds(q, cap), any_world.bounds(q, cap, engine="numpy"), rtol=0,
                                   atol=1e-12)


def test_compiled_verdicts_equal_the_numpy_reference(any_world, rng):
    # Bounds are compared where the screen gives them; a GJK bound depends on which of several equally far support
    # points each twin picks (a box's corners tie along its axes), so there both twins need only decide alike.
    # Every bound either twin gives, GJK's included, is a lower bound of MuJoCo's distance where it is not negative
    # (a negative bound is only known to lie below the margin), to MuJoCo's own GJK tolerance (1e-6 m).
    q = any_world.chain.random_q(rng, 60)
    s = any_world.screen
    screened = ~((s.hull_num[s.g1] > 0) & (s.hull_num[s.g2] > 0) & ~s.exact)
    D = all_mujoco_distances(any_world, q)
    seen = set()
    for margin in (0.0, any_world.margin, 0.05):
        verdict, ask, bound = any_world.verdicts(q, margin)
        verdict_ref, ask_ref, bound_ref = any_world.verdicts(q, margin, engine="numpy")
        np.testing.assert_array_equal(verdict, verdict_ref)
        kept = verdict != C.HIT  # a hit stops the compiled loop: its other pairs are left unwritten
        np.testing.assert_array_equal(ask[kept], ask_ref[kept])
        np.testing.assert_allclose(bound[kept][:, screened], bound_ref[kept][:, screened], rtol=0, atol=1e-12)
        for b in (bound[kept], bound_ref[kept]):
            apart = b >= 0
            assert np.all(b[apart] <= D[kept][apart] + 1e-6)
        seen |= set(verdict.tolist())
    assert seen >= {C.CLEAR, C.HIT}


def test_gjk_decides_mesh_and_box_pairs_without_mujoco(rng):
    # The Panda's links are convex mesh pieces, the SO-101's boxes and meshes: GJK leaves a pair to MuJoCo only
    # within its band of the margin, which random postures almost never hit.
    for robot in ("panda", "so101"):
        world = C.collision_world(C.scene(robot, OBSTACLES[robot]), physai.load(robot))
        q = world.chain.random_q(rng, 200)
        verdict, ask, _ = world.verdicts(q, world.margin)
        types = world.model.geom_type[world.pairs]
        hulls = np.isin(types, [mujoco.mjtGeom.mjGEOM_MESH, mujoco.mjtGeom.mjGEOM_BOX]).all(axis=1)
        assert hulls.any() and (verdict == C.HIT).any() and (verdict == C.CLEAR).any()
        # the robot's own pairs are held to 0, where overlapping hulls often stop GJK short of a verdict: MuJoCo
        # decides those
        assert ask[:, hulls & ~world.pair_self].sum() <= 2


@pytest.mark.parametrize("margin", [0.0, 0.01, 0.05])
def test_clear_verdict_equals_mj_geomDistance_against_the_margin(any_world, rng, margin):
    q = any_world.chain.random_q(rng, 150)
    per_pair = np.where(any_world.pair_self, any_world.self_margin, margin)  # the robot's own pairs: self_margin
    verdict = np.all(all_mujoco_distances(any_world, q) >= per_pair, axis=1)
    np.testing.assert_array_equal(any_world.clear(q, margin=margin), verdict)
    if margin == 0.0:  # the sample holds both verdicts
        assert 0 < verdict.sum() < len(q)


def test_segment_distance_matches_a_dense_sampling(rng):
    p1, q1, p2, q2 = (rng.normal(size=(200, 3)) for _ in range(4))
    q2[:50] = p2[:50]  # a point against a segment
    s = np.linspace(0, 1, 801)
    a = p1[:, None] + s[None, :, None] * (q1 - p1)[:, None]
    b = p2[:, None] + s[None, :, None] * (q2 - p2)[:, None]
    brute = np.linalg.norm(a[:, :, None] - b[:, None, :], axis=-1).min(axis=(1, 2))
    exact = C.segment_distance(p1, q1, p2, q2)
    assert np.all(exact <= brute + 1e-12)
    # the sampling is within half a step of each segment's length of the true closest points
    slack = 0.5 / 800 * (np.linalg.norm(q1 - p1, axis=1) + np.linalg.norm(q2 - p2, axis=1))
    assert np.all(brute - exact <= slack + 1e-12)


def test_penetrating_sphere_gradient_points_out_of_the_overlap():
    # A sphere on a slide joint inside a fixed sphere: depth grows as it moves in, so dd/dx has the sign of x.
    xml = """<mujoco><worldbody><geom name="a" type="sphere" size="0.1"/>
      <body><joint name="x" type="slide" axis="1 0 0"/><geom name="b" type="sphere" size="0.05"/>
      <site name="tip"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    chain = physai.chain_from_mujoco(m, "tip")
    w = C.collision_world(m, chain, margin=0.0, samples=1, always=1.0, rng=np.random.default_rng(0))
    for x, sign in ((0.1, 1.0), (-0.1, -1.0)):
        d, G = w.distances_and_gradients(np.array([x]))
        assert d[0] == pytest.approx(abs(x) - 0.15, abs=1e-9)  # closed form: centre distance minus radii
        assert G[0, 0] == pytest.approx(sign, abs=1e-9)


def test_pairs_follow_mujoco_filters_contype_exclude_and_parent():
    xml = """<mujoco><worldbody>
      <geom name="floor" type="box" size="1 1 0.01" pos="0 0 -0.5"/>
      <geom name="ghost" type="sphere" size="0.05" pos="1 1 1" contype="0" conaffinity="0"/>
      <body name="l1"><joint name="j1" axis="0 0 1"/><geom name="g1" type="capsule" size="0.02" fromto="0 0 0 0.3 0 0"/>
        <body name="l2" pos="0.3 0 0"><joint name="j2" axis="0 0 1"/>
          <geom name="g2" type="capsule" size="0.02" fromto="0 0 0 0.3 0 0"/>
          <body name="l3" pos="0.3 0 0"><joint name="j3" axis="0 0 1"/>
            <geom name="g3" type="capsule" size="0.02" fromto="0 0 0 0.3 0 0"/><site name="tip" pos="0.3 0 0"/>
      </body></body></body></worldbody>
      <contact><exclude body1="l1" body2="l3"/></contact></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    w = C.collision_world(m, physai.chain_from_mujoco(m, "tip"), samples=1)
    # floor with each link; l1-l2 and l2-l3 parent-child, l1-l3 excluded, ghost has no contype
    assert sorted(map(tuple, map(sorted, w.pair_names))) == [("floor", "g1"), ("floor", "g2"), ("floor", "g3")]


def test_always_touching_pairs_are_dropped_and_the_user_overrides(rng):
    chain = physai.load("panda")
    scene = C.scene("panda", OBSTACLES["panda"])
    w = C.collision_world(scene, chain)
    base = [p for p in w.dropped if p[0].startswith("link0#") and p[1].startswith("link1#")]
    assert base  # base and first link overlap in every configuration
    kept = C.collision_world(scene, chain, keep=[("link0", "link1")], drop=[("table", "hand")])
    assert set(base) <= set(kept.pair_names) and ("table", "hand#0") in kept.dropped
    with pytest.raises(InputError, match="keep: no candidate pair"):
        C.collision_world(scene, chain, keep=[("link0", "nowhere")])


def test_bad_input_names_the_problem():
    chain = physai.load("so101")
    with pytest.raises(InputError, match="margin"):
        C.collision_world("so101", chain, margin=float("nan"))
    with pytest.raises(InputError, match="margin"):
        C.collision_world("so101", chain, margin=-0.01)
    with pytest.raises(InputError, match="does not hold the chain's joint"):
        C.collision_world("wxai", chain)
    twice = chain_from_bodies("twice", [BodySpec("a", (0, 0, 0), joints=(JointSpec("j", "hinge", (0, 0, 1)),)),
                                        BodySpec("b", (0.1, 0, 0), joints=(JointSpec("j", "hinge", (0, 0, 1)),))],
                              (0.1, 0, 0))
    with pytest.raises(InputError, match="'j' is named twice"):
        C.collision_world("so101", twice)
    spec = mujoco.MjSpec.from_file(str(physai.model_path("so101")))
    spec.body("base").pos = [0.1, 0.0, 0.0]  # the arm moved in the scene: the chain no longer describes it
    with pytest.raises(InputError, match="does not match the arm in the scene"):
        C.collision_world(spec.compile(), chain)
    with pytest.raises(InputError, match="Obstacle"):
        C.scene("so101", [("table", "box")])
    world = C.collision_world("so101", chain)
    for call, name in ((lambda: world.verdicts(np.zeros(4), 0.01), "q"),
                       (lambda: world.verdicts(np.full(5, np.nan), 0.01), "q"),
                       (lambda: world.verdicts(np.zeros(5), float("nan")), "margin"),
                       (lambda: world.verdicts(np.zeros(5), 0.01, engine="fast"), "engine"),
                       (lambda: world.bounds(np.zeros((2, 6)), 0.01), "q"),
                       (lambda: world.bounds(np.zeros(5), "far"), "cap")):
        with pytest.raises(InputError, match=name):
            call()


# ---- collision-aware IK ------------------------------------------------------------------------------------------

TASK = {"so101": "position", "wxai": "pose", "panda": "pose"}


def clear_targets(world, rng, k):
    q = world.chain.random_q(rng, 20 * k)
    q = q[np.all(np.array([mujoco_distances(world, x) for x in q]) >= world.pair_margin, axis=1)][:k]
    T = physai.tool_pose(world.chain, q)
    return T[:, :3, 3] if TASK[world.chain.name] == "position" else T


def test_avoid_answers_keep_the_margin_by_mj_geomDistance(world, rng):
    targets = clear_targets(world, rng, 25)
    task = TASK[world.chain.name]
    res = ik.solve_ik_batch(world.chain, targets, task=task, avoid=world)
    for r in res:
        if r.converged:
            assert np.all(mujoco_distances(world, r.q) >= world.pair_margin)
            assert r.position_error <= ik.TOL_POSITION and r.orientation_error <= ik.TOL_ORIENTATION
        else:
            assert r.reason in ik.REASONS
    assert res.success_rate >= 0.9  # every target has a clear answer (it came from one)


def test_avoid_turns_a_colliding_answer_into_a_clear_one():
    # SO-101 over a table: the plain answer from the middle of the limits goes through a box on the way
    world = C.collision_world(C.scene("so101", OBSTACLES["so101"]), physai.load("so101"))
    rng = np.random.default_rng(3)
    targets = clear_targets(world, rng, 60)
    plain = ik.solve_ik_batch(world.chain, targets, task="position")
    colliding = plain.converged & np.array([np.any(mujoco_distances(world, q) < world.pair_margin) for q in plain.q])
    assert colliding.any()
    fixed = ik.solve_ik_batch(world.chain, targets[colliding], task="position", avoid=world)
    assert fixed.converged.any()
    for q in fixed.q[fixed.converged]:
        assert np.all(mujoco_distances(world, q) >= world.pair_margin)


def test_target_inside_an_obstacle_is_a_collision_verdict_never_converged():
    world = C.collision_world(C.scene("so101", OBSTACLES["so101"]), physai.load("so101"))
    inside_post = np.array([0.2, 0.1, 0.12])
    res = ik.solve_ik(world.chain, inside_post, task="position", avoid=world, solver=ik.Solver(restarts=5))
    assert not res.converged and res.reason == "collision: no answer keeps the margin"
    assert res.unmet[0] == "collision"
    assert ik.solve_ik(world.chain, inside_post, task="position", solver=ik.Solver(restarts=5)).converged  # plain IK goes through


def test_pose_target_inside_an_obstacle_spends_the_whole_budget_and_is_refused():
    """The Panda's tool frame asked inside the post, all default options: every seed, restart and repair is tried,
    and the answer is a collision verdict."""
    world = C.collision_world(C.scene("panda", OBSTACLES["panda"]), physai.load("panda"))
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = np.diag([1.0, -1.0, -1.0]), (0.45, 0.3, 0.3)  # the post's centre, tool pointing down
    res = ik.solve_ik(world.chain, T, avoid=world)
    assert not res.converged and res.reason == "collision: no answer keeps the margin"
    assert res.restarts >= _avoid_ik.RESTARTS
    assert ik.solve_ik(world.chain, T).converged  # plain IK goes through


def test_start_in_collision_is_refused_naming_the_pair():
    world = C.collision_world(C.scene("so101", OBSTACLES["so101"]), physai.load("so101"))
    q_bad = next(q for q in world.chain.random_q(np.random.default_rng(0), 200) if world.distances(q).min() < -0.005)
    with pytest.raises(PhysaiError, match="q0: the start configuration is in collision"):
        ik.solve_ik(world.chain, [0.2, 0.0, 0.1], q_bad, task="position", avoid=world)
    with pytest.raises(InputError, match="avoid: expected a physai.collision.CollisionWorld"):
        ik.solve_ik(world.chain, [0.2, 0.0, 0.1], task="position", avoid="table")
    with pytest.raises(InputError, match="avoid: the world was built for chain"):
        ik.solve_ik(physai.load("wxai"), np.eye(4), avoid=world)


def test_verdicts_are_bit_for_bit_the_same_on_any_number_of_threads(world, monkeypatch):
    """The configurations of a verdict batch are shared among threads; each row is its own, so every thread count
    gives one thread's verdicts, pairs asked and bounds (bitwise equality is the point)."""
    q = np.ascontiguousarray(world.chain.random_q(np.random.default_rng(12), 300))
    monkeypatch.setattr(_threads, "cores", lambda: 1)
    one = world._verdicts(q, world.pair_margin)
    assert len(set(one[0].tolist())) > 1  # the sample holds more than one verdict
    for threads in (2, 3, 7):
        monkeypatch.setattr(_threads, "cores", lambda threads=threads: threads)
        verdict, ask, bound = world._verdicts(q, world.pair_margin)
        np.testing.assert_array_equal(verdict, one[0])
        np.testing.assert_array_equal(ask, one[1])
        np.testing.assert_array_equal(bound, one[2])


def test_hulls_gjk_finds_overlapping_are_a_hit_without_asking_mujoco():
    """The Panda's wrist folded into link5 (mesh hulls against the hand's box, self_margin 0): GJK finds the hulls
    overlapping, so the posture is a HIT in compiled code, with no pair left to MuJoCo; MuJoCo's mj_geomDistance
    confirms each such pair penetrates."""
    world = C.collision_world(C.scene("panda", []), physai.load("panda"))
    q = world.chain.random_q(np.random.default_rng(4), 600)
    D = np.array([mujoco_distances(world, x, cap=1.0) for x in q])
    overlapping = D.min(axis=1) < -1e-4
    assert overlapping.sum() > 20  # the sample holds self-penetrating postures
    for engine in ("compiled", "numpy"):
        verdict, ask, _ = world.verdicts(q, 0.0, engine=engine)
        assert (verdict[overlapping] == C.HIT).all() and not ask[overlapping].any()
        assert (verdict[D.min(axis=1) >= 0] != C.HIT).all()  # clear by MuJoCo: never a hit


def test_every_verdict_bound_is_a_lower_bound_of_mj_geomDistance(world):
    """A bound at or above zero lies below MuJoCo's distance, for every pair of every configuration, hits included
    (the pairs after a hit are not looked at: -inf). Below zero a bound says only that the pair may touch (a point
    inside a box is 0 from it, whatever the depth)."""
    q = world.chain.random_q(np.random.default_rng(13), 40)
    verdict, _, bound = world.verdicts(q, world.margin)
    assert (verdict == C.HIT).any() and (verdict == C.CLEAR).any()
    for k in range(len(q)):
        apart = bound[k] >= 0
        assert (bound[k][apart] <= mujoco_distances(world, q[k], cap=10.0)[apart] + 1e-9).all()


def test_clear_set_postures_keep_every_margin_by_mj_geomDistance_and_carry_mujocos_tool_pose(world):
    """The restart seeds of avoid=: every posture keeps each pair's margin and its tool pose is MuJoCo's site pose."""
    q, T = world.clear_postures
    assert len(q) > 0.2 * C.CLEAR_SET_DRAWS and not q.flags.writeable and not T.flags.writeable
    for k in range(0, len(q), max(1, len(q) // 30)):
        assert (mujoco_distances(world, q[k], cap=1.0) >= world.pair_margin).all()
        d = mujoco.MjData(world.model)
        d.qpos[world.qpos_adr] = q[k]
        mujoco.mj_kinematics(world.model, d)
        site = mujoco.mj_name2id(world.model, mujoco.mjtObj.mjOBJ_SITE, world.chain.tool_name)
        np.testing.assert_allclose(T[k, :3, 3], d.site_xpos[site], rtol=0, atol=1e-12)
        np.testing.assert_allclose(T[k, :3, :3], d.site_xmat[site].reshape(3, 3), rtol=0, atol=1e-12)


@pytest.mark.parametrize("task", ["pose", "position", "position+axis"])
def test_a_colliding_target_restarts_first_from_the_clear_postures_nearest_it(task):
    """The first CLEAR_STARTS restart draws of a colliding target map to the clear postures whose tool poses are
    nearest, nearest first, by the root sum of squares of the position (m) and ROTATION_LENGTH times 2 sin(angle / 2), the
    angle between the tool frames (SciPy's rotation magnitude) or the tool axes, sorted here by brute force; the
    later draws are the generator's, untouched."""
    from scipy.spatial.transform import Rotation

    world = C.collision_world(C.scene("panda", OBSTACLES["panda"]), physai.load("panda"))
    chain, (q, T) = world.chain, world.clear_postures
    p = ik.check_problem(chain, clear_targets(world, np.random.default_rng(8), 3), None, 1,
                         dict(avoid=world, rng=np.random.default_rng(9), task=task))
    U = _avoid_ik._clear_starts_first(world, chain, p.T_target, p.uniforms, p.options)
    for b, T_t in enumerate(p.T_target):
        if task == "pose":
            angle = (Rotation.from_matrix(T[:, :3, :3]).inv() * Rotation.from_matrix(T_t[:3, :3])).magnitude()
        else:
            a_t, a_p = T_t[:3, :3] @ p.options.axis, T[:, :3, :3] @ p.options.axis
            angle = np.arccos(np.clip(a_p @ a_t, -1, 1))
        d = np.linalg.norm(T[:, :3, 3] - T_t[:3, 3], axis=1)
        if task != "position":
            d = np.hypot(d, _avoid_ik.ROTATION_LENGTH * 2 * np.sin(angle / 2))
        k = _avoid_ik.CLEAR_STARTS
        np.testing.assert_allclose(_ik_solve.starts_of(chain, U[b, :k]), q[np.argsort(d)[:k]], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(U[b, k:], p.uniforms[b, k:])


def test_avoid_batch_equals_a_loop_of_single_solves():
    world = C.collision_world(C.scene("so101", OBSTACLES["so101"]), physai.load("so101"))
    targets = clear_targets(world, np.random.default_rng(5), 8)
    batch = ik.solve_ik_batch(world.chain, targets, task="position", avoid=world, rng=np.random.default_rng(1))
    g = np.random.default_rng(1)
    for b, t in enumerate(targets):
        one = ik.solve_ik(world.chain, t, task="position", avoid=world, rng=g)
        np.testing.assert_array_equal(one.q, batch.q[b])  # bitwise: the same steps from the same draws
        assert (one.converged, one.reason) == (bool(batch.converged[b]), str(batch.reason[b]))


@pytest.mark.parametrize("scene", ["so101", "panda", "so101-mujoco-decides"])
def test_compiled_restarts_equal_the_batched_rounds_of_plain_solves(scene, monkeypatch):
    # The same draws, tried in compiled code one by one or in batched rounds of plain solves: the same answers, bit
    # for bit, charged the same steps and restarts. In the last scene GJK's band is wider than any gap, so MuJoCo
    # decides every hull pair the bounds leave open: answers go back from the compiled loop to MuJoCo, which finds
    # some colliding, and the loop resumes; there restarts start from random draws only, since starts from the
    # world's clear postures seldom end colliding.
    robot = scene.split("-")[0]
    if scene.endswith("mujoco-decides"):
        monkeypatch.setattr(screen, "GJK_BAND", 1.0)
        monkeypatch.setattr(_avoid_ik, "CLEAR_STARTS", 0)
    world = C.collision_world(C.scene(robot, OBSTACLES[robot]), physai.load(robot))
    chain, task = world.chain, TASK[robot]
    asked = []
    settle = _avoid_ik._Restarts.settle_ask
    monkeypatch.setattr(_avoid_ik._Restarts, "settle_ask", lambda st, i, clear, tried: (
        asked.append(clear), settle(st, i, clear, tried)))
    count = 150 if scene.endswith("mujoco-decides") else 60  # measured: 8 answers MuJoCo finds colliding
    targets = clear_targets(world, np.random.default_rng(3), count)
    p = ik.check_problem(chain, targets, None, 1, dict(task=task, avoid=world, rng=np.random.default_rng(2)))
    compiled, rounds = (_avoid_ik.solve(p, compiled_restarts=flag) for flag in (True, False))
    np.testing.assert_array_equal(compiled.q, rounds.q)
    for name in ("outcome", "restarts", "iterations"):
        np.testing.assert_array_equal(getattr(compiled, name), getattr(rounds, name))
    assert (compiled.restarts > _ik_solve.solve(p).restarts).any()  # some targets needed restarts
    if scene.endswith("mujoco-decides"):
        assert False in asked


def test_kernel_codes_match_their_python_twins():
    from physai import _numba_avoid, _numba_collision

    assert (_numba_collision.CLEAR, _numba_collision.HIT, _numba_collision.ASK) == (C.CLEAR, C.HIT, C.ASK)
    assert (_numba_avoid.EXHAUSTED, _numba_avoid.RUN) == (_avoid_ik.EXHAUSTED, _avoid_ik.RUN)
    assert _numba_collision.GJK_ITERATIONS == screen.GJK_ITERATIONS


def test_null_space_refinement_with_avoid_keeps_answers_clear_by_mj_geomDistance():
    from physai import nullspace as ns

    world = C.collision_world(C.scene("panda", OBSTACLES["panda"]), physai.load("panda"))
    targets = clear_targets(world, np.random.default_rng(7), 6)
    objective = ns.joint_limit_cost(world.chain)
    plain = ik.solve_ik_batch(world.chain, targets, avoid=world)
    res = ik.solve_ik_batch(world.chain, targets, avoid=world, prefer=ns.Prefer(objective, iterations=30))
    assert sum(res.converged) >= 5
    for r, start in zip(res, plain):
        if r.converged:
            assert np.all(mujoco_distances(world, r.q) >= world.pair_margin)  # the refinement kept it clear
            assert r.cost <= objective.value(start.q)
