"""The physai command line: numbers pinned to MuJoCo, bad input -> exit 2 with one line (tour: test_report.py)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from physai import cli, mj

runner = CliRunner()


def invoke(*args):
    return runner.invoke(cli.app, [str(a) for a in args])


def q_words(q):
    """Joint values as separate command-line words (negative numbers included), full precision."""
    return [repr(float(x)) for x in q]


def test_fk_json_matches_mujoco_site_pose(so101_model, so101, rng):
    for q in so101.random_q(rng, 3):
        res = invoke("fk", "--robot", "so101", "--q", *q_words(q), "--json")
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        T = mj.site_pose(so101_model, so101, q)
        np.testing.assert_allclose(out["position"], T[:3, 3], atol=1e-12)
        np.testing.assert_allclose(out["rotation"], T[:3, :3], atol=1e-12)
        np.testing.assert_allclose(out["q"], q, rtol=0, atol=0)


def test_jacobian_json_matches_mujoco_jacsite(so101_model, so101, rng):
    q = so101.random_q(rng)
    res = invoke("jacobian", "--robot", "so101", "--q", ",".join(q_words(q)), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["columns"] == list(so101.joint_names)
    np.testing.assert_allclose(out["jacobian"], mj.site_jacobian(so101_model, so101, q), atol=1e-12)


def test_fk_default_pose_is_mujoco_qpos0(so101_model, so101):
    res = invoke("fk", "--json")
    assert res.exit_code == 0, res.output
    q0 = so101_model.qpos0[list(so101.qpos_adr)]
    np.testing.assert_allclose(json.loads(res.stdout)["position"], mj.site_pose(so101_model, so101, q0)[:3, 3],
                               atol=1e-12)


def test_fk_table_prints_units_and_pose(so101_model, so101):
    q = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
    res = invoke("fk", "--q", *q_words(q))
    assert res.exit_code == 0, res.output
    p = mj.site_pose(so101_model, so101, q)[:3, 3]
    assert "tool position (world, m)" in res.stdout
    assert " ".join(f"{x: .4f}" for x in p) in res.stdout


@pytest.mark.parametrize(
    "args, names",
    [
        (["fk", "--robot", "so10"], ["so10", "so101"]),
        (["fk", "--q", "0", "1"], ["--q", "expected 5", "got 2"]),
        (["jacobian", "--q", "0", "abc", "0", "0", "0"], ["--q", "'abc'"]),
        (["fk", "--q", "0", "nan", "0", "0", "0"], ["--q", "finite"]),
        (["fk", "--robot", "no/such/model.xml"], ["no/such/model.xml"]),
        (["lesson", "99"], ["lesson '99'"]),
        (["view", "--robot", "so10"], ["so10", "so101"]),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_it(args, names):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("physai: error:"), res.stderr
    for name in names:
        assert name in lines[0]


def test_unknown_option_is_a_usage_error_exit_2():
    res = invoke("fk", "--bogus")
    assert res.exit_code == 2
    assert "--bogus" in res.output


def test_robots_lists_so101_and_its_model_source():
    res = invoke("robots", "--json")
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.stdout)["robots"]}
    assert rows["so101"]["site"] == "gripperframe"
    assert "robotstudio_so101" in rows["so101"]["menagerie"]
    assert rows["panda"]["bundled"] == "physai/models/panda/panda.xml"


def test_join_vectors_gathers_words_up_to_the_next_option():
    args = ["fk", "--q", "0", "-0.6", "1e-3", "--json", "--target", "1", "2"]
    assert cli._join_vectors(args) == ["fk", "--q", "0 -0.6 1e-3", "--json", "--target", "1 2"]


def test_bench_runs_the_suite_with_its_arguments(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "BENCHMARKS", tmp_path / "missing.py")
    res = invoke("bench")
    assert res.exit_code == 1 and "no benchmark suite" in res.stderr
    script = tmp_path / "run.py"
    script.write_text("import sys\nsys.exit(len(sys.argv) - 1)\n")  # exit code = number of arguments passed
    monkeypatch.setattr(cli, "BENCHMARKS", script)
    assert invoke("bench", "--quick", "x", "y").exit_code == 3


def test_health_json_matches_svd_of_mujoco_jacobian(so101_model, so101, rng):
    q = so101.random_q(rng)
    res = invoke("health", "--q", *q_words(q), "--json")
    assert res.exit_code == 0, res.output
    rows = {r["block"]: r for r in json.loads(res.stdout)["health"]}
    J = mj.site_jacobian(so101_model, so101, q)
    for block, Jb in (("position", J[:3]), ("orientation", J[3:]), ("full", np.vstack([J[:3], 0.3 * J[3:]]))):
        sigma = np.linalg.svd(Jb, compute_uv=False)
        np.testing.assert_allclose(rows[block]["sigma"], sigma, atol=1e-12)
        # 6 task rows on 5 joints: one task direction is never reachable, so the block is singular
        kappa = sigma[0] / sigma[-1] if Jb.shape[0] <= so101.n else np.inf
        assert float(rows[block]["kappa"]) == pytest.approx(kappa, rel=1e-9)


def test_ik_reaches_a_target_mujoco_confirms(so101_model, so101, rng):
    target = mj.site_pose(so101_model, so101, so101.random_q(rng, margin=0.2))[:3, 3]
    res = invoke("ik", "--robot", "so101", "--target", *q_words(target), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["converged"] and out["reason"] == "converged" and out["task"] == "position"
    reached = mj.site_pose(so101_model, so101, np.array(out["q"]))[:3, 3]
    assert np.linalg.norm(reached - target) <= 1e-4
    assert out["position_error"] == pytest.approx(np.linalg.norm(reached - target), abs=1e-12)


def test_ik_table_prints_solution_errors_and_health():
    res = invoke("ik", "--robot", "so101", "--target", "0.2", "0.0", "0.1")
    assert res.exit_code == 0, res.output
    for text in ("solution", "converged", "position error", "health at the solution", "sigma_min", "kappa"):
        assert text in res.stdout


def test_ik_out_of_reach_reports_best_effort_and_exits_1():
    res = invoke("ik", "--target", "2", "0", "0", "--restarts", "0", "--json")
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert not out["converged"] and out["restarts"] == 0 and out["position_error"] > 1.0


@pytest.mark.parametrize(
    "args, names",
    [
        (["ik", "--target", "0.2", "0.0"], ["--target", "got 2"]),
        (["ik", "--target", "0.2", "x", "0.1"], ["--target", "'x'"]),
        (["ik", "--target", "0.2", "0", "0.1", "--method", "newton"], ["method", "newton"]),
        (["health", "--q", "1", "2"], ["--q", "expected 5"]),
    ],
)
def test_ik_and_health_bad_input_exits_2(args, names):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert "\n" not in line and all(name in line for name in names), line
