"""The course's commands against a hostile environment: output folders that are files, read-only or relative,
environment variables with junk in them, a run killed half-way. Each ends in the right place or in one line and
exit status 2, never in a traceback, a stale page or a file inside the lessons' folder.

A throwaway one-lesson experiments tree stands in for the course (the real one: tests/test_course.py).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from physai import _env, _files, cli
from physai.course import course, lesson

BUILD = '''"""Demo lesson: one number, saved."""
import os
import signal

from physai.course.lesson import out_dir, run_script, save_results


def main():
    lever = float(os.environ.get("DEMO_LEVER", "0.25"))
    print(f"lever {lever}")
    save_results(out_dir(__file__), "build.py", {"lever": lever})
    if os.environ.get("DEMO_KILL") == "1":  # killed once its new results are saved, before any page is written
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    run_script(main, __file__)
'''
PAGE = """+++
title = "A demo"
module = "More"
hands_on = 5
summary = "One number."
+++

The lever is {{ R.build.lever | fix(4) }} m.
"""
EXERCISE_BUILD = '''"""Demo lesson's Build it."""
EXERCISE = ("twice",)


def twice(x):
    """``2 x``."""
    return 2 * x
'''


def invoke(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def one_error_line(res, *words: str) -> str:
    """The command ended with exit status 2 and one line on stderr naming ``words``."""
    assert res.exit_code == 2, (res.output, res.exception)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("physai: error:"), res.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A one-lesson experiments tree, served as an installed package's lessons; the working folder is ``work``."""
    folder = tmp_path / "lessons" / "01-demo"
    folder.mkdir(parents=True)
    (folder / "build.py").write_text(BUILD)
    (folder / course.PAGE_FILE).write_text(PAGE)
    monkeypatch.setattr("physai.course.lesson.LESSONS_DIR", folder.parent)
    monkeypatch.setattr("physai.course.lesson.PACKAGED_LESSONS", folder.parent)
    monkeypatch.delenv(_env.LESSON_OUT, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return folder


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_a_relative_lesson_out_resolves_in_the_folder_the_command_ran_from(demo, monkeypatch):
    monkeypatch.setenv(_env.LESSON_OUT, "relout")
    before = files_in(demo)
    res = invoke("lesson", "01", "--out", "site")
    assert res.exit_code == 0, res.output
    work = Path.cwd()
    assert json.loads((work / "relout" / "01-demo" / "results.json").read_text()) == {"build": {"lever": 0.25}}
    assert (work / "relout" / "01-demo" / "build_output.txt").read_text() == "lever 0.25\n"
    assert (work / "site" / "01-demo" / "index.html").is_file() and "page not built" not in res.output
    assert files_in(demo) == before  # nothing beside the lesson's scripts
    assert os.environ[_env.LESSON_OUT] == "relout"  # the user's value, given back as it was


def test_a_lesson_script_run_by_hand_takes_a_relative_lesson_out_from_its_working_folder(demo, monkeypatch):
    monkeypatch.setenv(_env.LESSON_OUT, "relout")
    assert lesson.out_dir(demo / "build.py") == Path.cwd() / "relout" / "01-demo"


@pytest.mark.parametrize("command", ["tour", "lesson"])
def test_an_output_folder_that_is_a_file_ends_in_one_line(demo, command):
    Path("physai-out").write_text("a file where the course would go")
    res = invoke(command, *(["01"] if command == "lesson" else []))
    one_error_line(res, "--out", "physai-out", "is a file")
    assert Path("physai-out").read_text() == "a file where the course would go"


def test_an_output_folder_under_a_file_ends_in_one_line(demo):
    Path("notes").write_text("a file")
    one_error_line(invoke("tour", "--out", "notes/site"), "--out", "notes", "is a file")


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_lesson_out_that_is_a_file_ends_in_one_line(demo, monkeypatch, where):
    Path("outs").write_text("a file")
    page = Path("physai-out/01-demo/index.html")
    page.parent.mkdir(parents=True)
    page.write_text("an earlier run's page")
    monkeypatch.setenv(_env.LESSON_OUT, "outs" if where == "a file" else "outs/deeper")
    one_error_line(invoke("lesson", "01"), _env.LESSON_OUT, "is a file")
    assert page.read_text() == "an earlier run's page"  # refused before anything ran or was removed


def test_a_lesson_out_inside_the_package_is_refused_naming_it(demo, monkeypatch):
    monkeypatch.setenv(_env.LESSON_OUT, str(Path(cli.__file__).parent / "outputs"))
    one_error_line(invoke("tour"), _env.LESSON_OUT, "inside the physai package")


@pytest.fixture
def read_only(small_fs):
    return small_fs("ro")


def test_a_tour_in_a_read_only_folder_ends_in_one_line(demo, monkeypatch, read_only):
    monkeypatch.chdir(read_only)
    one_error_line(invoke("tour"), "--out", "physai-out", "Read-only file system")


@pytest.mark.parametrize("where", ["a file", "under a file", "read-only"])
def test_an_exercise_into_a_place_it_cannot_write_ends_in_one_line(demo, tmp_path, where, request):
    (demo / "build.py").write_text(EXERCISE_BUILD)
    Path("mine").write_text("a file")
    dest = {"a file": "mine", "under a file": "mine/09"}.get(where)
    if dest is None:
        dest = request.getfixturevalue("read_only") / "09"
    line = one_error_line(invoke("exercise", "01", dest), str(dest))
    assert ("is a file" in line) if where != "read-only" else ("Read-only file system" in line)


def test_an_exercise_is_written_whole(demo):
    (demo / "build.py").write_text(EXERCISE_BUILD)
    res = invoke("exercise", "01", "mine")
    assert res.exit_code == 0, res.output
    assert [p.name for p in Path("mine").iterdir()] == ["build.py"]  # no temporary file left beside it
    assert 'raise NotImplementedError("twice: write this function' in Path("mine/build.py").read_text()


RUN_LESSON = ("import sys; from pathlib import Path; from physai import cli; from physai.course import lesson; "
              "lesson.LESSONS_DIR = lesson.PACKAGED_LESSONS = Path(sys.argv[1]); sys.argv[1:] = ['lesson', '01']; "
              "cli.main()")


def run_lesson(demo: Path, **env) -> subprocess.CompletedProcess:
    """``physai lesson 01`` in a process of its own (it may be killed)."""
    return subprocess.run([sys.executable, "-c", RUN_LESSON, str(demo.parent)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env}, cwd=Path.cwd())


def test_a_lesson_killed_after_saving_new_results_leaves_no_page_showing_the_old_ones(demo):
    assert run_lesson(demo, DEMO_LEVER="0.25").returncode == 0
    page = Path("physai-out/01-demo/index.html")
    assert ">0.2500</span>" in page.read_text()
    killed = run_lesson(demo, DEMO_LEVER="0.75", DEMO_KILL="1")
    assert killed.returncode == -9, killed.stderr
    assert json.loads(Path("physai-out/01-demo/results.json").read_text()) == {"build": {"lever": 0.75}}
    assert not page.exists()  # removed before the run: no page shows 0.25 beside the new data
    assert run_lesson(demo, DEMO_LEVER="0.75").returncode == 0
    assert ">0.7500</span>" in page.read_text()  # the next run builds the page again


def test_removing_pages_takes_each_lessons_page_and_with_the_track_the_track_page_and_the_audit(demo):
    out = Path("physai-out")
    (out / "01-demo").mkdir(parents=True)
    for path in (out / "index.html", out / "audit.html", out / "01-demo" / "index.html"):
        path.write_text("an earlier run's page")
    course.remove_pages(out, ["01-demo"], track=True)
    assert not [p for p in out.rglob("*.html")]


def test_a_file_written_atomically_keeps_the_old_content_when_the_write_fails(tmp_path):
    path = _files.write_text(tmp_path / "results.json", "old")
    with pytest.raises(RuntimeError), _files.replacing(path) as fh:
        fh.write("half of the new")
        raise RuntimeError("killed")
    assert path.read_text() == "old" and files_in(tmp_path) == {"results.json"}


def test_a_transcript_of_a_failing_run_is_kept_whole(tmp_path, capsys):
    path = tmp_path / "build_output.txt"
    with pytest.raises(RuntimeError), lesson.transcript(path):
        print("first table")
        raise RuntimeError("the lesson failed")
    assert path.read_text() == "first table\n" and files_in(tmp_path) == {"build_output.txt"}


@pytest.mark.parametrize(("value", "seconds"), [("", 600.0), ("30", 30.0), ("2.5", 2.5), ("inf", math.inf),
                                                ("1e400", math.inf)])
def test_the_build_timeout_reads_seconds_and_inf_for_no_limit(monkeypatch, value, seconds):
    monkeypatch.setenv(_env.BUILD_TIMEOUT, value)
    assert _env.build_timeout() == seconds


@pytest.mark.parametrize("value", ["nan", "0", "-1", "ten", "0x10"])
def test_a_junk_build_timeout_warns_once_naming_the_variable_and_keeps_the_default(monkeypatch, value):
    monkeypatch.setenv(_env.BUILD_TIMEOUT, value)
    _env._build_timeout.cache_clear()
    with pytest.warns(UserWarning, match=rf"^{_env.BUILD_TIMEOUT}={re.escape(repr(value))} ignored: expected") as w:
        assert _env.build_timeout() == _env.DEFAULT_BUILD_TIMEOUT
    shown = warnings.formatwarning(w[0].message, w[0].category, w[0].filename, w[0].lineno, w[0].line)
    assert shown.count("\n") == 1  # one line on stderr, no source line under it
    assert _env.build_timeout() == _env.DEFAULT_BUILD_TIMEOUT  # asked again: no second warning (an error here)


@pytest.mark.parametrize(("value", "full"), [("", False), ("0", False), ("1", True)])
def test_physai_full_reads_1_and_0(monkeypatch, value, full):
    monkeypatch.setenv(_env.FULL, value)
    assert _env.full() is full


def test_a_junk_physai_full_warns_and_runs_the_small_sizes(monkeypatch):
    monkeypatch.setenv(_env.FULL, "yes please")
    _env._full.cache_clear()
    with pytest.warns(UserWarning, match=rf"^{_env.FULL}='yes please' ignored: expected 1"):
        assert _env.full() is False


ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_lists_every_environment_variable_physai_reads():
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "physai").rglob("*.py"))
    read = set(re.findall(r'"((?:PHYSAI|NUMBA)_[A-Z_]+)"', sources)) - {"PHYSAI_WALK_NAME"}  # a C macro
    table = re.search(r"## Environment variables\n(.*?)\n## ", (ROOT / "README.md").read_text(), re.S)
    assert table, "README.md has no 'Environment variables' section"
    listed = set(re.findall(r"^\| `((?:PHYSAI|NUMBA)_[A-Z_]+)`", table[1], re.M))
    assert read <= listed and {"NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR"} <= listed, read - listed
