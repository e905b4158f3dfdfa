"""Lesson 08: forward kinematics pinned to MuJoCo (SO-101 every body, Trossen WidowX AI, Panda), to closed forms
(planar2r) and to the WidowX AI lesson's own fk code (wxai_illustrative)."""

import re
from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import PANDA_XML, WXAI_XML
from physai import conventions, robots
from physai.kinematics import FK, fk, jacobian, jacobian_from_fk, joint_frames, tool_pose

LESSON = "08-forward-kinematics"

WXAI_XML = WXAI_XML


def mj_kinematics(m, chain, q):
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    return d


@pytest.mark.parametrize(
    "path, site, joints",
    [(WXAI_XML, "ee_site", [f"joint_{i}" for i in range(6)]), (PANDA_XML, "tcp", [f"joint{i}" for i in range(1, 8)])],
    ids=["trossen_wxai", "panda"],
)
def test_model_by_path_fk_and_jacobian_match_mujoco_at_50_in_limit_poses(path, site, joints):
    chain = robots.load(path, site=site)
    m = robots.mujoco_model(path)
    assert chain.joint_names == tuple(joints)  # gripper/finger slides lie below the tool and are left out
    ids = [m.joint(n).id for n in joints]
    np.testing.assert_array_equal(chain.lower, m.jnt_range[ids, 0])
    sid = m.site(site).id
    worst_T = worst_J = 0.0
    for q in chain.random_q(np.random.default_rng(11), 50):
        assert np.all((q >= chain.lower) & (q <= chain.upper))
        d = mj_kinematics(m, chain, q)
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jacSite(m, d, jp, jr, sid)
        T = tool_pose(chain, q)
        worst_T = max(worst_T, np.abs(T[:3, 3] - d.site_xpos[sid]).max(), np.abs(T[:3, :3] - d.site_xmat[sid].reshape(3, 3)).max())
        worst_J = max(worst_J, np.abs(jacobian(chain, q) - np.r_[jp, jr][:, list(chain.dof_adr)]).max())
    assert worst_T <= 1e-12 and worst_J <= 1e-12, (worst_T, worst_J)


def test_so101_every_joint_frame_matches_mujoco_bodies_anchors_and_axes(so101, so101_model, rng):
    m = so101_model
    jids = [m.joint(n).id for n in so101.joint_names]
    for q in so101.random_q(rng, 20):
        d = mj_kinematics(m, so101, q)
        T_world_joint, _ = joint_frames(so101, q)
        axes, anchors, _ = fk(so101, q)
        for i, j in enumerate(jids):
            b = m.jnt_bodyid[j]
            assert np.abs(T_world_joint[i, :3, :3] - d.xmat[b].reshape(3, 3)).max() <= 1e-14
            assert np.abs(anchors[i] - d.xanchor[j]).max() <= 1e-14
            assert np.abs(axes[i] - d.xaxis[j]).max() <= 1e-14
            # so101's joints sit at their body origins, so the joint frame is the body frame
            assert np.abs(T_world_joint[i, :3, 3] - d.xpos[b]).max() <= 1e-14


def test_planar2r_matches_the_closed_form_fk_and_jacobian(rng):
    chain = robots.load("planar2r")
    assert chain.n == 2 and chain.source.startswith("built-in")
    l1, l2 = 0.5, 0.3
    for q in chain.random_q(rng, 50):
        c1, s1, c12, s12 = np.cos(q[0]), np.sin(q[0]), np.cos(q.sum()), np.sin(q.sum())
        np.testing.assert_allclose(fk(chain, q).p, [l1 * c1 + l2 * c12, l1 * s1 + l2 * s12, 0], atol=1e-15)
        J_closed = np.array([[-l1 * s1 - l2 * s12, -l2 * s12], [l1 * c1 + l2 * c12, l2 * c12]])
        J = jacobian(chain, q)
        assert np.abs(J[:2] - J_closed).max() <= 1e-15
        np.testing.assert_array_equal(J[2:5], 0.0)
        np.testing.assert_array_equal(J[5], [1.0, 1.0])


def test_planar2r_worked_example_jacobian_has_0_5_where_the_source_prints_0_8():
    """The source's J at q = (0, pi/2) is [[-0.3, -0.3], [0.8, 0]]; d(py)/dq1 = L1 cos q1 + L2 cos(q1 + q2) = 0.5."""
    J = jacobian(robots.load("planar2r"), [0.0, np.pi / 2])[:2]
    np.testing.assert_allclose(J, [[-0.3, -0.3], [0.5, 0.0]], atol=1e-15)


# The WidowX AI lesson's reference code, reproduced verbatim as the independent reference.
AXES = [np.array(a, dtype=float) for a in ([0, 0, 1], [0, 1, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0])]
OFFSETS = [np.array(o) for o in ([0.0, 0.0, 0.110], [0.0, 0.0, 0.050], [0.06, 0.0, 0.30], [0.17, 0.0, 0.0], [0.115, 0.0, 0.0], [0.075, 0.0, 0.0])]
EE_OFFSET = np.array([0.11, 0.0, 0.0])


def source_skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def source_rodrigues(axis, angle):
    k = source_skew(axis)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def source_fk(q):
    R = np.eye(3)
    p = np.zeros(3)
    axes_w, origins_w = [], []
    for i in range(6):
        p = p + R @ OFFSETS[i]
        axes_w.append(R @ AXES[i])  # joint axis in world, before its own rotation
        origins_w.append(p.copy())
        R = R @ source_rodrigues(AXES[i], q[i])
    p_ee = p + R @ EE_OFFSET
    return R, p_ee, axes_w, origins_w


def source_geometric_jacobian(q):
    _, p_ee, axes_w, origins_w = source_fk(q)
    J = np.zeros((6, 6))
    for i in range(6):
        z = axes_w[i]
        J[:3, i] = np.cross(z, p_ee - origins_w[i])
        J[3:, i] = z
    return J


def test_wxai_illustrative_equals_the_sources_own_fk_and_geometric_jacobian():
    chain = robots.load("wxai_illustrative")
    rng = np.random.default_rng(0)
    for _ in range(100):
        q = rng.uniform(-1.5, 1.5, size=6)  # the source's sampling
        R, p_ee, axes_w, origins_w = source_fk(q)
        T = tool_pose(chain, q)
        axes, anchors, p = fk(chain, q)
        assert np.abs(T[:3, :3] - R).max() <= 1e-15
        assert np.abs(p - p_ee).max() <= 1e-15
        assert np.abs(axes - np.array(axes_w)).max() <= 1e-15
        assert np.abs(anchors - np.array(origins_w)).max() <= 1e-15
        assert np.abs(jacobian(chain, q) - source_geometric_jacobian(q)).max() <= 1e-15


def test_numeric_jacobian_vee_dR_RT_matches_geometric_on_wxai_illustrative_at_the_sources_1e_9():
    chain = robots.load("wxai_illustrative")
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(100):
        q = rng.uniform(-1.5, 1.5, size=6)
        J_num = conventions.numeric_geometric_jacobian(lambda x: tool_pose(chain, x), q, eps=1e-6)
        worst = max(worst, np.abs(jacobian(chain, q) - J_num).max())
    assert worst <= 1e-9


def test_off_by_one_frame_bug_is_caught_in_exactly_its_column_by_the_numeric_check():
    """Reading joint 2's axis and origin from the next joint's frame breaks column 2 at every pose, and only it."""
    chain = robots.load("wxai_illustrative")
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.uniform(-1.5, 1.5, size=6)
        axes, anchors, p = fk(chain, q)
        axes_bug, anchors_bug = axes.copy(), anchors.copy()
        axes_bug[2], anchors_bug[2] = axes[3], anchors[3]
        J_bug = jacobian_from_fk(chain, FK(axes_bug, anchors_bug, p))
        err = np.abs(J_bug - conventions.numeric_geometric_jacobian(lambda x: tool_pose(chain, x), q)).max(axis=0)
        assert err[2] > 1e-2
        assert np.delete(err, 2).max() <= 1e-9


def source_chain_mjcf() -> str:
    """The source's WidowX-like chain (AXES, OFFSETS, EE_OFFSET) as nested MuJoCo bodies, its tool a site."""
    body = f'<site name="ee" pos="{" ".join(map(str, EE_OFFSET))}"/>'
    for i in reversed(range(6)):
        body = (f'<body name="b{i}" pos="{" ".join(map(str, OFFSETS[i]))}"><joint name="joint_{i}" '
                f'axis="{" ".join(map(str, AXES[i]))}"/><geom size="0.01"/>{body}</body>')
    return f"<mujoco><worldbody>{body}</worldbody></mujoco>"


def test_off_by_one_slip_splits_into_linear_and_angular_rows_as_mujocos_jacobian_says(ex):
    """Each slip's own-column error, split into linear rows (m/rad) and angular rows (rad/rad), against MuJoCo's
    mj_jacSite on the source's chain built as an MJCF: the slipped column is joint k+1's axis (xaxis) crossed with
    the lever from its anchor (xanchor) to the site, and that axis."""
    chain, m = robots.load("wxai_illustrative"), mujoco.MjModel.from_xml_string(source_chain_mjcf())
    qs = ex.check_poses(5)
    bug = ex.bug_step(chain, qs)
    worst = {s.joint: np.zeros(2) for s in bug.slips}
    moved = {s.joint: np.zeros(2) for s in bug.slips}
    for q in qs:
        d = mujoco.MjData(m)
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)  # mj_jacSite reads the dofs' motion axes, which this computes
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jacSite(m, d, jp, jr, 0)
        np.testing.assert_allclose(d.site_xpos[0], tool_pose(chain, q)[:3, 3], atol=1e-15)  # the same chain
        for k in worst:  # Break it's lesson-08 terms: the turn of the joint's world axis and the move of its anchor
            cos = np.clip(d.xaxis[k] @ d.xaxis[k + 1], -1, 1)
            moved[k] = np.maximum(moved[k], [np.degrees(np.arccos(cos)),
                                             np.linalg.norm(d.xanchor[k + 1] - d.xanchor[k])])
            slipped_lin = np.cross(d.xaxis[k + 1], d.site_xpos[0] - d.xanchor[k + 1])
            worst[k] = np.maximum(worst[k], [np.abs(slipped_lin - jp[:, k]).max(),
                                             np.abs(d.xaxis[k + 1] - jr[:, k]).max()])
    for s in bug.slips:
        np.testing.assert_allclose([s.axis_deg, s.anchor_m], moved[s.joint], atol=1e-9)
        assert s.name == m.joint(s.joint).name and s.flagged_names == (s.name,)
        np.testing.assert_allclose([s.linear, s.angular], worst[s.joint], atol=1e-8)  # the check's step: ~1e-10
        assert s.angular <= 2  # two unit axes differ by at most 2 in any entry
    joint_2 = next(s for s in bug.slips if s.name == "joint_2")
    assert joint_2.angular > joint_2.linear  # the page's slip is largest in rows without a length


def test_builtin_example_robots_load_by_name_without_files():
    assert {"planar2r", "wxai_illustrative"} <= set(robots.names())
    for name in ("planar2r", "wxai_illustrative"):
        assert robots.load(name).source.startswith("built-in")
        with pytest.raises(robots.ModelNotFoundError, match="built-in description with no MuJoCo model"):
            robots.mujoco_model(name)


# ---- the lesson's steps and claim rows, against closed forms, MuJoCo and the source's own code -----------------


def test_build_walk_and_other_arms_match_mujoco(build, so101_model, so101):
    """Step 1 compares joint frames with MuJoCo's body frames: the same frames only because every SO-101 joint sits
    at its body's origin (the model's jnt_pos is zero), as the page says."""
    jids = [so101_model.joint(n).id for n in so101.joint_names]
    np.testing.assert_array_equal(so101_model.jnt_pos[jids], 0.0)
    walk = build.walk_step(so101_model, so101, n_poses=5)
    assert max(max(r.err_p, r.err_R, r.err_axis, r.err_anchor) for r in walk.rows) <= 1e-14
    assert max(walk.tool_err_p, walk.tool_err_R) <= 1e-14
    assert walk.worst == max(max(r.err_p, r.err_R, r.err_axis, r.err_anchor) for r in walk.rows)
    arms = build.other_arms_step(n_poses=5)  # the learner's walk on the WidowX AI and the Panda, against MuJoCo
    assert [a.n for a in arms] == [6, 7] and all(max(a.dp, a.dR, a.d_axis, a.d_anchor) <= 1e-14 for a in arms)
    for a, name in zip(arms, ("wxai", "panda")):  # q_ref is the joint's ref, which MuJoCo compiles into qpos0
        m, c = robots.mujoco_model(name), robots.load(name)
        assert a.q_ref == np.abs(m.qpos0[list(c.qpos_adr)]).max()
    assert np.all(so101_model.qpos0[list(so101.qpos_adr)] == 0) and np.all(so101.q_ref == 0)


def test_illustrative_chains_largest_linear_entry_is_the_sources_own_jacobians(build, audit):
    chain = robots.load("wxai_illustrative")
    reach = build.reach_step(n_poses=300)
    qs = chain.random_q(np.random.default_rng(build.SEED + 2), 300)  # the step's poses: first draws of its rng
    top = max(np.abs(source_geometric_jacobian(q)[:3]).max() for q in qs)
    np.testing.assert_allclose(reach["wxai_illustrative"].top, top, atol=1e-14)
    rows = {c.claim: c.verdict for c in audit.build_claims({"reach": reach, "n_reach": 300})}
    verdict = rows["no linear entry exceeds 0.77 (the source's illustrative chain)"]
    assert verdict == ("agree" if top <= 0.77 else "disagree")


def test_numeric_check_and_bug_claims_against_the_sources_own_jacobian(ex):
    chain = robots.load("wxai_illustrative")
    qs = ex.check_poses(5)
    np.testing.assert_array_equal(qs, np.random.default_rng(0).uniform(-1.5, 1.5, size=(5, 6)))  # the source's range
    assert ex.CHECK_RANGE == 1.5  # the range the page states
    num = ex.numeric_check_step(chain, qs)
    ref = max(np.abs(source_geometric_jacobian(q) - ex.numeric_jacobian(chain, q, 1e-6)).max() for q in qs)
    np.testing.assert_allclose(num.at_check_eps, ref, rtol=1e-6)
    assert 1e-11 < ref < 1e-8  # the source's "~1e-9" at eps = 1e-6
    bug = ex.bug_step(chain, qs)
    assert bug.after <= 1e-15  # a hinge keeps its own axis: the source's described bug changes nothing
    rpy = ex.rpy_step(chain, n_poses=5)
    assert rpy.position <= 1e-12 and rpy.converted <= 1e-12 < rpy.raw
    rows = {c.claim: c.verdict for c in ex.claims(num, bug, rpy)}
    assert list(rows.values()) == ["agree", "disagree", "agree", "agree"]


# ---- the functions the learner types, and the numbers the lesson page quotes ----------------------------------


def test_build_walk_chain_frames_axes_and_anchors_match_mujoco(build, so101_model, so101, rng):
    m = so101_model
    jids = [m.joint(n).id for n in so101.joint_names]
    bodies = m.jnt_bodyid[jids]
    for q in so101.random_q(rng, 10):
        d = mj_kinematics(m, so101, q)
        frames, T_tool = build.walk_chain(so101, q)
        axes, anchors = build.axes_and_anchors(so101, frames)
        assert np.abs(frames[:, :3, 3] - d.xpos[bodies]).max() <= 1e-14
        assert np.abs(frames[:, :3, :3] - d.xmat[bodies].reshape(-1, 3, 3)).max() <= 1e-14
        assert np.abs(axes - d.xaxis[jids]).max() <= 1e-14 and np.abs(anchors - d.xanchor[jids]).max() <= 1e-14
        sid = m.site(so101.tool_name).id
        assert np.abs(T_tool[:3, 3] - d.site_xpos[sid]).max() <= 1e-14


def test_break_sign_flip_and_missing_tool_offset_are_mujoco_distances(build, so101_model, so101):
    m, sid = so101_model, so101_model.site(so101.tool_name).id
    assert np.all(so101.q_ref == 0)  # the flipped walk is then the walk at -q
    br = build.break_step(so101)
    at_q0 = mj_kinematics(m, so101, build.Q0).site_xpos[sid]
    at_minus = mj_kinematics(m, so101, -build.Q0).site_xpos[sid]
    np.testing.assert_allclose(br.sign, np.linalg.norm(at_minus - at_q0), atol=1e-15)
    np.testing.assert_allclose(br.no_tool_offset, np.linalg.norm(m.site_pos[sid]), atol=1e-15)  # site in its body
    assert br.order > 0.01
    assert abs(br.order - br.sign) > 0.01  # the quiz: the swapped product is not the pose for -q


def test_so101_off_by_one_frame_turns_axes_and_moves_anchors_as_mujocos_joints_differ(build, so101_model, so101):
    """Break it on the SO-101 at Q0: reading joint k's axis and anchor from joint k+1's frame turns the axis by the
    angle between MuJoCo's xaxis[k] and xaxis[k + 1] and moves the anchor by |xanchor[k + 1] - xanchor[k]|; the
    parallel flex axes (shoulder_lift, elbow_flex, wrist_flex) keep their direction and lose only their anchor."""
    d = mj_kinematics(so101_model, so101, build.Q0)
    jids = [so101_model.joint(n).id for n in so101.joint_names]
    axes, anchors = d.xaxis[jids], d.xanchor[jids]
    slips = build.slip_step(so101)
    assert [(r.joint, r.next) for r in slips] == list(zip(so101.joint_names[:-1], so101.joint_names[1:]))
    for k, r in enumerate(slips):
        turn = np.degrees(np.arccos(np.clip(axes[k] @ axes[k + 1], -1, 1)))
        assert r.axis_deg == pytest.approx(turn, abs=1e-5)  # arccos near 1 turns eps into sqrt(eps): ~1e-6 deg
        assert r.anchor_m == pytest.approx(np.linalg.norm(anchors[k + 1] - anchors[k]), abs=1e-14)
    assert [round(r.axis_deg) for r in slips] == [90, 0, 0, 90] and min(r.anchor_m for r in slips) > 0.05


def test_ignoring_q_ref_is_the_pose_mujoco_gives_at_q_plus_q_ref(build):
    """q_ref: the SO-101 compiled by MuJoCo with a joint ref on every joint; your walk with q_ref is MuJoCo's site,
    and the walk that forgets q_ref lands on MuJoCo's site at q + q_ref, the page's distance away."""
    model, chain = build.so101_with_ref()
    np.testing.assert_allclose(chain.q_ref, build.REF)
    qr = build.qref_step()
    sid = model.site("gripperframe").id
    at_q = mj_kinematics(model, chain, build.Q0).site_xpos[sid]
    at_shifted = mj_kinematics(model, chain, build.Q0 + build.REF).site_xpos[sid]
    assert qr.ref == build.REF and qr.err <= 1e-14
    assert qr.ignored == pytest.approx(np.linalg.norm(at_shifted - at_q), abs=1e-14)
    assert qr.ignored > 0.05


def test_wrist_roll_exercise_is_mujocos_move_and_the_chord_of_its_lever(build, so101_model, so101):
    ex = build.exercises_step(so101)
    m, sid = so101_model, so101_model.site(so101.tool_name).id
    q = build.Q0.copy()
    q[so101.joint_index("wrist_roll")] += build.ROLL_TURN
    move = np.linalg.norm(mj_kinematics(m, so101, q).site_xpos[sid] - mj_kinematics(m, so101, build.Q0).site_xpos[sid])
    np.testing.assert_allclose(ex.roll_move, move, atol=1e-15)
    np.testing.assert_allclose(ex.roll_move, 2 * ex.roll_lever * np.sin(build.ROLL_TURN / 2), atol=1e-15)
    roll = m.joint("wrist_roll").id
    for x in so101.random_q(np.random.default_rng(6), 20):  # the Experiment: the lever is the same at every pose
        d = mj_kinematics(m, so101, x)
        lever = np.linalg.norm(np.cross(d.xaxis[roll], d.site_xpos[sid] - d.xanchor[roll]))
        np.testing.assert_allclose(lever, ex.roll_lever, atol=1e-15)
    assert ex.sampled <= ex.bound  # no pose beyond the links' sum
    pan = so101_model.joint("shoulder_pan").id
    for x in (build.Q0, so101.random_q(np.random.default_rng(5), 1)[0]):  # the anchor is the same at every pose
        np.testing.assert_allclose(ex.pan_anchor, mj_kinematics(m, so101, x).xanchor[pan], atol=1e-15)
    np.testing.assert_allclose(ex.pan_offset, np.linalg.norm(ex.pan_anchor), atol=1e-15)


def test_medium_exercise_nudges_are_mujocos_moves_and_the_chords_of_mujocos_levers(build, so101_model, so101):
    """Each joint turned alone by NUDGE at Q0: the move is MuJoCo's site displacement, the lever the distance from
    MuJoCo's site to the line through its xanchor along its xaxis, the anchor distance to its xanchor; the move is
    the chord 2 r sin(theta/2) of that lever, and the top row is the largest move."""
    ex, m = build.exercises_step(so101), so101_model
    sid = m.site(so101.tool_name).id
    d0 = mj_kinematics(m, so101, build.Q0)
    p0 = d0.site_xpos[sid].copy()
    assert ex.nudge_turn == build.NUDGE and [n.joint for n in ex.nudges] == list(so101.joint_names)
    for i, n in enumerate(ex.nudges):
        jid = m.joint(n.joint).id
        axis, anchor = d0.xaxis[jid].copy(), d0.xanchor[jid].copy()
        q = build.Q0.copy()
        q[i] += build.NUDGE
        np.testing.assert_allclose(n.move, np.linalg.norm(mj_kinematics(m, so101, q).site_xpos[sid] - p0), atol=1e-15)
        np.testing.assert_allclose(n.lever, np.linalg.norm(np.cross(axis, p0 - anchor)), atol=1e-15)
        np.testing.assert_allclose(n.anchor_dist, np.linalg.norm(p0 - anchor), atol=1e-15)
        np.testing.assert_allclose(n.move, 2 * n.lever * np.sin(build.NUDGE / 2), atol=1e-15)
    assert ex.top == max(ex.nudges, key=lambda n: n.move)


def test_hard_exercise_optimum_is_scipys_on_mujocos_site_between_the_sample_and_the_bound(build, so101_model, so101):
    """The Hard exercise's farthest point from the shoulder_pan anchor: MuJoCo's site distance at the step's joint
    positions, and the same maximum from scipy's L-BFGS-B (finite-difference gradient) on MuJoCo's site minus its
    xanchor, started from the 10 farthest of 2,000 poses of another seed; sample <= optimum <= bound, as the page's
    split of the gap (geometry, sampling) needs."""
    ex, m = build.exercises_step(so101), so101_model
    sid, pan = m.site(so101.tool_name).id, m.joint("shoulder_pan").id

    def distance(q):
        d = mj_kinematics(m, so101, q)
        return np.linalg.norm(d.site_xpos[sid] - d.xanchor[pan])

    assert np.all((ex.q_optimum >= so101.lower) & (ex.q_optimum <= so101.upper))
    np.testing.assert_allclose(distance(ex.q_optimum), ex.optimum, atol=1e-15)
    qs = so101.random_q(np.random.default_rng(11), 2000)
    starts = qs[np.argsort([distance(q) for q in qs])[-10:]]
    bounds = list(zip(so101.lower, so101.upper))
    found = max(-minimize(lambda q: -distance(q), q0, method="L-BFGS-B", bounds=bounds).fun for q0 in starts)
    np.testing.assert_allclose(found, ex.optimum, atol=1e-6)  # finite-difference gradients stop within ~1e-8 m
    assert ex.sampled <= ex.optimum <= ex.bound
    h = build.hard_mm(ex)  # the page's mm values, rounded to 0.1 mm, and its gaps as their differences
    assert [h["bound"], h["sampled"], h["optimum"]] == [round(1000 * x, 1) for x in (ex.bound, ex.sampled, found)]
    np.testing.assert_allclose([h["gap"], h["geometry"], h["sampling"]],
                               [h["bound"] - h["sampled"], h["bound"] - h["optimum"], h["optimum"] - h["sampled"]],
                               atol=1e-9)


def test_step3_reach_is_from_the_named_joints_mujoco_anchor(build):
    """Step 3's WidowX AI reach: the farthest of the step's poses from MuJoCo's anchor (xanchor) of the joint the page
    names, to MuJoCo's site."""
    n = 50
    reach = build.reach_step(n_poses=n)["wxai"]
    rng = np.random.default_rng(build.SEED + 2)  # the step's draws: the illustrative chain's first, then the arm's
    robots.load("wxai_illustrative").random_q(rng, n)
    chain, m = robots.load("wxai"), robots.mujoco_model("wxai")
    assert reach.joint == "joint_1" == chain.joint_names[1]
    jid, sid = m.joint(reach.joint).id, m.site(chain.tool_name).id
    far = max(np.linalg.norm(d.site_xpos[sid] - d.xanchor[jid])
              for d in (mj_kinematics(m, chain, q) for q in chain.random_q(rng, n)))
    np.testing.assert_allclose(reach.reach, far, atol=1e-14)


def test_reach_rows_are_mujocos_tool_points_counted_in_cubes_by_a_set(ex, so101_model, so101):
    """Each row's farthest and lowest points and its share outside the within-limits cubes, recomputed from
    MuJoCo's site positions for the same joint draws and counted with a Python set of cube indices."""
    m, sid, n, seeds = so101_model, so101_model.site(so101.tool_name).id, 400, 2
    reach = ex.reach_step(so101, n=n, seeds=seeds)
    lo, hi = so101.lower, so101.upper
    frees = [None, np.zeros(5, bool), np.ones(5, bool)] + [np.arange(5) == i for i in range(5)]
    stats = []
    for seed in range(seeds):
        rng = np.random.default_rng(ex.SEED + seed)  # the step's draws, in its order

        def points(free):
            q = rng.uniform(np.where(free, -np.pi, lo), np.where(free, np.pi, hi), size=(n, 5))
            return np.array([mj_kinematics(m, so101, x).site_xpos[sid] for x in q])

        limited = points(np.zeros(5, bool))
        cubes = {tuple(c) for c in np.floor(limited / ex.CELL).astype(int)}
        rows = []
        for free in frees:  # each row's extremes are its own sample's, never the reference's
            pts = limited if free is None else points(free)
            share = np.mean([tuple(c) not in cubes for c in np.floor(pts / ex.CELL).astype(int)])
            rows.append((np.linalg.norm(pts, axis=1).max(), pts[:, 2].min(), share, np.mean(pts[:, 2] < 0)))
        stats.append(rows)
    mean, sd = np.mean(stats, axis=0), np.std(stats, axis=0, ddof=1)
    got = np.array([[r.max_r, r.min_z, r.share] for r in reach.rows])
    np.testing.assert_allclose(got[:, :2], mean[:, :2], atol=1e-12)
    np.testing.assert_allclose([r.below for r in reach.rows], mean[:, 3], atol=1.5 / n)  # a point at z = 0 either way
    assert mean[0, 3] > 0.1  # within the limits the tool goes below the base's plane: the page says so
    # the Hard answer: from the world origin the arm reaches at most the bound plus the pan anchor's offset
    from physai.chain import reach_bound

    assert mean[:, 0].max() <= reach_bound(so101) + np.linalg.norm(so101_model.body("shoulder").pos)
    np.testing.assert_allclose(got[:, 2], mean[:, 2], atol=1.5 / n)  # a point on a cube's face may round either way
    np.testing.assert_allclose([r.share_sd for r in reach.rows], sd[:, 2], atol=3 / n)
    np.testing.assert_allclose([r.below_sd for r in reach.rows], sd[:, 3], atol=3 / n)


def test_freeing_the_joints_never_shrinks_the_reach_and_its_effect_clears_the_noise_floor(ex, so101_model, so101):
    """At the lesson's sizes: every freed row reaches at least as far and as low as the limited arm; the all-free
    share outside the limited cubes exceeds the noise floor (a second limited sample) by more than three of their
    spreads over seeds; the figure's free points outside the cubes are the ones its alt text places."""
    reach = ex.reach_step(so101)
    ref, noise, free = reach.rows[:3]
    assert free.share - noise.share > 3 * (free.share_sd + noise.share_sd)
    assert ref.min_z - free.min_z > 0.03  # the freed arm goes a few centimetres lower: a layer below the line
    out = reach.free[reach.free_outside]
    assert abs(np.linalg.norm(reach.free, axis=1).max() - np.linalg.norm(reach.limited, axis=1).max()) < 0.01
    pan = so101_model.body("shoulder").pos[:2]  # the side view's distances are from the vertical shoulder_pan axis
    np.testing.assert_allclose(reach.pan_xy, pan, atol=1e-15)
    assert np.mean(out[:, 0] < 0) > 0.5 and np.mean(np.hypot(*(out[:, :2] - pan).T) < 0.25) > 0.5
    assert np.any(out[:, 2] < reach.limited[:, 2].min())
    # the page: the limits of every joint but wrist_roll cut the workspace; wrist_roll's row stays at the floor
    names, one = so101.joint_names, reach.rows[3:]
    assert reach.cut == names[:4] and names[4] == "wrist_roll"
    assert abs(one[4].share - noise.share) < 3 * (one[4].share_sd + noise.share_sd)
    # the below-table column: up with shoulder_lift free, down with wrist_flex free, beyond the seeds' spread
    assert one[1].below - ref.below > 3 * (one[1].below_sd + ref.below_sd)
    assert ref.below - one[3].below > 3 * (one[3].below_sd + ref.below_sd)
    moves = sorted(range(5), key=lambda j: -abs(one[j].below - ref.below))  # the page: it moves most for these two
    assert sorted(moves[:2]) == [1, 3] and reach.rows[4] is one[1] and reach.rows[6] is one[3]
    # the caption: the limited cloud thins where the azimuth about the pan axis passes the pan limit
    limit = np.degrees(so101.upper[0])
    azimuth = np.abs(np.degrees(np.arctan2(*(reach.limited[:, :2] - pan).T[::-1])))
    inside = np.mean((azimuth > limit - 10) & (azimuth <= limit))
    assert inside > 1.5 * np.mean((azimuth > limit) & (azimuth <= limit + 10))


def test_beyond_the_limits_split_is_mujocos_and_explains_the_below_table_shares(ex, so101_model, so101):
    """Each joint freed alone, its poses split at the joint's limits: the shares below z = 0, the elbow_flex anchor's
    height and its distance to the tool recomputed from MuJoCo's site_xpos and xanchor for the step's draws; at the
    lesson's size, beyond shoulder_lift's limits the elbow drops and more tool points lie below the table, beyond
    wrist_flex's the tool folds towards the elbow and fewer do (the page's reasons)."""
    m, sid, elbow, n = so101_model, so101_model.site(so101.tool_name).id, so101_model.joint("elbow_flex").id, 300
    rows = ex.beyond_step(so101, n=n)
    rng = np.random.default_rng(ex.SEED + ex.N_SEEDS)  # the step's draws, in its order
    for i, row in enumerate(rows):
        free = np.arange(5) == i
        q = rng.uniform(np.where(free, -np.pi, so101.lower), np.where(free, np.pi, so101.upper), size=(n, 5))
        data = [mj_kinematics(m, so101, x) for x in q]
        p, o = np.array([d.site_xpos[sid] for d in data]), np.array([d.xanchor[elbow] for d in data])
        out = (q[:, i] < so101.lower[i]) | (q[:, i] > so101.upper[i])
        expect = [out.mean()]
        for c in (p[:, 2] < 0, o[:, 2], np.linalg.norm(p - o, axis=1)):
            expect += [c[out].mean(), c[~out].mean()]
        assert row.joint == so101.joint_names[i]
        np.testing.assert_allclose(
            [row.share, row.below_beyond, row.below_within, row.elbow_z_beyond, row.elbow_z_within,
             row.elbow_tool_beyond, row.elbow_tool_within], expect, atol=1e-12)
    lift, flex = ex.beyond_step(so101)[1:4:2]
    assert lift.elbow_z_within - lift.elbow_z_beyond > 0.1 and lift.below_beyond > lift.below_within + 0.1
    assert flex.elbow_tool_within - flex.elbow_tool_beyond > 0.1 and flex.below_beyond < flex.below_within - 0.1


def test_the_optimisers_farthest_point_is_mujocos_local_maximum_beyond_every_sample(ex, so101_model, so101):
    """The page's farthest points: MuJoCo's site distance at the optimiser's joint positions, within their bounds, not
    beaten by any of 2,000 random small steps inside the bounds (MuJoCo), nor by any sampled row; the limits cost no
    reach (the same optimum to 1e-6 m), its joints inside their limits."""
    far, sid = ex.farthest_step(so101, n=2000), so101_model.site(so101.tool_name).id
    rng = np.random.default_rng(7)
    for q, r, lo, hi in ((far.q_limited, far.limited, so101.lower, so101.upper),
                         (far.q_free, far.free, -np.pi, np.pi)):
        assert np.all((q >= lo) & (q <= hi))
        np.testing.assert_allclose(np.linalg.norm(mj_kinematics(so101_model, so101, q).site_xpos[sid]), r, atol=1e-15)
        steps = np.clip(q + rng.normal(0, 1e-3, size=(2000, 5)), lo, hi)
        assert max(np.linalg.norm(mj_kinematics(so101_model, so101, x).site_xpos[sid]) for x in steps) <= r + 1e-12
    assert abs(far.limited - far.free) < 1e-6
    # the page: the farthest pose lies inside the limits, no joint at either end of its range
    assert np.all(np.minimum(far.q_limited - so101.lower, so101.upper - far.q_limited) > 0.1)
    assert all(row.max_r < far.limited for row in ex.reach_step(so101, n=2000, seeds=2).rows)


def test_the_arm_through_itself_counts_mujoco_contacts_between_its_own_links(ex, so101_model, so101):
    """Self-contact shares recomputed with a full mj_forward and each contact's penetration, for the step's draws:
    the share of free poses landing outside the limited cubes with new contacts deeper than 1 mm, and of limited
    poses, with MuJoCo's parent filter on and off (a fresh model, mjDSBL_FILTERPARENT set); the free share exceeds
    the limited one, counting adjacent links never lowers a share, and the caller's model is left as it was."""
    n, m = 400, so101_model
    flags = m.opt.disableflags
    got = ex.self_contact_step(so101, m, n=n)
    assert m.opt.disableflags == flags
    m_all = robots.mujoco_model("so101")
    m_all.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_FILTERPARENT

    def deep(model, q):
        d = mujoco.MjData(model)
        d.qpos[list(so101.qpos_adr)] = q
        mujoco.mj_forward(model, d)
        return {tuple(sorted((int(c.geom1), int(c.geom2)))) for c in d.contact[:d.ncon] if c.dist < -1e-3}

    rng = np.random.default_rng(ex.SEED)
    q_lim = rng.uniform(so101.lower, so101.upper, size=(n, 5))
    rng.uniform(so101.lower, so101.upper, size=(n, 5))
    q_free = rng.uniform(-np.pi, np.pi, size=(n, 5))
    cubes = {tuple(c) for c in np.floor(tool_pose(so101, q_lim)[:, :3, 3] / ex.CELL).astype(int)}
    outside = [q for q, c in zip(q_free, np.floor(tool_pose(so101, q_free)[:, :3, 3] / ex.CELL).astype(int))
               if tuple(c) not in cubes]
    for model, free, limited in ((m, got.free_outside, got.limited),
                                 (m_all, got.free_outside_adjacent, got.limited_adjacent)):
        base = deep(model, np.zeros(5))
        np.testing.assert_allclose(free, np.mean([bool(deep(model, q) - base) for q in outside]), atol=1e-15)
        np.testing.assert_allclose(limited, np.mean([bool(deep(model, q) - base) for q in q_lim]), atol=1e-15)
        assert free > limited > 0
    assert got.free_outside_adjacent > got.free_outside and got.limited_adjacent >= got.limited


def test_experiment_best_step_is_the_smallest_worst_difference(ex):
    num = ex.numeric_summary(20, {1e-6: 1e-10, 1e-5: 1e-11})
    assert num.best_eps == 1e-5 and num.at_check_eps == 1e-10  # picked, not computed: equality is the point


def test_the_widowx_ais_largest_jacobian_entry_is_one_number_computed_by_lesson_09_alone():
    """One statistic, one number: lesson 08's page quotes no largest Jacobian entry of its own (its Step 3 is the
    reach); lesson 09's WidowX AI part computes it (its page quotes it at most once) and the lever that bounds it
    (tested in test_09)."""
    root = Path(__file__).resolve().parent.parent / "experiments"
    page08 = (root / "08-forward-kinematics" / "lesson.md").read_text()
    page09 = (root / "09-jacobians" / "lesson.md").read_text()
    assert not re.search(r"R\.build\.reach\.\w+\.top", page08) and "wxai_illustrative.reach" not in page08
    assert page09.count("R.wxai.velocity.max_entry") <= 1 and "R.wxai.velocity.max_lever" in page09


def test_scene_pictures_the_so101_with_axes_as_its_alt_text_says(run_lesson, tmp_path, so101_model, so101):
    """scene.py: the picture exists; the alt text says the pan axis is vertical and the three flex axes parallel and
    horizontal at Q0: checked on MuJoCo's joint axes (xaxis)."""
    import mujoco

    from conftest import check_picture, load_lesson

    from physai.course.lesson import read_figures

    _, saved = run_lesson(load_lesson(LESSON, "scene.py"), False)
    check_picture(tmp_path, saved["picture"], "so101")
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = saved["q"]
    mujoco.mj_kinematics(so101_model, d)
    axis = {n: d.xaxis[so101_model.joint(n).id] for n in so101.joint_names}
    assert abs(axis["shoulder_pan"][2] + 1) < 1e-12  # vertical and pointing down, as the caption and alt say
    assert "pointing down" in read_figures(tmp_path)[saved["picture"]["file"]].alt
    assert "black dot labelled tool point," in read_figures(tmp_path)[saved["picture"]["file"]].alt
    np.testing.assert_allclose(saved["tool"], d.site_xpos[so101_model.site(so101.tool_name).id], atol=1e-15)
    for n in ("shoulder_lift", "elbow_flex", "wrist_flex"):
        assert abs(axis[n][2]) < 1e-12 and abs(abs(axis[n] @ axis["shoulder_lift"]) - 1) < 1e-12


def test_the_page_reports_the_slip_by_rows_shows_the_walk_it_explains_and_keeps_folded_ideas_out_of_takeaways():
    """The page's off-by-one numbers are the slip's linear (m/rad) and angular (rad/rad) rows, never one number in
    m/rad; the walkthrough that explains broadcast_to and the loop shows the function that holds them (installed
    source); the takeaways rest on the unfolded page, not on the optional Looking-ahead block."""
    import inspect

    from physai import kinematics

    page = (Path(__file__).resolve().parent.parent / "experiments" / LESSON / "lesson.md").read_text()
    fold = page.split("Looking ahead (optional, after lesson 09)")[1].split("{% endcall %}")[0]
    body = page.replace(fold, "")
    assert "slips[1].own" not in page and "{{ s.linear | fix(3) }}" in fold and "{{ s.angular | fix(3) }}" in fold
    assert "linear rows (m/rad)" in fold and "angular rows (rad/rad)" in fold and "m/rad in its angular" not in page
    # outside the fold, a lesson-08 learner meets the slip as a turned axis and a moved anchor, no Jacobian numbers
    assert ".linear" not in body and ".angular" not in body and body.count("R.build.slips[1].axis_deg") == 1
    assert "{% for r in R.build.slips" in body and "R.experiment.bug" not in body  # the SO-101's own slips
    # the poses' range, stated where the numbers are, is the one check_poses draws from
    assert "every joint uniform in [-{{ R.experiment.check_range | fix(1) }}, {{ R.experiment.check_range" in fold
    walk = inspect.getsource(kinematics._frames)
    for shown in ("np.broadcast_to(np.eye(4)", "T @ chain.T_prev_joint[i] @ joint_motion("):
        assert shown in walk and shown.split("(")[0] in page
    assert '{{ source("physai.kinematics._frames") }}' in page
    takeaways = page.split("## Takeaways")[1].split("##")[0]
    assert "roll-pitch-yaw" not in takeaways.lower()
