"""Batched DLS IK: the JAX backend equals the NumPy reference to 1e-12; solutions reach their targets
(checked with the reference kinematics, pinned to MuJoCo); benchmarks/gpu.py --cpu-smoke runs."""

import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from physai import jaxik, jaxkin, kinematics, robots
from physai.errors import InputError
from physai.ik import IKBatchResult, IKResult, Solver, solve_ik_batch
from conftest import PANDA_XML


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def panda():
    return robots.load(PANDA_XML, site="tcp")


@pytest.mark.usefixtures("x64")
def test_one_dls_step_and_kinematics_jax_equal_numpy_to_1e_12(panda):
    """Every target, converging or not: the JAX step (jit + vmap of jaxkin) equals the NumPy one."""
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    B = 50
    q = panda.random_q(rng, B)
    p_t, R_t = jaxik._targets("pose", kinematics.tool_pose(panda, panda.random_q(rng, B)))
    opts = (0.02, 0.5, 1e-4, 1e-3)
    state = (q, np.zeros(B, bool), np.zeros(B, np.int64))
    kin_np = lambda x: kinematics.tool_pose_and_jacobian(panda, x)  # noqa: E731
    kin_jax = jax.vmap(lambda x: jaxkin.tool_pose_and_jacobian(panda, x))

    def step(s):
        return jaxik._dls_step(jnp, kin_jax, "pose", opts, panda.lower, panda.upper, p_t, R_t, s), kin_jax(s[0])

    (q_jx, _, _), (T_jx, J_jx) = jax.jit(step)(state)
    T_np, J_np = kin_np(q)
    assert np.abs(np.asarray(T_jx) - T_np).max() <= 1e-12
    assert np.abs(np.asarray(J_jx) - J_np).max() <= 1e-12
    q_np, _, _ = jaxik._dls_step(np, kin_np, "pose", opts, panda.lower, panda.upper, p_t, R_t, state)
    assert np.abs(q_np - q).max() > 1e-3  # the step moved
    assert np.abs(np.asarray(q_jx) - q_np).max() <= 1e-12


def test_dls_ik_jax_equals_numpy_and_reaches_the_targets(panda):
    rng = np.random.default_rng(2)
    targets = kinematics.tool_pose(panda, panda.random_q(rng, 64))
    with pytest.warns(DeprecationWarning, match="Solver.method='dls', backend='jax'"):  # its NumPy twin: only there
        r_np = jaxik.dls_ik(panda, targets, task="pose", max_iterations=40, restarts=6, backend="numpy")
    r_jx = solve_ik_batch(panda, targets, task="pose", solver=Solver(method="dls", iterations=40, restarts=6,
                                                                      backend="jax"))
    assert r_np.success_rate >= 0.9
    np.testing.assert_array_equal(r_jx.converged, r_np.converged)
    np.testing.assert_array_equal(r_jx.iterations, r_np.iterations)
    # Each step agrees to 1e-12 (test above), but tens of steps through poorly conditioned poses amplify
    # rounding before a target freezes at tolerance (not at a fixed point): measured up to ~2e-12.
    assert np.abs(r_jx.q - r_np.q)[r_np.converged].max() <= 1e-10
    T = kinematics.tool_pose(panda, r_np.q[r_np.converged])
    assert np.linalg.norm(T[:, :3, 3] - targets[r_np.converged, :3, 3], axis=-1).max() <= 1e-4
    assert np.all((r_np.q >= panda.lower) & (r_np.q <= panda.upper))
    assert set(r_np.reason) <= {"converged", "unreachable"}


def test_dls_ik_position_task_takes_points(so101):
    qs = so101.random_q(np.random.default_rng(3), 40)
    points = kinematics.tool_pose(so101, qs)[:, :3, 3]
    res = solve_ik_batch(so101, points, task="position", solver=Solver(method="dls", restarts=2, backend="jax"))
    assert res.success_rate >= 0.9
    p = kinematics.tool_pose(so101, res.q[res.converged])[:, :3, 3]
    assert np.linalg.norm(p - points[res.converged], axis=-1).max() <= 1e-4


def test_dls_ik_returns_the_ik_batch_result_with_per_target_restarts(so101):
    qs = so101.random_q(np.random.default_rng(3), 40)
    points = np.concatenate([kinematics.tool_pose(so101, qs)[:, :3, 3], [[0.0, 0.0, 2.0]]])  # the last is out of reach
    first, res = (solve_ik_batch(so101, points, task="position", rng=np.random.default_rng(5),
                                 solver=Solver(method="dls", iterations=8, restarts=restarts, backend="jax"))
                  for restarts in (0, 3))
    assert isinstance(res, IKBatchResult) and len(res) == len(points) and isinstance(res[0], IKResult)
    assert (res.method, res.task) == ("dls", "position") and res.q.shape == (len(points), so101.n)
    assert 0 < first.success_rate < 1 and not res.converged[-1]  # some targets need restarts; one never converges
    # the first attempt is the restarts=0 run: what converged there used no restart, the rest used more
    np.testing.assert_array_equal(res.restarts == 0, first.converged)
    assert np.all(res.restarts[~res.converged] == 3)
    np.testing.assert_array_equal(res.reason, np.where(res.converged, "converged", "unreachable"))
    assert res.unmet[-1] == ("position",) and all(u == () for u in np.array(res.unmet, object)[res.converged])
    assert res.position_error[-1] == pytest.approx(np.linalg.norm(kinematics.tool_pose(so101, res.q[-1])[:3, 3]
                                                                  - points[-1]), abs=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(task="axis"), "task"), (dict(backend="torch"), "backend"), (dict(max_iterations=0), "max_iterations"),
     (dict(restarts=-1), "restarts"), (dict(damping=0.0), "damping"), (dict(targets=np.zeros((3, 3))), "target"),
     ({"restarts": 2.5}, "^restarts: "), ({"max_iterations": float("nan")}, "^max_iterations: "), ({"rng": 0}, "^rng: "),
     ({"q0": np.full(5, 10.0)}, "^q0: joint .* is outside its limits")],
)
@pytest.mark.filterwarnings("ignore:physai.jaxik.dls_ik is deprecated:DeprecationWarning")  # its own checks
def test_dls_ik_rejects_bad_arguments(so101, kwargs, match):
    targets = kwargs.pop("targets", np.tile(np.eye(4), (2, 1, 1)))
    with pytest.raises(InputError, match=match):
        jaxik.dls_ik(so101, targets, **kwargs)


def test_gpu_benchmark_cpu_smoke_runs_and_writes_its_table(tmp_path):
    out = tmp_path / "gpu.md"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--cpu-smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| SO-101") or line.startswith("| Panda")]
    assert len(rows) == 2
    for row in rows:
        success = float(row.split("|")[5].strip().rstrip(" %"))
        assert success >= 95.0


@pytest.mark.usefixtures("x64")
def test_rotation_error_equals_so3_log_including_exactly_180_degrees():
    """The solver's rotation error is pinned to physai.transforms.so3_log (itself pinned to SciPy in test_ik.py),
    in NumPy and in JAX; at exactly 180 degrees it is a full-size step of angle pi, not zero."""
    import jax.numpy as jnp
    from scipy.spatial.transform import Rotation

    from physai import transforms as tf

    R_t = np.concatenate([Rotation.random(100, random_state=1).as_matrix(),
                          np.array([np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])])])
    R = np.concatenate([Rotation.random(100, random_state=2).as_matrix(), np.tile(np.eye(3), (3, 1, 1))])
    ref = tf.so3_log(R_t @ np.swapaxes(R, -1, -2))
    for xp in (np, jnp):
        w, theta = (np.asarray(x) for x in jaxik._rotation_error(xp, xp.asarray(R_t), xp.asarray(R)))
        assert np.abs(w - ref).max() <= 1e-14
        assert np.abs(theta - np.linalg.norm(ref, axis=-1)).max() <= 1e-14
    assert np.allclose(np.linalg.norm(w[-3:], axis=-1), np.pi, rtol=0, atol=1e-15)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("m", [3, 6])
def test_jax_and_numpy_damped_step_equal_singularity_damped_solve(panda, m):
    """The solver's DLS solve (one linear solve, NumPy and JAX) is the twin of the readable SVD form."""
    import jax.numpy as jnp

    from physai.singularity import damped_solve

    rng = np.random.default_rng(3)
    J = kinematics.jacobian(panda, panda.random_q(rng, 64))[:, :m]
    e = rng.normal(scale=0.1, size=(64, m))
    reference = damped_solve(J, e, 0.02)
    # J J^T + damping^2 I has condition number up to (sigma_max / damping)^2 ~ 1e4 here (the SVD form does not
    # square it), so the two forms agree to ~1e4 machine epsilons of the step size.
    tol = 1e4 * np.finfo(float).eps * np.abs(reference).max()
    assert np.abs(jaxik._damped(np, J, e, 0.02) - reference).max() <= tol
    assert np.abs(np.asarray(jaxik._damped(jnp, jnp.asarray(J), jnp.asarray(e), 0.02)) - reference).max() <= tol


def test_dls_ik_shares_solve_ik_batch_names_and_defaults():
    """One IK language: every option the deprecated dls_ik has is a field of physai.ik.Task or Solver (or a
    keyword of solve_ik_batch), with the same default (max_iterations=None: the solver's default for "dls")."""
    import dataclasses
    import inspect

    from physai import ik

    mine = inspect.signature(jaxik.dls_ik).parameters
    new_name = {"max_iterations": "iterations", "max_step": "step"}
    defaults = {**{f.name: f.default for f in dataclasses.fields(ik.Solver) + dataclasses.fields(ik.Task)},
                **{k: p.default for k, p in inspect.signature(ik.solve_ik_batch).parameters.items()}}
    shared = [k for k in mine if k not in ("chain", "targets", "backend")]
    assert [k for k in shared if new_name.get(k, k) not in defaults] == []
    assert {k: mine[k].default for k in shared} == {k: defaults[new_name.get(k, k)] for k in shared}


def test_dls_ik_gives_an_unreachable_position_at_most_unreachable_restarts(so101):
    from physai.ik import UNREACHABLE_RESTARTS, reach_bound

    far = np.array([[0.0, 0.0, 2.0 * reach_bound(so101)]])
    res = solve_ik_batch(so101, far, task="position", solver=Solver(method="dls", iterations=5, restarts=10,
                                                                     backend="jax"))
    assert not res.converged[0] and res.restarts[0] == UNREACHABLE_RESTARTS
    assert res.iterations[0] == 5 * (1 + UNREACHABLE_RESTARTS)
