"""physai._numba_ik (the compiled LM solve, solve_ik's default backend) against the NumPy backend and MuJoCo.

The two backends run the same algorithm with different linear algebra (Cholesky vs SVD), so their
round-off differs and LM's accept/reject tests may amplify it into different, equally valid solutions:
the tests compare what must agree (which targets converge, why a solve stopped) and check every answer
against MuJoCo's site pose, not against the other backend's q.
"""

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from conftest import PANDA_XML, WXAI_XML, mujoco_errors

from physai import _ik_record, _ik_solve, _numba_ik, _threads, ik, kinematics, mj, robots
from physai.errors import InputError
from physai.ik import Solver, Task, solve_ik, solve_ik_batch, task_residual


MODELS = {
    "panda": (PANDA_XML, "tcp"),
    "wxai": (WXAI_XML, "ee_site"),
}
CASES = [("so101", "position"), ("so101", "position+axis"), ("wxai", "pose"), ("panda", "pose")]


@pytest.fixture(scope="module")
def arms(so101_model, so101):
    out = {"so101": (so101_model, so101)}
    for name, (path, site) in MODELS.items():
        out[name] = (robots.mujoco_model(path), robots.load(path, site=site))
    return out


@pytest.mark.parametrize("task", ik.TASKS)
def test_compiled_residual_equals_task_residual_reference(task, arms, rng):
    _, chain = arms["panda"]
    axis = np.array([0.3, -0.2, 0.9]) / np.linalg.norm([0.3, -0.2, 0.9])
    m = ik.TASK_ROWS[task]
    sw = np.sqrt(rng.uniform(0.1, 2.0, m))
    q, q_t = chain.random_q(rng, 20), chain.random_q(rng, 20)
    T_t = kinematics.tool_pose(chain, q_t)
    T_t[-1] = kinematics.tool_pose(chain, q[-1])  # the zero-error case (rotation log at the identity)
    T, J = kinematics.tool_pose_and_jacobian(chain, q)
    e, Jt, perr, oerr = task_residual(task, T, J, T_t, axis)
    e_c, Jt_c, M = np.empty(m), np.empty((m, chain.n)), np.empty((3, 3))
    for k in range(len(q)):
        E, p, o = _numba_ik._residual(_ik_record.TASK_CODES[task], T[k], J[k], T_t[k], axis, sw, e_c, Jt_c, M)
        np.testing.assert_allclose(e_c, e[k] * sw, rtol=0, atol=1e-13)
        np.testing.assert_allclose(Jt_c, Jt[k] * sw[:, None], rtol=0, atol=1e-13)
        assert E == pytest.approx(0.5 * np.sum((e[k] * sw) ** 2), abs=1e-13)
        assert p == pytest.approx(perr[k], abs=1e-13) and o == pytest.approx(oerr[k], abs=1e-13)


def test_compiled_lm_step_equals_svd_damped_solve_with_frozen_columns(rng):
    from physai.singularity import damped_solve

    for m, n in ((3, 5), (6, 5), (6, 6), (6, 7)):
        Jw, ew, mu = rng.normal(size=(m, n)), rng.normal(size=m), 10.0 ** rng.uniform(-6, 0)
        free = rng.uniform(size=n) > 0.3
        k = min(m, n)
        dq = np.empty(n)
        _numba_ik._lm_step(Jw, ew, mu, free, dq, np.empty((k, k)), np.empty(k))
        np.testing.assert_allclose(dq, damped_solve(Jw * free, ew, np.sqrt(mu)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("robot,task", CASES)
def test_compiled_and_numpy_backends_converge_on_the_same_targets_checked_in_mujoco(robot, task, arms):
    m, chain = arms[robot]
    T_t = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(3), 15))
    res = {be: solve_ik_batch(chain, T_t, task=task, rng=np.random.default_rng(4), solver=Solver(backend=be))
           for be in ("compiled", "numpy")}
    for k, (c, n) in enumerate(zip(res["compiled"], res["numpy"])):
        assert c.converged and n.converged and c.reason == n.reason == "converged" and c.unmet == ()
        assert np.all(c.q >= chain.lower) and np.all(c.q <= chain.upper)
        perr, oerr = mujoco_errors(m, chain, c.q, T_t[k], task)
        assert perr <= 1e-4 and oerr <= 1e-3
        assert c.position_error == pytest.approx(perr, abs=1e-12)
        assert c.orientation_error == pytest.approx(oerr, abs=1e-6)
        assert (c.method, c.task) == ("lm", task)


def test_compiled_batched_equals_looped_and_seeded_runs_repeat(arms):
    _, chain = arms["wxai"]
    T_t = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(5), 6))
    batched = solve_ik_batch(chain, T_t, rng=np.random.default_rng(6), solver=Solver(restarts=30))
    g = np.random.default_rng(6)
    looped = [solve_ik(chain, T, rng=g, solver=Solver(restarts=30)) for T in T_t]
    again = solve_ik_batch(chain, T_t, rng=np.random.default_rng(6), solver=Solver(restarts=30))
    for name in ("q", "iterations", "restarts", "reason"):
        np.testing.assert_array_equal(getattr(batched, name), np.array([getattr(r, name) for r in looped]))
        np.testing.assert_array_equal(getattr(batched, name), getattr(again, name))


@pytest.mark.parametrize("robot,task", [("panda", "pose"), ("so101", "position")])
def test_batch_rows_are_bit_for_bit_the_same_on_any_number_of_threads_and_equal_the_loop(robot, task, arms,
                                                                                         monkeypatch):
    """The targets of a batch are shared among threads in chunks (_ik_solve._in_threads); each row depends on its own
    target and restart numbers only, so every thread count gives the rows of one thread and of a solve_ik loop over
    one shared generator. Bitwise equality is the point."""
    _, chain = arms[robot]
    T_t = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(9), 40))
    T_t[3, :3, 3] += 2.0  # unreachable: best effort, after its few attempts
    g = np.random.default_rng(10)
    looped = [solve_ik(chain, T, task=task, rng=g, solver=Solver(restarts=20)) for T in T_t]
    fields = ("q", "iterations", "restarts", "reason", "position_error", "orientation_error")
    for threads in (1, 2, 3, 7):
        monkeypatch.setattr(_threads, "cores", lambda threads=threads: threads)
        batched = solve_ik_batch(chain, T_t, task=task, rng=np.random.default_rng(10), solver=Solver(restarts=20))
        for name in fields:
            np.testing.assert_array_equal(getattr(batched, name), np.array([getattr(r, name) for r in looped]))
    assert batched.restarts.max() > 0 and not batched.converged[3]  # restarts were drawn on


def test_compiled_restart_start_maps_the_uniform_numbers_as_random_q_bit_for_bit(arms):
    """The compiled solver draws the numbers of chain.random_q(rng, (B, restarts)) and maps a restart only when it
    tries it: the generator ends in the same state and the map gives random_q's joint vectors, bit for bit."""
    for robot in ("panda", "so101"):
        chain = arms[robot][1]
        g1, g2 = np.random.default_rng(4), np.random.default_rng(4)
        U, Q = ik.restart_uniforms(chain, g1, 7, 9), chain.random_q(g2, (7, 9))
        assert g1.random() == g2.random()  # the same state after the draw
        out = np.empty(chain.n)
        for b, k in np.ndindex(7, 9):
            _numba_ik.restart_start(U[b, k], chain.sample_range, out)
            np.testing.assert_array_equal(out, Q[b, k])


def test_restart_draws_are_random_q_of_the_same_generator_bit_for_bit(arms):
    """restart_draws maps restart_uniforms into the limits: the draws of chain.random_q(rng, (B, restarts)), and of
    default_rng(0) when no rng is passed (a single solve's cached numbers included), bit for bit."""
    for robot in ("panda", "so101"):
        chain = arms[robot][1]
        for B in (1, 3):
            g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
            np.testing.assert_array_equal(ik.restart_draws(chain, g1, B, 6), chain.random_q(g2, (B, 6)))
            assert g1.random() == g2.random()  # the same state after the draw
            np.testing.assert_array_equal(ik.restart_draws(chain, None, B, 6),
                                          chain.random_q(np.random.default_rng(0), (B, 6)))


def test_compiled_ik_kernel_releases_the_gil_while_it_runs(monkeypatch):
    """Threads can share a batch only if the kernel lets them run: the main thread keeps stepping while another
    thread's kernel call is in progress (a kernel holding the GIL would stop it for the whole call)."""
    chain = robots.load("panda")
    T_t = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(11), 2000))
    calls, in_threads = [], _ik_solve._in_threads
    monkeypatch.setattr(_ik_solve, "_in_threads", lambda rows, B: (calls.append(rows), in_threads(rows, B)))
    solve_ik_batch(chain, T_t)  # captures the kernel call of every row
    span, seen, done = [], [], threading.Event()

    def kernel():
        span.append(time.perf_counter())
        calls[0](0, len(T_t))
        span.append(time.perf_counter())
        done.set()

    worker = threading.Thread(target=kernel)
    worker.start()
    while not done.is_set():
        seen.append(time.perf_counter())
    worker.join()
    assert span[1] - span[0] > 0.05, "the kernel ran too briefly to tell"
    assert any(span[0] + 0.01 < t < span[1] - 0.01 for t in seen)


def test_default_rng_single_solve_uses_the_draws_of_default_rng_zero(arms):
    _, chain = arms["panda"]
    T = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(8), 1))[0]
    a = solve_ik(chain, T)
    b = solve_ik(chain, T, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a.q, b.q)
    assert (a.iterations, a.restarts) == (b.iterations, b.restarts)


def _fields(r):
    """An IKResult's fields with their Python types, q as bytes: equal only if bit for bit the same."""
    return [(type(v), v.tobytes() if isinstance(v, np.ndarray) else v) for v in vars(r).values()]


def test_single_solve_builds_the_same_result_as_the_batch_row():
    """solve_ik builds its IKResult from the compiled row directly; solve_ik_batch's row b (batch_result, then
    indexing) is the reference, field for field and type for type, for each of the three outcomes."""
    so101 = robots.load("so101")
    reached = kinematics.tool_pose(so101, np.array([0.5, -0.8, 0.9, 0.3, 0.0]))[:3, 3]
    cases = ((reached, Task("position"), Solver()),  # converged
             (np.array([0.0, 0.0, 2.0]), Task("position"), Solver(restarts=5)),  # unreachable
             (reached, Task("position"), Solver(restarts=0, iterations=1)),
             (reached, Task("position", tol_position=1e-12), Solver(restarts=2)))
    reasons = set()
    for target, task, solver in cases:
        one = solve_ik(so101, target, task=task, solver=solver, rng=np.random.default_rng(2))
        row = solve_ik_batch(so101, target[None], task=task, solver=solver, rng=np.random.default_rng(2))[0]
        assert _fields(one) == _fields(row)
        reasons.add(one.reason)
    assert reasons == {"converged", "unreachable"}  # an attempt out of steps is unreachable too


def test_default_options_given_explicitly_solve_bit_for_bit_the_same(arms):
    """The default values given as other objects (numpy scalars, strings parsed to floats, an unnormalised axis) are
    checked into Task and Solver and give the identical solve."""
    _, chain = arms["panda"]
    T = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(9), 1))[0]
    given = {"tol_position": float("1e-4"), "tol_orientation": np.float64(1e-3), "max_step": float("0.5"),
             "damping": float("0.02"), "sigma_healthy": float("0.03"), "lambda_max": float("0.05"),
             "max_iterations": 50, "patience": 5, "restarts": np.int64(200), "weights": np.ones(6),
             "axis": [0.0, 0, 2.0]}
    assert all(v is not getattr(ik, k.upper(), None) for k, v in given.items())
    task = Task("pose", **{k: given[k] for k in ("weights", "tol_position", "tol_orientation", "axis")})
    solver = Solver(method="lm", iterations=given["max_iterations"], step=given["max_step"],
                    **{k: given[k] for k in ("damping", "sigma_healthy", "lambda_max", "patience", "restarts")})
    assert _fields(solve_ik(chain, T, task=task, solver=solver)) == _fields(solve_ik(chain, T))
    with pytest.raises(InputError, match="tol_position: expected a number > 0, got -0.0001"):
        Task("pose", tol_position=-float("1e-4"))


def test_position_target_as_3_vector_equals_its_translation_transform(so101):
    p = kinematics.tool_pose(so101, so101.random_q(np.random.default_rng(10), 4))[:, :3, 3]
    T = np.broadcast_to(np.eye(4), (4, 4, 4)).copy()
    T[:, :3, 3] = p
    assert _fields(solve_ik(so101, p[0], task="position")) == _fields(solve_ik(so101, T[0], task="position"))
    a, b = (solve_ik_batch(so101, t, task="position", rng=np.random.default_rng(1)) for t in (p, T))
    assert [_fields(r) for r in a] == [_fields(r) for r in b]
    bad = p[0].copy()
    bad[1] = np.nan
    with pytest.raises(InputError, match=r"target: entries must be finite, got nan at index \(1,\)"):
        solve_ik(so101, bad, task="position")
    with pytest.raises(InputError, match=r"target: expected a 3-vector or a 4x4 T_world_target for task='position', "
                                         r"got shape \(4,\)"):
        solve_ik(so101, np.zeros(4), task="position")


def test_stop_reasons_and_counts_match_the_numpy_backend(so101, so101_model):
    # A far target (closest point, stationary) and a reachable one cut off by a 1-step budget: the paths
    # of the two backends differ only by round-off here, so every count agrees.
    far = np.array([0.0, 0.0, 2.0])
    T_near = kinematics.tool_pose(so101, np.array([0.5, -0.8, 0.9, 0.3, 0.0]))
    for target, kw in ((far, dict(restarts=5)), (T_near[:3, 3], dict(restarts=0, iterations=1))):
        c, n = (solve_ik(so101, target, task="position", solver=Solver(backend=be, **kw))
                for be in ("compiled", "numpy"))
        assert not c.converged
        assert (c.reason, c.unmet, c.restarts, c.iterations) == (n.reason, n.unmet, n.restarts, n.iterations)
        assert c.position_error == pytest.approx(n.position_error, rel=1e-9)
        assert np.all(c.q >= so101.lower) and np.all(c.q <= so101.upper)
        tool = mj.site_pose(so101_model, so101, c.q)[:3, 3]
        assert c.position_error == pytest.approx(np.linalg.norm(tool - target), abs=1e-12)
    assert c.reason == "unreachable" and c.unmet == ("position",)
    far_res = solve_ik(so101, far, task="position", solver=Solver(restarts=5))
    assert far_res.reason == "unreachable" and far_res.unmet == ("position",)


def test_without_polish_both_backends_stop_after_the_last_attempt(so101):
    # The collision step's restarts take converged answers only: a failed solve ends with its last attempt, with
    # the same counts on both backends, and skips the polish a plain failed solve runs (more steps).
    far = np.array([[0.0, 0.0, 2.0]])
    kw = dict(task="position", restarts=5)

    def unpolished(backend):
        p = ik.check_problem(so101, far, None, 1, dict(kw, backend=backend))
        o = replace(p.options, polish=False)
        return ik.batch_result(*_ik_solve.solve(p._replace(options=o)), o.method, o.task, o.tol_position,
                               o.tol_orientation)[0]

    c, n = (unpolished(be) for be in ("compiled", "numpy"))
    assert not c.converged
    assert (c.reason, c.restarts, c.iterations) == (n.reason, n.restarts, n.iterations)
    assert c.position_error == pytest.approx(n.position_error, rel=1e-9)
    polished = solve_ik_batch(so101, far, task="position", solver=Solver(restarts=5))[0]
    assert c.iterations < polished.iterations and c.restarts == polished.restarts
    assert polished.position_error <= c.position_error


def test_targets_the_compiled_check_refuses_still_get_the_reference_error(so101):
    bad = np.eye(4)
    bad[:3, :3] = np.diag([1.0, 1.0, -1.0])  # a reflection
    with pytest.raises(InputError, match="reflection"):
        solve_ik(so101, bad)
    bad = np.eye(4)
    bad[0, 3] = np.nan
    with pytest.raises(InputError, match="finite"):
        solve_ik(so101, bad, task="position")
    bad = np.eye(4)
    bad[3, 0] = 0.1
    with pytest.raises(InputError, match="bottom row"):
        solve_ik(so101, bad)
    with pytest.raises(InputError, match="backend"):
        Solver(backend="gpu")


def test_compiled_freeze_rule_equals_ik_limit_blocked(so101, rng):
    """The joint-limit freeze rule has one readable home (physai.ik.limit_blocked); the compiled copy equals it,
    including joints exactly on a limit and zero steps."""
    lo, hi = so101.lower, so101.upper
    for _ in range(200):
        q = np.where(rng.random(so101.n) < 0.3, lo, np.where(rng.random(so101.n) < 0.4, hi, so101.random_q(rng)))
        dq = rng.choice([-0.1, 0.0, 0.1], size=so101.n)
        free = np.empty(so101.n, bool)
        any_blocked = _numba_ik._free_joints(q, dq, lo, hi, free)
        expected = ik.limit_blocked(q, dq, lo, hi)
        assert np.array_equal(~free, expected) and any_blocked == expected.any()
