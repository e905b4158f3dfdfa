"""physai.ik pinned to independent references: MuJoCo's site pose, SciPy's rotation log and bounded
least squares, central differences of the residual."""

import dataclasses

import numpy as np
import pytest
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

from physai import ik, kinematics, mj, robots
from physai import transforms as tf
from physai.errors import InputError
from physai.ik import METHODS, Solver, Task, solve_ik, solve_ik_batch, task_residual
from physai.singularity import health

from conftest import mujoco_errors


def test_so3_log_matches_scipy_including_near_pi(rng):
    rv = Rotation.random(200, random_state=1).as_rotvec()
    axes = rng.normal(size=(50, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    near_pi = axes * (np.pi - 10.0 ** rng.uniform(-9, -1, 50))[:, None]
    tiny = axes * 10.0 ** rng.uniform(-12, -3, 50)[:, None]
    for vecs in (rv, near_pi, tiny):
        R = Rotation.from_rotvec(vecs).as_matrix()
        np.testing.assert_allclose(tf.so3_log(R), Rotation.from_matrix(R).as_rotvec(), atol=1e-9)


@pytest.mark.parametrize("task", ik.TASKS)
def test_task_jacobian_is_minus_central_difference_of_residual_at_solution(task, panda, rng):
    # At e = 0 the residual's derivative is exactly -J_t (the log map's Jacobian is I there).
    a = np.array([0.0, 0.0, 1.0])
    for q in panda.random_q(rng, 3):
        T_target = kinematics.tool_pose(panda, q)

        def res(x):
            T, J = kinematics.tool_pose_and_jacobian(panda, x[None])
            return task_residual(task, T, J, T_target[None], a)[0][0]

        T, J = kinematics.tool_pose_and_jacobian(panda, q[None])
        Jt = task_residual(task, T, J, T_target[None], a)[1][0]
        np.testing.assert_allclose(-kinematics.fd_jacobian(res, q, 1e-6), Jt, atol=1e-9)


def easy_poses(m, chain, task, rng, k):
    """Random poses away from limits whose task Jacobian (MuJoCo's) has condition number < 20: "easy" for
    gradient descent too, whose error shrinks only by ~(1 - 1/kappa^2) per step."""
    out = []
    while len(out) < k:
        q = chain.random_q(rng, (), inset=0.3)
        J = mj.site_jacobian(m, chain, q)
        if task == "position":
            J = J[:3]
        elif task == "position+axis":  # angular rows across the tool z only (a spin about z is no error)
            z = mj.site_pose(m, chain, q)[:3, 2]
            J = np.vstack([J[:3], (np.eye(3) - np.outer(z, z)) @ J[3:]])
        S = np.linalg.svd(J, compute_uv=False)
        if S[0] / S[ik.TASK_RANK[task] - 1] < 20:
            out.append(q)
    return out


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("robot,task", [("so101", "position"), ("so101", "position+axis"), ("panda", "pose")])
def test_every_method_converges_on_easy_targets_checked_in_mujoco(method, robot, task, request, rng):
    chain = request.getfixturevalue(robot)
    m = request.getfixturevalue(f"{robot}_model")
    for q_true in easy_poses(m, chain, task, rng, 2):
        q0 = q_true + rng.uniform(-0.05, 0.05, chain.n)
        T_target = kinematics.tool_pose(chain, q_true)
        r = solve_ik(chain, T_target, q0, task=task, solver=Solver(method=method, restarts=0))
        assert r.converged and r.reason == "converged" and r.unmet == ()
        perr, oerr = mujoco_errors(m, chain, r.q, T_target, task)
        assert perr < 1e-4 and oerr < 1e-3
        assert r.position_error == pytest.approx(perr, abs=1e-12)
        assert r.orientation_error == pytest.approx(oerr, abs=1e-6)


@pytest.mark.parametrize("method", ["lm", "dls", "pinv"])
def test_iterates_never_leave_the_joint_limits(method, so101, monkeypatch, rng):
    seen = []
    real = kinematics.pose_and_jacobian_trusted  # the solver's source of (T, J), on the q it checked once

    def recording(chain, q, engine):
        seen.append(np.array(q))
        return real(chain, q, engine)

    monkeypatch.setattr(kinematics, "pose_and_jacobian_trusted", recording)
    # reachable targets near the limits, and unreachable ones that pull the arm against them
    q_edge = np.clip(so101.random_q(rng, 5) * 1.2, so101.lower, so101.upper)
    targets = list(kinematics.tool_pose(so101, q_edge)[:, :3, 3]) + [np.array([0.6, 0.1, 0.2]), np.array([0.0, 0.0, -0.3])]
    # the NumPy backend: its every (T, J) request is observable (the compiled one's are inside numba; its
    # results are checked inside the limits in test_fast_ik.py)
    results = solve_ik_batch(so101, np.array(targets), task="position", rng=rng,
                             solver=Solver(method=method, restarts=3, backend="numpy"))
    qs = np.concatenate([s.reshape(-1, so101.n) for s in seen])
    assert len(qs) > 50
    assert np.all(qs >= so101.lower) and np.all(qs <= so101.upper)
    assert np.all((results.q >= so101.lower) & (results.q <= so101.upper))


@pytest.mark.parametrize("backend", ("compiled", "numpy"))
def test_unreachable_position_returns_closest_point_like_scipy_bounded_least_squares(backend, so101, so101_model):
    target = np.array([0.5, 0.3, 0.4])  # beyond the SO-101's ~0.45 m reach
    r = solve_ik(so101, target, task="position", solver=Solver(restarts=5, backend=backend))
    # Both reasons are truthful here: pressed against a limit, an attempt of the compiled backend still creeps
    # 1 % per `patience` steps when its budget ends (round-off lets the NumPy one leave the limit and stall).
    assert not r.converged and r.unmet == ("position",)
    assert r.reason == "unreachable"  # one word for every backend and task
    assert np.all((r.q >= so101.lower) & (r.q <= so101.upper))
    # independent reference: SciPy's bounded trust-region least squares from many starts, MuJoCo FK
    def res(q):
        return mj.site_pose(so101_model, so101, q)[:3, 3] - target

    def jac(q):
        return mj.site_jacobian(so101_model, so101, q)[:3]

    starts = so101.random_q(np.random.default_rng(3), 8)
    best = min(np.linalg.norm(least_squares(res, s, jac, bounds=(so101.lower, so101.upper), max_nfev=100).fun) for s in starts)
    assert r.position_error == pytest.approx(np.linalg.norm(res(r.q)), abs=1e-12)
    # within 0.1 % of the miss: near the stretched-arm optimum the distance barely depends on the wrist
    assert r.position_error <= best * (1 + 1e-3)


def test_five_dof_arm_on_a_six_d_pose_says_orientation_is_not_achieved(so101, so101_model):
    # a pose whose position the arm reaches, rotated about the tool z: a spin the 5-DoF arm lacks
    q = np.array([0.3, -0.4, 0.6, 0.2, 0.5])
    T = kinematics.tool_pose(so101, q)
    T_target = T @ tf.make_transform(tf.rotation_about_axis(np.array([1.0, 0, 0]), 0.6), np.zeros(3))
    r = solve_ik(so101, T_target, task=Task("pose", weights=[1, 1, 1, 0.01, 0.01, 0.01]), solver=Solver(restarts=10))
    assert not r.converged and "orientation" in r.unmet
    assert r.reason == "unreachable"
    perr, oerr = mujoco_errors(so101_model, so101, r.q, T_target, "pose")
    assert r.orientation_error == pytest.approx(oerr, abs=1e-9) and oerr > 1e-3
    assert r.position_error == pytest.approx(perr, abs=1e-12)


@pytest.mark.parametrize("backend", ("compiled", "numpy"))
def test_batch_fields_equal_looped_solve_ik_with_one_shared_generator(backend, panda):
    q_true = panda.random_q(np.random.default_rng(7), 6)
    # reachable poses and one beyond reach (unconverged: its reason and unmet are exercised too)
    T = np.concatenate([kinematics.tool_pose(panda, q_true), tf.translation(np.array([[2.0, 0.0, 0.5]]))])
    batched = solve_ik_batch(panda, T, rng=np.random.default_rng(11), solver=Solver(restarts=5, backend=backend))
    g = np.random.default_rng(11)
    looped = [solve_ik(panda, Ti, rng=g, solver=Solver(restarts=5, backend=backend)) for Ti in T]
    assert isinstance(batched, ik.IKBatchResult) and len(batched) == len(T)
    assert all(isinstance(r, ik.IKResult) for r in looped) and not looped[-1].converged
    for f in dataclasses.fields(ik.IKResult):
        got, want = getattr(batched, f.name), [getattr(r, f.name) for r in looped]
        if f.name in ("q", "position_error", "orientation_error"):  # vectorised vs one row: round-off apart
            np.testing.assert_allclose(got, np.array(want), rtol=0, atol=1e-9)
        elif f.name in ("method", "task"):
            assert [got] * len(T) == want
        elif f.name == "unmet":
            assert got == tuple(want)
        else:
            np.testing.assert_array_equal(got, np.array(want))
    assert batched.q.shape == (len(T), panda.n) and batched.q.dtype == np.float64
    assert batched.converged.dtype == bool and batched.iterations.dtype.kind == batched.restarts.dtype.kind == "i"
    assert batched.reason.dtype.kind == "U" and set(batched.reason) <= set(ik.REASONS)
    assert batched.success_rate == pytest.approx(np.mean([r.converged for r in looped]), abs=1e-15)


def test_batch_item_is_the_ik_result_of_that_target(so101):
    T = kinematics.tool_pose(so101, so101.random_q(np.random.default_rng(4), 3))
    batch = solve_ik_batch(so101, T, solver=Solver(restarts=2))
    assert [f.name for f in dataclasses.fields(ik.IKBatchResult)] == [f.name for f in dataclasses.fields(ik.IKResult)]
    items = list(batch)
    assert len(items) == 3 and all(isinstance(r, ik.IKResult) for r in items)
    for b in (0, 2, -1):
        r = batch[b]
        np.testing.assert_array_equal(r.q, batch.q[b])
        assert (r.converged, r.iterations, r.reason, r.restarts, r.unmet) == (
            batch.converged[b], batch.iterations[b], batch.reason[b], batch.restarts[b], batch.unmet[b])
        assert type(r.converged) is bool and type(r.iterations) is int and type(r.reason) is str
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.q = None


def test_seeded_restarts_are_reproducible(so101):
    q_true = so101.random_q(np.random.default_rng(5), 8)
    T = kinematics.tool_pose(so101, q_true)
    a = solve_ik_batch(so101, T, task="position+axis", rng=np.random.default_rng(1), solver=Solver(restarts=10))
    b = solve_ik_batch(so101, T, task="position+axis", rng=np.random.default_rng(1), solver=Solver(restarts=10))
    assert (a.restarts > 0).any()  # the test exercises restarts
    for name in ("q", "iterations", "restarts", "reason"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_result_health_is_health_of_mujoco_jacobian(panda, panda_model):
    q_true = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.6, 0.3])
    r = solve_ik(panda, kinematics.tool_pose(panda, q_true))
    h = r.health(panda)
    ref = health(mj.site_jacobian(panda_model, panda, r.q), "full", 0.3)
    np.testing.assert_allclose(h.sigma, ref.sigma, rtol=1e-10)


def test_bad_inputs_name_the_argument(so101):
    with pytest.raises(InputError, match="task"):
        solve_ik(so101, np.eye(4), task="orientation")
    with pytest.raises(InputError, match="method"):
        solve_ik(so101, np.eye(4), solver=Solver(method="newton"))
    with pytest.raises(InputError, match="target"):
        solve_ik(so101, np.zeros(3), task="pose")
    with pytest.raises(InputError, match="weights"):
        solve_ik(so101, np.zeros(3), task=Task("position", weights=[1, 1]))
    with pytest.raises(InputError, match="target"):
        solve_ik(so101, np.diag([2.0, 1, 1, 1]))


def test_reach_bound_holds_for_mujoco_site_positions(panda, panda_model, rng):
    base = mj.site_pose(panda_model, panda, panda.q_ref)  # any pose: joint 1's anchor does not move
    anchor0 = kinematics.joint_frames(panda, panda.q_ref)[0][0, :3, 3]
    dist = [np.linalg.norm(mj.site_pose(panda_model, panda, q)[:3, 3] - anchor0) for q in panda.random_q(rng, 300)]
    assert base.shape == (4, 4) and max(dist) <= ik.reach_bound(panda)


@pytest.mark.parametrize("option,value", [
    ("restarts", 2.5), ("restarts", 10**9), ("restarts", -1), ("iterations", float("nan")), ("iterations", 0),
    ("rng", 0), ("tol_position", 0.0), ("tol_position", -1e-4), ("tol_orientation", float("nan")),
    ("damping", -0.1), ("step", float("inf")), ("patience", 1.5), ("sigma_healthy", 0), ("lambda_max", -1),
    ("backend", "gpu"),
])
def test_bad_ik_options_are_refused_naming_the_option(so101, option, value):
    target = kinematics.tool_pose(so101, so101.q_ref, engine="numpy")
    with pytest.raises(InputError, match=f"^{option}: "):  # named as the caller spelled it
        if option == "rng":
            solve_ik(so101, target, rng=value)
        elif option.startswith("tol_"):
            Task("pose", **{option: value})
        else:
            Solver(**{option: value})


@pytest.mark.parametrize("weights", [[1, 1, -1], [1, 0, 1]])
def test_nonpositive_weight_is_refused_not_a_nan(so101, weights):
    with pytest.raises(InputError, match="^weights: "):
        solve_ik(so101, [0.2, 0.0, 0.1], task=Task("position", weights=weights))


def _roughened(T: np.ndarray, size: float) -> np.ndarray:
    """``T`` with its rotation block perturbed by ``size`` (an FK pose stored in float32 is ~1e-7 off)."""
    out = T.copy()
    out[:3, :3] += size * np.array([[0.3, -0.5, 0.2], [0.1, 0.4, -0.6], [-0.2, 0.3, 0.5]])
    return out


@pytest.mark.parametrize("kw", [{}, {"backend": "numpy"}, {"method": "dls"}, {"method": "pinv"},
                                {"method": "adaptive"}, {"method": "transpose"}])
def test_target_rigid_to_1e_7_is_accepted_on_every_ik_path(panda, panda_model, kw):
    q_t = panda.random_q(np.random.default_rng(11))
    T_t = _roughened(mj.site_pose(panda_model, panda, q_t), 1e-7)
    res = solve_ik(panda, T_t, solver=Solver(restarts=3, **kw))
    assert res.q.shape == (panda.n,)
    if res.converged:  # checked in MuJoCo against the target as given
        assert np.linalg.norm(mj.site_pose(panda_model, panda, res.q)[:3, 3] - T_t[:3, 3]) <= 1e-4


@pytest.mark.parametrize("kw", [{}, {"backend": "numpy"}, {"method": "dls"}])
def test_target_off_by_1e_3_is_refused_with_one_message_on_every_path(panda, kw):
    T_t = _roughened(kinematics.tool_pose(panda, panda.q_ref, engine="numpy"), 1e-3)
    with pytest.raises(InputError, match=r"^target\[:3, :3\]: not a rotation matrix .* > 1e-06"):
        solve_ik(panda, T_t, solver=Solver(**kw))


def test_reach_bound_holds_when_a_slide_ref_lies_outside_its_range():
    """Closed form: a slide along x with range [0, 0.1] and ref = 1 carries a tool 0.05 m behind its anchor; at
    q = 0 the anchor has moved by q - ref = -1 from where it sits at q_ref, so the tool is 1.05 m away."""
    chain = kinematics.chain_from_bodies("rail", [kinematics.BodySpec("carriage", (0, 0, 0), joints=(
        kinematics.JointSpec("rail", "slide", (1, 0, 0), range=(0.0, 0.1), ref=1.0),))], (-0.05, 0, 0))
    anchor0 = kinematics.joint_frames(chain, chain.q_ref)[0][0, :3, 3]
    far = np.linalg.norm(kinematics.tool_pose(chain, [0.0], engine="numpy")[:3, 3] - anchor0)
    assert far == pytest.approx(1.05, abs=1e-15)
    assert ik.reach_bound(chain) >= far - 1e-15


def test_explicit_compiled_backend_that_cannot_serve_is_refused_not_replaced(so101):
    target = kinematics.tool_pose(so101, so101.q_ref, engine="numpy")
    with pytest.raises(InputError, match="^backend: 'compiled' runs method='lm'"):
        Solver(method="dls", backend="compiled")
    problem = ik.ik_problem(so101, target)
    with pytest.raises(InputError, match="^backend: 'compiled' cannot keep a trace"):
        ik.solve(problem, Solver(backend="compiled"), trace=[])
    # left to choose, the NumPy loop serves both
    assert solve_ik(so101, target, solver=Solver(method="dls")).converged
    assert ik.solve(problem, trace=[]).converged[0]


def _count_checks(monkeypatch) -> dict:
    """Counts every call of the input checks (``physai._validate``'s and ``Chain.check_q``) from here on, wherever a
    physai module imported them."""
    import sys

    from physai import _validate
    from physai.chain import Chain

    calls = {"check_q": 0, "check": 0}
    checks = {name: getattr(_validate, name) for name in ("finite_array", "real", "positive", "nonnegative", "count",
                                                          "one_of", "generator", "in_range")}

    def counted(f, key):
        def g(*a, **k):
            calls[key] += 1
            return f(*a, **k)
        return g

    for module in [m for name, m in sys.modules.items() if name.startswith("physai") and m is not None]:
        for name, f in checks.items():
            if getattr(module, name, None) is f:
                monkeypatch.setattr(module, name, counted(f, "check"))
    monkeypatch.setattr(Chain, "check_q", counted(Chain.check_q, "check_q"))
    return calls


@pytest.mark.parametrize("backend", ("compiled", "numpy"))
def test_solve_ik_checks_its_inputs_once_however_long_the_solve(backend, so101, monkeypatch):
    # The public entry checks every argument once into an IKProblem; the solver below it trusts it. A target the arm
    # cannot reach runs its attempts and the polish (about a hundred steps) and checks no more than an easy one.
    q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
    easy, far = kinematics.tool_pose(so101, q0)[:3, 3], np.array([0.0, 0.0, 2.0])
    calls = _count_checks(monkeypatch)
    counts = []
    for target in (easy, far):
        calls.update(check_q=0, check=0)
        result = solve_ik(so101, target, q0, task="position", solver=Solver(restarts=20, backend=backend))
        counts.append(dict(calls))
    assert result.iterations > 50 and not result.converged  # the far target's long solve: every attempt, polished
    assert counts[0]["check_q"] == counts[1]["check_q"] == 1  # q0, once
    assert counts[0] == counts[1]


def test_avoid_batch_checks_its_inputs_once_for_any_number_of_targets(monkeypatch):
    # avoid= on the NumPy backend: the plain solve, the restarts in batched rounds and the penalty repair all run on
    # the checked problem. 2 targets or 20: the same checks, q0 once (and its clearance once).
    from physai import collision

    chain = robots.load("so101")
    post = collision.Obstacle("post", "box", (0.02, 0.02, 0.15), (0.2, 0.1, 0.15))
    table = collision.Obstacle("table", "box", (0.4, 0.4, 0.02), (0.0, 0.0, -0.02))
    world = collision.collision_world(collision.scene("so101", [table, post]), chain)
    qs = chain.random_q(np.random.default_rng(3), 60)
    targets = kinematics.tool_pose(chain, qs[world.clear(qs)][:20])
    calls = _count_checks(monkeypatch)
    counts = []
    for B in (2, 20):
        calls.update(check_q=0, check=0)
        batch = solve_ik_batch(chain, targets[:B], chain.q_middle, avoid=world,
                               solver=Solver(backend="numpy", restarts=20))
        counts.append(dict(calls))
    assert (batch.restarts > 0).any()  # some answers collided and went on to restarts
    assert counts[0]["check_q"] == 1 and counts[0] == counts[1]


def test_import_graph_of_physai_has_no_cycle():
    # Every import between physai's modules, at any level of a file (a deferred one, or one for type checkers only,
    # included): no module imports one that imports it back, directly or around a circle. In particular the layers
    # collision < _avoid_ik < ik < nullspace, _avoid_step < nullspace, _ik_solve < _avoid_ik, _avoid_step < control,
    # and the kernels' _jit < _numba_ik < _kernel_registry < _engine (modules named by a string count as imported).
    import ast
    import re
    import graphlib
    from pathlib import Path

    root = Path(ik.__file__).parent

    def imported(path):  # the physai modules a file imports, as dotted names below physai
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "physai":
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("physai."):
                names |= {node.module[7:]} | {f"{node.module[7:]}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name[7:] for a in node.names if a.name.startswith("physai.")}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"physai\.[\w.]+", node.value):  # a module named by a string (import_module(name))
                names.add(node.value[7:])
        return names

    def graph_of(files, node_of, module_of):  # node_of(file) and module_of(dotted import) name a node, or None
        graph = {}
        for path in files:
            node = node_of(path)
            graph.setdefault(node, set()).update(d for d in map(module_of, imported(path)) if d not in (None, node))
        return graph

    # a subpackage is one node of the library's graph, and has a graph of its own modules inside it
    packages = [p.parent for p in root.glob("*/__init__.py")]
    graph = graph_of([*root.glob("*.py"), *(f for p in packages for f in p.glob("*.py"))],
                     lambda f: f.stem if f.parent == root else f.parent.name,
                     lambda d: d.split(".")[0] if (root / f"{d.split('.')[0]}.py").exists()
                     or (root / d.split(".")[0]).is_dir() else None)
    for package in packages:
        inner = graph_of(package.glob("*.py"), lambda f: f.stem,
                         lambda d, p=package: d.split(".")[1] if d.startswith(f"{p.name}.") and d.count(".") >= 1
                         and (p / f"{d.split('.')[1]}.py").exists() else None)
        list(graphlib.TopologicalSorter(inner).static_order())  # raises CycleError on a circle inside it
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a circle
    assert "_avoid_step" not in graph["collision"]  # geometry imports no controller step
    for low, high in (("_avoid_step", "nullspace"), ("collision", "_avoid_ik"), ("_ik_solve", "_avoid_ik"),
                      ("_avoid_ik", "ik"), ("ik", "nullspace"), ("_avoid_step", "control"), ("_jit", "_numba_ik"),
                      ("_numba_ik", "_kernel_registry"), ("_kernel_registry", "_engine"), ("_ik_options", "ik"),
                      ("jaxik", "ik")):
        assert low in graph[high] and order.index(low) < order.index(high)
