"""The course site and the graded exercises.

Renderer rules on a throwaway lesson (numbers only through a format, quizzes well formed, figures from the run,
maths as MathML); then the real course, built once by ``physai tour`` into a temporary folder: every lesson 07-13
has its page in the lesson's shape, every number shown is the run's saved value formatted as the page says
(re-read from the run's results.json), nothing is typed by hand; and every lesson's exercise: the blank copy
fails, the lesson's own build.py passes, a sign flip fails with a hint.
"""

from __future__ import annotations

import ast
import html
import itertools
import json
import math
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from physai import cli
from physai.course import course
from physai.course import exercise as ex
from physai.errors import InputError
from physai.course.lesson import Figure, read_figures, save_results
from physai.course.reading import reading_words

LESSONS = ("07", "08", "09", "10", "11", "12", "13")
# The pages held to the teaching rules below (no talk of source documents or of how the page was made, the word
# budget, captions as sentences, one command style): every lesson.
TEACHING = LESSONS
WORDS_PER_MINUTE, MAX_WORDS = 90, 4500  # the bound on what a reader sees without opening anything
READING_SPEED = 200  # words a minute: the pages' stated reading time
MIN_WORDS = 1500
DEMO_BUILD = '''"""Demo lesson: a rotation written by hand."""
import numpy as np

from physai.course.lesson import out_dir, save_results

HERE = out_dir(__file__)
EXERCISE = ("rot", "twice")


def rot(theta):
    """2-D rotation by ``theta`` rad, shape (2, 2)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s],
                     [s, c]])


def twice(x):
    """``2 x``."""
    return 2 * x


def main():
    save_results(HERE, "build.py", {"lever": 0.22021234, "rows": [[1e-3, 2.5e-9], [1e-5, 5.6e-12]],
                                    "name": "shoulder_lift", "share": 0.995})


if __name__ == "__main__":
    main()
'''
DEMO_CHECK = '''import numpy as np

from physai.course.exercise import Hint


def check_rot(build, rng):
    got, want = build.rot(0.3), np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    if np.allclose(got, want.T):
        raise Hint("this is the transpose of the rotation: the sine's sign is flipped")
    if not np.allclose(got, want):
        raise Hint("not a rotation by theta")


def check_twice(build, rng):
    if not np.isclose(build.twice(2.0), 4.0):
        raise Hint("twice(2) should be 4")


MUTATIONS = [("[s, c]]", "[-s, c]]", "rotation")]
'''
DEMO_PAGE = """+++
title = "A demo"
module = "More"
hands_on = 5
summary = "A page to try the renderer."
+++

## The problem

The lever of {{ R.build.name | text }} is {{ R.build.lever | fix(4) }} m, and $\\tau = J^\\top F$.

{% call quiz("Which is right?") %}
- A wrong one.
! It mistakes the lever, {{ R.build.lever | fix(2) }} m, for a *force*.
+ The right one, {{ R.build.share | pct(1) }}.
- Another wrong one.
? Because the lever is {{ R.build.lever | sig(3) }} m.
{% endcall %}
"""


def invoke(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


# ---- the renderer, on a throwaway lesson ---------------------------------------------------------------------


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A one-lesson experiments tree whose build.py has been run (results in its folder)."""
    folder = tmp_path / "experiments" / "01-demo"
    folder.mkdir(parents=True)
    (folder / "build.py").write_text(DEMO_BUILD)
    (folder / "_check.py").write_text(DEMO_CHECK)
    (folder / course.PAGE_FILE).write_text(DEMO_PAGE)
    monkeypatch.setattr("physai.course.lesson.LESSONS_DIR", folder.parent)
    monkeypatch.delenv("PHYSAI_LESSON_OUT", raising=False)
    ex.load(folder / "build.py").main()
    return folder


def render(folder: Path, body: str) -> str:
    lesson = course.read_lesson(folder, folder)
    return course.render_body(course.Lesson(lesson.name, lesson.meta, body, lesson.results), folder)


def test_numbers_render_from_the_results_as_pythons_format_writes_them(demo):
    page = render(demo, "{{ R.build.lever | fix(4) }} {{ R.build.rows[1][1] | sci(1) }} {{ R.build.lever | sig(2) }}"
                        " {{ R.build.share | pct(1) }} {{ R.build.name | text }}")
    assert [s for s, _ in spans(page)] == [f"{0.22021234:.4f}", f"{5.6e-12:.1e}", f"{0.22021234:.2g}", "99.5 %",
                                           "shoulder_lift"]
    assert 'data-ref="build.rows[1][1]" data-fmt="sci:1"' in page


@pytest.mark.parametrize("value, digits, text", [(20000, 0, "20\u202f000"), (1234567.891, 2, "1\u202f234\u202f567.89"),
                                                  (-12345.5, 1, "-12\u202f345.5"), (9999.4, 0, "9999"),
                                                  (9999.6, 0, "10\u202f000"), (0.22021234, 3, "0.220")])
def test_fix_groups_thousands_from_five_digits_as_si_style_writes_them(value, digits, text):
    assert course.FORMATS["fix"](value, digits) == text == formatted(value, f"fix:{digits}")


def test_a_number_in_a_code_span_or_a_blocks_summary_shows_as_a_number_not_as_its_tag(demo):
    page = render(demo, "`avoid={{ R.build.name | text }}`\n\n{% call predict('Where?') %}\nThe capsule of "
                        "`{{ R.build.name | text }}`, at {{ R.build.lever | fix(2) }}.\n{% endcall %}")
    assert [s for s, _ in spans(page)] == ["shoulder_lift", "shoulder_lift", f"{0.22021234:.2f}"]
    assert tag_text(page) == []


@pytest.mark.parametrize("body, words", [
    ("{{ R.build.lever }}", "without a format"),
    ("{{ R.build.levr | fix(2) }}", "lever"),  # the message lists what the run saved
    ("{{ 0.77 | fix(2) }}", "typed into the page"),
    ("{{ R.build.name | fix(2) }}", "finite number"),
])
def test_a_number_not_from_the_run_is_refused(demo, body, words):
    with pytest.raises(course.CourseError, match=words):
        render(demo, body)


@pytest.mark.parametrize("options", ["- a\n- b\n- c\n? why", "+ a\n+ b\n- c\n? why", "+ a\n- b\n? why",
                                     "+ a\n- b\n- c"])
def test_a_quiz_needs_three_options_one_right_and_a_why(demo, options):
    with pytest.raises(course.CourseError, match="quiz"):
        render(demo, f'{{% call quiz("Q?") %}}\n{options}\n{{% endcall %}}')


def test_each_run_of_three_quizzes_on_a_page_puts_the_right_option_once_in_each_place(demo):
    """Authors write the right option second by habit; a page places it from a permutation of A, B, C per run of
    three quizzes, drawn by the page's SHA-256 (hashlib, the reference), the wrong options in their order, so a
    learner can answer neither by position nor by elimination over the page."""
    import hashlib

    quizzes = "".join(f'{{% call quiz("Question {i}?") %}}\n- w1\n! no\n+ r{i}\n- w2\n? why\n{{% endcall %}}\n\n'
                      for i in range(7))
    page = render(demo, quizzes)
    shown = [re.findall(r'data-correct="(true|false)"', quiz) for quiz in page.split("data-quiz")[1:]]
    places = [options.index("true") for options in shown]
    orders = list(itertools.permutations(range(3)))
    expected = [p for run in range(3) for p in orders[int(hashlib.sha256(f"{demo.name}:{run}".encode()).hexdigest(),
                                                              16) % 6]][:7]
    assert places == expected and sorted(places[:3]) == sorted(places[3:6]) == [0, 1, 2]
    options, _ = course.quiz_parts("Q?", "- w1\n! no\n+ r\n- w2\n? why", 1)
    assert [(right, text, whynot) for right, text, whynot in options] == [
        (False, "w1", ["no"]), (True, "r", []), (False, "w2", [])]


@pytest.mark.parametrize("options", ["+ a\n! not after the right one\n- b\n- c\n? why", "! first\n+ a\n- b\n- c\n? why"])
def test_a_why_not_must_follow_a_wrong_option(demo, options):
    with pytest.raises(course.CourseError, match="why-not must follow"):
        render(demo, f'{{% call quiz("Q?") %}}\n{options}\n{{% endcall %}}')


def test_a_wrong_options_why_not_renders_on_that_option_with_its_number(demo):
    page = render(demo, course.split_front_matter(DEMO_PAGE, demo)[1])
    options = page.split('<ol class="options">')[1].split("</ol>")[0].split("<li>")[1:]
    with_why = [o for o in options if 'class="whynot" hidden' in o]  # the options' order is the question's hash's
    assert len(options) == 3 and len(with_why) == 1
    assert "<em>force</em>" in with_why[0] and 'data-ref="build.lever" data-fmt="fix:2"' in with_why[0]


def _plot(folder: Path, figures=(Figure("plot.png", "A *plot* & its caption.", "a line <rising>"),)) -> None:
    """A figure written in ``folder`` and recorded by a script ``plot.py`` (the demo's build.py draws none)."""
    (folder / "plot.png").write_bytes(b"")
    save_results(folder, "plot.py", {}, figures=figures)


def test_a_block_inside_a_block_is_rendered_and_one_inside_a_line_is_refused(demo):
    _plot(demo)
    page = render(demo, '{% call details("More") %}\nText.\n\n{{ figure("plot.png") }}\n{% endcall %}')
    assert "PHYSAIBLOCK" not in page and page.count("<figure>") == 1 and page.index("<details") < page.index("<img")
    with pytest.raises(course.CourseError, match="paragraph of its own"):
        render(demo, 'See {{ figure("plot.png") | trim }} here.')  # trim: no blank lines around it


def test_a_figure_shows_the_caption_and_alt_text_its_run_recorded_escaped(demo):
    _plot(demo)
    page = render(demo, '{{ figure("plot.png") }}')
    assert '<img src="plot.png" alt="a line &lt;rising&gt;">' in page
    assert "<figcaption>A <em>plot</em> &amp; its caption." in page  # the caption is Markdown, like the page


def test_a_figure_must_be_written_and_recorded_by_the_run(demo):
    with pytest.raises(course.CourseError, match="no such figure"):
        render(demo, '{{ figure("missing.png") }}')
    (demo / "plot.png").write_bytes(b"")
    with pytest.raises(course.CourseError, match="no caption and alt text"):
        render(demo, '{{ figure("plot.png") }}')


@pytest.mark.parametrize("caption, alt, words", [("", "a line", "caption"), ("A line.", " ", "alt")])
def test_a_figure_without_caption_or_alt_text_is_refused_when_recorded(caption, alt, words):
    with pytest.raises(InputError, match=f"plot.png: {words}"):
        Figure("plot.png", caption, alt)


def test_a_recorded_figure_must_exist_and_a_rerun_replaces_the_scripts_records(demo):
    with pytest.raises(InputError, match="not written"):
        save_results(demo, "plot.py", {}, figures=[Figure("missing.png", "A plot.", "a line")])
    _plot(demo)
    _plot(demo, [Figure("plot.png", "Another caption.", "another line")])
    assert read_figures(demo) == {"plot.png": Figure("plot.png", "Another caption.", "another line")}
    save_results(demo, "plot.py", {})
    assert read_figures(demo) == {}


@pytest.mark.parametrize("value, shown", [(False, "no"), (True, "yes"), (0.0, "no"), ([], "no"), ([0], "yes")])
def test_a_condition_on_a_result_tests_the_saved_value_as_python_does(demo, value, shown):
    lesson = course.read_lesson(demo, demo)
    body = "{% if R.build.flag %}yes{% else %}no{% endif %}"
    page = course.render_body(course.Lesson(lesson.name, lesson.meta, body, {"build": {"flag": value}}), demo)
    assert page.strip() == f"<p>{shown}</p>"


@pytest.mark.parametrize("test, shown", [("R.build.share == 1", "yes"), ("R.build.share != 1", "no"),
                                         ("R.build.share < R.build.half", "no"), ("R.build.half < 0.75", "yes"),
                                         ("R.build.share >= 1.0", "yes"), ("R.build.half > R.build.share", "no")])
def test_a_comparison_of_results_compares_the_saved_values_as_python_does(demo, test, shown):
    lesson = course.read_lesson(demo, demo)
    body = f"{{% if {test} %}}yes{{% else %}}no{{% endif %}}"
    page = course.render_body(course.Lesson(lesson.name, lesson.meta, body, {"build": {"share": 1.0, "half": 0.5}}),
                              demo)
    assert page.strip() == f"<p>{shown}</p>"


def test_build_its_listings_are_folded_and_the_experiments_are_not(demo):
    from html.parser import HTMLParser

    class Listings(HTMLParser):  # the reference: the standard library's parser, not the renderer's own markup
        def __init__(self):
            super().__init__()
            self.open_details, self.found = 0, []

        def handle_starttag(self, tag, attrs):
            self.open_details += tag == "details" and ("class", "solution") in attrs
            if tag == "pre":
                self.found.append(self.open_details > 0)

        def handle_endtag(self, tag):
            self.open_details -= tag == "details" and self.open_details > 0

    listing = "```python\nx = 1\n```\n"
    page = render(demo, f"## Build it\n\nType it.\n\n{listing}\n### Step 2\n\n{listing}\n## Experiment\n\n{listing}")
    parser = Listings()
    parser.feed(page)
    assert parser.found == [True, True, False]


def test_maths_render_as_mathml_and_markdown_inside_blocks(demo):
    page = render(demo, course.split_front_matter(DEMO_PAGE, demo)[1])
    assert "<math" in page and "$" not in page
    assert page.count('data-correct="true"') == 1 and page.count('data-correct="false"') == 2
    assert 'class="why" hidden' in page and "<h2" in page


def test_maths_leave_no_raw_tex_an_operator_name_is_set_upright_and_an_unknown_command_is_refused(demo):
    page = render(demo, "$$\\arg\\min_q f + \\lVert x \\rVert^2 + \\left\\lvert y \\right\\rvert$$")
    assert "<mi>arg</mi>" in page and "\\" not in page
    assert page.count('<mo stretchy="false">&#x02016;</mo>') == 2  # a norm's bars keep their size, like TeX's
    with pytest.raises(course.CourseError, match=r"\\rank is not a command"):
        render(demo, "The $\\rank J$ drops.")


def test_lesson_command_writes_the_page_and_prints_its_path(demo, tmp_path):
    res = invoke("lesson", "1", "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    page = tmp_path / "out" / "01-demo" / "index.html"
    assert str(page) in res.stdout.replace("\n", "") and "data-quiz" in page.read_text()


def test_a_lesson_whose_script_failed_gets_no_page_not_even_an_earlier_runs(demo, tmp_path):
    out, page = tmp_path / "out", tmp_path / "out" / "01-demo" / "index.html"
    for command in ("tour", "lesson"):
        (demo / "experiment.py").write_text("")
        res = invoke(*(["lesson", "1"] if command == "lesson" else ["tour"]), "--out", out)
        assert res.exit_code == 0 and page.is_file(), res.output
        (demo / "experiment.py").write_text("raise SystemExit(3)\n")  # the build's results.json is left from before
        res = invoke(*(["lesson", "1"] if command == "lesson" else ["tour"]), "--out", out)
        assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
        assert "page not built" in res.stdout and not page.exists(), command
    assert "01-demo: experiment.py failed (exit 3)" in (out / "index.html").read_text()
    assert invoke("lesson", "1", "--build", "--out", out).exit_code == 0  # one script alone: no page, no error


def test_a_page_source_without_a_title_is_reported_and_the_other_pages_are_built(demo, tmp_path):
    bad, out = demo.parent / "02-untitled", tmp_path / "out"
    bad.mkdir()
    shutil.copy(demo / "build.py", bad / "build.py")
    (bad / course.PAGE_FILE).write_text(DEMO_PAGE)
    assert invoke("lesson", "2", "--out", out).exit_code == 0 and (out / bad.name / "index.html").is_file()
    (bad / course.PAGE_FILE).write_text(DEMO_PAGE.replace('title = "A demo"\n', ""))
    res = invoke("lesson", "2", "--out", out)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert "page not built" in res.stdout and "front matter lacks title" in res.stdout.replace("\n", "")
    assert not (out / bad.name / "index.html").exists()  # the earlier run's page is gone
    res = invoke("tour", "--out", out)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert "02-untitled" in res.stdout and (out / "01-demo" / "index.html").is_file()
    assert not (out / bad.name / "index.html").exists()  # the earlier run's page is gone
    assert "02-untitled" in (out / "index.html").read_text()  # named under "Pages not built"


# ---- the exercise framework, on the throwaway lesson ---------------------------------------------------------


def test_exercise_blanks_the_listed_functions_and_keeps_their_docstrings(demo, tmp_path):
    res = invoke("exercise", "01", tmp_path / "me")
    assert res.exit_code == 0, res.output
    text = (tmp_path / "me" / "build.py").read_text()
    assert '"""2-D rotation by ``theta`` rad, shape (2, 2)."""' in text and "np.cos(theta)" not in text
    assert text.count("raise NotImplementedError") == 2 and "def main():" in text
    assert invoke("exercise", "01", tmp_path / "me").exit_code == 2  # the learner's work is never overwritten


@pytest.mark.parametrize("under_uv, command", [(True, "uv run physai check 01"), (False, "physai check 01")])
def test_exercise_names_the_check_command_the_learner_can_type(demo, tmp_path, monkeypatch, under_uv, command):
    # the reference: uv sets UV_RUN_RECURSION_DEPTH in what `uv run` starts, where the bare command is not on PATH
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
    if under_uv:
        monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    res = invoke("exercise", "01", tmp_path / "me")
    assert res.exit_code == 0 and f"then run: {command} " in " ".join(res.stdout.split()), res.output
    assert under_uv or "uv run" not in res.stdout


def test_check_grades_blank_reference_and_a_flipped_sign(demo, tmp_path):
    invoke("exercise", "01", tmp_path / "me")
    res = invoke("check", "01", tmp_path / "me")
    assert res.exit_code == 1 and res.stdout.count(ex.NOT_WRITTEN) == 2
    shutil.copy(demo / "build.py", tmp_path / "me" / "build.py")
    assert invoke("check", "01", tmp_path / "me").exit_code == 0
    (tmp_path / "me" / "build.py").write_text(DEMO_BUILD.replace("[[c, -s]", "[[c, s]").replace("[s, c]]", "[-s, c]]"))
    grades = {g.function: g for g in ex.check(demo, tmp_path / "me").grades}
    assert not grades["rot"].passed and "transpose" in grades["rot"].message and grades["twice"].passed


def test_check_of_a_missing_folder_names_the_command_that_writes_it(demo, tmp_path):
    res = invoke("check", "01", tmp_path / "nowhere")
    assert res.exit_code == 2 and "physai exercise 01" in res.stderr


# ---- the real course ---------------------------------------------------------------------------------------


def lesson_folder(number: str) -> Path:
    return next(d for d in cli.lesson_dirs() if d.name.startswith(number + "-"))


class _Page(HTMLParser):
    """The page's visible prose (outside maths, code, scripts, styles and the appendix), its number spans, its
    h2 titles, and its elements' attributes."""

    SKIP = {"math", "code", "pre", "script", "style"}

    def __init__(self):
        super().__init__()
        self.text, self.spans, self.h2, self.tags, self.stack = [], [], [], [], []
        self._span = None
        self._in_appendix = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "appendix" in attrs.get("class", ""):
            self._in_appendix = True
        if tag in self.SKIP or (tag == "span" and "num" in attrs.get("class", "").split()):
            self.stack.append(tag)
            if tag == "span":
                self._span = [attrs, ""]
        if tag == "h2":
            self.h2.append("")

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
            if tag == "span" and self._span is not None:
                self.spans.append((self._span[1], self._span[0]))
                self._span = None

    def handle_data(self, data):
        if self._span is not None:
            self._span[1] += data
        if self.h2 and self.tags and self.tags[-1][0] == "h2" and not self.stack:
            self.h2[-1] += data
        if not self.stack and not self._in_appendix:
            self.text.append(data)


def parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    return p


def spans(page: str) -> list[tuple[str, dict]]:
    return parse(page).spans


def lookup(results: dict, ref: str):
    value = results
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", ref):
        value = value[int(index)] if index else value[key]
    return value


def formatted(value, fmt: str) -> str:
    """The format filters' spec, written again: decimals, scientific, significant digits, percent, text."""
    kind, digits = fmt.split(":")
    d = int(digits)
    if kind == "fix" and abs(round(value, d)) >= 10_000:  # SI grouping: a narrow no-break space every three digits
        whole, _, decimals = f"{abs(value):.{d}f}".partition(".")
        groups = [whole[max(0, i - 3):i] for i in range(len(whole), 0, -3)][::-1]
        return "-" * (value < 0) + "\u202f".join(groups) + ("." + decimals if d else "")
    if kind == "fix":
        return f"{value:.{d}f}".replace("-0." + "0" * d, "0." + "0" * d) if d else f"{value:.0f}".replace("-0", "0")
    if kind == "pct":
        return formatted(100 * value, f"fix:{d}") + " %"
    if kind == "text":  # a string from the run: the numeric formats would raise on it
        return str(value)
    return {"sci": f"{value:.{d}e}", "sig": f"{value:.{d}g}"}[kind]


HAND_TYPED = re.compile(r"(?<![\w.])\d+\.\d+|(?<![\w.])\d+(?:\.\d+)?e[-+]?\d+|10\^|10⁻")


@pytest.mark.parametrize("number", LESSONS)
def test_every_number_on_the_page_is_the_runs_saved_value(site, number):
    name = lesson_folder(number).name
    page = (site / name / "index.html").read_text()
    results = json.loads((site / name / "results.json").read_text())
    parsed = parse(page)
    assert parsed.spans, "the page shows no number from its run"
    for text, attrs in parsed.spans:
        assert text == formatted(lookup(results, attrs["data-ref"]), attrs["data-fmt"]), attrs
    prose = " ".join(parsed.text)
    assert HAND_TYPED.findall(prose) == [], "numbers typed by hand: " + ", ".join(HAND_TYPED.findall(prose))


@pytest.mark.parametrize("number", LESSONS)
def test_the_page_has_the_lessons_shape(site, number):
    name = lesson_folder(number).name
    page = (site / name / "index.html").read_text()
    parsed = parse(page)
    titles = [t.strip() for t in parsed.h2]
    assert [t for t in titles if t in course.SECTIONS] == list(course.SECTIONS), titles
    words = len(re.findall(r"[A-Za-z][A-Za-z'-]+", " ".join(parsed.text)))
    assert words >= MIN_WORDS, f"{words} words of prose"
    check_yourself = page.split('id="check-yourself"')[1].split("<h2")[0]
    assert check_yourself.count("data-quiz") >= 2
    for quiz in page.split("<script")[0].split("data-quiz")[1:]:  # the page's script also names data-quiz
        quiz = quiz.split('class="why"')[0]
        assert quiz.count('data-correct="true"') == 1 and quiz.count('data-correct="false"') == 2
    for level in ("easy", "medium", "hard"):
        assert f'class="exercise {level}"' in page, level
    assert 'class="predict"' in page and "PHYSAIBLOCK" not in page  # every block put back
    assert len([a for t, a in parsed.tags if t == "input" and "data-step" in a]) == len(course.STEPS)
    images = [a for t, a in parsed.tags if t == "img"]
    assert images and all(a.get("alt", "").strip() for a in images)
    assert all((site / name / a["src"]).is_file() for a in images)
    loads = [a.get("src", "") for t, a in parsed.tags] + [a.get("href", "") for t, a in parsed.tags if t == "link"]
    assert not [u for u in loads if "//" in u], "the page loads something from the network"


class _Body(HTMLParser):
    """What a learner reads without opening anything: the page's text outside the appendix, collapsed blocks (all
    but their summary line), hidden elements, code, maths, scripts and styles."""

    SKIP = {"code", "pre", "script", "style", "math"}
    VOID = {"img", "br", "hr", "input", "meta", "link", "col", "mspace"}

    def __init__(self):
        super().__init__()
        self.text, self.stack = [], []  # stack: (tag, hides its content)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attrs = dict(attrs)
        parent = self.stack[-1] if self.stack else ("", False)
        hidden = (parent[1] or tag in self.SKIP or "hidden" in attrs or "appendix" in attrs.get("class", "")
                  or (parent[0] == "details" and tag != "summary"))
        self.stack.append((tag, hidden))

    def handle_endtag(self, tag):
        if any(t == tag for t, _ in self.stack):  # a stray end tag (a void element's, say) closes nothing
            while self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if not (self.stack and self.stack[-1][1]) and (not self.stack or self.stack[-1][0] != "details"):
            self.text.append(data)


def body_text(page: str) -> str:
    body = _Body()
    body.feed(page.split("<main>")[1])
    return " ".join(body.text)


def word_count(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9][\w'.,/-]*", text))


def pages(numbers) -> list[str]:
    return [lesson_folder(n).name + "/index.html" for n in numbers]


def visible_text(page: str) -> str:
    """All text a reader can reach on the page, maths included, code and the script left out."""
    parsed = parse(page.replace("<math", "<span").replace("</math>", "</span>"))
    return " ".join(parsed.text)


class _AllText(HTMLParser):
    """Every text node of a page (code included; scripts and styles left out), its entities decoded."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def tag_text(page: str) -> list[str]:
    """The text nodes that show markup as text (an escaped tag or attribute a reader would see)."""
    parser = _AllText()
    parser.feed(page)
    return [t for t in parser.text if re.search(r"<\s*/?\s*(span|div|p|a|code)\b|data-ref=|data-fmt=", t)]


SOURCE_TALK = re.compile(r"\berrat(um|a)\b|\bseed|\bthe track (says|introduces|calls)|"
                         r"\bthe widowx ai lesson\b|\bthe tests\b|\btest suite\b|\bthis page was\b|\bclaims checked\b", re.I)


@pytest.mark.parametrize("path", ["index.html"] + pages(TEACHING))
def test_a_page_teaches_and_names_no_source_document_and_no_test(site, path):
    page = (site / path).read_text()
    text = " ".join(parse(page).text)
    found = [m[0] for m in SOURCE_TALK.finditer(text)]
    assert found == [] and 'class="erratum"' not in page, found


TIME = re.compile(r'<span class="time" data-reading="(\d+)" data-hands-on="(\d+)">~(\d+) min: ~(\d+) min reading, '
                  r'~(\d+) min hands-on</span>')


def shown_time(page: str) -> tuple[int, int, int]:
    """``(total, reading, hands-on)`` minutes as the page shows them; the data attributes say the same."""
    (reading, hands_on, total, shown_reading, shown_hands_on), = TIME.findall(page)
    assert (reading, hands_on) == (shown_reading, shown_hands_on)
    return int(total), int(reading), int(hands_on)


class _Read(HTMLParser):
    """The words the reading time counts, as the pages say: the body less code listings, tables, maths, the folded
    "Going further" blocks and the exercises (a word: non-space characters with a letter or digit)."""

    def __init__(self):
        super().__init__()
        self.words, self.depth, self.skipping = 0, 0, None  # skipping: the tag whose element is left out, and depth

    def handle_starttag(self, tag, attrs):
        if self.skipping or tag in ("img", "br", "hr", "input", "col", "mspace"):
            self.depth += bool(self.skipping) and tag == self.skipping
            return
        cls = dict(attrs).get("class") or ""
        if tag in ("pre", "table", "math") or (tag == "details" and re.search(r"\b(more|exercise)\b", cls)):
            self.skipping, self.depth = tag, 1

    def handle_endtag(self, tag):
        if self.skipping == tag:
            self.depth -= 1
            self.skipping = self.skipping if self.depth else None

    def handle_data(self, data):
        if not self.skipping:
            self.words += sum(bool(re.search(r"[^\W_]", w)) for w in data.split())


def read_words(page: str) -> int:
    """:class:`_Read`'s count over the lesson page's body (after the checklist, before the next-lesson link)."""
    body = page.split("</section>", 1)[1].split('<p class="next">')[0].split('<section class="appendix"')[0]
    reader = _Read()
    reader.feed(body)
    return reader.words


def test_the_reading_count_leaves_out_code_tables_maths_going_further_and_exercises():
    page = ('<section class="checklist">x</section><h2>One two</h2><p>three <code>four</code> 0.5 m — '
            '<math><mi>x</mi><mspace/></math></p><pre>not read</pre><div class="table-wrap"><table><tr><td>no</td>'
            '</tr></table></div><details class="more"><summary>Going further</summary><details><p>no</p></details>'
            '<p>no</p></details><details class="exercise easy"><summary>Easy.</summary>no</details>'
            '<details class="predict"><summary>Predict first.</summary><p>five six</p></details>'
            '<p class="next">not body</p>')
    assert read_words(page) == 10  # One two three four 0.5 m, Predict first. five six
    assert reading_words(page.split("</section>", 1)[1].split('<p class="next">')[0]) == 10


@pytest.mark.parametrize("number", LESSONS)
def test_a_pages_time_is_its_counted_reading_plus_its_hands_on(site, number):
    """The page's stated reading minutes are its counted words at 200 a minute, rounded up; the total is reading
    plus the lesson's own hands-on estimate."""
    folder = lesson_folder(number)
    page = (site / folder.name / "index.html").read_text()
    total, reading, hands_on = shown_time(page)
    words = read_words(page)
    assert reading == math.ceil(words / READING_SPEED), f"{words} words shown as ~{reading} min"
    head = (folder / "lesson.md").read_text().split("\n+++\n")[0]
    assert hands_on == int(re.search(r"^hands_on = (\d+)$", head, re.M)[1])
    assert total == reading + hands_on and "(of which" not in page


@pytest.mark.parametrize("number", TEACHING)
def test_a_pages_body_fits_its_stated_time(site, number):
    """What a reader sees without opening anything is read well within the page's stated total, and reading is at
    most half of that total: the page's total grows with its words, so the share is what bounds the page's length."""
    minutes, reading, hands_on = shown_time((site / lesson_folder(number).name / "index.html").read_text())
    words = word_count(body_text((site / lesson_folder(number).name / "index.html").read_text()))
    assert words <= min(WORDS_PER_MINUTE * minutes, MAX_WORDS), f"{words} words for ~{minutes} min"
    assert reading <= hands_on, f"~{reading} min of reading against ~{hands_on} min hands-on"


def test_the_body_count_leaves_out_the_appendix_collapsed_blocks_and_hidden_text():
    page = ("<main><p>one two</p><details><summary>three</summary><p>hidden <mspace/> words</p><math><mi>x</mi>"
            "<mspace width='1em'/></math><p>here</p></details>"
            '<div class="why" hidden><p>not shown</p></div><p>four <code>x y z</code> <math><mi>q</mi></math></p>'
            '<section class="appendix"><p>audit rows</p></section></main>')
    assert body_text(page).split() == ["one", "two", "three", "four"]


VERDICTS_SHOWN = ("✗", "✓ agree", "disagree")


@pytest.mark.parametrize("path", ["index.html"] + pages(LESSONS))
def test_no_learner_page_shows_a_verdict_on_published_figures(site, path):
    """The comparison with published figures and its verdicts live in the audit alone; a lesson's appendix keeps the
    run's record (each script's status, time and transcript)."""
    page = (site / path).read_text()
    parser = _AllText()  # every text node, the folded transcripts included; the stylesheet left out
    parser.feed(page)
    text = " ".join(parser.text)
    assert [w for w in VERDICTS_SHOWN if w in text] == [] and 'class="claims"' not in page
    if path != "index.html":
        assert "<summary>transcript:" in page and 'href="../audit.html"' in page
    assert "✓ agree" in (site / "audit.html").read_text()  # the audit still has them


@pytest.mark.parametrize("path", ["index.html"] + pages(LESSONS))
def test_no_page_shows_a_tag_as_text(site, path):
    assert tag_text((site / path).read_text()) == []


@pytest.mark.parametrize("path", ["index.html"] + pages(LESSONS))
def test_no_raw_tex_reaches_a_page(site, path):
    text = visible_text((site / path).read_text())
    assert re.findall(r"\\[A-Za-z]+|\$\S", text) == []


@pytest.mark.parametrize("number", LESSONS)
def test_every_figure_opens_full_size_and_has_alt_text(site, number):
    page = (site / lesson_folder(number).name / "index.html").read_text()
    figures = re.findall(r'<figure><a class="full" href="([^"]+)"><img src="([^"]+)" alt="([^"]+)">', page)
    assert figures and len(figures) == page.count("<figure><"), "every figure is a link to its image"
    assert all(href == src and alt.strip() for href, src, alt in figures)


@pytest.mark.parametrize("number", LESSONS)
def test_every_figure_a_lesson_writes_has_its_caption_and_alt_text_recorded_and_shown(site, number):
    name = lesson_folder(number).name
    written = {p.name for p in (site.parent / "runs" / name).glob("*.png")}  # what the lesson's scripts wrote
    recorded = read_figures(site / name)  # the results.json the page was built from
    assert written and set(recorded) == written
    assert all(len(f.alt) >= 40 and f.alt != f.caption and f.caption.endswith(".") for f in recorded.values())
    page = (site / name / "index.html").read_text()
    shown = dict(re.findall(r'<img src="([^"]+)" alt="([^"]+)">', page))
    assert {src: html.unescape(alt) for src, alt in shown.items()} == {n: f.alt for n, f in recorded.items()}


@pytest.mark.parametrize("number", TEACHING)
def test_every_wrong_quiz_option_says_why_it_is_wrong(site, number):
    page = (site / lesson_folder(number).name / "index.html").read_text()
    wrong = re.findall(r'<li><button type="button" class="option" data-correct="false">.*?</li>', page, re.S)
    assert wrong and [w for w in wrong if 'class="whynot"' not in w] == []


@pytest.mark.parametrize("number", TEACHING)
def test_every_caption_is_a_sentence(site, number):
    page = (site / lesson_folder(number).name / "index.html").read_text()
    captions = [re.sub(r"<[^>]+>", "", c.split('<a class="full-size"')[0]).strip()
                for c in re.findall(r"<figure><a class=\"full\".*?<figcaption>(.*?)</figcaption>", page, re.S)]
    assert captions and all(c[0].isupper() and c.endswith(".") for c in captions), captions


@pytest.mark.parametrize("path", ["index.html"] + pages(TEACHING))
def test_every_physai_command_is_shown_in_one_style(site, path):
    page = (site / path).read_text()
    commands = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<code>(.*?)</code>", page, re.S)]
    bare = [c for c in commands if re.match(r"(physai|python) ", c)]
    if path == "index.html":  # the track page says once how an install drops the "uv run"
        assert len(bare) <= 3 and "drop the <code>uv run</code>" in page, bare
    else:
        assert bare == [], bare


def test_a_row_chosen_by_a_saved_flag_follows_the_flag(site):
    name = lesson_folder("12").name
    page = (site / name / "index.html").read_text()
    variants = json.loads((site / name / "results.json").read_text())["experiment"]["self_motion"]["variants"]
    open_loop = [v for v in variants if not v["corrected"]]
    assert open_loop and page.count("open loop, no correction") == len(open_loop)


def test_the_track_page_lists_every_lesson_with_its_progress(site):
    page = (site / "index.html").read_text()
    for number in LESSONS:
        assert f'href="{lesson_folder(number).name}/index.html"' in page
        assert f'data-progress="{number}"' in page
    assert page.count("Module ") >= 3 and "audit.html" in page
    assert f"a track in {len(cli.lesson_dirs())} lessons" in page
    # each lesson's time is its page's, and the total adds them up: never typed on the track page
    times = [shown_time((site / d.name / "index.html").read_text()) for d in cli.lesson_dirs()]
    for d, (total, reading, hands_on) in zip(cli.lesson_dirs(), times):
        assert f"~{total} min: ~{reading} min reading, ~{hands_on} min hands-on</span>" in page.split(d.name)[1]
    total, reading, hands_on = (sum(t[i] for t in times) for i in range(3))
    assert f"~{total} min: ~{reading} min reading, ~{hands_on} min hands-on" in page
    assert f"about {total / 60:.1f} hours in all" in page and "(of which" not in page


@pytest.mark.parametrize("number", LESSONS)
def test_each_lesson_page_and_the_track_link_its_notebook_which_nbformat_validates(site, number):
    """The page's notebook link resolves to a notebook beside it that nbformat's schema accepts, holding the page's
    grading cells (one ``physai.check`` per function the lesson asks for)."""
    import nbformat

    name = lesson_folder(number).name
    assert f'href="{name}.ipynb"' in (site / name / "index.html").read_text()
    assert f'href="{name}/{name}.ipynb"' in (site / "index.html").read_text()
    book = nbformat.read(site / name / f"{name}.ipynb", as_version=4)
    nbformat.validate(book)
    grades = [c for c in book.cells if "grade" in c.metadata.get("tags", [])]
    assert len(grades) == len(ex.exercise_names((lesson_folder(number) / "build.py").read_text()))
    assert all("physai.check(" in c.source for c in grades)


# ---- every lesson's exercise ---------------------------------------------------------------------------------


def _graded_with(source: str, text: str) -> tuple[str, ...]:
    """The exercises whose grade a change of ``text`` can move: the function holding it and every exercise that
    calls that function (one level, enough for these files)."""
    names = ex.exercise_names(source)
    bodies = {n.name: ast.get_source_segment(source, n) for n in ast.parse(source).body
              if isinstance(n, ast.FunctionDef)}
    home = next(name for name, body in bodies.items() if text in body)
    return tuple(n for n in names if n == home or f"{home}(" in bodies[n])


@pytest.mark.parametrize("number", LESSONS)
def test_exercise_blank_fails_reference_passes_and_a_sign_flip_fails_with_a_hint(number, tmp_path):
    folder = lesson_folder(number)
    blank = ex.write_exercise(folder, tmp_path / "blank").parent
    assert all(not g.passed and ex.NOT_WRITTEN in g.message for g in ex.check(folder, blank).grades)
    own = tmp_path / "own"
    own.mkdir()
    shutil.copy(folder / "build.py", own / "build.py")
    start = time.monotonic()
    assert [(g.function, g.message) for g in ex.check(folder, own).grades if not g.passed] == []
    assert time.monotonic() - start < 30  # physai check on a right answer stays under 30 s for every lesson
    mutations = ex.load(folder / ex.CHECK_FILE).MUTATIONS
    assert mutations, "at least one sign flip"
    source = (folder / "build.py").read_text()
    for old, new, word in mutations:
        assert source.count(old) == 1, f"mutation {old!r} must match build.py once"
        (own / "build.py").write_text(source.replace(old, new))
        failed = [g for g in ex.check(folder, own, only=_graded_with(source, old)).grades if not g.passed]
        assert failed and any(word.lower() in g.message.lower() for g in failed), (old, new, failed)


@pytest.mark.parametrize("number", LESSONS)
def test_exercise_copy_carries_no_audit_and_still_imports(number, tmp_path):
    """The learner's copy of build.py holds no comparison with the course's sources (no source values, claim rows or
    verdicts: those live in the lesson's private _audit.py and the audit page), still imports, and a run of it
    publishes no claims (no _audit.py beside it)."""
    from physai.course.lesson import audit_claims

    folder = lesson_folder(number)
    copy = ex.write_exercise(folder, tmp_path / "me")
    text = copy.read_text(encoding="utf-8")
    assert re.findall(r"SOURCE_\w*|\w*[Cc]laims?\w*|\w*verdict\w*", text) == []
    module = ex.load(copy)
    assert callable(module.main) and tuple(module.EXERCISE) == ex.exercise_names(text)
    assert audit_claims(copy, None) is None
    assert "build.py" in ex.load(folder / "_audit.py").CLAIMS  # the lesson's own run still publishes them


# ---- in a real browser ---------------------------------------------------------------------------------------


WIDE = """() => [...document.querySelectorAll('main p, main li, h1, h2, h3, figcaption, summary, .quiz button')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .map(e => e.tagName + ': ' + e.textContent.slice(0, 60))"""


UNCUED = """() => [...document.querySelectorAll('main *')]
  .filter(e => e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
  .filter(e => (getComputedStyle(e).backgroundImage.match(/radial-gradient/g) || []).length < 2)
  .map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40))"""


@pytest.fixture(scope="module")
def browser(chromium):
    chromium, sync_api = chromium
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True,
                               args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"])
        yield b
        b.close()


def open_page(browser, url: str, width: int):
    """A page at ``width`` px that records console errors and every request that is not a local file."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.errors, page.remote = [], []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("request", lambda r: page.remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(url)
    return context, page


def test_a_wrong_click_shows_that_options_why_not_and_a_bare_one_says_try_again(demo, tmp_path, browser):
    assert invoke("lesson", "1", "--out", tmp_path / "out").exit_code == 0
    context, page = open_page(browser, (tmp_path / "out" / "01-demo" / "index.html").as_uri(), 375)
    quiz = page.locator("[data-quiz]").first
    verdict, wrong = quiz.locator(".verdict"), quiz.locator('button[data-correct="false"]')
    wrong.nth(0).click()
    assert verdict.is_visible() and "mistakes the lever, 0.22 m, for a force" in verdict.inner_text()
    assert verdict.locator("em").inner_text() == "force" and not quiz.locator(".why").is_visible()
    wrong.nth(1).click()  # an option without a why-not
    assert verdict.inner_text() == "Not quite: try another answer."
    quiz.locator('button[data-correct="true"]').click()
    wrong.nth(0).click()  # read after the right answer: its why-not, and no call for another answer
    assert "mistakes the lever" in verdict.inner_text() and "another answer" not in verdict.inner_text()
    assert quiz.locator(".why").is_visible()
    assert page.errors == [] and page.remote == []
    context.close()


BRACKETS = """() => [...document.querySelectorAll('math mtable')].map(t => {
  const fences = [...t.parentElement.children].filter(e => e.tagName.toLowerCase() === 'mo');
  return [t.getBoundingClientRect().height, ...fences.map(f => f.getBoundingClientRect().height)];
})"""


def test_a_column_vectors_brackets_stretch_to_its_rows_in_the_shipped_maths_font(demo, tmp_path, browser):
    (demo / course.PAGE_FILE).write_text(DEMO_PAGE + "\nA twist $\\begin{bmatrix} v \\\\ \\omega \\\\ \\hat{x} \\end{bmatrix}$ "
                                         "and $\\arg\\min_q f$.\n")
    out = tmp_path / "out"
    assert invoke("lesson", "1", "--out", out).exit_code == 0
    assert (out / course.FONTS / course.MATH_FONT).is_file() and (out / course.FONTS / "OFL.txt").is_file()
    context, page = open_page(browser, (out / "01-demo" / "index.html").as_uri(), 375)
    page.evaluate("() => document.fonts.ready")
    loaded = page.evaluate("() => [...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)")
    (table, left, right), = page.evaluate(BRACKETS)
    text = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('main p')).fontSize)")
    assert '"Noto Sans Math"' in loaded or "Noto Sans Math" in loaded
    # three rows stand about three lines tall; an unstretched bracket is one glyph, about one line
    assert table > 2.5 * text and min(left, right) >= 0.9 * table, (table, left, right, text)
    assert page.errors == [] and page.remote == []
    context.close()


@pytest.mark.parametrize("width, shown", [(375, True), (1280, False)])
def test_a_table_wider_than_the_column_says_in_words_that_it_scrolls(demo, tmp_path, browser, width, shown):
    row = "| " + " | ".join(f"unbreakable{i}word" for i in range(3)) + " |"  # about 550 px: wider than a phone only
    (demo / course.PAGE_FILE).write_text(DEMO_PAGE + "\n" + row + "\n|" + " --- |" * 3 + "\n" + row + "\n")
    out = tmp_path / "out"
    assert invoke("lesson", "1", "--out", out).exit_code == 0
    context, page = open_page(browser, (out / "01-demo" / "index.html").as_uri(), width)
    wrap = page.locator("main .table-wrap", has_text="unbreakable0word")
    # the reference is the browser's own layout: the table's box is wider than its column at the phone width only
    assert wrap.evaluate("w => w.scrollWidth > w.clientWidth + 1") == shown
    hint = wrap.locator("xpath=preceding-sibling::*[1]")
    assert hint.is_visible() == shown
    assert "Scroll the table sideways" in hint.text_content()
    assert page.errors == [] and page.remote == []
    context.close()


@pytest.mark.parametrize("width", [375, 1280])
def test_every_page_reads_at_the_width_loads_nothing_remote_and_logs_no_error(site, browser, width):
    for path in [site / "index.html"] + [site / lesson_folder(n).name / "index.html" for n in LESSONS]:
        context, page = open_page(browser, path.as_uri(), width)
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        wide, page_width = page.evaluate(WIDE), page.evaluate("() => document.documentElement.scrollWidth")
        uncued = page.evaluate(UNCUED)
        images = page.evaluate("() => [...document.images].map(i => [i.src, i.complete && i.naturalWidth])")
        errors, remote = page.errors, page.remote
        context.close()
        assert (wide, page_width <= width) == ([], True), (path, wide, page_width)
        assert uncued == [], (path, uncued)  # what scrolls sideways shows a shadow at the edge where more lies
        assert all(w > 0 for _, w in images), (path, images)
        assert (errors, remote) == ([], []), path


def test_quiz_answers_in_place_and_the_checklist_survives_a_reload(site, browser):
    name = lesson_folder("09").name
    context, page = open_page(browser, (site / name / "index.html").as_uri(), 1280)
    quiz = page.locator("[data-quiz]").first
    why = quiz.locator(".why")
    quiz.locator('button[data-correct="false"]').first.click()
    assert "Not quite" in quiz.locator(".verdict").inner_text() and not why.is_visible()
    right = quiz.locator('button[data-correct="true"]')
    right.focus()
    page.keyboard.press("Enter")  # keyboard-usable: a focused option answers on Enter
    assert "Right" in quiz.locator(".verdict").inner_text() and why.is_visible()
    assert why.locator(".num").count() >= 1, "the why quotes a number from the run"
    page.locator('input[data-step="2"]').check()
    page.reload()
    assert page.locator('input[data-step="2"]').is_checked() and not page.locator('input[data-step="1"]').is_checked()
    page.goto((site / "index.html").as_uri())
    assert page.locator('[data-progress="09"]').inner_text().startswith("1 of 5")
    assert page.locator('[data-progress="10"]').inner_text().startswith("0 of 5")
    exercise = page.goto((site / name / "index.html").as_uri()) and page.locator("details.exercise").first
    exercise.locator("summary").click()
    assert exercise.evaluate("d => d.open")
    assert page.errors == [] and page.remote == []
    context.close()
