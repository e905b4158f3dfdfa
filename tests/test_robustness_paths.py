"""Every command against paths the file system refuses and files cut short, each on the real file system: one line
on stderr and exit 2, never a traceback; files the project wrote that a killed run cut short are replaced by the next
run, and what a killed writer left (a hidden temporary file, the previous run's notebook) is gone after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from physai import _files, cli
from physai.course import lesson
from physai.errors import InputError

LONG = "x" * 300  # longer than a file name may be (255 bytes on Linux and macOS)


def run(*args) -> tuple[int, str]:
    res = CliRunner().invoke(cli.app, [str(a) for a in args])
    return res.exit_code, res.stderr if res.exit_code else res.output


def one_line_exit_2(code: int, err: str) -> bool:
    return code == 2 and err.count("\n") == 1 and err.startswith("physai: error:") and "Traceback" not in err


@pytest.fixture
def places(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "fd" / "build.py").mkdir(parents=True)  # a folder where the exercise's file goes
    return tmp_path


BAD = {
    "--out too long": ["lesson", "09", "--build", "--out", LONG],
    "--out under a long name": ["lesson", "09", "--build", "--out", f"{LONG}/out"],
    "--results too long": ["notebook", "09", ".", "--results", LONG],
    "notebook folder too long": ["notebook", "09", LONG, "--results", "none"],
    "notebook into a file": ["notebook", "09", "afile", "--results", "none"],
    "notebook under a file": ["notebook", "09", "afile/sub", "--results", "none"],
    "notebook into /proc": ["notebook", "09", "/proc/physai-notebook", "--results", "none"],
    "--robot too long": ["fk", "--robot", LONG],
    "--robot file too long": ["fk", "--robot", f"{LONG}.xml"],
    "exercise folder too long": ["exercise", "09", LONG],
    "check folder too long": ["check", "09", LONG],
    "exercise --force onto a folder": ["exercise", "09", "fd", "--force"],
}


@pytest.mark.parametrize("case", list(BAD))
def test_every_bad_path_is_one_line_and_exit_2(places, case):
    code, err = run(*BAD[case])
    assert one_line_exit_2(code, err), (case, code, err)
    assert "(a name of 3" in err or "long" not in case  # a long name is cut in the middle, its length said


RESULTS = {
    "cut short": '{"build": {"column": {"lev',
    "a list": "[]",
    "a number per script": '{"build": 5}',
    "no experiment": '{"build": {}}',
    "text where a number goes": '{"build": {"column": {"lever": "far"}}, "experiment": {}}',
}


@pytest.mark.parametrize("case", list(RESULTS))
def test_a_cut_or_oddly_typed_results_file_is_one_line_and_exit_2(tmp_path, case):
    (tmp_path / "run" / "09-jacobians").mkdir(parents=True)
    (tmp_path / "run" / "09-jacobians" / "results.json").write_text(RESULTS[case])
    code, err = run("notebook", "09", tmp_path / "nb", "--results", tmp_path / "run")
    assert one_line_exit_2(code, err), (case, err)
    assert not (tmp_path / "nb" / "09-jacobians.ipynb").exists()


def test_a_cut_results_or_claims_file_the_project_wrote_is_replaced_on_the_next_run(tmp_path):
    (tmp_path / lesson.RESULTS_FILE).write_text('{"build": {"a": 1.')
    (tmp_path / lesson.CLAIMS_FILE).write_text('[{"lesson": "09", "cl')
    with pytest.raises(InputError, match="cut short, or edited"):
        lesson.read_results(tmp_path)
    with pytest.raises(InputError, match="cut short, or edited"):
        lesson.read_claims(tmp_path)
    lesson.save_results(tmp_path, "build.py", {"a": 1.5})
    claim = lesson.Claim("09", "a claim", "1", "1", "agree", "equal", "build.py")
    lesson.write_claims(tmp_path, [claim], "build.py")
    assert lesson.read_results(tmp_path) == {"build": {"a": 1.5}}
    assert lesson.read_claims(tmp_path) == [claim]


def killed_writer(folder: Path, name: str) -> Path:
    """The temporary file a process killed (SIGKILL) in the middle of writing ``folder/name`` left behind."""
    code = ("import os, signal, sys\nfrom physai import _files\n"
            "with _files.replacing(sys.argv[1]) as fh:\n    fh.write('half')\n    fh.flush()\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(folder / name)], check=False)
    assert proc.returncode == -signal.SIGKILL
    (tmp,) = folder.glob(f".{name}.*.tmp")
    return tmp


def test_a_killed_run_leaves_no_stale_notebook_and_no_hidden_tmp_files_after_the_next_run(tmp_path):
    folder = tmp_path / "out" / "09-jacobians"
    folder.mkdir(parents=True)
    stale = folder / "09-jacobians.ipynb"
    stale.write_text("{}")  # the previous run's notebook: the run below replaces the numbers it was made from
    left = [killed_writer(folder, "results.json"), killed_writer(tmp_path / "out", "index.html")]
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as alive:
        busy = folder / f".claims.json.{alive.pid}-0123456789ab.tmp"  # a writer still at work: left alone
        busy.write_text("in progress")
        try:
            code, out = run("lesson", "09", "--build", "--out", tmp_path / "out")
        finally:
            alive.kill()
    assert code == 0, out
    assert not stale.exists() and not any(p.exists() for p in left) and busy.exists()
    assert json.loads((folder / "results.json").read_text())["build"]  # the run's own files are whole


def test_sweep_removes_only_temporary_files_of_writers_that_are_gone(tmp_path):
    dead = killed_writer(tmp_path, "page.html")
    mine = tmp_path / f".x.{os.getpid()}-0123456789ab.tmp"  # this process sweeps after its own writes are done
    mine.write_text("")
    other = tmp_path / ".notes.tmp"  # not a name physai writes
    other.write_text("")
    assert sorted(_files.sweep(tmp_path)) == sorted([dead, mine])
    assert other.exists()


# ---- text from --results is shown, never run, in notebooks and pages ----------------------------------------------

HOSTILE = "<script>alert(1)</script> *x* | y"
PAGE = """+++
title = "A demo"
module = "More"
hands_on = 5
summary = "A page."
+++
The link is {{ R.build.name | text }}; the tool is `{{ R.build.tool | text }}`.

| joint | note |
|---|---|
| 1 | {{ R.build.name | text }} |

{{ figure("plot.png") }}
"""


def test_text_from_the_results_is_escaped_in_the_notebook_and_the_page(tmp_path):
    from physai.course import course
    from physai.course import notebook as nb

    folder = tmp_path / "01-demo"
    folder.mkdir()
    (folder / course.PAGE_FILE).write_text(PAGE)
    (folder / "plot.png").write_bytes(b"")
    lesson.save_results(folder, "build.py", {"name": HOSTILE, "tool": "link_4"},
                        figures=[lesson.Figure("plot.png", f"A caption {HOSTILE}", f"alt {HOSTILE}")])
    _, markdown = nb.page_markdown(folder, folder)
    assert "<script>" not in markdown and "*x*" not in markdown and "| y" not in markdown
    assert "&#60;script&#62;alert(1)&#60;/script&#62; &#42;x&#42; &#124; y" in markdown
    assert "`link_4`" in markdown  # a plain name stays as it is, also in a code span
    import markdown_it

    shown = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)  # as Jupyter renders it
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt; *x* | y</td>" in shown
    page = course.render_body(course.read_lesson(folder, folder), folder)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<figcaption>A caption &lt;script&gt;" in page
