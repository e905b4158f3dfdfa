"""The IK API: one problem checked once, one solve, options as objects, the previous release kept one more with a
warning. References: the previous release's entry points (the same answers, bit for bit), SciPy's bounded least
squares (the tracking preset's compromise), and counts of the input checks."""

import dataclasses
import inspect
import warnings

import numpy as np
import pytest
from scipy.optimize import least_squares

import physai
from physai import ik, jaxik, kinematics, nullspace, robots
from physai.errors import InputError
from physai.ik import Clearance, Solver, Task, ik_problem, solve, solve_ik, solve_ik_batch
from test_ik import _count_checks


@pytest.fixture(scope="module")
def so101():
    return robots.load("so101")


def test_physai_exposes_four_ik_functions_none_with_kwargs_each_at_most_seven_keywords():
    functions = [name for name in physai.__all__ if callable(getattr(physai, name)) and getattr(physai, name).__module__
                 in ("physai.ik",) and inspect.isfunction(getattr(physai, name))]
    assert sorted(functions) == ["ik_problem", "solve", "solve_ik", "solve_ik_batch"]
    for name in functions:
        params = inspect.signature(getattr(physai, name)).parameters.values()
        assert not any(p.kind is p.VAR_KEYWORD for p in params), name
        assert sum(p.default is not p.empty or p.kind is p.KEYWORD_ONLY for p in params) <= 7, name


def test_ik_all_lists_public_names_only():
    assert not [name for name in ik.__all__ if name.startswith("_")]
    assert not {"check_problem", "check_options", "compiled_settings", "restart_uniforms", "check_targets"} & set(
        ik.__all__)
    assert all(hasattr(ik, name) for name in ik.__all__)


def test_problem_is_frozen_printable_and_with_target_equals_a_fresh_problem(so101):
    q_true = np.array([0.3, -0.6, 0.9, 0.4, 0.3])
    T = kinematics.tool_pose(so101, q_true)
    problem = ik_problem(so101, T, task=Task("pose", tol_position=1e-6))
    assert "Problem(chain='so101', targets=1" in repr(problem)
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.q0 = so101.q_ref
    T2, q0 = kinematics.tool_pose(so101, q_true + 0.05), q_true
    moved, fresh = problem.with_target(T2, q0), ik_problem(so101, T2, q0, task=Task("pose", tol_position=1e-6))
    a, b = solve(moved, Solver.tracking()), solve(fresh, Solver.tracking())
    assert a.q.tobytes() == b.q.tobytes() and a.converged[0]
    # FK of the answer is the target (the chain's own FK checked against MuJoCo in test_kinematics)
    assert np.abs(kinematics.tool_pose(so101, a.q[0]) - T2).max() < 1e-5


def test_with_target_checks_only_the_target_and_the_start(so101, monkeypatch):
    problem = ik_problem(so101, [0.2, 0.0, 0.1], task="position")
    calls = _count_checks(monkeypatch)
    problem.with_target([0.21, 0.0, 0.1], so101.q_middle)
    assert calls["check_q"] == 1 and calls["check"] <= 1


def test_a_list_target_makes_no_more_checks_than_an_array(so101, monkeypatch):
    target = [0.2, 0.0, 0.1]
    calls = _count_checks(monkeypatch)
    counts = []
    for t in (np.array(target), target):
        calls.update(check_q=0, check=0)
        r = solve_ik(so101, t, so101.q_middle, task="position")
        counts.append(dict(calls))
    assert r.converged and counts[1] == counts[0]


def test_null_space_path_checks_at_most_eight_whatever_the_iterations_and_targets(monkeypatch):
    panda = robots.load("panda")
    targets = kinematics.tool_pose(panda, panda.random_q(np.random.default_rng(1), 6))
    calls = _count_checks(monkeypatch)
    counts = []
    for B, iterations in ((1, 5), (6, 200)):
        prefer = nullspace.Prefer(nullspace.joint_limit_cost(panda), iterations=iterations)
        calls.update(check_q=0, check=0)
        res = solve_ik_batch(panda, targets[:B], prefer=prefer)
        counts.append(calls["check_q"] + calls["check"])
    assert res.converged.all() and max(counts) <= 8, counts


def test_jax_path_checks_at_most_eight_whatever_the_targets(so101, monkeypatch):
    pytest.importorskip("jax")
    targets = kinematics.tool_pose(so101, so101.random_q(np.random.default_rng(2), 5))[:, :3, 3]
    solver = Solver(method="dls", backend="jax", restarts=3, iterations=30)
    calls = _count_checks(monkeypatch)
    counts = []
    for B in (1, 5):
        calls.update(check_q=0, check=0)
        solve_ik_batch(so101, targets[:B], task="position", solver=solver)
        counts.append(calls["check_q"] + calls["check"])
    assert max(counts) <= 8, counts


def test_prefer_equals_the_deprecated_refinement_and_lowers_the_cost():
    panda = robots.load("panda")
    targets = kinematics.tool_pose(panda, panda.random_q(np.random.default_rng(4), 4))
    objective = nullspace.joint_limit_cost(panda)
    new = solve_ik_batch(panda, targets, prefer=nullspace.Prefer(objective))
    with pytest.warns(DeprecationWarning, match="Prefer"):
        old = nullspace.refine_in_nullspace(panda, targets, solve_ik_batch(panda, targets), objective=objective)
    np.testing.assert_array_equal(new.q, np.array([r.q for r in old]))
    np.testing.assert_array_equal(new.cost, [r.cost_final for r in old])
    assert (new.cost <= objective.value(solve_ik_batch(panda, targets).q)).all()
    with pytest.warns(DeprecationWarning, match="prefer="):
        one = nullspace.solve_ik_redundant(panda, targets[0], objective=objective)
    np.testing.assert_array_equal(one.q, new.q[0])


@pytest.mark.parametrize("flat, task, solver", [
    (dict(restarts=5, method="lm"), Task(), Solver(restarts=5)),
    (dict(weights=[1, 1, 1, 0.01, 0.01, 0.01], max_step=0.2), Task(weights=(1, 1, 1, 0.01, 0.01, 0.01)),
     Solver(step=0.2)),
    (dict(backend="numpy"), Task(), Solver(backend="numpy")),
    (dict(engine="numpy"), Task(), Solver(backend="numpy")),
])
def test_flat_keywords_still_work_and_warn_naming_the_objects(so101, flat, task, solver):
    T = kinematics.tool_pose(so101, np.array([0.1, -0.5, 0.8, 0.3, 0.2]))
    with pytest.warns(DeprecationWarning, match="solver=physai.ik.Solver"):
        old = solve_ik(so101, T, **flat)
    new = solve_ik(so101, T, task=task, solver=solver)
    assert old.q.tobytes() == new.q.tobytes() and old.reason == new.reason


@pytest.mark.parametrize("flat, match", [
    (dict(engine="jax"), r"^engine: "),
    (dict(backend="compiled", method="dls"), "cannot serve"),
    (dict(backend="compiled", trace=[]), "cannot serve"),
    (dict(backend="compiled", engine="numpy"), "cannot serve"),
])
def test_flat_keywords_the_old_api_refused_are_still_refused_in_one_line(so101, flat, match):
    T = kinematics.tool_pose(so101, np.array([0.1, -0.5, 0.8, 0.3, 0.2]))
    with pytest.warns(DeprecationWarning), pytest.raises(InputError, match=match):
        solve_ik(so101, T, **flat)


def test_dls_ik_still_works_and_warns_naming_the_jax_solver(so101):
    targets = kinematics.tool_pose(so101, so101.random_q(np.random.default_rng(5), 3))
    with pytest.warns(DeprecationWarning, match="Solver\\(method='dls', backend='jax'\\)"):
        res = jaxik.dls_ik(so101, targets, restarts=20)
    assert res.converged.all()


def test_an_unreachable_target_gives_one_reason_for_every_task(so101):
    far = np.eye(4)
    far[:3, 3] = (1.0, 0.0, 0.2)  # 1 m out, beyond the SO-101's reach
    reasons = {task: solve_ik(so101, far, task=task).reason for task in ik.TASKS}
    assert set(reasons.values()) == {"unreachable"}, reasons


def test_options_are_checked_when_built_naming_the_field():
    for make, name in ((lambda: Task("axis"), "task"), (lambda: Task(weights=(1, 1, 1)), "weights"),
                       (lambda: Solver(restarts=-1), "restarts"), (lambda: Solver(step=0), "step"),
                       (lambda: Solver(backend="gpu"), "backend"), (lambda: Solver(method="pinv", backend="compiled"),
                                                                    "backend")):
        with pytest.raises(InputError, match=f"^{name}: "):
            make()
    with pytest.raises(InputError, match="^limits: "):
        ik_problem(robots.load("planar2r"), [0.5, 0.3, 0.0], task="position", limits=("world",))


def test_tracking_preset_lands_on_scipys_bounded_least_squares_compromise(so101):
    # A 5-DoF arm asked to hold one orientation round a 5 cm circle: each tick's answer, from the previous one, is the
    # minimum of the weighted residual (orientation weighted 0.01) that SciPy's bounded trust-region solver finds
    # from the same start.
    q = np.array([0.0, -0.6, 0.9, 0.4, 0.0])
    T0 = kinematics.tool_pose(so101, q)
    task = Task("pose", weights=(1, 1, 1, 0.01, 0.01, 0.01))
    problem = ik_problem(so101, T0, q, task=task)
    sw = np.sqrt(task.weights)
    for k in range(1, 6):
        T = T0.copy()
        T[:3, 3] += 0.05 * np.array([np.cos(k * 0.3) - 1.0, np.sin(k * 0.3), 0.0])
        q_prev, q = q, solve(problem.with_target(T, q), Solver.tracking()).q[0]

        def residual(x, T=T):
            e, _, _, _ = ik.task_residual("pose", *kinematics.tool_pose_and_jacobian(so101, x[None]), T[None],
                                          np.array([0.0, 0.0, 1.0]))
            return e[0] * sw

        ref = least_squares(residual, q_prev, bounds=(so101.lower, so101.upper), xtol=1e-14, ftol=1e-14, gtol=1e-14)
        p, p_ref = kinematics.tool_pose(so101, q)[:3, 3], kinematics.tool_pose(so101, ref.x)[:3, 3]
        assert np.linalg.norm(p - p_ref) < 1e-4  # 0.1 mm


def test_clearance_limit_equals_avoid(so101):
    from physai import collision

    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    world = collision.collision_world(collision.scene("so101", [post]), so101)
    targets = kinematics.tool_pose(so101, so101.random_q(np.random.default_rng(6), 4))[:, :3, 3]
    a = solve(ik_problem(so101, targets, task="position", limits=(Clearance(world),)))
    b = solve_ik_batch(so101, targets, task="position", avoid=world)
    np.testing.assert_array_equal(a.q, b.q)
    assert (world.clear(a.q[a.converged])).all()


def test_no_internal_caller_warns(so101):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solve_ik(so101, [0.2, 0.0, 0.1], task="position", solver=Solver.tracking())


@pytest.mark.parametrize("task, with_prefer", [("position", False), ("pose", False), ("position", True)])
def test_out_receives_the_answers_of_the_solve_without_it(so101, task, with_prefer):
    """``out=`` changes where the answers land, not what they are: every field equals the solve without it (the
    reference), and ``q`` is the caller's array."""
    prefer = nullspace.Prefer(nullspace.joint_limit_cost(so101)) if with_prefer else None
    q = so101.lower + np.random.default_rng(3).random((6, so101.n)) * (so101.upper - so101.lower)
    T = kinematics.tool_pose(so101, q)
    targets = T[:, :3, 3] if task == "position" else T
    plain = solve_ik_batch(so101, targets, task=task, prefer=prefer, rng=np.random.default_rng(1))
    out = np.full((6, so101.n), np.nan)
    into = solve(ik_problem(so101, targets, task=task, prefer=prefer), rng=np.random.default_rng(1), out=out)
    assert into.q is out
    for field in dataclasses.fields(plain):
        a, b = getattr(plain, field.name), getattr(into, field.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, field.name
    again = np.empty((6, so101.n))
    assert solve_ik_batch(so101, targets, task=task, prefer=prefer, rng=np.random.default_rng(1), out=again).q is again
    np.testing.assert_array_equal(again, plain.q)


@pytest.mark.parametrize("out, why", [
    (np.empty((6, 5), np.float32), "dtype float32"), (np.empty((5, 5)), "shape (5, 5)"),
    (np.empty((5, 6)).T, "not C-contiguous"), ([[0.0] * 5] * 6, "got list"),
])
def test_a_bad_out_is_one_line_naming_out_before_the_solve(so101, out, why):
    problem = ik_problem(so101, np.tile([0.2, 0.0, 0.1], (6, 1)), task="position")
    with pytest.raises(InputError, match=r"^out: .*" + why.replace("(", r"\(").replace(")", r"\)")) as error:
        solve(problem, out=out)
    assert "\n" not in str(error.value)
