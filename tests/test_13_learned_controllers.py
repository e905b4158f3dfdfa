"""Lesson 13 (learned controllers and the gap to reality): every claim of experiment.py and build.py, asserted
against the planar 2R's closed forms, MuJoCo's site position, its joint ranges, a MuJoCo statics estimate and
central finite differences, with small networks trained once for this module (a few seconds of JAX compilation)."""

import mujoco
import numpy as np
import pytest
from conftest import mj_site
from scipy.integrate import quad

from physai import robots, solve_ik_batch
from physai.learned import init_model, predict
from physai.course.lesson import verdict

LESSON = "13-learned-controllers"

TINY = {"n_train": 2000, "steps": 200, "hidden": (16, 16), "lr": 1e-2}
L1, L2 = 0.5, 0.3
TOL = 1e-4  # m, physai's default position tolerance, which the lesson's solver and check use


@pytest.fixture(scope="module")
def nets_2r(ex):
    return ex.train_nets("planar2r", TINY, cache=None)


@pytest.fixture(scope="module")
def nets_so101(ex):
    return ex.train_nets("so101", TINY, cache=None)


def _tip_2r(q):
    """Closed-form tool point of the planar 2R (L1 = 0.5 m, L2 = 0.3 m)."""
    return np.c_[L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 0] + q[:, 1]),
                 L1 * np.sin(q[:, 0]) + L2 * np.sin(q[:, 0] + q[:, 1])]


def _miss_2r(q, x):
    return np.linalg.norm(_tip_2r(q) - x[:, :2], axis=1)


def test_two_r_solutions_reach_the_targets_in_closed_form(ex):
    rng = np.random.default_rng(0)
    r, phi = rng.uniform(0.25, 0.79, 50), rng.uniform(-np.pi, np.pi, 50)
    x = np.c_[r * np.cos(phi), r * np.sin(phi), np.zeros(50)]
    up, down = ex.two_r_solutions(x)
    assert _miss_2r(up, x).max() < 1e-14 and _miss_2r(down, x).max() < 1e-14
    assert np.all(up[:, 1] > 0) and np.all(down[:, 1] < 0)
    # law of cosines: |q2| = acos((r^2 - L1^2 - L2^2) / (2 L1 L2))
    np.testing.assert_allclose(up[:, 1], np.arccos((r**2 - L1**2 - L2**2) / (2 * L1 * L2)), atol=1e-14)


def test_multimodality_claim_against_the_closed_form(ex, nets_2r):
    g = ex.multimodality(nets_2r, n_targets=200)
    rows = ex.multimodality_rows(g)
    exact_q2 = np.arccos(np.clip((np.sum(g.x[:, :2] ** 2, 1) - L1**2 - L2**2) / (2 * L1 * L2), -1, 1))
    for label, q in g.q.items():
        np.testing.assert_allclose(rows[label][0], np.median(_miss_2r(q, g.x)), atol=1e-14)
    reg = np.median(np.abs(g.q["joint regression"][:, 1]))
    assert ex.multimodality_claims(g)[0].verdict == verdict(reg < 0.5 * np.median(exact_q2))


def test_extrapolation_claim_against_the_closed_form(ex, nets_2r):
    e = ex.extrapolation(nets_2r, n_targets=300)
    np.testing.assert_allclose(np.arctan2(e.x[:, 1], e.x[:, 0]), e.phi, atol=1e-15)
    ang = np.degrees(np.abs(e.phi))
    miss = {k: _miss_2r(q, e.x) for k, q in e.q.items()}
    med = {k: [np.median(v[(ang >= lo) & (ang < hi)]) for lo, hi in ((0, 90), (90, 120), (120, 150), (150, 180))]
           for k, v in miss.items()}
    fk_net = med["FK-consistency"]
    assert ex.TASK.tol_position == TOL
    assert ex.extrapolation_claims(e)[0].verdict == verdict(fk_net[-1] > 10 * fk_net[0] and miss["solver"].max() <= TOL)


def test_singularity_bands_over_repetitions_against_the_closed_form(ex, nets_2r):
    s = ex.near_singularity([nets_2r, nets_2r], n_per_band=60)
    assert s.repetitions == 2
    fk_medians, fk_joint = np.empty((2, len(ex.BANDS))), np.empty((2, len(ex.BANDS)))
    radii, smins = [[] for _ in ex.BANDS], [[] for _ in ex.BANDS]  # both repetitions' targets, pooled per band
    for i in range(2):
        rng = np.random.default_rng(ex.SEEDS["probe targets"] + 1 + i * ex.SEED_STRIDE)  # each repetition's draws
        for b, (lo, hi) in enumerate(ex.BANDS):
            r, phi = rng.uniform(lo, hi, 60), rng.uniform(-np.radians(80), np.radians(80), 60)
            x = np.c_[r * np.cos(phi), r * np.sin(phi), np.zeros(60)]
            q2 = np.arccos(np.clip((r**2 - L1**2 - L2**2) / (2 * L1 * L2), -1, 1))
            # sigma_min of the 2 x 2 position Jacobian at the exact elbow-up answer, written out
            q1 = phi - np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))
            J = np.array([[[-L1 * np.sin(a) - L2 * np.sin(a + c), -L2 * np.sin(a + c)],
                           [L1 * np.cos(a) + L2 * np.cos(a + c), L2 * np.cos(a + c)]] for a, c in zip(q1, q2)])
            radii[b].append(r)
            smins[b].append(np.linalg.svd(J, compute_uv=False)[:, -1])
            q_fk = predict(nets_2r["FK-consistency"], x)
            fk_medians[i, b] = np.median(_miss_2r(q_fk, x))
            # the joint-space distance to the nearer of the two law-of-cosines answers (rad)
            beta = np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))
            up, down = np.c_[phi - beta, q2], np.c_[phi + beta, -q2]
            fk_joint[i, b] = np.median(np.minimum(np.linalg.norm(q_fk - up, axis=1),
                                                  np.linalg.norm(q_fk - down, axis=1)))
            # one elbow for the band, reaching its middle, the shoulder pointed at the target: the tip lies on the
            # target's ray at the middle radius, so it misses by |r - r_mid|, at most half the band's width
            np.testing.assert_allclose(s.errors[i, b, 6], np.abs(r - (lo + hi) / 2).max(), atol=1e-12)
            assert s.errors[i, b, 6] <= (hi - lo) / 2 + 1e-12
            # the straight arm's miss, L1 + L2 - r in closed form
            np.testing.assert_allclose(s.errors[i, b, 2], np.median(L1 + L2 - r), atol=1e-15)
            # where the miss points: its component along the target's direction (phi) by the closed-form tip, and
            # the tool's distance from the base, which the law of cosines gives from the elbow alone
            e = _tip_2r(q_fk) - x[:, :2]
            radial = e[:, 0] * np.cos(phi) + e[:, 1] * np.sin(phi)
            reach = np.sqrt(L1**2 + L2**2 + 2 * L1 * L2 * np.cos(q_fk[:, 1]))
            np.testing.assert_allclose(s.errors[i, b, 7:10], [np.sum(radial**2) / np.sum(e**2), np.mean(reach < r),
                                                              np.median(np.abs(q_fk[:, 1]))], atol=1e-12)
    np.testing.assert_allclose(s.errors[:, :, 1], fk_medians, atol=1e-12)
    np.testing.assert_allclose(s.errors[:, :, 5], fk_joint, atol=1e-12)
    assert s.joint_rises == int(np.sum(fk_joint[:, -1] > fk_joint[:, 0]))
    for b, row in enumerate(s.rows):  # the page's (mean, min, max) over repetitions, in mm
        # the closed-form columns come from one sample: every repetition's targets of the band, pooled
        r = np.concatenate(radii[b])
        np.testing.assert_allclose(s.sigma_min[b], np.median(np.concatenate(smins[b])), atol=1e-12)
        np.testing.assert_allclose(row.straight, 1e3 * np.median(L1 + L2 - r), atol=1e-9)
        np.testing.assert_allclose(s.q2_exact[b], np.median(np.arccos(np.clip((r**2 - L1**2 - L2**2) / (2 * L1 * L2),
                                                                              -1, 1))), atol=1e-12)
        np.testing.assert_allclose(row.fk, [1e3 * fk_medians[:, b].mean(), 1e3 * fk_medians[:, b].min(),
                                            1e3 * fk_medians[:, b].max()], atol=1e-9)
        np.testing.assert_allclose(row.fk_joint, [fk_joint[:, b].mean(), fk_joint[:, b].min(), fk_joint[:, b].max()],
                                   atol=1e-12)
        np.testing.assert_allclose(row.constant_mm, 1e3 * s.errors[:, b, 6].max(), atol=1e-9)
        for got, c in ((row.fk_radial, 7), (row.fk_short, 8), (row.fk_q2, 9)):
            np.testing.assert_allclose(got, [s.errors[:, b, c].mean(), s.errors[:, b, c].min(),
                                             s.errors[:, b, c].max()], atol=1e-12)
    # the first-order joint error of the tool miss (lesson 10), and the fall of |q2| per metre between band middles
    np.testing.assert_allclose(s.first_order_rad, fk_medians.mean(axis=0) / s.sigma_min, rtol=1e-12)
    # the elbow's shortening of the reach, against the 2R law of cosines |p| = sqrt(L1^2 + L2^2 + 2 L1 L2 cos q2)
    # and its derivative -L1 L2 sin q2 / |p| for the first-order column
    net_q2 = s.errors[:, :, 9].mean(axis=0)
    reach = lambda q2: np.sqrt(L1**2 + L2**2 + 2 * L1 * L2 * np.cos(q2))  # noqa: E731
    np.testing.assert_allclose(s.reach_loss_mm, 1e3 * (reach(s.q2_exact) - reach(net_q2)), atol=1e-9)
    np.testing.assert_allclose(s.reach_loss_linear_mm, 1e3 * L1 * L2 * np.sin(s.q2_exact) / reach(s.q2_exact)
                               * (net_q2 - s.q2_exact), atol=1e-9)
    mids = [(lo + hi) / 2 for lo, hi in ex.BANDS]
    for b in range(len(ex.BANDS) - 1):
        exact = [np.median(np.arccos(np.clip((np.concatenate(radii[k]) ** 2 - L1**2 - L2**2) / (2 * L1 * L2), -1, 1)))
                 for k in (b, b + 1)]
        net = s.errors[:, b:b + 2, 9].mean(axis=0)
        np.testing.assert_allclose(s.q2_slope_exact[b], (exact[0] - exact[1]) / (mids[b + 1] - mids[b]), rtol=1e-9)
        np.testing.assert_allclose(s.q2_slope_net[b], (net[0] - net[1]) / (mids[b + 1] - mids[b]), rtol=1e-9)
    inner = s.errors[:, 0, 7:10].mean(axis=0)  # the first band's radial share, short fraction and |q2|, both runs
    assert s.inner_overshoots == bool(inner[2] < s.q2_exact[0] and inner[1] < 0.5)
    assert np.all(s.errors[:, :, 3] <= s.errors[:, :, 4]) and s.errors[:, :, 4].max() <= TOL  # the solver
    assert s.solver_max == pytest.approx(1e3 * s.errors[:, :, 4].max(), rel=1e-12)
    rises = int(np.sum(fk_medians[:, -1] > fk_medians[:, 0]))
    assert s.fk_rises == rises and s.fk_monotone == int(np.sum(np.all(np.diff(fk_medians, axis=1) > 0, axis=1)))
    # the quiz: the shown tool misses stay within a few times their smallest, far from the exact slope's growth
    shown = [r.fk[0] for r in s.rows]
    assert max(shown) / min(shown) < 5 < s.q2_slope_exact[-1] / s.q2_slope_exact[0]
    assert ex.singularity_claims(s)[0].verdict == verdict(int(np.sum(fk_joint[:, -1] > fk_joint[:, 0])) == 2)


def test_a_changed_training_region_gets_its_own_cache_key_and_sector_labels(ex, monkeypatch):
    """The cache key hashes the region (a narrower one retrains, never overwrites), and the sectors and the trained
    one's label follow it; the region itself is |atan2(y, x)| <= the angle."""
    settings = ex.SETTINGS["tour"]
    key = ex.model_key("planar2r", settings, ex.SEEDS)
    assert ex.sector_labels() == ["0-90 (trained)", "90-120", "120-150", "150-180"]
    monkeypatch.setattr(ex, "TRAIN_ANGLE", 45)
    assert ex.model_key("planar2r", settings, ex.SEEDS) != key
    assert ex.model_key("so101", settings, ex.SEEDS) == ex.model_key("so101", settings, ex.SEEDS)
    assert ex.sectors() == ((0, 45), (45.0, 90.0), (90.0, 135.0), (135.0, 180.0))
    assert ex.sector_labels() == ["0-45 (trained)", "45-90", "90-135", "135-180"]
    phi = np.radians([0, 44, 46, -44, -46, 180])
    x = np.c_[np.cos(phi), np.sin(phi), np.zeros(6)]
    np.testing.assert_array_equal(ex.training_region(x), [True, True, False, True, False, False])
    data = ex.dataset("planar2r", 200, 0)
    assert np.degrees(np.abs(np.arctan2(data.x[:, 1], data.x[:, 0]))).max() <= 45


def test_wrapped_joints_against_mujocos_ranges(ex, so101, so101_model):
    """Per joint, the share outside MuJoCo's jnt_range, before and after wrapping each angle by a multiple of 2 pi
    into (-pi, pi]."""
    ids = [so101_model.joint(n).id for n in so101.joint_names]
    lo, hi = so101_model.jnt_range[ids, 0], so101_model.jnt_range[ids, 1]
    q = np.random.default_rng(3).uniform(-7, 7, (400, 5))
    w = ex.wrapped(so101, q)
    k = np.round(q / (2 * np.pi))  # q - 2 pi k lies in [-pi, pi]
    qw = q - 2 * np.pi * k
    for row in w.rows:
        j = list(so101.joint_names).index(row.joint)
        assert row.outside == np.mean((q[:, j] < lo[j]) | (q[:, j] > hi[j]))
        assert row.outside_wrapped == np.mean((qw[:, j] < lo[j]) | (qw[:, j] > hi[j]))
        assert row.median == np.median(q[:, j])
    assert [r.outside for r in w.rows] == sorted((r.outside for r in w.rows), reverse=True)
    assert w.any == pytest.approx((np.mean(((q < lo) | (q > hi)).any(axis=1)), np.mean(((qw < lo) | (qw > hi)).any(axis=1))), abs=1e-15)


def test_a_learner_whose_only_mistake_is_tip_is_told_to_fix_tip_first(tmp_path):
    """physai check 13 on the lesson's own build.py with tip's second link at q2 instead of q1 + q2: tip fails with
    its own hint, fk_loss_by_hand (right, but built on tip) is told to fix tip first."""
    from physai.course import exercise

    folder = exercise.lesson_folder("13")
    source = (folder / "build.py").read_text()
    right = "L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 0] + q[:, 1])"
    assert source.count(right) == 1
    (tmp_path / "build.py").write_text(source.replace(right, "L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 1])"))
    grades = {g.function: g for g in exercise.check(folder, tmp_path, only=("tip", "fk_loss_by_hand")).grades}
    assert not grades["tip"].passed and "fix tip first" not in grades["tip"].message
    assert not grades["fk_loss_by_hand"].passed
    assert "fix tip first" in grades["fk_loss_by_hand"].message and "follows the formula" in \
        grades["fk_loss_by_hand"].message


def _mj_miss(so101_model, so101, qs, xs):
    """MuJoCo's tool site against the targets, one distance (m) per row."""
    return np.array([np.linalg.norm(mj_site(so101_model, so101, q)[0] - x) for q, x in zip(qs, xs)])


def test_so101_limits_and_hybrid_claims_against_mujoco(ex, nets_so101, so101, so101_model, monkeypatch):
    g = ex.so101_guesses(nets_so101, n_targets=40)
    ids = [so101_model.joint(n).id for n in so101.joint_names]
    lo, hi = so101_model.jnt_range[ids, 0], so101_model.jnt_range[ids, 1]
    monkeypatch.setattr(ex, "train_nets", lambda *a, **k: nets_so101)  # every replica: the module's network
    hyb = ex.hybrid(TINY, n_targets=40, n_seeds=2, cache=None)
    for row in hyb.rows:
        x = ex.dataset("so101", 40, ex.seed_replica(row.seed)["test targets"]).x
        q, passed = ex.checked_hybrid(so101, nets_so101["FK-consistency, bounded"], x)
        miss = _mj_miss(so101_model, so101, q, x)
        assert np.all(miss[passed] <= TOL + 1e-12)  # what passed the check is within tolerance on MuJoCo's arm
        # what failed it is the solver's own answer from scratch
        np.testing.assert_array_equal(q[~passed], solve_ik_batch(so101, x[~passed], task="position").q)
        alone = _mj_miss(so101_model, so101, solve_ik_batch(so101, x, task="position").q, x)
        np.testing.assert_allclose([row.passed, row.hybrid_success, row.solver_success],
                                   [passed.mean(), np.mean(miss <= TOL), np.mean(alone <= TOL)], atol=1e-12)
    np.testing.assert_allclose(hyb.passed, [np.mean([r.passed for r in hyb.rows]), min(r.passed for r in hyb.rows),
                                            max(r.passed for r in hyb.rows)], atol=1e-15)
    lo_r, hi_r = hyb.speedup_range  # the timing's bookkeeping (the times themselves are this machine's)
    assert lo_r <= hyb.speedup <= hi_r  # a ratio of medians lies between the smallest and largest ratio
    np.testing.assert_allclose(hyb.speedup, hyb.us_solver / hyb.us_hybrid, rtol=1e-12)
    np.testing.assert_allclose(hyb.fallback_share_us, (1 - hyb.rows[0].passed) * hyb.us_fallback, rtol=1e-12)
    np.testing.assert_allclose(hyb.break_even_us, hyb.us_solver - hyb.fallback_share_us, rtol=1e-12)
    # the Medium exercise's cost model, t_s / (t_h + (1 - p) t_f)
    np.testing.assert_allclose(hyb.predicted_speedup, hyb.us_solver / (hyb.us_guess + hyb.fallback_share_us),
                               rtol=1e-12)
    # the forward pass and the part before the fallback are timed too (printed and saved; no claim on speed)
    assert all(np.isfinite(t) and t > 0 for t in (hyb.us_guess, hyb.us_forward_batch, hyb.us_forward_one))
    outside = {k: np.mean(np.any((q < lo) | (q > hi), axis=1)) for k, q in g.q.items()}
    expect = [outside["FK-consistency"] > 0 and outside["FK-consistency, bounded"] == 0,
              all(r.hybrid_success >= r.solver_success for r in hyb.rows)]
    assert [c.verdict for c in ex.limits_hybrid_claims(g, hyb)] == [verdict(ok) for ok in expect]


def test_timing_rounds_interleave_the_functions(ex):
    """Every round calls each function once, the order reversed every other round, after one warm-up call each."""
    calls = []
    times = ex.interleaved_times([lambda: calls.append(0), lambda: calls.append(1), lambda: calls.append(2)], 3)
    assert times.shape == (3, 3) and np.all(times >= 0)
    assert calls == [0, 1, 2, 0, 1, 2, 2, 1, 0, 0, 1, 2]


def test_the_check_keeps_the_solvers_success_even_for_an_untrained_network(ex, so101, so101_model):
    """The guarantee does not depend on the network: with random weights most guesses fail the check, and the hybrid
    still lands within tolerance wherever the solver alone does (MuJoCo's tool site)."""
    x = ex.dataset("so101", 30, 7).x
    net = init_model(so101, x, np.random.default_rng(8), hidden=(8, 8), head="bounded")
    q, passed = ex.checked_hybrid(so101, net, x)
    assert passed.mean() < 0.5
    alone = _mj_miss(so101_model, so101, solve_ik_batch(so101, x, task="position").q, x) <= TOL
    assert np.all(_mj_miss(so101_model, so101, q, x)[alone] <= TOL)


def test_gap_matches_the_servo_sag_from_mujoco_statics(ex, nets_so101, so101, so101_model):
    """Holding q against gravity, a position servo with gain kp sits tau_g / kp off its command; the tool
    moves by J dq. The settled miss of an exact answer is that sag (within the friction dead band)."""
    g = ex.so101_guesses(nets_so101, n_targets=5)
    gp = ex.gap(g, ("solver",), n_sim=5)
    m = robots.mujoco_model("so101")
    d = mujoco.MjData(m)
    kp = m.actuator_gainprm[[m.actuator(j).id for j in so101.joint_names], 0]
    exact = 0
    for q, x, miss, kin, calm in zip(g.q["solver"], g.x, gp.gravity["solver"], gp.kinematic["solver"],
                                     gp.no_gravity["solver"]):
        if kin > TOL:
            continue  # the sag is about the targets the solver solves
        exact += 1
        d.qpos[list(so101.qpos_adr)] = q
        mujoco.mj_forward(m, d)
        dq = -d.qfrc_bias[list(so101.dof_adr)] / kp  # the servo gives way by tau_g / kp
        J_pos = mj_site(so101_model, so101, q)[2][:3]
        sag = np.linalg.norm(J_pos @ dq)
        assert calm < kin + 1e-5  # without gravity the servo reaches its command
        np.testing.assert_allclose(miss, sag, rtol=0.5, atol=kin)  # friction dead band and second order aside
        # dry friction lets the servo rest anywhere within frictionloss / kp of tau_g / kp on each joint: at the tool
        # at most |J_pos|_2 |frictionloss / kp|; the linear model's second-order error is ~|dq| (1e-3) of the sag,
        # allowed ten times over
        band = np.linalg.norm(J_pos, 2) * np.linalg.norm(m.dof_frictionloss[list(so101.dof_adr)] / kp)
        assert abs(miss - sag) <= 1e-2 * sag + band + kin  # the answer itself is off the target by kin
    assert exact >= 2
    assert ex.gap_claims(gp)[0].verdict == verdict(np.median(gp.gravity["solver"]) > max(
        1e-4, 10 * np.median(gp.kinematic["solver"])))


def test_gap_clamping_not_gravity_explains_the_unbounded_networks_miss(ex, nets_so101, so101, so101_model):
    """The page and the figure caption credit clamping, not gravity, for the unbounded network's settled miss: the
    clamped column is MuJoCo's tool site at the command clipped to ctrlrange and the joints' ranges, and without
    gravity the servos settle there (up to the friction dead band)."""
    g = ex.so101_guesses(nets_so101, n_targets=8)
    gp = ex.gap(g, ("FK-consistency",), n_sim=8)
    m = robots.mujoco_model("so101")
    act = [m.actuator(j).id for j in so101.joint_names]
    lo, hi = m.actuator_ctrlrange[act, 0], m.actuator_ctrlrange[act, 1]
    q = g.q["FK-consistency"][:8]
    # where the servo can take the joint: the command clipped to ctrlrange, then by the joint's own range, which is
    # a tenth of a radian narrower than ctrlrange on one side of the wrist roll
    jnt = m.jnt_range[[m.joint(j).id for j in so101.joint_names]]
    lo, hi = np.maximum(lo, jnt[:, 0]), np.minimum(hi, jnt[:, 1])
    assert np.any((q < lo) | (q > hi))  # some commands are out of range, so the column is not the kinematic one
    rest = np.clip(q, lo, hi)
    np.testing.assert_allclose(gp.clamped["FK-consistency"], _mj_miss(so101_model, so101, rest, g.x[:8]), atol=1e-12)
    # without gravity the servos settle there, within the friction dead band (at the tool at most
    # |J_pos|_2 |frictionloss / kp|, as in the statics test above)
    kp = m.actuator_gainprm[act, 0]
    band = max(np.linalg.norm(mj_site(so101_model, so101, qi)[2][:3], 2) for qi in rest) * \
        np.linalg.norm(m.dof_frictionloss[list(so101.dof_adr)] / kp)
    assert np.all(np.abs(gp.no_gravity["FK-consistency"] - gp.clamped["FK-consistency"]) <= band)
    row = gp.rows[0]
    np.testing.assert_allclose(row.clamped_mm, 1e3 * np.median(gp.clamped["FK-consistency"]), rtol=1e-12)


def test_main_writes_its_claims(ex, tmp_path, monkeypatch, run_lesson, nets_2r, nets_so101, so101, so101_model):
    monkeypatch.setattr(ex, "train_nets", lambda robot, *a, **k: nets_2r if robot == "planar2r" else nets_so101)
    monkeypatch.setitem(ex.SETTINGS, "tour", TINY | {"n_test": 40, "n_probe": 100, "n_band": 20, "n_sim": 2,
                                                     "n_seeds": 2})
    claims, saved = run_lesson(ex, False)
    assert len(claims) == 6
    # the planar arm has no joint limits: its training joints are drawn from a full turn each
    np.testing.assert_array_equal(saved["joint_range_2r"], [[-np.pi, -np.pi], [np.pi, np.pi]])
    for net in nets_2r.values():  # and the bounded head keeps the networks' joints in that same turn
        assert net.head == "bounded"
        np.testing.assert_array_equal([net.q_mid, net.q_half], [[0, 0], [np.pi, np.pi]])
    # the page's numbers, in mm, against the 2R's closed-form tip and MuJoCo's joint ranges
    g = ex.multimodality(nets_2r, 40)
    for row in saved["multimodality"]:
        np.testing.assert_allclose(row["median_mm"], 1e3 * np.median(_miss_2r(g.q[row["label"]], g.x)), atol=1e-11)
    med = {k: np.median(_miss_2r(q, g.x)) for k, q in g.q.items()}  # the page's "n times less / more"
    np.testing.assert_allclose(saved["regression_ratios"], [med["mean pose"] / med["joint regression"],
                                                            med["joint regression"] / med["FK-consistency"]], rtol=1e-9)
    ids = [so101_model.joint(n).id for n in so101.joint_names]
    lo, hi = so101_model.jnt_range[ids, 0], so101_model.jnt_range[ids, 1]
    g = ex.so101_guesses(nets_so101, 40)
    for row in saved["so101"]:
        q = g.q[row["label"]]
        assert row["outside"] == np.mean(np.any((q < lo) | (q > hi), axis=1))  # a count: exact
        miss = [np.linalg.norm(mj_site(so101_model, so101, qi)[0] - x) for qi, x in zip(q, g.x)]
        np.testing.assert_allclose([row["median_mm"], row["within_tol"]],
                                   [1e3 * np.median(miss), np.mean(np.array(miss) <= TOL)], atol=1e-10)
    assert {p.name for p in tmp_path.glob("*.png")} == {"multimodality_2r.png", "so101_learned.png"}


# ---- build.py ----


def test_losses_by_hand_match_the_closed_form_and_physai(build):
    b = build.run(n_targets=30, seed=2)
    np.testing.assert_allclose(b.loss_fk[0], b.loss_fk[1], rtol=1e-12)  # NumPy by hand vs physai's JAX
    np.testing.assert_allclose(b.loss_joint[0], b.loss_joint[1], rtol=1e-12)
    rng = np.random.default_rng(0)
    q, x = rng.uniform(-3, 3, (20, 2)), rng.uniform(-0.5, 0.5, (20, 3))
    np.testing.assert_allclose(build.fk_loss_by_hand(q, x), np.mean(_miss_2r(q, x) ** 2), atol=1e-15)


def test_mean_of_the_elbows_is_the_straight_arm(build, audit):
    b = build.run(n_targets=30, seed=2)
    np.testing.assert_allclose(b.mean_miss, L1 + L2 - b.r, atol=1e-14)  # the straight arm reaches r = L1 + L2
    assert audit.build_claims(b)[0].verdict == verdict(np.abs(b.mean_miss - (L1 + L2 - b.r)).max() < 1e-12)
    up, down = build.elbows(np.c_[0.4, 0.3, 0.0])
    assert _miss_2r(up, np.c_[0.4, 0.3, 0.0])[0] < 1e-15 and _miss_2r(down, np.c_[0.4, 0.3, 0.0])[0] < 1e-15


def test_forward_pass_by_hand_is_physais_network(build, so101):
    from physai.learned import init_model

    rng = np.random.default_rng(5)
    x = rng.uniform(-0.3, 0.3, (25, 3))
    for head in ("linear", "bounded"):
        model = init_model(so101, x, np.random.default_rng(6), hidden=(7, 5), head=head)
        np.testing.assert_allclose(build.mlp_forward(model.params, model.norm(), x, head), predict(model, x),
                                   atol=1e-13)


def test_dls_step_is_the_push_through_form(build):
    """J^T (J J^T + l^2 I)^-1 e = (J^T J + l^2 I)^-1 J^T e: the other side of the push-through identity, at random
    Jacobians and at the straight 2R arm (rank 1), where the undamped inverse does not exist."""
    rng = np.random.default_rng(7)
    J = np.r_[rng.normal(size=(5, 2, 2)), [[[-0.8, -0.3], [0.0, 0.0]]]]  # last: the straight arm along x
    e = rng.normal(size=(6, 2))
    ref = np.linalg.solve(np.swapaxes(J, -1, -2) @ J + 0.01**2 * np.eye(2), (np.swapaxes(J, -1, -2) @ e[..., None]))
    np.testing.assert_allclose(build.dls_step(J, e, 0.01), ref[..., 0], atol=1e-9)


def test_refinement_cannot_leave_the_averaged_elbows_in_closed_form(build):
    """The straight arm misses along itself; both columns of the 2R Jacobian are perpendicular to it, so J^T e = 0 and
    the first damped step leaves the miss where it was; from the network's guesses the refinement converges."""
    b = build.run(n_targets=30, seed=2)
    assert b.step_gap < 1e-9
    ks = list(build.REFINE_STEPS)
    np.testing.assert_allclose(b.refined[ks.index(1), 1], b.refined[ks.index(0), 1], rtol=1e-9)
    np.testing.assert_allclose(b.refined[0, 1], np.median(L1 + L2 - b.r), rtol=1e-12)  # the straight arm's miss
    assert b.refined[-1, 0] < 1e-9


def test_regression_step_is_gradient_descent_by_central_finite_differences(build):
    rng = np.random.default_rng(11)
    params = {"W0": rng.normal(size=(2, 4)), "b0": rng.normal(size=4), "W1": rng.normal(size=(4, 2)),
              "b1": rng.normal(size=2)}
    x, q, lr, h = rng.uniform(-0.7, 0.7, (9, 2)), rng.uniform(-3, 3, (9, 2)), 0.05, 1e-6

    def loss(p):
        return np.mean(np.sum((np.tanh(x @ p["W0"] + p["b0"]) @ p["W1"] + p["b1"] - q) ** 2, axis=1))

    new, got_loss = build.regression_step(params, x, q, lr)
    assert got_loss == pytest.approx(loss(params), abs=1e-13)
    for name, value in params.items():
        for i in np.ndindex(value.shape):
            plus, minus = ({**params, name: value.copy()} for _ in range(2))
            plus[name][i] += h
            minus[name][i] -= h
            fd = (loss(plus) - loss(minus)) / (2 * h)  # truncation ~h^2, round-off ~1e-16 / h: ~1e-10
            assert (value[i] - new[name][i]) / lr == pytest.approx(fd, abs=1e-7)


def test_trained_tiny_network_sits_on_the_mean_of_the_elbows_in_closed_form(build, audit):
    """Trained on both elbows of each target, the loss cannot go below mean |up - down|^2 / 4 (the two labels' mean
    is the best single answer), and the network's joints approach that mean: q2 -> 0, the straight arm."""
    b = build.run(n_targets=10, seed=3, train_steps=1500)
    t = b.trained
    rng = np.random.default_rng(3)  # the build's draw of targets, recomputed with the law of cosines
    r, phi = rng.uniform(*build.R_TRAIN, build.N_TRAIN), rng.uniform(-np.pi / 2, np.pi / 2, build.N_TRAIN)
    q2 = np.arccos((r**2 - L1**2 - L2**2) / (2 * L1 * L2))
    dq1 = 2 * np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))  # elbow down's q1 minus elbow up's
    floor = np.mean(dq1**2 + (2 * q2) ** 2) / 4
    assert t.floor == pytest.approx(floor, rel=1e-12)
    per_target = (dq1**2 + (2 * q2) ** 2) / 4
    assert t.floor_se == pytest.approx(np.std(per_target) / np.sqrt(build.N_TRAIN), rel=1e-12)
    # the distribution's floor, r uniform in R_TRAIN: SciPy's adaptive quadrature of the same closed form in r

    def gap(r):
        c = np.arccos((r**2 - L1**2 - L2**2) / (2 * L1 * L2))
        return np.arctan2(L2 * np.sin(c), L1 + L2 * np.cos(c)) ** 2 + c**2

    lo, hi = build.R_TRAIN
    population = quad(gap, lo, hi, epsabs=1e-13)[0] / (hi - lo)
    assert t.floor_population == pytest.approx(population, rel=1e-10)
    # the page's "sits z standard errors low/high": the draw's floor against SciPy's, in its own standard errors
    assert t.floor_z == pytest.approx(abs(floor - population) / t.floor_se, rel=1e-8)
    # the sampler is uniform in r: a large draw of the same law scatters about SciPy's value by its standard error
    big = np.random.default_rng(12345).uniform(lo, hi, 200_000)
    c = np.arccos((big**2 - L1**2 - L2**2) / (2 * L1 * L2))
    per = np.arctan2(L2 * np.sin(c), L1 + L2 * np.cos(c)) ** 2 + c**2
    assert abs(per.mean() - population) < 5 * per.std() / np.sqrt(big.size)
    assert t.loss[0] > t.loss[1] >= floor and t.losses.min() >= floor
    assert t.q2_exact == pytest.approx(np.median(q2), rel=1e-12)
    assert t.to_mean < 0.2 < 1.0 < t.to_nearest and t.q2_network < 0.2
    assert audit.build_claims(b)[1].verdict == verdict(t.loss[1] >= floor and t.to_mean < 0.25 * t.to_nearest)


def test_scene_pictures_two_answers_and_their_average_that_misses(run_lesson, tmp_path, so101_model, so101):
    """scene.py: the picture exists; both answers reach the target and their average misses by the distance saved
    (MuJoCo's site positions)."""
    from conftest import check_picture, load_lesson

    _, saved = run_lesson(load_lesson(LESSON, "scene.py"), False)
    check_picture(tmp_path, saved["picture"], "so101")
    from physai.course.lesson import read_figures

    # five joints for a 3-D point: a two-parameter family of answers, and the miss depends on the pair averaged
    caption = read_figures(tmp_path)["scene_average.png"]
    assert "many answers" in caption.caption and "which pair" in caption.caption and "many IK answers" in caption.alt
    assert "tool tip" in caption.caption and "table below" in caption.caption
    site = lambda q: mj_site(so101_model, so101, np.array(q))[0]  # noqa: E731
    assert np.linalg.norm(site(saved["q_a"]) - saved["target"]) < 1e-12
    assert np.linalg.norm(site(saved["q_b"]) - saved["target"]) < 1e-4
    assert abs(np.linalg.norm(site(saved["q_mean"]) - saved["target"]) - saved["miss"]) < 1e-12 and saved["miss"] > 0.02
    assert np.abs(np.subtract(saved["q_a"], saved["q_b"])).max() > 1.0  # two distinct answers, not one twice
    # the table's joint order is the model's own (MuJoCo's joints, in qpos order)
    assert list(saved["joints"]) == [so101_model.joint(j).name for j in range(so101_model.njnt)][:len(saved["q_a"])]
    import mujoco

    wrist_z = []
    for q in (saved["q_a"], saved["q_b"]):  # the caption's wrist held high and held low: MuJoCo's joint anchors
        d = mujoco.MjData(so101_model)
        d.qpos[list(so101.qpos_adr)] = q
        mujoco.mj_kinematics(so101_model, d)
        wrist_z.append(d.xanchor[so101_model.joint("wrist_flex").id][2])
    assert wrist_z[0] - wrist_z[1] > 0.1
