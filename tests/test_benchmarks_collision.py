"""benchmarks/collision.py's smoke test (core dependencies only; mink needs the ``bench`` group and is not run): its
judge, which reads MuJoCo's mj_geomDistance alone, counts a converged answer through the table as claimed colliding."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "collision.py"
_spec = importlib.util.spec_from_file_location("collision_bench", _PATH)
bench = sys.modules.setdefault("collision_bench", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench)


def test_smoke_run_judges_by_mujoco_and_writes_the_table():
    rows = bench.run(robots=("wxai",), n=4, seed=1, rounds=1, peers=False, scenes=("tabletop",))
    assert rows[0]["targets"] == 4 and rows[0]["avoid_claimed_colliding"] == 0
    text = bench.markdown(rows, type("Args", (), {"targets": 4, "seed": 1, "scenes": ["tabletop"]})())
    assert "| tabletop | wxai | pose | 4 (0) |" in text and "Goals (this run):" in text


def test_clutter_scene_holds_a_quarter_of_targets_that_plain_ik_answers_through_an_obstacle():
    """The hard targets are those whose plain-IK answer MuJoCo finds within the margin: plain IK claims them, avoid=
    answers every target clear."""
    row = bench.run(robots=("so101",), n=8, seed=1, rounds=1, peers=False, scenes=("clutter",))[0]
    assert (row["targets"], row["hard"]) == (8, 2)
    assert row["plain_claimed_colliding"] >= 1 and row["avoid_claimed_colliding"] == 0 and row["avoid_success"] == 1


def test_judge_counts_an_answer_through_the_table_as_claimed_colliding():
    from physai import collision, load

    chain = load("wxai")
    world = collision.collision_world(collision.scene("wxai", bench.obstacles("wxai")), chain)
    q = next(q for q in chain.random_q(np.random.default_rng(0), 500) if bench.mujoco_clearance(world, q[None])[0] < 0)
    T = bench.kinematics.tool_pose(chain, q)[None]
    ok, claimed = bench.judge(world, "pose", T, q[None], np.array([True]))
    assert not ok[0] and claimed[0]
