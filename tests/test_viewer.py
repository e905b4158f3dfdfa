"""The interactive viewer: its follow step pinned to MuJoCo, and an end-to-end run in headless Chromium."""

import io
import time

import numpy as np
import pytest

from physai import mj, robots
from physai.kinematics import jacobian, tool_pose
from physai.singularity import health
from physai.viewer import close_geoms, follow_step

DT = 1 / 30


def test_follow_step_reaches_a_reachable_target_checked_by_mujoco(so101_model, so101, rng):
    goal_q = so101.random_q(rng, inset=0.3)
    target = mj.site_pose(so101_model, so101, goal_q)[:3, 3]
    q = so101.q_ref.copy()
    for _ in range(400):
        q, _, _ = follow_step(so101, q, target, "dls", DT)
    assert np.all(q >= so101.lower) and np.all(q <= so101.upper)
    np.testing.assert_allclose(mj.site_pose(so101_model, so101, q)[:3, 3], target, atol=1e-4)


def test_pinv_speed_blows_up_near_the_elbow_singularity_dls_stays_bounded(so101):
    """Where the position block's sigma_min is smallest along the elbow sweep (the arm stretched), the
    pseudoinverse asks for far more joint speed than DLS, which stays under its 6.28 rad/s limit."""
    sweep = [np.array([0.0, 0.0, e, 0.0, 0.0]) for e in np.linspace(so101.lower[2], so101.upper[2], 341)]
    q = min(sweep, key=lambda q: health(jacobian(so101, q)).sigma_min)
    assert health(jacobian(so101, q)).sigma_min < 0.01
    target = np.array([1.0, 0.0, 0.2])  # far beyond reach: the stretched arm is asked to go further out
    _, h_pinv, qdot_pinv = follow_step(so101, q, target, "pinv", DT)
    _, h_dls, qdot_dls = follow_step(so101, q, target, "dls", DT)
    assert h_pinv.lam == 0 and h_dls.lam > 0
    assert np.abs(qdot_dls).max() <= 6.28 + 1e-9
    assert np.abs(qdot_pinv).max() > 3 * np.abs(qdot_dls).max()


def test_viewer_in_headless_chromium_follows_the_target(chromium):
    chromium, sync_api = chromium
    from matplotlib.image import imread

    from physai.viewer import Viewer

    viewer = Viewer("so101", port=0)
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=[
                "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"])
            page = browser.new_page(viewport={"width": 640, "height": 480})
            page.goto(viewer.url)
            page.get_by_text("shoulder_pan").first.wait_for(timeout=30_000)
            before_page, before_q = page.inner_text("body"), viewer.q
            viewer.set_target(viewer.target + np.array([0.0, 0.06, 0.04]))
            deadline = time.monotonic() + 20
            while page.inner_text("body") == before_page and time.monotonic() < deadline:
                page.wait_for_timeout(200)
            after_page = page.inner_text("body")
            page.wait_for_timeout(1500)  # let the arm settle and WebGL draw it
            png = page.screenshot(timeout=60_000)
            browser.close()
    finally:
        viewer.close()
    assert after_page != before_page, "the page's joint table never changed"
    assert np.abs(viewer.q - before_q).max() > 0.05
    q_lines = [line for line in after_page.splitlines() if line.startswith("shoulder_pan")]
    assert q_lines and float(q_lines[0].split()[-1]) != before_q[0]
    img = imread(io.BytesIO(png))[150:, :300, :3]  # the 3-D view, left of the panel, below the notices
    colors = np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    assert img.std() > 0.02 and len(colors) > 100, f"screenshot looks blank: std {img.std():.3f}, {len(colors)} colors"


def _so101_post_world():
    from physai import collision

    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    return collision.collision_world(collision.scene("so101", [post]), robots.load("so101"))


def _post_distance(world, q):
    """MuJoCo alone: the smallest mj_geomDistance from the post to any geom the chain moves that collides."""
    import mujoco

    m, d = world.model, mujoco.MjData(world.model)
    d.qpos[world.qpos_adr] = q
    mujoco.mj_kinematics(m, d)
    post = m.geom("post").id
    return min(mujoco.mj_geomDistance(m, d, post, int(g), 1.0, None) for g in world.arm_geoms if m.geom_contype[g])


def test_follow_step_with_avoid_stops_at_the_margin_by_mj_geomDistance():
    world = _so101_post_world()
    chain = world.chain
    q0 = chain.q_ref.copy()
    target = np.array([0.2, 0.1, 0.12])  # inside the post
    plain, guarded = q0.copy(), q0.copy()
    for _ in range(150):
        plain = follow_step(chain, plain, target, "dls", 1 / 30)[0]
        guarded = follow_step(chain, guarded, target, "dls", 1 / 30, avoid=world)[0]
        assert _post_distance(world, guarded) >= world.margin - 1e-4  # the damper's first-order bound, 30 Hz steps
    assert _post_distance(world, plain) < 0  # without it the gripper goes into the post


def test_close_geoms_are_the_pairs_mujoco_finds_within_the_margin(rng):
    import mujoco

    world = _so101_post_world()
    m, d = world.model, mujoco.MjData(world.model)
    seen = 0
    for q in world.chain.random_q(rng, 20):
        d.qpos[world.qpos_adr] = q
        mujoco.mj_kinematics(m, d)
        # each pair against its own clearance: the robot's own pairs self_margin, the post's pairs margin
        truth = {int(g) for (a, b), own in zip(world.pairs, world.pair_self)
                 if mujoco.mj_geomDistance(m, d, int(a), int(b), 1.0, None)
                 < (world.self_margin if own else world.margin) for g in (a, b)}
        assert close_geoms(world, q) == truth
        seen += len(truth)
    assert seen > 0


def test_follow_step_refuses_a_world_of_another_chain():
    from physai.errors import InputError

    panda = robots.load("panda")
    with pytest.raises(InputError, match="avoid: the world was built for chain"):
        follow_step(panda, panda.q_ref, np.array([0.4, 0.0, 0.4]), "dls", DT, avoid=_so101_post_world())


def test_viewer_with_avoid_draws_the_worlds_bodies_where_mujoco_puts_them():
    """A scene whose qpos starts with another joint (a turntable under the base) moves the arm's qpos addresses: the
    drawn bodies must still be MuJoCo's mj_kinematics of the world's model at the arm's q."""
    import mujoco

    from physai import collision
    from physai.viewer import Viewer

    spec = mujoco.MjSpec.from_file(str(robots.model_path("so101")))
    spec.worldbody.first_body().add_joint(name="turntable", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, 1])
    chain = robots.load("so101")
    world = collision.collision_world(spec.compile(), chain)
    assert list(world.qpos_adr) != list(chain.qpos_adr)
    viewer = Viewer("so101", port=0, avoid=world)
    try:
        q = np.array([0.4, -0.3, 0.5, 0.2, -0.6])
        with viewer._lock:  # the served state as the follow loop leaves it on arrival: the loop then does not step
            viewer._q, viewer._target = q, tool_pose(chain, q)[:3, 3]
        viewer._draw()
        d = mujoco.MjData(world.model)
        d.qpos[world.qpos_adr] = q
        mujoco.mj_kinematics(world.model, d)
        for b, frame in viewer._bodies.items():
            np.testing.assert_allclose(frame.position, d.xpos[b], atol=1e-12)
    finally:
        viewer.close()
