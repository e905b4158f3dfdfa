"""Lesson 11 (inverse Jacobian methods): every claim of experiment.py and build.py, asserted against MuJoCo's
site pose and mj_jacSite and against central differences, at small sizes."""

import numpy as np
import pytest
from conftest import WXAI_XML, mj_site, mujoco_distances, mujoco_errors
from scipy.linalg import lstsq

from physai import mj, robots
from physai.ik import Solver
from physai.course.lesson import verdict

LESSON = "11-inverse-kinematics"

TOL_P, TOL_O = 1e-4, 1e-3  # the solver's default tolerances (m, rad)


def _solved_in_mujoco(model, chain, qs, targets, task):
    """Converged (by MuJoCo's site pose) and inside the model's joint ranges, per solution."""
    errs = np.array([mujoco_errors(model, chain, q, T, task) for q, T in zip(qs, targets)])
    ids = [model.joint(n).id for n in chain.joint_names]
    lo, hi = model.jnt_range[ids, 0], model.jnt_range[ids, 1]
    inside = np.all((qs >= lo) & (qs <= hi), axis=1)
    return (errs[:, 0] < TOL_P) & (errs[:, 1] < TOL_O) & inside


def test_transpose_step_is_minus_the_central_difference_gradient(ex, audit, so101, so101_model):
    g = ex.gradient_check(seed=4)
    q, q_target = so101.random_q(np.random.default_rng(4), 2)
    p_target = mj_site(so101_model, so101, q_target)[0]
    p, _, J = mj_site(so101_model, so101, q)
    np.testing.assert_allclose(g.transpose_step, J[:3].T @ (p_target - p), atol=1e-15)

    def half_sq(x):
        return 0.5 * np.sum((p_target - mj_site(so101_model, so101, x)[0]) ** 2)

    eye = np.eye(5) * 1e-5
    fd = np.array([(half_sq(q + e) - half_sq(q - e)) / 2e-5 for e in eye])
    np.testing.assert_allclose(g.minus_gradient, -fd, atol=1e-10)
    diff = np.abs(J[:3].T @ (p_target - p) + fd).max()
    assert audit.gradient_claims(g)[0].verdict == verdict(diff < 1e-9)


def test_convergence_verdicts_from_mujoco_site_pose(ex, audit, panda, panda_model):
    c = ex.convergence(n_targets=6, max_iterations=60, seed=1)
    q_true = panda.random_q(np.random.default_rng(1), 6, inset=0.2)
    np.testing.assert_allclose(c.targets, [mj.site_pose(panda_model, panda, q) for q in q_true], atol=1e-14)
    # Step 2's starts: every joint of the known solution moved by at most the saved perturbation, some nearly all of it
    offsets = np.abs(c.starts - q_true)
    assert offsets.max() <= c.perturbation and offsets.max() > 0.9 * c.perturbation
    rate = {}
    for method, qs, ok in zip(c.names, c.solutions, c.ok):
        truth = _solved_in_mujoco(panda_model, panda, qs, c.targets, "pose")
        np.testing.assert_array_equal(ok, truth)
        rate[method] = truth.mean()
    np.testing.assert_allclose(c.converged, [rate[m] for m in c.names])
    assert [c.methods[m].converged for m in c.names] == list(c.converged)
    assert audit.convergence_claims(c)[0].verdict == verdict(min(rate["pinv"], rate["dls"], rate["lm"]) >= 0.9)
    reached = {m: np.median(its[ok]) if ok.any() else None for m, its, ok in zip(c.names, c.iterations, c.ok)}
    assert [c.methods[m].reached_median for m in c.names] == [reached[m] for m in c.names]
    slower = reached["lm"] is not None and (reached["transpose"] is None or reached["transpose"] > 5 * reached["lm"])
    assert audit.convergence_claims(c)[1].verdict == verdict(slower)
    assert slower  # gradient descent needs far more steps than LM, or never gets there, as the page says


def test_convergence_figures_plateau_is_the_median_final_error_in_mujoco(ex, panda, panda_model):
    """The figure's flat lines, as the page explains them: each curve ends at the median over the targets of
    max(|dp|, lever |w|) at the answers returned (MuJoCo's site pose), flat from ``flat_from`` on; a curvature method
    flattens below the tolerance within a few steps, gradient descent is still falling at the last iteration."""
    c = ex.convergence(n_targets=6, max_iterations=60, seed=1)
    for m, qs, curve in zip(c.names, c.solutions, c.curves):
        errs = np.array([mujoco_errors(panda_model, panda, q, T, "pose") for q, T in zip(qs, c.targets)])
        np.testing.assert_allclose(c.plateau[m], np.median(np.maximum(errs[:, 0], c.lever * errs[:, 1])), rtol=1e-6)
        assert np.all(curve[c.flat_from[m]:] == c.plateau[m]) and curve[c.flat_from[m] - 1] != c.plateau[m]
    for m in ("pinv", "dls", "adaptive", "lm"):
        assert c.plateau[m] < TOL_P and c.flat_from[m] < 20
    assert c.flat_from["transpose"] == c.ceiling and c.plateau["transpose"] > TOL_P
    # adaptive's damping still on at the answers: sigma_min of MuJoCo's mj_jacSite below the ramp's threshold
    qs = c.solutions[c.names.index("adaptive")]
    sigma_min = [np.linalg.svd(mj_site(panda_model, panda, q)[2], compute_uv=False)[-1] for q in qs]
    assert c.adaptive_damped == np.sum(np.array(sigma_min) < c.damping["sigma_healthy"])
    s = Solver()  # the ramp and fixed damping the methods ran with: the Solver's defaults
    assert c.damping == {"dls": s.damping, "sigma_healthy": s.sigma_healthy, "lambda_max": s.lambda_max}


def test_pose_error_is_scipys_rotation_vector_and_mujocos_subquat_in_world_axes(ex, panda, panda_model):
    """The page's worked pose error (first Panda target at its start) from MuJoCo's site poses: the position
    difference, SciPy's rotation vector of R_target R^T, and MuJoCo's mju_subQuat, which gives the same rotation in
    tool axes (R^T w)."""
    import mujoco
    from scipy.spatial.transform import Rotation

    c = ex.convergence(n_targets=3, max_iterations=20)
    T, T_target = mj.site_pose(panda_model, panda, c.starts[0]), c.targets[0]
    R, R_t = T[:3, :3], T_target[:3, :3]
    x = c.example
    np.testing.assert_allclose(x.position, T_target[:3, 3] - T[:3, 3], atol=1e-13)
    w = Rotation.from_matrix(R_t @ R.T).as_rotvec()
    np.testing.assert_allclose(x.rotation, w, atol=1e-12)
    quat = []
    for M in (R_t, R):
        q = np.zeros(4)
        mujoco.mju_mat2Quat(q, M.ravel())
        quat.append(q)
    w_tool = np.zeros(3)
    mujoco.mju_subQuat(w_tool, *quat)
    np.testing.assert_allclose(R @ w_tool, x.rotation, atol=1e-12)
    np.testing.assert_allclose([x.position_norm, x.angle], [np.linalg.norm(x.position), np.linalg.norm(w)],
                               atol=1e-13)
    assert 0 < x.angle < np.pi  # a real rotation error to show, not the identity or a half turn


def test_iterations_count_the_attempt_and_the_polish_alike_on_page_figure_and_transcript(ex, tmp_path, monkeypatch,
                                                                                         run_lesson, capsys):
    """One accounting: a target's iterations are its attempt's steps plus the polish's, each at most the budget, so
    no target takes more than twice it; a target that gradient descent never reaches takes exactly that (the polish
    counted); the transcript's table and the figure's axis carry the numbers the page prints."""
    monkeypatch.setattr(ex, "convergence", lambda max_iterations=60, f=ex.convergence: f(6, 30))
    monkeypatch.setattr(ex, "success", lambda robot, task, n=20, f=ex.success: f(robot, task, 8))
    monkeypatch.setattr(ex, "teleop", lambda seconds, f=ex.teleop: f(0.5))
    monkeypatch.setattr(ex, "through_table", lambda f=ex.through_table: f(4))
    plotted = []
    monkeypatch.setattr(ex, "plot_convergence", lambda c, f=ex.plot_convergence: (plotted.append(c), f(c)))
    capsys.readouterr()
    _, saved = run_lesson(ex, False)
    out = capsys.readouterr().out
    c = saved["convergence"]
    assert c["ceiling"] == 2 * c["max_iterations"] == 60
    assert f"at most {c['max_iterations']} more): at most {c['ceiling']}" in out
    gd = plotted[0]
    assert gd.curves.shape == (len(ex.METHODS), c["ceiling"] + 1)
    table = out[out.index("median it, reached"):].splitlines()[1:1 + len(ex.METHODS)]
    for line in table:
        name, reached, _, n, median, most = line.split()
        m = c["methods"][name]
        assert (int(reached), int(n), int(most)) == (m["reached"], c["n"], m["most"]) and m["most"] <= c["ceiling"]
        assert median == ("-" if m["reached_median"] is None else f"{m['reached_median']:.3g}")  # the page's sig(3)
    rows = out[out.index("restarts max"):].splitlines()[1:]
    for row in saved["success"]["rows"]:  # Step 3's table: the page's sig(3), the transcript's too
        line = next(x for x in rows if x.split()[:2] == [row["robot"], row["task"]])
        assert line.split()[3:5] == [f"{row['median_iterations']:.3g}", f"{row['p95_iterations']:.3g}"]
    i = gd.names.index("transpose")
    assert (~gd.ok[i]).any() and np.all(gd.iterations[i][~gd.ok[i]] <= gd.ceiling)
    assert gd.iterations[i][~gd.ok[i]].max() == gd.ceiling  # an attempt that used its budget, then a polish that did


@pytest.mark.parametrize("robot, task", [("so101", "position"), ("so101", "position+axis"), ("wxai", "pose")])
def test_success_rate_from_mujoco_site_pose(ex, audit, robot, task):
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(WXAI_XML)) if robot == "wxai" else robots.mujoco_model(robot)
    chain = robots.load(robot)
    r = ex.success(robot, task, n_targets=25)
    q_true = chain.random_q(np.random.default_rng(1), 25)
    np.testing.assert_allclose(r.targets, [mj.site_pose(model, chain, q) for q in q_true], atol=1e-14)
    truth = _solved_in_mujoco(model, chain, r.solutions, r.targets, task)
    assert r.rate == truth.mean() and r.met == truth.sum() and r.every == truth.all()  # the page's "all" or count
    far_p, _ = mujoco_errors(model, chain, r.far_q, np.r_[np.c_[np.eye(3), ex.FAR], [[0, 0, 0, 1]]], task)
    assert far_p > 0.1 and "position" in r.far_unmet and r.far_reason != "converged"
    assert audit.success_claims([r])[0].verdict == verdict(truth.mean() >= 0.99)


def test_five_dof_axis_solution_in_mujoco_and_pose_unreachable(ex, so101, so101_model):
    f = ex.five_dof_pose()
    p, o = mujoco_errors(so101_model, so101, f.q_axis, f.target, "position+axis")
    assert f.axis_converged and p < TOL_P and o < TOL_O
    # the 6-D pose itself: no weighting reaches both position and orientation; each puts its residual elsewhere
    for label in f.position_error:
        assert f.position_error[label] > TOL_P or f.orientation_error[label] > TOL_O
    for label in f.position_error:  # the saved errors are MuJoCo's site errors at each weighting's answer
        p, o = mujoco_errors(so101_model, so101, f.q_weighted[label], f.target, "pose")
        np.testing.assert_allclose([f.position_error[label], f.orientation_error[label]], [p, o], atol=1e-9)
    assert f.orientation_error["orientation first"] < TOL_O < f.orientation_error["position first"]
    assert f.position_error["position first"] < TOL_P < f.position_error["orientation first"]


def test_at_weight_one_a_radians_lever_outreaches_the_arm_so_orientation_dominates(ex, so101, so101_model):
    """Step 4: weight 1 makes a radian a 1 m lever, longer than the SO-101's reach. The reach is bounded, at every
    pose, by the chain of MuJoCo's joint anchors to the gripper site (each link's length is fixed, the triangle
    inequality does the rest); and with the two alike the answer nearly keeps the orientation, paying in position."""
    import mujoco

    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = so101.q_middle
    mujoco.mj_kinematics(so101_model, d)
    points = [d.xanchor[so101_model.joint(n).id] for n in so101.joint_names]
    points.append(d.site_xpos[so101_model.site(so101.tool_name).id])
    reach = sum(np.linalg.norm(b - a) for a, b in zip(points, points[1:]))
    assert reach < 1.0  # m: the lever of a radian at weight 1
    f = ex.five_dof_pose()
    alike, first = "m and rad alike", "position first"
    assert f.orientation_error[alike] < 0.25 * f.orientation_error[first]  # rad: orientation nearly kept ...
    assert f.position_error[alike] > 100 * TOL_P  # ... and the position pays


def test_five_dof_turn_is_about_a_tool_axis_other_than_the_wrist_roll(ex, so101, so101_model):
    """Step 4's pose is generic: the target is the reachable pose turned about the tool's y axis (MuJoCo's site
    frame), not its x axis, which is the wrist roll's axis (MuJoCo's joint xaxis) and would make the turn a roll."""
    import mujoco

    from physai import transforms as tf

    f = ex.five_dof_pose()
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = ex.Q_FIVE_DOF
    mujoco.mj_kinematics(so101_model, d)
    R = d.site_xmat[so101_model.site(so101.tool_name).id].reshape(3, 3)
    roll = d.xaxis[so101_model.joint(so101.joint_names[-1]).id]
    np.testing.assert_allclose([f.roll_cos["x"], f.roll_cos["y"]], [R[:, 0] @ roll, R[:, 1] @ roll], atol=1e-12)
    # exactly a roll at every pose: the tool site hangs on the wrist-roll body with its x axis along the joint axis
    site = so101_model.site(so101.tool_name)
    joint = so101_model.joint(so101.joint_names[-1])
    assert site.bodyid[0] == joint.bodyid[0]
    site_in_body = np.zeros(9)
    mujoco.mju_quat2Mat(site_in_body, site.quat)
    assert abs(site_in_body.reshape(3, 3)[:, 0] @ joint.axis) > 1 - 1e-12
    assert abs(f.roll_cos["x"]) > 1 - 1e-12 and abs(f.roll_cos["y"]) < 0.1
    turn = R.T @ f.target[:3, :3]  # the turn in tool axes: about y by FIVE_DOF_TURN
    np.testing.assert_allclose(turn, tf.rotation_about_axis(np.array([0, 1.0, 0]), ex.FIVE_DOF_TURN), atol=1e-12)


def test_teleop_solutions_track_in_mujoco_on_one_branch(ex, so101, so101_model):
    t = ex.teleop(seconds=1.0)
    targets = [mj.site_pose(so101_model, so101, q) for q in t.q_path]
    ok = _solved_in_mujoco(so101_model, so101, t.q_solved, targets, "position+axis")
    assert (~ok).sum() == t.unconverged == 0
    # one branch: no step between solutions larger than twice the generating path's own
    assert np.abs(np.diff(t.q_solved, axis=0)).max() < 2 * np.abs(np.diff(t.q_path, axis=0)).max()


def test_main_writes_its_claims(ex, tmp_path, monkeypatch, run_lesson):
    monkeypatch.setattr(ex, "convergence", lambda max_iterations=60, f=ex.convergence: f(6, 40))
    monkeypatch.setattr(ex, "success", lambda robot, task, n=20, f=ex.success: f(robot, task, 20))
    claims, _ = run_lesson(ex, False)
    assert len(claims) == 4
    assert (tmp_path / "convergence.png").stat().st_size > 0 and (tmp_path / "through_table.png").stat().st_size > 0


def test_main_saves_the_pages_numbers(ex, so101, so101_model, tmp_path, monkeypatch, run_lesson):
    from physai.course.lesson import save_results

    monkeypatch.setattr(ex, "convergence", lambda max_iterations=60, f=ex.convergence: f(4, 20))
    monkeypatch.setattr(ex, "success", lambda robot, task, n=20, f=ex.success: f(robot, task, 8))
    monkeypatch.setattr(ex, "teleop", lambda seconds, f=ex.teleop: f(0.5))
    monkeypatch.setattr(ex, "through_table", lambda f=ex.through_table: f(4))
    save_results(tmp_path, "experiment.py", {"stale": "an older run's number"})
    _, saved = run_lesson(ex, False)
    assert "stale" not in saved  # every number on the page is this run's
    q, q_target = so101.random_q(np.random.default_rng(ex.SEED), 2)
    p, _, J = mj_site(so101_model, so101, q)
    e = mj_site(so101_model, so101, q_target)[0] - p
    np.testing.assert_allclose(saved["gradient"]["transpose_step"], J[:3].T @ e, atol=1e-15)
    assert saved["gradient"]["max_difference"] < 1e-9
    assert (saved["success"]["tol_position"], saved["success"]["tol_orientation"]) == (TOL_P, TOL_O)
    assert [(r["robot"], r["task"]) for r in saved["success"]["rows"]] == list(ex.CASES)
    assert saved["convergence"]["n"] == 4 and set(saved["convergence"]["methods"]) == set(ex.METHODS)
    t = saved["teleop"]
    assert t["n"] == 25 and t["unconverged"] == 0 and t["largest_jump"] < 2 * t["path_step"]
    f = saved["five_dof"]
    assert f["axis_converged"] and f["axis_position_mm"] < 1000 * TOL_P and f["axis_angle_deg"] < np.degrees(TOL_O)


# ---- build.py ----


def test_ik_by_hand_reaches_targets_in_mujoco(build, audit, so101, so101_model):
    r = build.run(n_targets=6, seed=3)
    q_true = so101.random_q(np.random.default_rng(3), 6)
    np.testing.assert_allclose(r.targets, [mj_site(so101_model, so101, q)[0] for q in q_true], atol=1e-15)
    p_hand = np.array([mj_site(so101_model, so101, q)[0] for q in r.q_hand])
    np.testing.assert_allclose(r.errors_hand, np.linalg.norm(p_hand - r.targets, axis=1), atol=1e-15)
    assert r.mujoco_error_hand == np.median(r.errors_hand) and r.converged == np.sum(r.errors_hand < 1e-4)
    assert np.all((r.q_hand >= so101.lower) & (r.q_hand <= so101.upper))
    rate = np.mean(np.linalg.norm(p_hand - r.targets, axis=1) < 1e-4)
    assert audit.build_claims({"run": r, "tol": build.TOL})[0].verdict == verdict(rate >= 0.9)


def test_one_damped_step_is_the_stacked_least_squares_solution(build, so101, so101_model):
    q0 = np.array([0.1, -0.5, 0.8, 0.3, 0.2])
    p_target = mj_site(so101_model, so101, np.array([0.15, -0.45, 0.85, 0.3, 0.2]))[0]
    q1, _ = build.ik_by_hand(so101, p_target, q0, iterations=1)
    p0, _, J = mj_site(so101_model, so101, q0)
    dq = lstsq(np.r_[J[:3], build.LAMBDA * np.eye(5)], np.r_[p_target - p0, np.zeros(5)])[0]
    assert np.abs(dq).max() < build.MAX_STEP  # a small step: no trust-region scaling
    np.testing.assert_allclose(q1, q0 + dq, atol=1e-14)


def _mujoco_success(model, chain, targets, qs):
    """Per answer: MuJoCo's site within the lesson's TOL of the target and q inside the model's joint ranges."""
    p = np.array([mj_site(model, chain, q)[0] for q in qs])
    ids = [model.joint(n).id for n in chain.joint_names]
    inside = np.all((qs >= model.jnt_range[ids, 0]) & (qs <= model.jnt_range[ids, 1]), axis=1)
    return (np.linalg.norm(p - targets, axis=1) < 1e-4) & inside


@pytest.mark.parametrize("options", [{}, {"lam": 0.0}, {"max_step": np.inf}, {"lam": 0.5}])
def test_lab_scores_are_mujocos_successes_and_their_iterations(build, so101, so101_model, options):
    targets = build.lab_targets(so101, seed=5, n=8)
    q_true = so101.random_q(np.random.default_rng(5), 8)
    np.testing.assert_allclose(targets, [mj_site(so101_model, so101, q)[0] for q in q_true], atol=1e-15)
    for score in (build.lab_hand(so101, targets, **options), build.lab_library(so101, targets)):
        ok = _mujoco_success(so101_model, so101, targets, score.q)
        assert score.success == ok.mean()
        assert score.reached == ok.sum()
        assert score.median_iterations == (np.median(score.iterations[ok]) if ok.any() else None)
    if options.get("lam") == 0.5:  # the heavy damping of Break it: tiny gradient steps, no attempt arrives
        assert score.success > 0 and build.lab_hand(so101, targets, **options).success == 0


def test_break_its_keywords_ask_ik_by_hand_for_each_variant(build, so101):
    """Break it's column of keywords, evaluated as the learner types them, gives each row's damping and step limit
    and its score; the as-built row needs none."""
    targets = build.lab_targets(so101, seed=5, n=4)
    brk = build.break_step(so101, targets)
    for v, (_, _, lam, max_step) in zip(brk.variants, build.VARIANTS):
        options = eval(f"dict({v.keywords})", {"np": np})  # noqa: S307 -- the page's own text, as typed
        assert (options.get("lam", build.LAMBDA), options.get("max_step", build.MAX_STEP)) == (lam, max_step)
        assert build.lab_hand(so101, targets, **options).success == v.success
    assert brk.variants[0].keywords == ""


def test_heavy_damping_runs_out_of_steps_rather_than_stalling_as_the_page_says(build, so101):
    """Break it and its quiz: with lambda = 0.5 most of the lab's attempts use the whole step budget; the counts are
    re-read from each attempt's error trace (a stall: under 1 % drop over PATIENCE steps; out of steps: 100)."""
    targets = build.lab_targets(so101)
    traces = [build.ik_by_hand(so101, p, so101.q_middle.copy(), lam=0.5)[1] for p in targets]
    stalled = [bool(e[-1] > 0.99 * e[-1 - build.PATIENCE]) for e in traces]
    out_of_steps = sum(len(e) - 1 == 100 and not stall for e, stall in zip(traces, stalled))
    stalls = sum(stalled)
    arrived = sum(e[-1] < build.TOL for e in traces)
    stops = build.lab_hand(so101, targets, lam=0.5).stops
    assert stops == {"converged": arrived, "stalled": stalls, "limit": out_of_steps}
    assert arrived == 0 and out_of_steps > stalls > 0 and out_of_steps + stalls == len(targets)


def test_heavy_damping_is_not_yet_the_gradient_step_as_the_page_says(build, so101, so101_model):
    """Break it's heavy damping against the position rows' singular values of mj_jacSite: lambda about the largest,
    so the step keeps sigma^2 / (sigma^2 + lambda^2) of Gauss-Newton's in each direction (SVD of the damped step) and
    differs from J^T e / lambda^2 by the saved median (the damped step by SciPy's stacked least squares)."""
    r = build.damping_scale(so101)
    lam, poses = build.HEAVY, so101.random_q(np.random.default_rng(build.LAB_SEED), build.LAB_TARGETS)
    S = np.array([np.linalg.svd(mj_site(so101_model, so101, q)[2][:3], compute_uv=False) for q in poses])
    np.testing.assert_allclose([r.sigma_max_median, r.sigma_min_median], np.median(S[:, [0, -1]], axis=0), rtol=1e-9)
    p0, _, J = mj_site(so101_model, so101, so101.q_middle)
    U, S0, Vt = np.linalg.svd(J[:3])
    np.testing.assert_allclose(r.sigma_start, S0, rtol=1e-9)
    gaps = []
    for p in (mj_site(so101_model, so101, q)[0] for q in poses):
        dq = lstsq(np.r_[J[:3], lam * np.eye(5)], np.r_[p - p0, np.zeros(5)])[0]
        gn = np.linalg.pinv(J[:3]) @ (p - p0)
        kept = (Vt[:3] @ dq) / (Vt[:3] @ gn)
        np.testing.assert_allclose([kept[0], kept[-1]], [r.kept_strong, r.kept_weak], rtol=1e-6)
        gaps.append(np.linalg.norm(dq - J[:3].T @ (p - p0) / lam**2) / np.linalg.norm(dq))
    np.testing.assert_allclose(r.gradient_gap, np.median(gaps), rtol=1e-6)
    # what the page says: lambda is about the largest singular value, not far above it; the step is no gradient step
    assert 0.5 < r.sigma_max_median / lam < 2 and r.gradient_gap > 0.3 and r.kept_weak < 0.1 < 0.3 < r.kept_strong


def test_undamped_stops_like_as_built_because_sigma_min_is_far_above_lambda(build, so101):
    """Break it's first prediction: on the lab's targets the undamped loop stops exactly as the built one does, and
    the smallest singular value at the lab's poses is many times the lesson's lambda."""
    targets = build.lab_targets(so101)
    built, undamped = build.lab_hand(so101, targets), build.lab_hand(so101, targets, lam=0.0)
    assert built.stops == undamped.stops and built.success == undamped.success
    assert build.damping_scale(so101).sigma_min_median > 3 * build.LAMBDA


def test_the_library_saves_iterations_by_its_longer_step_limit_not_its_damping(build, so101, so101_model):
    """The lab's predict box and Hard exercise: the lab's loop re-run at solve_ik's step limit, and solve_ik held to
    the lab's, each scored by MuJoCo's site; the median-iteration gap follows the step limit, not the damping."""
    from physai.ik import Solver, solve_ik

    targets = build.lab_targets(so101)
    swap = build.step_limits(so101, targets)

    def median(qs, its):
        ok = _mujoco_success(so101_model, so101, targets, np.array(qs))
        return np.median(np.array(its)[ok])

    runs = {s: [build.ik_by_hand(so101, p, so101.q_middle.copy(), max_step=s) for p in targets]
            for s in (build.MAX_STEP, Solver().step)}
    hand = {s: median([q for q, _ in r], [len(e) - 1 for _, e in r]) for s, r in runs.items()}
    lib = {s: [solve_ik(so101, p, so101.q_middle, task="position", solver=Solver(restarts=0, step=s)) for p in targets]
           for s in (build.MAX_STEP, Solver().step)}
    lib = {s: median([r.q for r in rs], [r.iterations for r in rs]) for s, rs in lib.items()}
    assert swap.library_step == Solver().step > build.MAX_STEP
    assert (swap.hand.median_iterations, swap.library.median_iterations) == (hand[Solver().step], lib[build.MAX_STEP])
    # what the page says: a longer step limit saves your loop iterations, a shorter one costs lm iterations, and
    # at the same limit the two medians are within one iteration; without damping your loop needs as many as with it
    assert hand[Solver().step] < hand[build.MAX_STEP] and lib[build.MAX_STEP] > lib[Solver().step]
    assert abs(hand[build.MAX_STEP] - lib[build.MAX_STEP]) <= 1 and abs(hand[Solver().step] - lib[Solver().step]) <= 1
    assert build.lab_hand(so101, targets, lam=0.0).median_iterations == hand[build.MAX_STEP]


def test_transpose_method_steps_busss_alpha(so101, so101_model):
    """Step 2's transpose row: one step of solve(method="transpose") is alpha J^T e with alpha = e^T J J^T e /
    |J J^T e|^2, the length minimising |e - alpha J J^T e| (the error after it recomputed by MuJoCo's site)."""
    from physai.ik import Solver, ik_problem, solve

    q0 = np.array([0.1, -0.5, 0.8, 0.3, 0.2])
    target = mj_site(so101_model, so101, np.array([0.15, -0.45, 0.85, 0.3, 0.2]))[0]
    p0, _, J = mj_site(so101_model, so101, q0)
    e, Jp = target - p0, J[:3]
    g = Jp.T @ e
    alpha = e @ (Jp @ g) / np.linalg.norm(Jp @ g) ** 2
    grid = np.linspace(0.5, 1.5, 100_001) * alpha  # the minimiser of the linear model's error, by a grid
    np.testing.assert_allclose(grid[np.argmin([np.linalg.norm(e - a * Jp @ g) for a in grid])], alpha, rtol=1e-4)
    trace = []
    solve(ik_problem(so101, target, q0, task="position"),
          Solver(method="transpose", restarts=0, iterations=1, step=10.0, backend="numpy"), trace=trace)
    after = next(perr for rows, its, perr, _ in trace if np.all(its == 1))
    expected = np.linalg.norm(target - mj_site(so101_model, so101, q0 + alpha * g)[0])
    np.testing.assert_allclose(after, expected, rtol=1e-9)
    assert expected < 0.99 * np.linalg.norm(e)


def test_near_singular_steps_from_mujocos_jacobian(build, so101, so101_model):
    ns = build.near_singular(so101)
    q0 = build.Q_STRETCHED
    p0, _, J = mj_site(so101_model, so101, q0)
    U, S, _ = np.linalg.svd(J[:3])
    np.testing.assert_allclose(ns.sigma_min, S[-1], rtol=1e-9)
    # the target: PULL back along the weak direction (towards the base, against the reach)
    assert np.isclose(abs(U[:, -1] @ (ns.target - p0)), build.PULL, atol=1e-12) and (ns.target - p0) @ p0 < 0
    e = ns.target - p0
    damped = lstsq(np.r_[J[:3], build.LAMBDA * np.eye(5)], np.r_[e, np.zeros(5)])[0]
    assert np.abs(damped).max() < build.MAX_STEP  # unscaled, and inside the bound |e| / (2 lam)
    np.testing.assert_allclose(ns.first_step["built"], np.abs(damped).max(), rtol=1e-9)
    np.testing.assert_allclose(ns.first_step_norm["built"], np.linalg.norm(damped), rtol=1e-9)
    assert ns.first_step_norm["built"] <= build.PULL / (2 * build.LAMBDA)  # the page's "inside the bound"
    undamped = np.linalg.pinv(J[:3]) @ e
    np.testing.assert_allclose(ns.asked, np.abs(undamped).max(), rtol=1e-6)
    assert ns.asked > ns.first_step["wild"]  # the joint limit cut the step short
    q1 = np.clip(q0 + undamped, so101.lower, so101.upper)
    np.testing.assert_allclose(ns.first_step["wild"], np.abs(q1 - q0).max(), rtol=1e-9)
    np.testing.assert_allclose(ns.errors["wild"][1], np.linalg.norm(ns.target - mj_site(so101_model, so101, q1)[0]),
                               rtol=1e-9)
    assert ns.peak_error["wild"] > 5 * build.PULL and np.isclose(ns.peak_error["built"], build.PULL, rtol=1e-12)
    assert max(ns.final_error.values()) < build.TOL


def test_either_guard_rail_alone_keeps_the_stretched_start_sane_and_damping_keeps_the_direction(build, so101,
                                                                                               so101_model):
    """Break it's table from the stretched pose, recomputed with mj_jacSite and MuJoCo's site: undamped with the step
    limit, the first step is the Gauss-Newton step shrunk to MAX_STEP; damped without it, the damped step. With
    either, the error falls at every step; with neither it rises first. Toward the mixed target (along the strong
    and weak directions alike) the shrunk Gauss-Newton step keeps a small part of the strong share, damping nearly
    all, and leaves the larger error after one step (errors by MuJoCo's site)."""
    ns = build.near_singular(so101)
    q0 = build.Q_STRETCHED
    p0, _, J = mj_site(so101_model, so101, q0)
    U, _, Vt = np.linalg.svd(J[:3])
    e = ns.target - p0
    gn = np.linalg.pinv(J[:3]) @ e
    np.testing.assert_allclose(ns.first_step["undamped"], np.abs(gn * build.MAX_STEP / np.abs(gn).max()).max(),
                               rtol=1e-9)
    damped = lstsq(np.r_[J[:3], build.LAMBDA * np.eye(5)], np.r_[e, np.zeros(5)])[0]
    np.testing.assert_allclose(ns.first_step["unlimited"], np.abs(damped).max(), rtol=1e-9)
    # the second damped step asks for more than the step limit: "as built" shortens it, so its path parts from
    # "no step limit" after step 2 although both rows of the table agree
    q1 = np.clip(q0 + damped, so101.lower, so101.upper)
    p1, _, J1 = mj_site(so101_model, so101, q1)
    second = lstsq(np.r_[J1[:3], build.LAMBDA * np.eye(5)], np.r_[ns.target - p1, np.zeros(5)])[0]
    np.testing.assert_allclose(ns.second_asked, np.abs(second).max(), rtol=1e-6)
    assert ns.second_asked > build.MAX_STEP
    np.testing.assert_allclose(ns.errors["built"][:2], ns.errors["unlimited"][:2], rtol=1e-12)
    assert not np.isclose(ns.errors["built"][2], ns.errors["unlimited"][2], rtol=1e-3)
    for key in ("built", "undamped", "unlimited"):
        assert ns.falls[key] and np.all(np.diff(ns.errors[key]) < 0) and ns.peak_error[key] == ns.errors[key][0]
        assert ns.steps[key] == len(ns.errors[key]) - 1 and ns.final_error[key] < build.TOL
    assert not ns.falls["wild"] and ns.peak_error["wild"] > 5 * build.PULL
    weak = ns.target - p0
    strong = np.sign(U[2, 0]) * U[:, 0]  # the strong direction, pointing up
    mixed = p0 + (weak + build.PULL * strong) / np.sqrt(2)  # weak: PULL along the weak direction
    # what the page says of the mixed target: mixed_each back along the weak direction and as far up the nearly
    # vertical strong one, PULL in all
    np.testing.assert_allclose(ns.mixed, mixed, atol=1e-12)
    np.testing.assert_allclose([U[:, -1] @ (mixed - p0), U[:, 0] @ (mixed - p0)],
                               [U[:, -1] @ weak / np.sqrt(2), np.sign(U[2, 0]) * ns.mixed_each], atol=1e-12)
    assert np.isclose(np.linalg.norm(mixed - p0), build.PULL, rtol=1e-12) and strong[2] > 0.99
    assert np.isclose(abs(U[:, -1] @ weak) / np.sqrt(2), ns.mixed_each, rtol=1e-12)
    e = mixed - p0
    gn = np.linalg.pinv(J[:3]) @ e
    steps = {"built": lstsq(np.r_[J[:3], build.LAMBDA * np.eye(5)], np.r_[e, np.zeros(5)])[0],
             "undamped": gn * build.MAX_STEP / np.abs(gn).max()}
    for key, dq in steps.items():
        q1 = np.clip(q0 + dq, so101.lower, so101.upper)
        np.testing.assert_allclose(ns.mixed_after_mm[key], 1000 * np.linalg.norm(mixed - mj_site(so101_model, so101,
                                                                                                 q1)[0]), rtol=1e-9)
        np.testing.assert_allclose(ns.mixed_kept[key], (Vt[0] @ (q1 - q0)) / (Vt[0] @ gn), rtol=1e-6)
    np.testing.assert_allclose(ns.mixed_after_mm["unlimited"], ns.mixed_after_mm["built"], rtol=1e-12)
    # what the page says: the Gauss-Newton step asks mixed_asked of one joint, and the step limit scales the whole
    # step, its strong share too, by MAX_STEP / mixed_asked
    np.testing.assert_allclose(ns.mixed_asked, np.abs(gn).max(), rtol=1e-9)
    np.testing.assert_allclose(ns.mixed_kept["undamped"], build.MAX_STEP / ns.mixed_asked, rtol=1e-6)
    assert ns.mixed_kept["undamped"] < 0.1 < 0.99 < ns.mixed_kept["built"]  # what the page says
    assert ns.mixed_after_mm["built"] < ns.mixed_after_mm["undamped"] < 1000 * build.PULL


def test_build_main_saves_the_pages_numbers(build, so101, so101_model, tmp_path, monkeypatch):
    from physai.course.lesson import read_results

    monkeypatch.setattr(build, "HERE", tmp_path)
    monkeypatch.setattr(build, "lab_targets", lambda chain, f=build.lab_targets: f(chain, n=6))
    monkeypatch.setattr(build, "N_TARGETS", 3)
    build.main(False)
    saved = read_results(tmp_path)["build"]
    targets = build.lab_targets(so101)
    hand, library = build.lab_hand(so101, targets), build.lab_library(so101, targets)
    assert saved["lab"]["hand"]["success"] == _mujoco_success(so101_model, so101, targets, hand.q).mean()
    assert saved["lab"]["library"]["success"] == _mujoco_success(so101_model, so101, targets, library.q).mean()
    assert saved["lab"]["success_needed"] == saved["lab"]["library"]["success"] - build.LAB_MARGIN
    # the page's "within sampling noise": the gap against two standard errors of a difference of two binomial
    # proportions, SciPy's binomial variance at the pooled success
    from scipy.stats import binom

    n, pooled = len(targets), (hand.success + library.success) / 2
    se = np.sqrt(2 * binom(n, pooled).var()) / n
    assert saved["lab"]["in_noise"] == (abs(hand.success - library.success) < 2 * se)
    swap = build.step_limits(so101, targets)  # pinned to MuJoCo in its own test
    assert saved["swap"]["hand"]["median_iterations"] == swap.hand.median_iterations
    assert saved["swap"]["library"]["median_iterations"] == swap.library.median_iterations
    rows = {row["key"]: row for row in saved["break"] + saved["break_none"]}
    assert sorted(rows) == sorted(key for key, *_ in build.VARIANTS)
    assert saved["singular"]["step_bound"] == build.PULL / (2 * build.LAMBDA)
    scale = build.damping_scale(so101)  # pinned to mj_jacSite in its own test
    np.testing.assert_allclose([saved["scale"][k] for k in ("kept_strong", "kept_weak", "gradient_gap")],
                               [scale.kept_strong, scale.kept_weak, scale.gradient_gap], rtol=1e-12)
    # the damped gain sigma / (sigma^2 + lam^2) peaks at sigma = lam: the step bound by a grid over sigma (m/rad)
    sigma = np.linspace(0, 1, 100_001)
    np.testing.assert_allclose(saved["singular"]["step_bound"],
                               build.PULL * np.max(sigma / (sigma**2 + build.LAMBDA**2)), rtol=1e-8)
    assert saved["run"]["converged"] == round(saved["run"]["rate"] * saved["run"]["n"])
    assert (tmp_path / "singular_start.png").stat().st_size > 0


def test_the_hand_built_miss_comes_from_a_pose_by_the_joint_limits(build, so101, so101_model):
    """Build it's one miss: the targets are MuJoCo site positions of seeded in-limit poses; a target missed (by MuJoCo)
    is listed with its answer's error and the joints of its pose within NEAR_LIMIT of MuJoCo's joint ranges."""
    r = build.run()
    q_true = so101.random_q(np.random.default_rng(build.SEED), build.N_TARGETS)
    np.testing.assert_allclose(r.targets, [mj_site(so101_model, so101, q)[0] for q in q_true], atol=1e-15)
    err = np.linalg.norm(np.array([mj_site(so101_model, so101, q)[0] for q in r.q_hand]) - r.targets, axis=1)
    missed = np.flatnonzero(err >= build.TOL)
    assert len(r.misses) == len(missed) == r.n - r.converged
    # the page's "almost all in abandoned attempts": the last attempt takes at most ITERATIONS of the hardest's steps
    assert r.steps_max >= 10 * build.ITERATIONS
    ids = [so101_model.joint(n).id for n in so101.joint_names]
    lo, hi = so101_model.jnt_range[ids, 0], so101_model.jnt_range[ids, 1]
    for m, i in zip(r.misses, missed):
        np.testing.assert_allclose(m["error_mm"], 1000 * err[i], rtol=1e-9)
        gap = np.minimum(q_true[i] - lo, hi - q_true[i])
        near = [(n, g) for n, g in zip(so101.joint_names, gap) if g < build.NEAR_LIMIT]
        assert [j["joint"] for j in m["near_limit"]] == [n for n, _ in near]
        np.testing.assert_allclose([j["to_limit"] for j in m["near_limit"]], [g for _, g in near], atol=1e-12)
        assert len(near) >= 1 and m["library_error_mm"] < 1000 * build.TOL  # what the page says: the library got it


def _table_distances(qs, table_half, table_pos):
    """Each answer's smallest mj_geomDistance between the SO-101's colliding geoms and a table box added with MjSpec
    (MuJoCo alone: no physai collision code)."""
    import mujoco

    spec = mujoco.MjSpec.from_file(str(robots.model_path("so101")))
    spec.worldbody.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=table_half, pos=table_pos)
    m = spec.compile()
    d = mujoco.MjData(m)
    table = m.geom("table").id
    arm = [g for g in range(m.ngeom) if m.geom_bodyid[g] > 1 and (m.geom_contype[g] or m.geom_conaffinity[g])]
    adr = [m.jnt_qposadr[m.joint(n).id] for n in robots.load("so101").joint_names]
    out = []
    for q in qs:
        d.qpos[adr] = q
        mujoco.mj_kinematics(m, d)
        out.append(min(mujoco.mj_geomDistance(m, d, table, g, 1.0, None) for g in arm))
    return np.array(out)


@pytest.fixture(scope="module")
def table(ex):
    return ex.through_table(n_targets=16)


def test_through_table_plain_answers_collide_avoid_answers_clear_by_mj_geomDistance(ex, table):
    t = table
    half, pos = ex.TABLE
    plain = _table_distances(t.plain_q, half, pos)
    avoid = _table_distances(t.avoid_q, half, pos)
    assert np.sum(t.plain_ok & (plain < t.margin)) >= 1  # Break it: plain IK reports answers in the table
    assert t.avoid_ok.mean() >= 0.9
    assert np.all(avoid[t.avoid_ok] >= t.margin)  # never a converged answer within the margin of the table
    assert t.avoid_colliding == 0 and t.plain_colliding >= np.sum(t.plain_ok & (plain < t.margin))


def test_through_tables_snippet_runs_with_the_experiments_scene_and_keeps_the_margin_by_mj_geomDistance(ex):
    """The page's code block, run as printed: the experiment's table and margin, and an answer that converged and
    keeps the margin from everything by MuJoCo's distances."""
    import inspect
    from pathlib import Path

    from physai import collision

    page = (Path(__file__).parents[1] / "experiments" / LESSON / "lesson.md").read_text()
    code = next(b for b in page.split("```python\n")[1:] if "collision_world(" in b).split("```")[0]
    scope = {}
    exec(code, scope)  # noqa: S102 -- the page's own snippet, as a learner runs it
    assert scope["table"] == collision.Obstacle("table", "box", *ex.TABLE)
    world = scope["world"]
    margin = inspect.signature(ex.through_table).parameters["margin"].default
    assert world.margin == margin and scope["r"].converged.all()
    assert mujoco_distances(world, scope["r"].q[0]).min() >= margin - 1e-9


def test_through_table_page_numbers_are_mj_geomDistances(ex, table, so101):
    """What the page quotes: answers within the margin of the table (MuJoCo alone) and of the arm's own links, the
    overlapping ones and the deepest, the closest avoid= answer; avoid= replaces exactly the colliding answers."""
    from physai import collision

    t, half, pos = table, *ex.TABLE
    world = collision.collision_world(collision.scene("so101", [collision.Obstacle("table", "box", half, pos)]),
                                      so101, margin=t.margin)
    on_table = np.array(["table" in pair for pair in world.pair_names])
    plain, avoid = (np.array([mujoco_distances(world, q, cap=1.0) for q in qs]) for qs in (t.plain_q, t.avoid_q))
    conv, closest, r = t.plain_ok, plain.min(axis=1), t
    assert r.plain_near_table == np.sum(conv & (_table_distances(t.plain_q, half, pos) < t.margin))
    assert r.plain_near_self == np.sum(conv & (plain[:, ~on_table].min(axis=1) < t.margin))
    assert r.plain_colliding == np.sum(conv & (closest < t.margin)) >= 1
    assert r.plain_penetrating == np.sum(conv & (closest < 0))
    np.testing.assert_allclose(r.plain_deepest_mm, -1000 * closest.min(), atol=1e-9)
    into_table = _table_distances(t.plain_q, half, pos)
    np.testing.assert_allclose(r.plain_deepest_table_mm, -1000 * into_table.min(), atol=1e-9)
    assert r.plain_deepest_self == (plain[:, ~on_table].min() < into_table.min())
    np.testing.assert_allclose(r.avoid_closest_mm, 1000 * avoid[t.avoid_ok].min(axis=1).min(), atol=1e-9)
    changed = np.any(t.avoid_q != t.plain_q, axis=1)  # bitwise: a clear plain answer comes back as it was
    np.testing.assert_array_equal(changed, conv & (closest < t.margin))
    assert r.avoid_changed == r.plain_colliding and r.plain_clear == np.sum(conv & (closest >= t.margin))
    assert (r.plain_all, r.avoid_all) == (r.plain_converged == r.targets, r.avoid_converged == r.targets)  # "all"
    # the figure's flat top is the shoulder's gap to the table, the same at every answer (it only turns in place)
    shoulder = on_table & np.array([any(x.startswith("shoulder#") for x in pair) for pair in world.pair_names])
    gap = plain[:, shoulder].min(axis=1)
    np.testing.assert_allclose(r.shoulder_gap_mm, 1000 * gap.min(), atol=1e-9)
    np.testing.assert_allclose(r.shoulder_spread_mm, 1000 * np.ptp(gap), atol=1e-9)
    assert r.shoulder_spread_mm < 1e-6  # mm: round-off
    np.testing.assert_allclose(r.top_mm, 1000 * max(closest.max(), avoid.min(axis=1).max()), atol=1e-9)
    np.testing.assert_allclose(r.top_mm, r.shoulder_gap_mm, atol=1e-6)


def test_scene_pictures_the_deepest_plain_overlap_and_the_avoid_answer_clear(run_lesson, tmp_path, so101_model, so101):
    """scene.py: the picture exists; the plain answer overlaps the table by the depth its caption states (the deepest
    pair with the table, by MuJoCo's mj_geomDistance) and the avoid= one keeps the margin, both at the target
    (MuJoCo's site position)."""
    from conftest import check_picture, load_lesson

    from physai import collision
    from physai.course.lesson import read_figures

    scene = load_lesson(LESSON, "scene.py")
    _, saved = run_lesson(scene, False)
    check_picture(tmp_path, saved["picture"], "so101")
    # no legs under the see-through top (they would look like posts on it): nothing drawn 1 mm below its underside
    half_, centre_ = scene.TABLE
    assert all(b.center[2] - b.half[2] >= centre_[2] - half_[2] - 1e-3 for b in scene.table_boxes(half_, centre_))
    half, centre = map(np.array, scene.TABLE)
    label = np.array(saved["table_label"])  # where the picture writes "table": on the top, clear of the base
    assert label[2] == centre[2] + half[2] and np.all(np.abs(label[:2] - centre[:2]) < half[:2])
    assert np.linalg.norm(label[:2] - so101.T_prev_joint[0, :2, 3]) > 0.15
    world = collision.collision_world(collision.scene("so101", [collision.Obstacle("table", "box", half, centre)]),
                                      so101, margin=scene.MARGIN, self_margin=scene.MARGIN)
    plain = mujoco_distances(world, np.array(saved["q_plain"]), cap=1.0)
    avoid = mujoco_distances(world, np.array(saved["q_avoid"]), cap=1.0)
    table = np.array(["table" in (scene.part(a), scene.part(b)) for a, b in world.pair_names])
    np.testing.assert_allclose(saved["depth_mm"], -1000 * plain[table].min(), atol=1e-9)
    assert saved["depth_mm"] > 0 and 1000 * avoid.min() >= saved["margin_mm"] - 1e-9
    deepest = [scene.part(g) for g in np.asarray(world.pair_names)[table][int(np.argmin(plain[table]))]]
    assert saved["into"] == "the table" and saved["part"] in deepest and "table" in deepest
    figure = read_figures(tmp_path)[scene.FILE]
    assert f"The {saved['part']}'s dip into {saved['into']} is too shallow to see from here" in figure.caption
    assert f"{saved['depth_mm']:.1f} mm inside {saved['into']}" in figure.alt
    for q in (saved["q_plain"], saved["q_avoid"]):
        assert np.linalg.norm(mj_site(so101_model, so101, np.array(q))[0] - saved["target"]) < 1e-3
    # the close side view: its dot, the deepest point, lies as far below the table top (z = 0) as the overlap is deep,
    # and inside the table's footprint; the figure is drawn and its caption states that depth
    point = np.array(saved["deepest_point"])
    np.testing.assert_allclose(-1000 * point[2], saved["depth_mm"], atol=1e-6)
    assert np.all(np.abs(point[:2] - centre[:2]) < half[:2])
    assert (tmp_path / scene.CLOSE_FILE).stat().st_size > 0
    assert f"{saved['depth_mm']:.1f} mm below the table top" in read_figures(tmp_path)[scene.CLOSE_FILE].alt


def test_task_table_names_stay_whole_on_a_narrow_screen():
    """The residual table's task names are code that never breaks mid-word (``positi/on+axi/s`` at 375 px)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "experiments" / LESSON / "lesson.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| <code") and "rows" in line]
    assert [r.split("<code style=\"white-space:nowrap\">")[1].split("</code>")[0] for r in rows] == [
        "position", "pose", "position+axis"]


def test_through_table_figures_overlap_band_reaches_the_axes_bottom(ex, table, monkeypatch):
    """through_table.png: the shaded overlap band spans from the axes' bottom up to 0 mm (matplotlib's own limits)."""
    seen = {}
    monkeypatch.setattr(ex, "save_figure", lambda fig, path, **kw: seen.update(ax=fig.axes[0]))
    ex.plot_through_table(table)
    ax = seen["ax"]
    band, = [p for p in ax.patches if p.get_label() == "overlap"]
    assert band.get_data_transform() == ax.get_yaxis_transform()  # its y in data units (mm)
    np.testing.assert_allclose([band.get_y(), band.get_y() + band.get_height()], [ax.get_ylim()[0], 0.0], atol=1e-9)
    assert ax.get_ylim()[0] < 1000 * table.plain_clearance.min()  # mm: below every plotted answer
