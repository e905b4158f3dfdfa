"""physai.course.lesson: claim rows (verdicts from the source material's printed precision or a stated factor), their text table,
claims.json merged per script, and the transcript tee."""

import json

import pytest

from physai.errors import InputError
from physai.course.lesson import (Claim, factor_claim, number_claim, printed_tol, publish_claims,
                                  read_claims, run_script, save_figure, transcript, verdict, write_claims)


@pytest.mark.parametrize("text, tol", [("0.312", 5e-4), ("7.9e-07", 5e-9), ("147.4", 0.05), ("-0.909", 5e-4),
                                       ("1e-8", 5e-9), ("4.95", 5e-3), ("12", 0.5)])
def test_printed_tol_is_half_a_unit_in_the_last_printed_digit(text, tol):
    assert printed_tol(text) == pytest.approx(tol, rel=1e-12)


def test_number_claim_agrees_within_the_printed_precision_and_formats_like_the_source():
    ok = number_claim("09", "speed", "0.306", 0.3064999, script="x.py", unit="m/s")
    assert (ok.verdict, ok.source, ok.measured) == ("agree", "0.306 m/s", "0.306 m/s")
    assert number_claim("09", "speed", "0.306", 0.3065001, script="x.py").verdict == "disagree"
    assert number_claim("09", "err", "7.9e-07", 8.1e-7, script="x.py").measured == "8.1e-07"
    wide = number_claim("09", "load", "4.95", 5.04, script="x.py", tol=0.1, why="stand-in mass")
    assert (wide.verdict, wide.why) == ("agree", "stand-in mass")


def test_factor_claim_counts_either_side_and_refuses_zero():
    assert factor_claim("09", "c", "5.6e-12", 5.5e-11, script="x.py", factor=10, why="w").verdict == "agree"
    assert factor_claim("09", "c", "5.6e-12", 5.5e-13, script="x.py", factor=10, why="w").verdict == "disagree"
    assert factor_claim("09", "c", "5.6e-12", 0.0, script="x.py", factor=10, why="w").verdict == "disagree"


def test_verdict_comes_from_a_comparison_and_a_typed_verdict_is_checked():
    assert (verdict(True), verdict(False)) == ("agree", "disagree")
    with pytest.raises(InputError, match="verdict"):
        Claim("09", "c", "1", "1", "agrees", "w")


def test_write_claims_merges_per_script_and_reads_back(tmp_path):
    a = [Claim("09", "a", "1", "1", "agree", "w", "build.py")]
    b = [Claim("09", "b", "2", "3", "disagree", "w", "experiment.py")]
    write_claims(tmp_path, a, "build.py")
    write_claims(tmp_path, b, "experiment.py")
    write_claims(tmp_path, a, "build.py")  # a rerun replaces its own rows, keeps the others
    assert read_claims(tmp_path) == b + a
    assert [r["script"] for r in json.loads((tmp_path / "claims.json").read_text())] == ["experiment.py", "build.py"]
    assert read_claims(tmp_path / "missing") == []


def test_write_claims_drops_rows_in_an_older_layout(tmp_path):
    old = {"lesson": "09", "claim": "a", "seed": "1", "measured": "1", "verdict": "agree", "why": "w",
           "script": "build.py"}  # the source column's name before it was "source"
    (tmp_path / "claims.json").write_text(json.dumps([old]))
    b = [Claim("09", "b", "2", "3", "disagree", "w", "experiment.py")]
    write_claims(tmp_path, b, "experiment.py")
    assert read_claims(tmp_path) == b


def test_publish_claims_writes_the_rows_for_the_audit_and_prints_nothing(tmp_path, capsys):
    rows = [Claim("10", "a", "1", "1", "agree", "w", "build.py")]
    assert publish_claims(tmp_path, rows, "build.py") == rows
    assert capsys.readouterr().out == ""  # the transcript the learner reads carries no verdicts
    assert read_claims(tmp_path) == rows


def test_run_script_writes_the_scripts_transcript_beside_it(tmp_path, capsys):
    run_script(lambda word, times: print(word * times), tmp_path / "build.py", "ab", 2)
    assert (tmp_path / "build_output.txt").read_text() == "abab\n" and capsys.readouterr().out == "abab\n"


AUDIT = """from physai.course.lesson import Claim, verdict

CLAIMS = {"build.py": lambda steps: [Claim("01", "x is one", "1", str(steps["x"]), verdict(steps["x"] == 1), "w",
                                           "build.py")]}
"""


def test_run_script_publishes_the_claims_of_the_audit_beside_the_script_on_what_main_returned(tmp_path,
                                                                                              monkeypatch):
    monkeypatch.delenv("PHYSAI_LESSON_OUT", raising=False)
    lesson, copy = tmp_path / "01-demo", tmp_path / "copy"
    lesson.mkdir(), copy.mkdir()
    (lesson / "_audit.py").write_text(AUDIT)
    run_script(lambda x: {"x": x}, lesson / "build.py", 2)
    assert read_claims(lesson) == [Claim("01", "x is one", "1", "2", "disagree", "w", "build.py")]
    run_script(lambda: {"x": 1}, lesson / "scene.py")  # a script the audit does not name: no rows of its own
    assert [c.script for c in read_claims(lesson)] == ["build.py"]
    run_script(lambda: {"x": 1}, copy / "build.py")  # a learner's copy, no _audit.py beside it: nothing published
    assert sorted(p.name for p in copy.iterdir()) == ["build_output.txt"]


def test_transcript_writes_what_is_printed(tmp_path, capsys):
    with transcript(tmp_path / "x_output.txt"):
        print("line one")
    assert (tmp_path / "x_output.txt").read_text() == "line one\n" and capsys.readouterr().out == "line one\n"


def test_save_figure_writes_a_png_matplotlib_reads_back_and_a_failed_save_keeps_the_previous_one(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, 1])
    path = save_figure(fig, tmp_path / "f.png", dpi=50)
    assert matplotlib.image.imread(path).shape[:2] == (50, 100)  # 2 x 1 inches at 50 dpi
    before = path.read_bytes()

    class Broken:
        def savefig(self, fh, **kw):
            fh.write(b"half a png")
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        save_figure(Broken(), path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["f.png"]
    plt.close(fig)


def test_save_results_stores_a_dataclass_as_its_fields_less_the_unsaved_ones(tmp_path):
    import dataclasses

    import numpy as np

    from physai.course.lesson import read_results, save_results, unsaved

    @dataclasses.dataclass(frozen=True)
    class Step:
        worst: float
        rows: tuple
        trace: np.ndarray = unsaved()

    step = Step(np.float64(0.25), (1, 2), np.arange(3.0))
    save_results(tmp_path, "experiment.py", {"step": step, "steps": [step]})
    assert read_results(tmp_path)["experiment"] == {"step": {"worst": 0.25, "rows": [1, 2]},
                                                     "steps": [{"worst": 0.25, "rows": [1, 2]}]}
    assert "trace" not in repr(step) and step.trace.shape == (3,)
    save_results(tmp_path, "build.py", step)  # one step's dataclass as the whole entry
    assert read_results(tmp_path)["build"] == {"worst": 0.25, "rows": [1, 2]}
