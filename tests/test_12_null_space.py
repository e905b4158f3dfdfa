"""Lesson 12 (redundancy and the null space): every claim of experiment.py and build.py, asserted against
MuJoCo's site pose, joint anchors and mj_jacSite, and against closed forms, at small sizes."""

import mujoco
import numpy as np
import pytest
from conftest import mj_site
from scipy import stats
from scipy.spatial.transform import Rotation

from physai import robots
from physai.course.lesson import save_results, verdict

LESSON = "12-null-space"


@pytest.fixture(scope="module")
def panda_chain():
    return robots.load("panda")


def _mj_drift(model, chain, qs):
    """Largest tool position (m) and rotation (rad) change from the first pose, from MuJoCo's site pose."""
    p0, R0, _ = mj_site(model, chain, qs[0])
    dp, dr = 0.0, 0.0
    for q in qs:
        p, R, _ = mj_site(model, chain, q)
        dp = max(dp, np.linalg.norm(p - p0))
        dr = max(dr, Rotation.from_matrix(R @ R0.T).magnitude())
    return dp, dr


def _mj_elbow(model, qs, chain):
    d = mujoco.MjData(model)
    out = []
    for q in qs:
        d.qpos[list(chain.qpos_adr)] = q
        mujoco.mj_kinematics(model, d)
        out.append(d.xanchor[model.joint(chain.joint_names[3]).id].copy())
    return np.array(out)


def test_null_dimensions_from_the_rank_of_mj_jacSite(ex, panda_chain, panda_model):
    dims = ex.null_dimensions()
    J = mj_site(panda_model, panda_chain, ex.PANDA_READY)[2]
    def row(robot, task):
        d = dims.at(robot, task)
        return d.joints, d.rank, d.null

    assert row("panda", "pose") == (7, np.linalg.matrix_rank(J), 7 - np.linalg.matrix_rank(J)) == (7, 6, 1)
    assert row("panda", "position") == (7, 3, 4)
    # planar 3R, L = 0.5, 0.3, 0.2: the 2 x 3 position Jacobian in closed form has rank 2
    q = ex.PLANAR_Q0
    c = np.cumsum(q)
    L = np.array([0.5, 0.3, 0.2])
    Jp = np.array([[-np.sum(L[i:] * np.sin(c[i:])) for i in range(3)],
                   [np.sum(L[i:] * np.cos(c[i:])) for i in range(3)]])
    assert row("planar3r", "2-D position") == (3, np.linalg.matrix_rank(Jp), 1)


def test_self_motion_drift_and_elbow_from_mujoco(ex, audit, panda_chain, panda_model):
    s = ex.panda_self_motion(seconds=0.05)
    for traj, (dp, dr) in [(s.trajectory, s.drift[-1])]:
        ref = _mj_drift(panda_model, panda_chain, traj)
        np.testing.assert_allclose([dp, dr], ref, atol=1e-12)
        assert ref[0] < 1e-6 and ref[1] < 1e-5
    elbow = _mj_elbow(panda_model, s.trajectory, panda_chain)
    np.testing.assert_allclose(s.elbow, elbow, atol=1e-14)
    swing = np.linalg.norm(elbow - elbow[0], axis=1).max()
    np.testing.assert_allclose([s.elbow_swing, s.elbow_rise], [swing, np.abs(elbow[:, 2] - elbow[0, 2]).max()],
                               atol=1e-14)
    ref = _mj_drift(panda_model, panda_chain, s.trajectory)
    assert audit.self_motion_claims(s)[0].verdict == verdict(swing > 0.01 and ref[0] < 1e-6 and ref[1] < 1e-5)
    assert s.drift[0, 0] > 10 * s.drift[-1, 0]  # open loop drifts, the correction holds the tool


def test_planar_family_holds_the_tip_in_closed_form_and_spans_the_whole_family(ex):
    """The tip held (closed-form FK); the walk closes its loop; the last link's span is the whole family's: the wrist
    w = p - L3 (cos phi, sin phi) must lie within L1 + L2 of the base, so |phi - angle(p)| <= arccos((|p|^2 + L3^2 -
    (L1 + L2)^2) / (2 L3 |p|))."""
    family = ex.planar_family()
    fam = family.q
    L = np.array([0.5, 0.3, 0.2])
    c = np.cumsum(fam, axis=1)
    tip = np.c_[np.cos(c) @ L, np.sin(c) @ L]
    assert np.abs(tip - tip[fam.shape[0] // 2]).max() < 1e-4
    r = np.linalg.norm(tip[0])
    whole = 2 * np.arccos((r**2 + L[2] ** 2 - (L[0] + L[1]) ** 2) / (2 * L[2] * r))
    np.testing.assert_allclose(family.last_link_range, whole, atol=2e-3)  # sampled every 0.02 rad of the walk
    assert np.abs(np.angle(np.exp(1j * (fam[-1] - fam[0])))).max() < 0.05  # back where it started: a closed loop
    np.testing.assert_allclose(family.last_link_range, np.ptp(c[:, -1]), rtol=1e-14)
    np.testing.assert_allclose(family.tip, tip[fam.shape[0] // 2], atol=1e-4)
    np.testing.assert_allclose(family.links, L, rtol=1e-12)  # the link lengths the page states: the arm's L1, L2, L3
    # the page and the figure: the loop is two branches, elbow (joint 2) bent one way and the other, that meet where
    # the last link's angle is extreme and the first two links line up (sin q2 = 0, closed form of the 2R arm)
    bent = np.sign(np.sin(fam[:, 1]))
    assert np.count_nonzero(bent != np.roll(bent, 1)) == 2  # round the loop: two changes of side
    for k in (np.argmin(c[:, -1]), np.argmax(c[:, -1])):
        assert abs(np.sin(fam[k, 1])) < 0.05


def _manipulability(J):
    return np.sqrt(np.linalg.det(J @ J.T))


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_choose_on_purpose_from_mujoco(ex, audit, robot, so101_model, panda_model):
    model = so101_model if robot == "so101" else panda_model
    chain = robots.load(robot)
    c = ex.choose_on_purpose(robot, n_targets=10)
    ids = [model.joint(n).id for n in chain.joint_names]
    lo, hi = model.jnt_range[ids, 0], model.jnt_range[ids, 1]
    rows = []
    for qs, conv in zip(c.solutions, c.converged):
        p_err = [np.linalg.norm(mj_site(model, chain, q)[0] - T[:3, 3]) for q, T in zip(qs, c.targets)]
        assert np.all(np.array(p_err)[conv] < 1e-4)
        margin = np.min(np.minimum(qs - lo, hi - qs) / (hi - lo), axis=1)
        Js = [mj_site(model, chain, q)[2] for q in qs]
        manip = [_manipulability(J[:3] if robot == "so101" else np.r_[J[:3], 0.3 * J[3:]]) for J in Js]
        posture = np.linalg.norm(qs - c.q_pref, axis=1)
        rows.append([conv.mean(), np.median(margin), np.median(manip), np.median(posture)])
    rows = np.array(rows)
    np.testing.assert_allclose(c.measures, rows, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose([[r.success, r.margin, r.manip, r.posture] for r in c.rows], rows, rtol=1e-9, atol=1e-15)
    better = [rows[1, 1] > rows[0, 1], rows[2, 2] > rows[0, 2], rows[3, 3] < rows[0, 3],
              np.all(rows[1:, 0] == rows[0, 0])]
    assert audit.choice_claims([c])[0].verdict == verdict(all(better))
    # the page: the joint most often nearest its stop (MuJoCo's ranges) in the manipulability-refined solutions
    qs, conv = c.solutions[2], c.converged[2]
    tight = np.argmin(np.minimum(qs - lo, hi - qs) / (hi - lo), axis=1)[conv]
    counts = np.bincount(tight, minlength=len(ids))
    assert counts[chain.joint_names.index(c.manip_tight_joint)] == counts.max()
    np.testing.assert_allclose(c.manip_tight_share, counts.max() / conv.sum(), rtol=1e-12)
    # the page: the tool point's distance from the last joint's axis, MuJoCo's site against its joint axis
    d = mujoco.MjData(model)
    d.qpos[list(chain.qpos_adr)] = 0.5 * (lo + hi)
    mujoco.mj_kinematics(model, d)
    arm = d.site_xpos[model.site(chain.tool_name).id] - d.xanchor[ids[-1]]
    axis = d.xaxis[ids[-1]]
    np.testing.assert_allclose(c.roll_offset_mm, 1000 * np.linalg.norm(np.cross(arm, axis)), atol=1e-9)
    if robot == "so101":
        assert c.roll_offset_mm < 20  # the roll turns the tool point only a little: nearly a free direction
    # the page: how often plain IK's joint nearest its stop (MuJoCo's ranges) is the last one, the roll
    qs, conv = c.solutions[0], c.converged[0]
    nearest = np.argmin(np.minimum(qs - lo, hi - qs) / (hi - lo), axis=1)[conv]
    np.testing.assert_allclose(c.roll_tight_share, np.mean(nearest == len(ids) - 1), rtol=1e-12)
    # the page: the preferred posture's own margin (MuJoCo's ranges), far above every row's median margin
    np.testing.assert_allclose(c.pref_margin, np.min(np.minimum(c.q_pref - lo, hi - c.q_pref) / (hi - lo)),
                               atol=1e-12)
    assert c.pref_margin > 2 * rows[:, 1].max()
    if robot == "so101":
        np.testing.assert_allclose(c.pref_margin, 0.5, atol=1e-12)  # mid-range itself
    # the page's condition, from MuJoCo's measures: each objective beats plain IK on its own measure
    assert c.own_better == bool(rows[1, 1] > rows[0, 1] and rows[2, 2] > rows[0, 2] and rows[3, 3] < rows[0, 3])
    # the page: posture's margin against limits', target by target (MuJoCo's ranges), and its interval by SciPy
    margin = [np.min(np.minimum(qs - lo, hi - qs) / (hi - lo), axis=1) for qs in c.solutions[[1, 3]]]
    both = c.converged[1] & c.converged[3]
    diffs = np.sort(margin[1][both] - margin[0][both])
    np.testing.assert_allclose(c.paired.diffs, diffs, atol=1e-12)
    _check_paired(c.paired, diffs)
    both = c.converged[1] & c.converged[4]
    soft = np.min(np.minimum(c.solutions[4] - lo, hi - c.solutions[4]) / (hi - lo), axis=1)
    diffs = np.sort(soft[both] - margin[0][both])
    np.testing.assert_allclose(c.softmin_paired.diffs, diffs, atol=1e-12)
    _check_paired(c.softmin_paired, diffs)
    assert c.softmin_best == bool(rows[4, 1] > rows[:4, 1].max())


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_softmin_cost_is_near_minus_the_margin_and_its_gradient_is_central_differences(ex, robot, so101_model,
                                                                                      panda_model):
    """Within tau log(2n) above minus the limit margin (MuJoCo's ranges); the gradient is central differences'."""
    model = so101_model if robot == "so101" else panda_model
    chain = robots.load(robot)
    ids = [model.joint(n).id for n in chain.joint_names]
    lo, hi = model.jnt_range[ids, 0], model.jnt_range[ids, 1]
    obj = ex.softmin_cost(chain)
    q = chain.random_q(np.random.default_rng(3), 20)
    margin = np.min(np.minimum(q - lo, hi - q) / (hi - lo), axis=1)
    H = obj.value(q)
    assert np.all(H >= -margin - 1e-12) and np.all(H <= -margin + ex.SOFTMIN_TAU * np.log(2 * chain.n) + 1e-12)
    h = 1e-6
    fd = np.stack([(obj.value(q + h * e) - obj.value(q - h * e)) / (2 * h) for e in np.eye(chain.n)], axis=1)
    np.testing.assert_allclose(obj.gradient(q), fd, rtol=1e-5, atol=1e-6)


def _check_paired(p, mujoco_diffs):
    """The sign test's interval for the median difference (SciPy's binomial), the share ahead, and the share of ties
    against the differences from MuJoCo's ranges (a tie: equal to round-off)."""
    d = np.asarray(p.diffs)
    n = len(d)
    k = int(stats.binom.ppf(0.025, n, 0.5))  # P(B <= k) >= 2.5 % first at this k: the order statistic d_(k) is inside
    k = k if stats.binom.cdf(k - 1, n, 0.5) <= 0.025 else k - 1
    assert stats.binom.cdf(k - 1, n, 0.5) <= 0.025 < stats.binom.cdf(k, n, 0.5)
    d_sorted = np.sort(d)
    assert (p.low, p.high) == (d_sorted[k - 1], d_sorted[n - k])
    np.testing.assert_allclose([p.share_ahead, p.median], [np.mean(d > 0), np.median(d)], atol=1e-15)
    assert p.tied == np.mean(np.abs(mujoco_diffs) <= 1e-12)


def test_priority_holds_the_tool_in_mujoco_when_damped(ex, panda_chain, panda_model, monkeypatch):
    monkeypatch.setattr(ex, "PRIORITY_T", 0.3)
    q_start = ex.swung_start()
    p = ex.priority(q_start)
    assert p.secondary_peak <= p.secondary_bound  # the Hard exercise: the 2-norm bound holds the 2-norm
    for k in (0, 2):  # compatible, and the conflict with damping: the primary (tool pose) is kept
        dp, dr = _mj_drift(panda_model, panda_chain, np.array([q_start, p.q_final[k]]))
        assert dp < 1e-5 and dr < 1e-4  # one tick's second-order error: (|qdot| dt)^2 ~ (1 rad/s x 5 ms)^2
    elbow = _mj_elbow(panda_model, p.q_final, panda_chain)
    # the last logged height is the one before the final tick; where the run settles (not the undamped conflict,
    # case 1) that tick moves the elbow no more than the tick before it did
    for k in (0, 2, 3):
        z = p.heights[k]
        assert abs(z[-1] - elbow[k, 2]) <= abs(z[-1] - z[-2]) < 1e-3
    dp, _ = _mj_drift(panda_model, panda_chain, np.array([q_start, p.q_final[3]]))
    assert dp > 1e-3  # swapped: the tool gives way to the elbow
    # the page: damping passes sigma^2 / (sigma^2 + lam2^2) of the rate, so the damped elbow lags from the start
    undamped, damped = p.heights[1], p.heights[2]
    assert np.all(damped[1:20] < undamped[1:20]) and damped[0] == undamped[0]


def test_home_null_vector_counter_rotates_the_coaxial_joints_in_mujoco(ex, panda_chain, panda_model):
    """At the keyframe 'home' (joint2 = 0) the axes of joints 1 and 3 coincide: SciPy's null space of mj_jacSite is
    (e1 - e3) / sqrt 2, the vector the page shows."""
    from scipy.linalg import null_space

    saved = ex.null_dimensions().home_null_vector
    Z = null_space(mj_site(panda_model, panda_chain, ex.PANDA_HOME)[2])
    assert Z.shape == (7, 1)
    closed = np.r_[1.0, 0, -1.0, 0, 0, 0, 0] / np.sqrt(2)
    assert abs(abs(Z[:, 0] @ closed) - 1) < 1e-9  # MuJoCo's null vector is the closed form, up to sign
    np.testing.assert_allclose(np.abs(saved), np.abs(closed), atol=1e-9)


def _tiny_priority(ex):
    ex_t, ex.PRIORITY_T = ex.PRIORITY_T, 0.02
    try:
        return ex.priority(ex.swung_start())
    finally:
        ex.PRIORITY_T = ex_t


def test_saved_priority_numbers_from_mujoco_and_the_damping_bound(ex, panda_chain, panda_model):
    p = _tiny_priority(ex)
    r = p
    elbow = _mj_elbow(panda_model, np.array([p.q_start, ex.PANDA_READY]), panda_chain)
    np.testing.assert_allclose([r.z_start, r.z_top], elbow[:, 2], atol=1e-14)
    # the damped gain sigma / (sigma^2 + lam^2) peaks at sigma = lam: 1 / (2 lam), by a grid over sigma
    sigma = np.linspace(0, 1, 100_001)
    np.testing.assert_allclose(r.gain_bound, np.max(sigma / (sigma**2 + ex.LAM2**2)), rtol=1e-8)
    np.testing.assert_allclose(r.secondary_bound, ex.K_ELBOW * (elbow[1, 2] + 0.03 - elbow[0, 2]) * r.gain_bound,
                               rtol=1e-12)
    for row, q in zip(r.rows, p.q_final):
        ref = _mj_drift(panda_model, panda_chain, np.array([p.q_start, q]))
        np.testing.assert_allclose([row.pos, row.rot], ref, atol=1e-12)


def test_undamped_lam2_zero_runs_and_turns_the_damped_row_into_the_undamped_one(ex, monkeypatch, capsys, tmp_path):
    """Break it's instruction, LAM2 = 0: no division by zero, the gain bound unbounded (None, printed as such), the
    damped conflict row the same run as the undamped one, and the swapped row (same lam2) changed: its peak joint
    speed grows tenfold or more. Each row's time is the full run, or where a joint passed DIVERGED rad."""
    q_start = ex.swung_start()
    damped = ex.priority(q_start)
    monkeypatch.setattr(ex, "LAM2", 0.0)
    p = ex.priority(q_start)
    ex.print_priority(p)
    assert p.gain_bound is None and p.secondary_bound is None and "unbounded" in capsys.readouterr().out
    save_results(tmp_path, "experiment.py", {"priority": p})  # JSON holds it (no inf)
    undamped, now_undamped = p.rows[1], p.rows[2]
    assert (undamped.z, undamped.peak, undamped.pos, undamped.rot, undamped.seconds) == (
        now_undamped.z, now_undamped.peak, now_undamped.pos, now_undamped.rot, now_undamped.seconds)
    assert p.rows[3].peak > 10 * damped.rows[3].peak and p.rows[3].z != damped.rows[3].z
    for run in (damped, p):
        for row, zs, q in zip(run.rows, run.heights, run.q_final):
            assert row.seconds == pytest.approx(len(zs) * ex.PRIORITY_DT, abs=1e-12) and row.z == zs[-1]
            assert row.stopped == (row.seconds < ex.PRIORITY_T) == (np.abs(q).max() > ex.DIVERGED)  # diverged
    assert damped.rows[1].seconds < ex.PRIORITY_T and damped.rows[2].seconds == pytest.approx(ex.PRIORITY_T)


def test_priority_rate_normal_is_scipys_null_space_formula_at_mj_jacSite(ex, panda_chain, panda_model):
    """The rerun's other rounding computes the same formula: J1^+ v1 + Z (J2 Z)^+ (v2 - J2 J1^+ v1), Z SciPy's null
    space of MuJoCo's Jacobian, J2 its z row of the elbow."""
    from scipy.linalg import lstsq, null_space, pinv

    rng = np.random.default_rng(5)
    for q in panda_chain.random_q(rng, 3, inset=0.1):
        J1 = mj_site(panda_model, panda_chain, q)[2]
        J2 = rng.normal(size=(1, 7))
        v1, v2 = rng.normal(size=6), rng.normal(size=1)
        Z = null_space(J1)
        first = lstsq(J1, v1)[0]
        ref = first + Z @ pinv(J2 @ Z) @ (v2 - J2 @ first)
        np.testing.assert_allclose(ex.priority_rate_normal(J1, v1, J2, v2), ref, rtol=1e-7, atol=1e-9)


def test_undamped_conflict_spread_the_gain_is_certain_the_divergence_is_not(ex):
    """Reruns changed only by round-off: every one asks for a joint speed far above the damped bound (the page: the
    unbounded gain is certain); the summary is what the rows say."""
    q_start = ex.swung_start()
    s = ex.conflict_spread(q_start, nudges=2)
    damped = ex.priority(q_start)
    assert s.runs == 3 == len(s.rows) and s.diverged + s.held == s.runs == sum(r.stopped for r in s.rows) + s.held
    assert s.peak_min == min(r.peak for r in s.rows) > 100 * damped.secondary_bound
    assert s.peak_max == max(r.peak for r in s.rows)
    held = [r for r in s.rows if not r.stopped]
    if held:
        assert s.held_pos == max(r.pos for r in held) and s.held_z_min == min(r.z for r in held)


def test_leading_projector_is_redundant_in_exact_arithmetic(ex, panda_chain, panda_model):
    """(J2 N1)^#_lam = N1 J2^T (J2 N1 J2^T + lam^2)^-1 (N1 symmetric, idempotent) lies in N1's range: SciPy's damped
    SVD inverse at MuJoCo's Jacobians equals that closed form, and the run's leak with the leading N1 is round-off,
    without it larger (round-off that N1 removes)."""
    from scipy.linalg import null_space, svd

    q = ex.swung_start()
    J1 = mj_site(panda_model, panda_chain, q)[2]
    Z = null_space(J1)
    N1 = Z @ Z.T
    J2 = np.random.default_rng(6).normal(size=(1, 7))  # the identity holds for any secondary row
    U, sig, Vt = svd(J2 @ N1, full_matrices=False)
    damped = Vt.T @ np.diag(sig / (sig**2 + ex.LAM2**2)) @ U.T
    closed = N1 @ J2.T @ np.linalg.inv(J2 @ N1 @ J2.T + ex.LAM2**2 * np.eye(1))
    np.testing.assert_allclose(damped, closed, atol=1e-12)
    np.testing.assert_allclose(N1 @ closed, closed, atol=1e-12)
    lead = ex.leading_projector(q)
    assert lead.with_n1 < 1e-14 and lead.without_n1 > lead.with_n1


def test_main_writes_its_claims(ex, tmp_path, monkeypatch, run_lesson):
    monkeypatch.setattr(ex, "PRIORITY_T", 0.1)
    monkeypatch.setattr(ex, "panda_self_motion", lambda seconds=0.05, f=ex.panda_self_motion: f(0.05))
    monkeypatch.setattr(ex, "choose_on_purpose", lambda robot, n=8, f=ex.choose_on_purpose: f(robot, 8))
    claims, saved = run_lesson(ex, False)
    assert len(claims) == 2
    assert [d["null"] for d in saved["dims"]] == [1, 4, 1]
    assert [row["success"] for row in saved["choice"]["panda"]["rows"]] == [1.0] * 5
    assert {p.name for p in tmp_path.glob("*.png")} == {"self_motion.png", "planar3r_self_motion.png", "priority.png",
                                                        "elbow_post.png"}


# ---- build.py ----


def test_projector_by_hand_is_scipy_null_space_of_mj_jacSite(build, panda_chain, panda_model):
    from scipy.linalg import lstsq, null_space

    rng = np.random.default_rng(8)
    for q in panda_chain.random_q(rng, 5, inset=0.1):
        J = mj_site(panda_model, panda_chain, q)[2]
        Z = null_space(J)
        tol = 100 * np.finfo(float).eps * np.linalg.cond(J) ** 2  # the normal equations square kappa
        np.testing.assert_allclose(build.projector_by_hand(J), Z @ Z.T, atol=tol)
        v, qdot0 = rng.normal(size=6), rng.normal(size=7)
        ref = lstsq(J, v)[0] + Z @ (Z.T @ qdot0)  # minimum-norm solution plus the null-space part of qdot0
        np.testing.assert_allclose(build.redundant_rate_by_hand(J, v, qdot0), ref, atol=10 * tol)


def test_build_claim_from_mj_jacSite(build, audit, panda_chain, panda_model):
    c = build.check_panda(n_poses=6, seed=4)
    rng = np.random.default_rng(4)
    leaks, scales = [], []
    for q in panda_chain.random_q(rng, 6, inset=0.1):
        J = mj_site(panda_model, panda_chain, q)[2]
        rng.normal(size=6)  # the build draws v, then qdot0, per pose
        qdot0 = rng.normal(size=7)
        leaks.append(np.linalg.norm(J @ build.projector_by_hand(J) @ qdot0) / np.linalg.norm(qdot0))
        scales.append(np.finfo(float).eps * np.linalg.cond(J) ** 2)
    np.testing.assert_allclose(c.task_leak, max(leaks), rtol=1e-12)
    np.testing.assert_allclose(c.round_off, max(scales), rtol=1e-12)
    rows = audit.build_claims({"task_leak": c.task_leak, "round_off": c.round_off})
    assert rows[0].verdict == verdict(max(leaks) < 10 * max(scales))


def test_build_relative_differences_within_the_normal_equations_bound(build, panda_chain, panda_model):
    """The page says eps kappa^2 bounds the relative error of the hand-built pieces, at the page's own poses: each
    saved difference, divided by the size of the exact answer (SciPy's null space and minimum-norm least squares of
    mj_jacSite), is within the saved eps kappa^2, and equals the recomputed one."""
    from scipy.linalg import lstsq, null_space

    c = build.check_panda(n_poses=build.N_POSES, seed=build.SEED)
    rng = np.random.default_rng(build.SEED)
    proj, rate, track, bound = [], [], [], []
    for q in panda_chain.random_q(rng, build.N_POSES, inset=0.1):
        J = mj_site(panda_model, panda_chain, q)[2]
        v, qdot0 = rng.normal(size=6), rng.normal(size=7)
        Z = null_space(J)
        ref = lstsq(J, v)[0] + Z @ (Z.T @ qdot0)
        qdot = build.redundant_rate_by_hand(J, v, qdot0)
        proj.append(np.linalg.norm(build.projector_by_hand(J) - Z @ Z.T, 2))
        rate.append(np.linalg.norm(qdot - ref) / np.linalg.norm(ref))
        track.append(np.linalg.norm(J @ qdot - v) / np.linalg.norm(v))
        bound.append(np.finfo(float).eps * np.linalg.cond(J) ** 2)
    np.testing.assert_allclose(c.round_off, max(bound), rtol=1e-12)
    for saved, mine in ((c.projector_vs_library, max(proj)), (c.rate_vs_library, max(rate)),
                        (c.tracking, max(track))):
        assert saved <= c.round_off and mine <= c.round_off
        assert abs(saved - mine) <= 0.1 * c.round_off  # the library's SVD and SciPy's agree to far below the bound
    assert c.task_leak <= c.round_off and c.idempotence <= c.round_off  # every row of the page's table


def test_grader_blames_projector_by_hand_not_the_functions_built_from_it(tmp_path):
    """A learner file where only projector_by_hand is wrong (it returns J^+ J): its own grade names the row space,
    and the two functions that use it, unchanged, are told to fix projector_by_hand first, not that their task part
    is wrong; pinv_by_hand passes."""
    from physai.course import exercise

    folder = exercise.lesson_folder("12")
    source = (folder / "build.py").read_text()
    old = "    return np.eye(J.shape[1]) - pinv_by_hand(J) @ J\n"
    assert source.count(old) == 1
    me = tmp_path / "me"
    me.mkdir()
    (me / "build.py").write_text(source.replace(old, "    return pinv_by_hand(J) @ J\n"))
    grades = {g.function: g for g in exercise.check(folder, me).grades}
    assert grades["pinv_by_hand"].passed
    assert not grades["projector_by_hand"].passed and "row space" in grades["projector_by_hand"].message
    for name in ("redundant_rate_by_hand", "null_space_step"):
        message = grades[name].message
        assert not grades[name].passed and "fix projector_by_hand first" in message, message
        assert message.startswith(f"{name} follows the lesson's formula") and "J^+ v" not in message


def test_null_space_step_is_scipys_projected_gradient_of_mj_jacSite(build, panda_chain, panda_model):
    from scipy.linalg import null_space

    rng = np.random.default_rng(3)
    for q in panda_chain.random_q(rng, 4, inset=0.1):
        J, g = mj_site(panda_model, panda_chain, q)[2], rng.normal(size=7)
        Z = null_space(J)
        step = build.null_space_step(J, g, 0.3)
        np.testing.assert_allclose(step, -0.3 * Z @ (Z.T @ g), atol=1e-8)
        assert g @ step <= 0  # downhill


def test_descent_ends_where_the_gradient_lies_in_the_row_space_of_mj_jacSite(build, panda_chain, panda_model):
    """The Lagrange condition: at the end of the posture descent grad H = J^T lambda, so SciPy's null-space basis of
    MuJoCo's Jacobian sees none of it; the tool pose is held (MuJoCo's site pose) to a second-order drift."""
    from scipy.linalg import null_space

    d = build.descend_posture(build.ALPHA, seed=0, steps=build.STEPS)
    np.testing.assert_allclose(d.cost[-1], 0.5 * np.sum((d.q_end - build.PANDA_READY) ** 2), rtol=1e-12)
    Z = null_space(mj_site(panda_model, panda_chain, d.q_end)[2])
    assert np.abs(Z.T @ (d.q_end - build.PANDA_READY)).max() < 1e-9  # grad H = q - q_ready, in the row space
    assert d.cost[-1] < d.cost[0] and d.projected_gradient[1] < 1e-9
    q0 = panda_chain.random_q(np.random.default_rng(0), 1, inset=0.1)[0]  # the descent's start (seed 0)
    assert np.linalg.norm(mj_site(panda_model, panda_chain, d.q_end)[0] - mj_site(panda_model, panda_chain, q0)[0]) \
        <= d.drift[0] < 1e-3


def test_halving_the_step_quarters_the_drift(build):
    """Second-order drift: each tick leaves the curved family by O(step^2), so half the step gives a quarter."""
    a, b = build.descend_posture(build.ALPHA, steps=60), build.descend_posture(build.ALPHA / 2, steps=120)
    assert 3.0 < a.drift[0] / b.drift[0] < 5.0


@pytest.fixture(scope="module")
def post(ex):
    return ex.elbow_post(steps=60)


def _post_walk(ex, qs):
    """MuJoCo alone along a walk: the post added with MjSpec; per q the smallest mj_geomDistance from it to every
    colliding geom of the arm, the body of that geom, and the tcp site's position."""
    radius, half, centre = ex.POST
    spec = mujoco.MjSpec.from_file(str(robots.model_path("panda")))
    spec.worldbody.add_geom(name="post", type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[radius, half, 0], pos=centre)
    m = spec.compile()
    d = mujoco.MjData(m)
    post, tcp = m.geom("post").id, m.site("tcp").id
    arm = [g for g in range(m.ngeom) if m.geom_bodyid[g] > 1 and m.geom_contype[g]]
    adr = [m.jnt_qposadr[m.joint(f"joint{i}").id] for i in range(1, 8)]
    dist, body, tool = [], [], []
    for q in qs:
        d.qpos[adr] = q
        mujoco.mj_kinematics(m, d)
        per_geom = [mujoco.mj_geomDistance(m, d, post, g, 1.0, None) for g in arm]
        dist.append(min(per_geom))
        body.append(m.body(m.geom_bodyid[arm[int(np.argmin(per_geom))]]).name)
        tool.append(d.site_xpos[tcp].copy())
    return np.array(dist), body, np.array(tool)


def test_elbow_post_avoid_keeps_the_margin_and_the_tool_by_mujoco(ex, post):
    e = post
    free, _, tool_free = _post_walk(ex, e.free.q)
    avoid, _, tool_avoid = _post_walk(ex, e.avoid.q)
    assert free.min() < 0  # without a thought for the post the elbow goes through it
    assert avoid.min() >= e.margin - 1e-6  # with avoid= it stops at the margin (the damper's first-order bound)
    resolved = avoid < e.distmax  # the world resolves distances up to its distmax
    np.testing.assert_allclose(avoid[resolved], e.avoid_post[resolved], atol=1e-12)
    for tool in (tool_free, tool_avoid):
        assert np.linalg.norm(tool - tool[0], axis=1).max() < 1e-4  # the tool holds its pose throughout
    assert e.avoid_cost_end < e.cost_start  # the objective still progressed as far as the post allows


def test_elbow_post_page_numbers_from_mujoco(ex, post, panda_chain, panda_model):
    """What the page quotes, from MuJoCo: how deep the free walk goes into the post and with which link, the closest
    avoid= approach, the tool drift (tcp site), the elbow's travel and rest (joint4's anchor); the damper acts only
    on a pair within the world's influence distance."""
    e = r = post
    free, free_body, tool_free = _post_walk(ex, e.free.q)
    avoid, _, tool_avoid = _post_walk(ex, e.avoid.q)
    np.testing.assert_allclose(r.free_depth_mm, -1000 * free.min(), atol=1e-9)
    np.testing.assert_allclose(r.free_end_depth_mm, -1000 * free[-1], atol=1e-9)
    assert r.post_link == free_body[int(np.argmin(free))]
    np.testing.assert_allclose(r.avoid_closest_mm, 1000 * avoid.min(), atol=1e-9)
    assert r.avoid_closest_mm > r.margin_mm  # the quiz: the damper keeps the gap outside the margin, never under it
    for value, tool in ((r.free_tool_drift_mm, tool_free), (r.avoid_tool_drift_mm, tool_avoid)):
        np.testing.assert_allclose(value, 1000 * np.linalg.norm(tool - tool[0], axis=1).max(), atol=1e-9)
    elbow_free, elbow_avoid = _mj_elbow(panda_model, e.free.q, panda_chain), _mj_elbow(panda_model, e.avoid.q,
                                                                                       panda_chain)
    np.testing.assert_allclose(r.elbow_free_mm, 1000 * np.linalg.norm(elbow_free - elbow_free[0], axis=1).max(),
                               atol=1e-9)
    np.testing.assert_allclose(r.elbow_avoid_mm, 1000 * np.linalg.norm(elbow_avoid - elbow_avoid[0], axis=1).max(),
                               atol=1e-9)
    np.testing.assert_allclose(r.elbow_short_mm, 1000 * np.linalg.norm(elbow_avoid[-1] - elbow_free[-1]), atol=1e-9)
    moved = np.linalg.norm(np.diff(elbow_avoid, axis=0), axis=1)  # per step, from step 1
    at_rest = r.rest_mm / 1000
    assert r.rest_step == 1 + int(np.argmax(moved < at_rest)) and moved[r.rest_step - 2] >= at_rest
    assert np.all(moved[r.rest_step - 1:] < at_rest)  # the page: at rest from that step on
    k = r.damper_step  # the damper first changes step k, taken from q[k - 1]: a pair there within the influence
    assert free[k - 1] < r.influence_mm / 1000 and np.array_equal(e.free.q[:k], e.avoid.q[:k])
    assert not np.array_equal(e.free.q[k], e.avoid.q[k])
    # the page: a capsule-to-capsule depth, at most the sum of the radii (MuJoCo's geom sizes), which it nearly
    # reaches where the axes cross; the link's radius is that of its capsule in MuJoCo's model
    m = mujoco.MjSpec.from_file(str(robots.model_path("panda"))).compile()
    radii = [1000 * m.geom_size[g, 0] for g in range(m.ngeom) if m.geom_bodyid[g] == m.body(r.post_link).id
             and m.geom_contype[g] and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE]
    assert any(abs(r.post_link_radius_mm - x) < 1e-9 for x in radii)
    assert r.post_link_radius_mm + r.post_radius_mm - 1.0 < r.free_depth_mm <= r.post_link_radius_mm + \
        r.post_radius_mm + 1e-9
    assert r.free_deepest_step == int(np.argmin(free))
    assert set(r.free_other_links) == {b for b, d in zip(free_body, free) if d < 0} - {r.post_link}
    np.testing.assert_allclose(r.cost_start, 0.5 * (r.joint3_pref - r.joint3_start) ** 2, rtol=1e-12)
    np.testing.assert_allclose(r.avoid_cost_end, 0.5 * (r.joint3_pref - r.avoid_joint3_end) ** 2, rtol=1e-12)


def test_scene_pictures_ghosts_that_hold_the_hand_still(run_lesson, tmp_path, panda_model, panda):
    """scene.py: the picture exists; every ghost holds the Panda's tool where the ready pose has it (MuJoCo's site) to
    the drift saved, under 0.1 mm, while its elbow (MuJoCo's joint4 anchor) sits far from the ready pose's and from
    the other ghost's: at least 0.15 m, so the ghosts stand apart in the picture; the sweep the page quotes is the
    distance between the two ghosts' elbows."""
    from conftest import check_picture, load_lesson

    _, saved = run_lesson(load_lesson(LESSON, "scene.py"), False)
    check_picture(tmp_path, saved["picture"], "panda")
    p0 = mj_site(panda_model, panda, np.array(saved["q"]))[0]
    gaps = [np.linalg.norm(mj_site(panda_model, panda, np.array(q))[0] - p0) for q in saved["ghosts"]]
    assert max(gaps) <= saved["drift"] + 1e-9 and saved["drift"] < 1e-4
    assert np.ptp(np.array(saved["ghosts"])[:, 0]) > 0.5
    ready, *ghosts = _mj_elbow(panda_model, [np.array(saved["q"]), *saved["ghosts"]], panda)
    assert len(ghosts) == 2
    assert min(np.linalg.norm(g - ready) for g in ghosts) > 0.15
    np.testing.assert_allclose(saved["elbow_sweep_mm"], 1000 * np.linalg.norm(ghosts[1] - ghosts[0]), atol=1e-6)
    assert saved["elbow_sweep_mm"] > 300
    # the page: joint 1 turns this far each way (the walk is symmetric), under the steps' budget of step rad each
    np.testing.assert_allclose(np.abs(np.array(saved["ghosts"])[:, 0] - saved["q"][0]), saved["joint1_reached"],
                               rtol=1e-9)
    assert saved["joint1_reached"] <= saved["steps"] * saved["step"] + 1e-12
    # the page: the walk stops at the cost's lowest point on the family, before its steps run out. At each ghost the
    # gradient of H = 1/2 |q - q_pref|^2 (closed form) has no component along SciPy's null space of mj_jacSite
    from scipy.linalg import null_space

    assert saved["settled_step"] < saved["steps"] and saved["last_step"] < saved["settled"] == 1e-6
    assert saved["stopped_early"]
    for sign, ghost in zip((-1, 1), np.array(saved["ghosts"])):
        q_pref = np.array(saved["q"]) + sign * saved["swing"] * np.eye(7)[0]
        Z = null_space(mj_site(panda_model, panda, ghost)[2])
        assert Z.shape == (7, 1) and abs(Z[:, 0] @ (ghost - q_pref)) < 1e-8
        np.testing.assert_allclose(saved["cost_end"], 0.5 * np.sum((ghost - q_pref) ** 2), rtol=1e-9)
    np.testing.assert_allclose(saved["cost_start"], 0.5 * saved["swing"] ** 2, rtol=1e-12)  # ready: joint 1 off
    assert saved["cost_end"] < saved["cost_start"]


def test_the_pages_post_snippet_builds_the_experiments_post_by_mujoco(ex, post, panda_chain):
    """The code the page shows for the post's world, filled in with the run's numbers as the page prints them, runs
    as written and measures the arm-to-post distances MuJoCo alone measures with the experiment's post."""
    import re
    from pathlib import Path
    from types import SimpleNamespace

    import physai

    text = (Path(__file__).parents[1] / "experiments" / LESSON / "lesson.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "collision_world(" in block)
    run = {"C": SimpleNamespace(post=ex.POST, margin=post.margin, joint3_pref=post.joint3_pref,
                                 steps=post.steps)}  # the page's reads
    code = re.sub(r"\{\{ (C\.[\w\[\]\.]+) \| fix\((\d)\) \}\}", lambda m: f"{eval(m[1], run):.{m[2]}f}", code)
    assert "{{" not in code
    names = {}
    exec(code, names)  # verbatim: the snippet defines everything it uses
    pref = ex.PANDA_READY.copy()
    pref[2] = ex.POST_JOINT3
    np.testing.assert_array_equal(names["q_ready"], ex.PANDA_READY)
    probe = np.random.default_rng(0).uniform(-1, 1, (5, 7))
    np.testing.assert_array_equal(names["objective"].value(probe), physai.nullspace.posture_cost(
        panda_chain, pref, weights=[0, 0, 1, 0, 0, 0, 0]).value(probe))
    world = names["world"]
    on_post = np.array([("post" in pair) for pair in world.pair_names])
    mine = world.distances(post.avoid.q)[:, on_post].min(axis=1)
    reference, _, _ = _post_walk(ex, post.avoid.q)
    resolved = reference < world.distmax  # the world resolves distances up to its distmax
    assert resolved.sum() > len(resolved) // 2 and world.distmax == post.distmax
    np.testing.assert_allclose(mine[resolved], reference[resolved], atol=1e-12)
    assert names["run"].pose_drift.max() < 1e-4  # the walk runs and holds the tool


def test_the_undamped_curve_ends_at_the_ceiling_where_the_tool_leaves(ex, panda_chain, panda_model, monkeypatch):
    """The page: in the figure the undamped conflict's elbow curve ends at the ceiling (the top of its family, its
    height at 'ready'), at the first tick its tool is more than the saved distance off. Along the run, replayed from
    its commanded rates: that tick is the first whose tool (MuJoCo's site) is that far off; before it the elbow
    (MuJoCo's joint4 anchor) stays under the ceiling and reaches it within 1 mm; every tick whose elbow is more than
    1 mm above it has the tool more than 1 mm off."""
    q_start = ex.swung_start()
    z_top = _mj_elbow(panda_model, [ex.PANDA_READY], panda_chain)[0, 2]
    rates = []

    def rate(*args, **kw):
        rates.append(ex.ns.priority_rate(*args, **kw))
        return rates[-1]

    ex._priority_run(panda_chain, q_start, z_top + 0.03, 0.0, False, rate)
    qs = q_start + ex.PRIORITY_DT * np.cumsum([np.zeros_like(q_start), *rates[:-1]], axis=0)  # q at each tick
    assert np.all(np.isfinite(qs))
    p0 = mj_site(panda_model, panda_chain, q_start)[0]
    z = _mj_elbow(panda_model, qs, panda_chain)[:, 2]
    off = np.array([np.linalg.norm(mj_site(panda_model, panda_chain, q)[0] - p0) for q in qs])
    assert np.all(off[z > z_top + 1e-3] > 1e-3)
    assert np.all(z[off < 1e-4] < z_top + 1e-4)  # while the tool holds, the elbow stays below the top
    monkeypatch.setattr(ex, "PRIORITY_T", len(qs) * ex.PRIORITY_DT)  # the saved numbers over the same ticks
    p = ex.priority(q_start)
    left = int(np.argmax(off > p.tool_left_mm / 1000))
    assert off[left] > p.tool_left_mm / 1000 and p.tool_left_mm == 1.0
    assert p.undamped_tool_left_s == pytest.approx(left * ex.PRIORITY_DT, abs=1e-12)
    # up to that tick; later the replay's round-off (a cumulative sum) is amplified by the unbounded gain
    np.testing.assert_allclose(p.tool_off[1][: left + 1], off[: left + 1], rtol=1e-6, atol=1e-9)
    assert np.all(z[:left] < z_top + 1e-3)  # the orange part of the curve: the tool held, the elbow under the top
    assert z[:left].max() > z_top - 1e-3  # ... and reaching it


def test_the_pages_break_it_edit_names_the_variable_that_moves_the_output():
    """The page tells the learner to run their edited copy with the output sent to a scratch folder: the variable it
    names is the one a lesson script's out_dir reads."""
    from pathlib import Path

    from physai.course.lesson import OUT_ENV

    text = (Path(__file__).parents[1] / "experiments" / LESSON / "lesson.md").read_text()
    assert f"`{OUT_ENV}=" in text and "copy `experiment.py`" in text


def test_code_names_in_the_pages_tables_stay_short_enough_not_to_break_on_a_phone():
    """A code span in a table cell is at most 16 characters: a longer name breaks mid-word in a 375 px column."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "experiments" / LESSON / "lesson.md").read_text()
    cells = [line for line in text.splitlines() if line.startswith("|")]
    names = [name for line in cells for name in re.findall(r"`([^`]+)`", line)]
    assert names and max(map(len, names)) <= 16, names
