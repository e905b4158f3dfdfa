"""The tour and its report, from a throwaway experiments tree: every script runs, claims become HTML table rows, the
summary counts those rows, stale outputs stay out, and the page reads at 1280 px in Chromium."""

import os
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from physai import cli
from physai.course import report
from physai.course.lesson import Claim, write_claims

# A 1x1 PNG: the report only copies and links figures, so the demo needs no plotting library.
PNG_1X1 = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS"
           b"\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00"
           b"\x00IEND\xaeB`\x82")
LONG = "x" * 400  # one unbroken word far wider than the page: the report must wrap it, not cut it
DEMO_BUILD = f"""\"\"\"Demo lesson: claims, a figure and a transcript.\"\"\"
from pathlib import Path
from physai.course.lesson import (Claim, Figure, full_run, out_dir, save_results, verdict,
                                  write_claims, transcript)
here = out_dir(__file__)
full = full_run()
with transcript(here / "build_output.txt"):
    claims = [Claim("01", "value", "1.00", "1.00", verdict(True), "equal to 2 decimals", "build.py"),
              Claim("01", "other value", "3.00", "2.00", verdict(False), "{LONG}", "build.py"),
              Claim("01", "full run", "yes", "yes" if full else "no", verdict(full), "--full reached the script",
                    "build.py")]
    print("{LONG}")
    (here / "build_line.png").write_bytes({PNG_1X1!r})
    print("figure: build_line.png (not a caption: the transcript is only read)")
    save_results(here, "build.py", {{}}, figures=[Figure("build_line.png", "A one-pixel line.", "one grey pixel")])
    write_claims(here, claims, "build.py")
"""


def invoke(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


@pytest.fixture
def lessons(tmp_path, monkeypatch):
    """A throwaway experiments folder: one working lesson with a variant and stale outputs, and one failing."""
    root = tmp_path / "experiments"
    demo, broken = root / "01-demo", root / "02-broken"
    demo.mkdir(parents=True)
    broken.mkdir()
    (demo / "build.py").write_text(DEMO_BUILD)
    (demo / "wxai.py").write_text("print('variant ran')\n")
    (demo / "_helpers.py").write_text("raise RuntimeError('a helper is not a script')\n")
    stale = demo / "old_output.txt"
    stale.write_text("stale numbers from an earlier run\n")
    write_claims(broken, [Claim("02", "stale", "1", "1", "agree", "an earlier run", "experiment.py")],
                 "experiment.py")
    for path in (stale, broken / "claims.json"):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    (broken / "experiment.py").write_text("import sys\nprint('about to fail')\nsys.exit(3)\n")
    monkeypatch.setattr("physai.course.lesson.LESSONS_DIR", root)
    monkeypatch.chdir(tmp_path)  # `physai lesson` without --out writes ./physai-out: here, not in the checkout
    return root


class _Tables(HTMLParser):
    """Rows of each <table>, as lists of cell texts, in page order."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((dict(attrs).get("class", ""), []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][1][-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def tables(page: str, cls: str) -> list[list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return [rows for c, rows in parser.tables if c == cls]


def test_lesson_scripts_are_build_experiment_then_variants(lessons):
    (lessons / "01-demo" / "experiment.py").write_text("")
    assert [p.name for p in cli.lesson_scripts(lessons / "01-demo")] == ["build.py", "experiment.py", "wxai.py"]


def test_tour_runs_every_script_and_the_summary_counts_the_claim_rows(lessons, tmp_path):
    out = tmp_path / "out"
    res = invoke("tour", "--out", out, "--full")
    assert res.exit_code == 1, res.output  # the broken lesson fails the tour
    assert "about to fail" in res.stdout and "variant ran" in res.stdout and "FAIL (3)" in res.stdout
    assert "tour wall time" in res.stdout and "helper" not in res.stdout
    page = (out / "audit.html").read_text()
    claims = tables(page, "claims")
    assert len(claims) == 1  # the broken lesson's claims.json is from an earlier run: left out
    rows = claims[0][1:]
    assert [r[0] for r in rows] == ["value", "other value", "full run"]
    assert [r[3].split()[-1] for r in rows] == ["agree", "disagree", "agree"]  # --full reached the script
    summary = {(r[0], r[1]): r for r in tables(page, "summary")[0][1:]}
    assert summary["01-demo", "build.py"][4:7] == ["3", "2", "1"]  # claims, agree, disagree: counted from the rows
    assert summary["02-broken", "experiment.py"][4:7] == ["0", "0", "0"]
    assert "failed (exit 3)" in page and "stale numbers" not in page
    assert '<img src="01-demo/build_line.png"' in page and "<figcaption>A one-pixel line.</figcaption>" in page
    assert 'alt="one grey pixel"' in page  # the caption and alt text the run recorded in results.json
    assert (out / "01-demo" / "build_line.png").read_bytes() == PNG_1X1
    assert "<details><summary>transcript: build_output.txt</summary>" in page
    assert report.versions()["mujoco"] in page and 'id="wall"' in page


def test_lesson_runs_only_the_requested_script(lessons):
    res = invoke("lesson", "1", "--build")
    assert res.exit_code == 0, res.output
    assert "figure: build_line.png" in res.stdout and "variant ran" not in res.stdout
    res = invoke("lesson", "01")
    assert res.exit_code == 0 and "variant ran" in res.stdout
    res = invoke("lesson", "02")
    assert res.exit_code == 1 and "about to fail" in res.stdout
    res = invoke("lesson", "02", "--build")
    assert res.exit_code == 2 and "no build.py" in res.stderr


def test_a_lesson_that_raises_is_reported_and_the_tour_goes_on(lessons, tmp_path):
    (lessons / "02-broken" / "experiment.py").write_text("raise ValueError('broken on purpose')\n")
    res = invoke("tour", "--out", tmp_path / "out")
    assert res.exit_code == 1 and "ValueError: broken on purpose" in res.stdout
    assert "variant ran" in res.stdout  # scripts before it ran; the report is written
    assert "failed (exit 1)" in (tmp_path / "out" / "audit.html").read_text()


def test_a_tour_that_finds_no_lesson_script_fails_and_says_where_it_looked(tmp_path, monkeypatch):
    empty = tmp_path / "experiments"
    (empty / "01-empty").mkdir(parents=True)
    monkeypatch.setattr("physai.course.lesson.LESSONS_DIR", empty)
    res = invoke("tour", "--out", tmp_path / "out")
    assert res.exit_code == 1 and f"no lesson scripts found in {empty}" in res.stderr


def files(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))


def test_installed_lessons_write_under_the_output_folder_and_nothing_beside_themselves(lessons, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setattr("physai.course.lesson.PACKAGED_LESSONS", lessons)  # as an installed package carries them
    monkeypatch.delenv("PHYSAI_LESSON_OUT", raising=False)
    before, out = files(lessons), tmp_path / "out"
    res = invoke("tour", "--out", out)
    assert res.exit_code == 1 and "variant ran" in res.stdout  # 02-broken fails, as in a clone
    page = (out / "audit.html").read_text()
    assert len(tables(page, "claims")) == 1 and '<img src="01-demo/build_line.png"' in page
    assert (out / "01-demo" / "build_line.png").read_bytes() == PNG_1X1
    res = invoke("lesson", "01", "--build", "--out", tmp_path / "lesson-out")
    assert res.exit_code == 0 and (tmp_path / "lesson-out" / "01-demo" / "build_output.txt").is_file()
    assert files(lessons) == before and "PHYSAI_LESSON_OUT" not in os.environ


def test_script_title_is_the_docstrings_first_paragraph(tmp_path):
    script = tmp_path / "x.py"
    script.write_text('"""Lesson 99: a title that\n   runs over two lines.\n\nRun: details."""\n')
    assert report.script_title(script) == "Lesson 99: a title that runs over two lines."
    script.write_text("x = 1\n")
    assert report.script_title(script) == ""


CUT_OFF = """() => [...document.querySelectorAll('pre, td, th, p, figcaption, summary, h1, h2, h3')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.tagName + ': ' + e.textContent.slice(0, 60))"""


def test_a_file_written_right_after_the_file_clock_counts_as_fresh(lessons):
    # the file system's own stamps are the reference: against time.time() a file written within a tick of the
    # start can carry an earlier mtime (a figure of a fast script went missing from the report that way)
    script = lessons / "01-demo" / "build.py"
    figure = lessons / "01-demo" / "quick.png"
    for _ in range(300):
        since = report.file_clock(script)
        figure.write_bytes(PNG_1X1)
        assert report._fresh([figure], since) == [figure]


def test_report_in_chromium_at_1280_px_cuts_no_text_and_loads_every_figure(lessons, tmp_path, chromium):
    chromium, sync_api = chromium
    out = tmp_path / "out"
    res = invoke("tour", "--out", out)
    assert res.exit_code == 1 and "variant ran" in res.stdout, res.output  # 02-broken fails, as in a clone
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((out / "audit.html").as_uri())
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        cut = page.evaluate(CUT_OFF)
        images = page.evaluate("() => [...document.images].map(i => [i.src, i.complete && i.naturalWidth])")
        page_wide = page.evaluate("() => document.documentElement.scrollWidth")
        browser.close()
    assert cut == []
    assert page_wide <= 1280
    assert images and all(w > 0 for _, w in images), images


def test_claim_text_is_escaped_as_html_escape_writes_it_not_read_as_markup():
    import html

    text = "<script>alert(1)</script> & |a - b| < 1e-12"
    page = str(report.claims_html([Claim("01", text, "a < b", "1 > 0", "agree", text, "build.py")]))
    assert "<script>" not in page and page.count(html.escape(text, quote=False)) == 2
    assert f"<td>{html.escape('a < b')}</td><td>{html.escape('1 > 0')}</td>" in page
