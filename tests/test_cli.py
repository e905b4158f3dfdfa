"""The physai command line: numbers pinned to MuJoCo, bad input -> exit 2 with one line (tour: test_report.py)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from physai import _cli_app, cli, mj, robots

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
    assert _cli_app.join_vectors(args) == ["fk", "--q", "0 -0.6 1e-3", "--json", "--target", "1 2"]


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
    target = mj.site_pose(so101_model, so101, so101.random_q(rng, inset=0.2))[:3, 3]
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


BRACKETS_XML = """<mujoco><worldbody><body><joint name="finger[left]" axis="0 0 1"/><geom size="0.02"/>
<body pos="0.1 0 0"><joint name="[/bold]" axis="0 1 0"/><geom size="0.02"/><site name="tip[red]" pos="0.1 0 0"/>
</body></body></worldbody></mujoco>"""


@pytest.mark.parametrize("command", [["fk"], ["jacobian"], ["health"], ["ik", "--target", "0.15", "0.1", "0"]])
def test_bracketed_names_print_verbatim_in_tables(tmp_path, command):
    """rich reads ``[...]`` as markup: ``[/bold]`` would raise, ``finger[left]`` print as ``finger``."""
    path = tmp_path / "arm[1].xml"
    path.write_text(BRACKETS_XML)
    res = invoke(*command, "--robot", path)
    assert res.exit_code in (0, 1), res.output  # ik: 1 is a best effort, still printed
    assert "tool 'tip[red]'" in res.stdout and "arm[1]" in res.stdout
    if command[0] != "health":
        assert "finger[left]" in res.stdout and "[/bold]" in res.stdout


def test_ik_on_the_panda_without_q_seeds_inside_the_limits_and_reaches_a_mujoco_target(panda_model, panda, rng):
    """The Panda's qpos0 has joint4 = 0, outside [-3.07, -0.07]: the default seed is qpos0 clipped into the limits."""
    assert not np.all((panda.q_ref >= panda.lower) & (panda.q_ref <= panda.upper))
    target = mj.site_pose(panda_model, panda, panda.random_q(rng, inset=0.3))[:3, 3]
    res = invoke("ik", "--robot", "panda", "--target", *q_words(target), "--json")
    assert res.exit_code == 0, res.output
    reached = mj.site_pose(panda_model, panda, np.array(json.loads(res.stdout)["q"]))[:3, 3]
    assert np.linalg.norm(reached - target) <= 1e-4


def test_kinematics_that_overflow_exit_2_naming_the_robot(tmp_path):
    path = tmp_path / "huge.xml"
    path.write_text('<mujoco><worldbody><body pos="1e308 0 0"><joint name="a" axis="0 0 1"/><geom size="0.1"/>'
                    '<body pos="1e308 0 0"><joint name="b" axis="0 0 1"/><geom size="0.1"/><site name="t"/></body>'
                    '</body></worldbody></mujoco>')
    for command in ("fk", "jacobian", "health"):
        res = invoke(command, "--robot", path, "--json")
        assert res.exit_code == 2, res.output
        line = res.stderr.strip()
        assert "\n" not in line and line.startswith("physai: error: --robot:") and "overflow" in line, line


@pytest.mark.parametrize(
    "args, names",
    [
        (["ik", "--target", "0.2", "0", "0.1", "--seed", "-1"], ["--seed", "-1"]),
        (["ik", "--target", "0.2", "0", "0.1", "--seed", "abc"], ["--seed"]),
        (["ik", "--target", "0.2", "0", "0.1", "--restarts", "1000000000"], ["--restarts", "1000000000"]),
        (["ik", "--target", "0.2", "0", "0.1", "--restarts", "-3"], ["--restarts", "-3"]),
        (["ik", "--target", "0.2", "0", "0.1", "--restarts", "2.5"], ["--restarts"]),
        (["ik"], ["--target"]),
        (["fk", "--bogus"], ["--bogus"]),
        (["view", "--port", "99999"], ["port", "99999"]),
        (["view", "--port", "-1"], ["port", "-1"]),
    ],
)
def test_bad_options_exit_2_with_one_line_naming_the_option(args, names):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("physai: error:"), res.stderr
    assert all(name in line for name in names), line


def test_a_warning_while_loading_is_one_line_and_the_numbers_still_print(tmp_path):
    """A URDF whose mesh file is missing loads without it (kinematics needs no meshes); the warning is one line."""
    path = tmp_path / "arm.urdf"
    path.write_text('<robot name="r"><link name="base"><collision><geometry><mesh filename="missing.stl"/></geometry>'
                    '</collision></link><link name="l1"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" '
                    'ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j1" type="revolute"><parent link="base"/>'
                    '<child link="l1"/><origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>'
                    '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    res = invoke("fk", "--robot", path, "--tool", "l1", "--q", "0.5", "--json")
    assert res.exit_code == 0, res.output
    warning = ("physai: warning: arm.urdf: 1 mesh file(s) not found (e.g. 'missing.stl'); "
               "loaded without them (kinematics does not need meshes)")
    assert res.stderr.splitlines() == [warning]
    np.testing.assert_allclose(json.loads(res.stdout)["position"], [0.1, 0.0, 0.0], atol=1e-15)


def _panda_on_a_table(tmp_path):
    """The bundled Panda (no mesh files) with a table box, saved as an MJCF scene; its compiled MjModel."""
    import mujoco

    spec = mujoco.MjSpec.from_file(str(robots.model_path("panda")))
    spec.worldbody.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.8, 0.8, 0.02], pos=[0, 0, -0.02])
    path = tmp_path / "scene.xml"
    path.write_text(spec.to_xml())
    return path, mujoco.MjModel.from_xml_path(str(path))


def test_ik_avoid_answer_keeps_the_margin_by_mj_geomDistance(tmp_path):
    import mujoco

    path, m = _panda_on_a_table(tmp_path)
    out = invoke("ik", "--robot", path, "--tool", "tcp", "--target", 0.45, 0.1, 0.06, 0, 1, 0, 0, "--avoid", "--json")
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    d = mujoco.MjData(m)
    d.qpos[[m.jnt_qposadr[m.joint(j).id] for j in res["joints"]]] = res["q"]
    mujoco.mj_kinematics(m, d)
    table = m.geom("table").id
    arm = [g for g in range(m.ngeom) if m.geom_bodyid[g] > 1 and m.geom_contype[g]]
    nearest = min(mujoco.mj_geomDistance(m, d, table, g, 10.0, None) for g in arm)
    assert nearest >= res["margin"] and res["converged"]
    assert res["clearance"] == pytest.approx(nearest, abs=1e-9) and res["self_clearance"] >= res["self_margin"] == 0


def test_ik_avoid_target_inside_the_table_exits_1_with_reason_collision(tmp_path):
    path, _ = _panda_on_a_table(tmp_path)
    out = invoke("ik", "--robot", path, "--tool", "tcp", "--target", 0.45, 0.1, -0.01, "--avoid", "--restarts", 3,
                 "--json")
    assert out.exit_code == 1
    assert json.loads(out.output)["reason"] == "collision: no answer keeps the margin"
    bad = invoke("ik", "--robot", path, "--tool", "tcp", "--target", 0.45, 0.1, 0.3, "--avoid", "--margin", -1)
    assert bad.exit_code != 0 and "--margin" in bad.output
    # a margin the arm keeps from the table in no posture: refused, not a world that answers nothing
    far = invoke("ik", "--robot", path, "--tool", "tcp", "--target", 0.45, 0.1, 0.3, "--avoid", "--margin", 0.5)
    assert far.exit_code != 0 and "margin: 0.5 m" in far.output


def test_version_is_the_installed_distributions():
    from importlib.metadata import version  # the reference: the metadata the installer wrote

    res = invoke("--version")
    assert res.exit_code == 0 and res.stdout == f"physai-kinematics {version('physai-kinematics')}\n"


def test_ik_takes_the_robot_and_target_as_words_as_the_options_give_them(so101_model, so101):
    words = invoke("ik", "so101", "0.2", "-0.05", "0.1", "--json")
    options = invoke("ik", "--robot", "so101", "--target", "0.2", "-0.05", "0.1", "--json")
    assert words.exit_code == options.exit_code == 0, words.output
    assert json.loads(words.stdout) == json.loads(options.stdout)
    q = json.loads(words.stdout)["q"]
    np.testing.assert_allclose(mj.site_pose(so101_model, so101, np.array(q))[:3, 3], [0.2, -0.05, 0.1], atol=1e-4)


@pytest.mark.parametrize("args, says", [
    ((), "--target: missing"), (("so101",), "--target: missing"),
    (("so101", "0.2", "0", "0.1", "--target", "1", "2", "3"), "--target: the target is given twice"),
    (("so101", "0.2", "0", "0.1", "--nope"), "--nope: no such option"),
])
def test_ik_without_a_target_or_with_two_says_so_in_one_line(args, says):
    res = invoke("ik", *args)
    assert res.exit_code == 2 and res.stderr.startswith(f"physai: error: {says}") and res.stderr.count("\n") == 1
