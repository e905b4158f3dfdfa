"""The course site: each lesson's page rendered from its ``lesson.md`` and the numbers its run saved.

A page's source (``experiments/NN-name/lesson.md``) is TOML front matter between ``+++`` lines, then a Jinja2
template that produces Markdown (CommonMark, tables, ``$...$`` maths rendered to MathML, so nothing is fetched).
Its numbers come only from the run: ``R`` is the lesson's ``results.json`` (:func:`physai.course.lesson.save_results`),
and a value from it prints only through a format filter (``{{ R.build.lever | fix(4) }}``), which wraps it in
``<span class="num" data-ref="build.lever" data-fmt="fix:4">``, so a test can trace every number on a page back
to the run. Interactive blocks are Jinja ``call`` blocks: ``quiz``, ``predict``, ``exercise``, ``misconception``,
``details``; ``figure``, ``source``, ``command`` (a lesson script) and ``physai`` (a CLI command) are
plain calls. A quiz's lines are its options (``+ right``, ``- wrong``, each wrong one followed by its ``! why-not``,
shown when it is clicked) and its ``? why``. The page's header, its five-step checklist (kept in the browser's local
storage) and its appendix (the run's claims, figures and transcripts) are added here.

Every tag is written by a template: the page shells (``site/lesson.html``, ``site/track.html``) and one macro per
block (``site/blocks.html``), all through :data:`physai.course.report.SITE_ENV`, which escapes every value; only HTML the
project rendered itself (Markdown, MathML, the installed source) is passed in as :class:`markupsafe.Markup`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import itertools
import math
import operator
import re
import shutil
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree.ElementTree import tostring
from xml.sax.saxutils import unescape

import jinja2
from latex2mathml.converter import convert_to_element as latex_to_mathml
from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin

from physai import _files
from physai.course.lesson import FIGURES_KEY, Figure, lesson_number, read_results
from physai.course.reading import WORDS_PER_MINUTE, PageTime, page_time, track_time
from physai.course.report import AUDIT_FILE, SITE, SITE_ENV, macro, run_stamp
from physai.errors import InputError, PhysaiError

PAGE_FILE = "lesson.md"
PAGE_HTML = "index.html"  # a lesson's page in its output folder, and the track page in the course's
TRACK_FILE = "track.md"
SECTIONS = ("The problem", "Core idea", "Build it", "Experiment", "Break it", "On the real robot", "Check yourself",
            "Takeaways", "Sources")
STEPS = (("Read", "The problem and the core idea; answer the questions before you read on."),
         ("Build it", "Write the functions in the file the first command makes; the second grades them:"),
         ("Run the experiment", "Predict first, then run"),
         ("Break it", "Make each change that section names, rerun, and see what fails."),
         ("Check yourself", "The quizzes and exercises at the end."))


class CourseError(PhysaiError):
    """A lesson page that cannot be rendered: a number printed without a format, a reference to a result the run
    did not save, a figure the run did not write, a malformed quiz."""


# ---- numbers from the run -------------------------------------------------------------------------------------


def _fix(v: float, digits: int) -> str:
    v = 0.0 if abs(v) < 0.5 * 10.0**-digits else v  # no "-0.0000"
    # five digits and more in groups of three, split by a narrow no-break space (SI style): 20 000, 1 000 000
    text = f"{v:.{digits}f}"
    return f"{v:,.{digits}f}".replace(",", "\u202f") if abs(float(text)) >= 1e4 else text


FORMATS = {
    "fix": _fix,
    "sci": lambda v, digits: f"{v:.{digits}e}",
    "sig": lambda v, digits: f"{v:.{digits}g}",
    "pct": lambda v, digits: f"{_fix(100.0 * v, digits)} %",
    "text": lambda v, _: str(v),
}
"""How each filter writes a value: ``fix`` decimals (thousands grouped from 10 000), ``sci`` scientific, ``sig`` significant digits, ``pct`` a
fraction as a percentage, ``text`` a string as saved."""


@dataclass(frozen=True, eq=False)
class Result:
    """A node of a lesson's results, with its path (``"experiment.fd.best"``); printable only through a filter, and
    compared by its saved value (``{% if R.x.share == 1 %}``, ``{% if R.a.t < R.b.t %}``)."""

    _value: object  # underscored: a result key such as "value" must reach __getattr__, not a field
    _path: str

    def __getattr__(self, name: str) -> Result:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, key) -> Result:
        v = self._value
        if isinstance(v, dict) and key in v:
            return Result(v[key], f"{self._path}.{key}" if self._path else str(key))
        if isinstance(v, list) and isinstance(key, int) and -len(v) <= key < len(v):
            return Result(v[key], f"{self._path}[{key % len(v)}]")
        have = sorted(v) if isinstance(v, dict) else f"a list of {len(v)}" if isinstance(v, list) else repr(v)
        raise CourseError(f"the run saved no result {self._path or 'R'}[{key!r}]; it has: {have}")

    def __iter__(self):
        if not isinstance(self._value, list):
            raise CourseError(f"result {self._path} is not a list")
        return (self[i] for i in range(len(self._value)))

    def __len__(self) -> int:
        if not isinstance(self._value, (list, dict)):
            raise CourseError(f"result {self._path} is a single value: it has no length")
        return len(self._value)

    def __bool__(self) -> bool:  # ``{% if R.x.corrected %}`` tests the saved value (else Python would ask __len__)
        return bool(self._value)

    def _compared(self, other, op) -> bool:
        return op(self._value, other._value if isinstance(other, Result) else other)

    def __eq__(self, other) -> bool:
        return self._compared(other, operator.eq)

    def __lt__(self, other) -> bool:
        return self._compared(other, operator.lt)

    def __le__(self, other) -> bool:
        return self._compared(other, operator.le)

    def __gt__(self, other) -> bool:
        return self._compared(other, operator.gt)

    def __ge__(self, other) -> bool:
        return self._compared(other, operator.ge)

    __hash__ = None  # compared by value, which may be a list or dict

    def __str__(self) -> str:
        raise CourseError(f"result {self._path} is printed without a format: write {{{{ R.{self._path} | fix(3) }}}}"
                          f", | sci(1), | sig(3), | pct(1) or | text")

    __html__ = __str__


def result_value(node: Result) -> object:
    """The value the run saved at ``node`` (a :class:`Result`): its field is underscored, so that a result key such
    as ``value`` reaches ``__getattr__``, and read through here.

    >>> result_value(Result({"a": [1.5]}, "").a[0])
    1.5
    """
    return node._value


def format_value(value, fmt: str, digits: int) -> str:
    """``value`` written as the filter ``fmt`` with ``digits`` writes it (the page's text of a number)."""
    if fmt != "text" and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
        raise CourseError(f"format {fmt}: expected a finite number, got {value!r}")
    return FORMATS[fmt](value, digits)


def _filter(fmt: str, blocks: _Blocks):
    def apply(node, digits: int = 0) -> str:
        if not isinstance(node, Result):
            raise CourseError(f"| {fmt}: format a result of the run (R....), not {node!r} typed into the page")
        return blocks.put_inline(macro("num")(node._path, fmt, digits, format_value(result_value(node), fmt, digits)))

    return apply


# ---- blocks ---------------------------------------------------------------------------------------------------


@dataclass
class _Blocks:
    """HTML blocks made while the template renders, stood in for by a placeholder paragraph until Markdown is done
    (so Markdown never re-reads their HTML), and the numbers' spans, stood in for by a placeholder word (so one in a
    code span or a block's summary still shows as a number, never as its escaped tag)."""

    md: MarkdownIt
    html: dict[str, Markup] = field(default_factory=dict)
    spans: dict[str, Markup] = field(default_factory=dict)
    counter: itertools.count = field(default_factory=itertools.count)

    def put(self, markup: Markup) -> str:
        key = f"PHYSAIBLOCK{next(self.counter)}X"
        self.html[key] = markup
        return f"\n\n{key}\n\n"

    def put_inline(self, markup: Markup) -> str:
        key = f"PHYSAINUM{next(self.counter)}X"  # letters only: Markdown leaves it as it is wherever it stands
        self.spans[key] = markup
        return key

    def block(self, text: str) -> Markup:
        return Markup(self.md.render(inspect.cleandoc(text)))  # Markdown the page's source wrote, rendered here

    def inline(self, text: str) -> Markup:
        return Markup(self.md.renderInline(" ".join(text.split())))

    def saved_text(self, text: str) -> Markup:
        """``text`` a run saved (a figure's caption) as inline Markdown, any HTML in it shown as text, not run."""
        self.md.disable("html_inline")
        try:
            return self.inline(text)
        finally:
            self.md.enable("html_inline")

    def restore(self, page: str) -> str:
        for key, markup in reversed(self.html.items()):  # outer blocks first: they hold the keys of inner ones
            alone = self.md.render(key).strip()  # the key as a paragraph of its own
            if alone not in page:  # Markdown kept it inline: in a table cell, a list item, a line of text
                raise CourseError(f"a block ({markup[:60]}...) must stand in a paragraph of its own")
            page = page.replace(alone, markup)
        for key, markup in self.spans.items():  # after the blocks: their HTML holds keys too
            page = page.replace(key, markup)
        return page


def quiz_places(page: str):
    """The places (0, 1, 2 for A, B, C) of the right options of ``page``'s quizzes, in the page's order: each run of
    three quizzes uses every place once, in an order drawn from the page's name, so a learner can answer neither by
    position nor by elimination over a page, and a page's places are the same from build to build."""
    orders = list(itertools.permutations(range(3)))
    for run in itertools.count():
        yield from orders[int(hashlib.sha256(f"{page}:{run}".encode("utf-8")).hexdigest(), 16) % len(orders)]


def quiz_parts(question: str, body: str, place: int) -> tuple[list[tuple[bool, str, list[str]]], list[str]]:
    """A quiz block's three options ``[(right, text, why-not lines)]`` (``+ right``, ``- wrong``, each wrong one
    optionally followed by ``! why-not`` lines) and its why's lines (``? ...``), checked: exactly one right option and
    a why. The wrong options keep their order; the right one goes to ``place`` (from :func:`quiz_places`)."""
    options, why = [], []  # options: [right, text, why-not lines]
    for line in inspect.cleandoc(body).splitlines():
        mark, text = line[:2], line[2:]
        if mark in ("+ ", "- ") and not why:
            options.append((mark == "+ ", text, []))
        elif mark == "! " and not why:
            if not options or options[-1][0]:
                raise CourseError(f"quiz {question[:40]!r}: a '! ' why-not must follow a '- ' (wrong) option, "
                                  f"got {line[:40]!r}")
            options[-1][2].append(text)
        elif mark == "? " or (why and line.strip()):
            why.append(line[2:] if mark == "? " else line)
        elif line.strip():
            raise CourseError(f"quiz {question[:40]!r}: a line must start with '+ ', '- ', '! ' or '? ', "
                              f"got {line[:40]!r}")
    if len(options) != 3 or sum(right for right, _, _ in options) != 1 or not why:
        raise CourseError(f"quiz {question[:40]!r}: needs three options, exactly one '+ ' (right), and a '? ' why")
    # the right option's place is given, not where the source wrote it (authors put it second by habit, and a
    # learner learns the habit)
    wrong = [option for option in options if not option[0]]
    return wrong[:place] + [next(option for option in options if option[0])] + wrong[place:], why


def _quiz(blocks: _Blocks, places, question: str, caller) -> str:
    """A question with three options (``+ right``, ``- wrong``) and a why (``? ...``) shown after the right click.
    A ``! ...`` line right after a wrong option is that option's why-not: the misconception it stands for, shown
    when it is clicked."""
    options, why = quiz_parts(question, caller(), next(places))
    options = [(right, blocks.inline(text), blocks.inline(" ".join(whynot)) if whynot else "")
               for right, text, whynot in options]
    return blocks.put(macro("quiz")(blocks.inline(question), options, blocks.block("\n".join(why))))


def _folded(blocks: _Blocks, kind: str, label: str, summary: str, caller) -> str:
    return blocks.put(macro("folded")(kind, label, blocks.inline(summary), blocks.block(caller())))


def _environment(blocks: _Blocks, lesson: Lesson, out: Path) -> jinja2.Environment:
    """The environment of a page's source: a template that writes Markdown, every value escaped (the numbers and
    blocks it inserts are the project's own HTML, as Markup)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=True, keep_trailing_newline=True)
    env.filters.update({name: _filter(name, blocks) for name in FORMATS})

    def figure(name: str) -> str:
        if not (out / name).is_file():
            raise CourseError(f"figure {name}: the run wrote no such figure in {out}")
        record = figure_record(lesson, name)
        # the image links to itself: a phone opens it full size to zoom
        return blocks.put(macro("figure")(name, record.alt, blocks.saved_text(record.caption)))

    def source(dotted: str) -> str:
        module, _, name = dotted.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        lines, start = inspect.getsourcelines(obj)
        where = f"{module.replace('.', '/')}.py, lines {start}-{start + len(lines) - 1}"
        code = Markup(blocks.md.render(f"```python\n{''.join(lines)}```"))  # the installed source, rendered here
        return blocks.put(macro("source")(dotted, where, code))

    env.globals.update(
        R=Result(lesson.results, ""),
        quiz=functools.partial(_quiz, blocks, quiz_places(lesson.name)),
        predict=lambda question, caller: _folded(blocks, "predict", "Predict first.", question, caller),
        exercise=lambda level, question, caller: _folded(blocks, f"exercise {level.lower()}", f"{level}.", question,
                                                         caller),
        details=lambda summary, caller: _folded(blocks, "more", "", summary, caller),
        misconception=lambda title, caller: blocks.put(macro("misconception")(blocks.inline(title),
                                                                              blocks.block(caller()))),
        figure=figure, source=source,
        # a command as a Markdown code span: the page's own source language, not a value to escape
        command=lambda script: Markup(f"`{script_command(lesson, script)}`"),
        physai=lambda args: Markup(f"`{cli_command(args)}`"),
    )
    return env


# ---- lessons --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lesson:
    """One lesson page's source: ``name`` its folder (``"09-jacobians"``), ``meta`` its front matter, ``body`` the
    template; ``results`` what its run saved (its figures' captions and alt texts too)."""

    name: str
    meta: dict
    body: str
    results: dict

    @property
    def number(self) -> str:
        return lesson_number(self.name)

    @property
    def title(self) -> str:
        return self.meta["title"]


def split_front_matter(text: str, path: Path) -> tuple[dict, str]:
    """``(front matter, body)`` of a page source that starts with TOML between ``+++`` lines."""
    head, sep, rest = text.partition("\n+++\n")
    if not text.startswith("+++\n") or not sep:
        raise CourseError(f"{path}: expected TOML front matter between '+++' lines at the top")
    try:
        return tomllib.loads(head.removeprefix("+++\n")), rest
    except tomllib.TOMLDecodeError as exc:
        raise CourseError(f"{path}: front matter: {exc}") from None


def figure_record(lesson: Lesson, name: str) -> Figure:
    """The caption and alt text the run recorded for ``lesson``'s figure ``name`` (:func:`physai.course.lesson.save_results`);
    a figure the run recorded none for is refused."""
    record = lesson.results.get(FIGURES_KEY, {}).get(name)
    if record is None:
        raise CourseError(f"figure {name}: the run recorded no caption and alt text for it (a lesson script passes "
                          "figures=[Figure(name, caption, alt)] to physai.course.lesson.save_results)")
    return Figure(name, record["caption"], record["alt"])


def read_lesson(folder: Path, out: Path) -> Lesson:
    """The lesson in ``folder`` with the results its run saved in ``out`` (its output folder)."""
    path = Path(folder) / PAGE_FILE
    if not path.is_file():
        raise InputError(f"lesson {Path(folder).name}: no {PAGE_FILE}")
    meta, body = split_front_matter(path.read_text(encoding="utf-8"), path)
    missing = [k for k in ("title", "module", "hands_on", "summary") if k not in meta]
    if missing:
        raise CourseError(f"{path}: front matter lacks {', '.join(missing)}")
    if type(meta["hands_on"]) is not int or meta["hands_on"] < 0:
        raise CourseError(f"{path}: front matter hands_on: expected whole minutes (hands_on = 25), "
                          f"got {meta['hands_on']!r}")
    return Lesson(Path(folder).name, meta, body, read_results(out))


OPERATOR_NAMES = ("arg",)
"""LaTeX's operator names latex2mathml leaves as raw TeX; a many-letter ``<mi>`` is upright, as LaTeX sets them."""
BARS = ("&#x02016;", "&#x0007C;")
"""Norm and absolute-value bars as latex2mathml writes them: a browser would stretch a lone bar to its whole row (and
the one before an exponent not at all), so they are set at their glyph's size."""
_RAW_TEX = re.compile(r"\\[A-Za-z]+")


def tex_to_mathml(tex: str, display: bool = False) -> str:
    r"""``tex`` as MathML (latex2mathml), with no TeX command left in it: :data:`OPERATOR_NAMES` are set upright and
    any other command it does not know is refused, so a page never shows raw TeX.

    Examples
    --------
    >>> from physai.course.course import tex_to_mathml
    >>> "<mi>arg</mi>" in tex_to_mathml(r"\arg\min_q f"), "\\" in tex_to_mathml(r"\arg\min_q f")
    (True, False)
    """
    math = latex_to_mathml(tex, display="block" if display else "inline")
    for node in math.iter():
        if node.tag == "mi" and node.text and node.text.removeprefix("\\") in OPERATOR_NAMES:
            node.text = node.text.removeprefix("\\")
        elif node.tag == "mo" and node.text in BARS and not node.attrib:  # as in TeX, \lvert and \lVert keep
            node.set("stretchy", "false")  # their size; \left... \right... are the stretching forms
    left = _RAW_TEX.findall(" ".join(math.itertext()))
    if left:
        raise CourseError(f"maths ${tex[:60]}$: {', '.join(left)} is not a command the renderer knows; it would "
                          f"show as raw TeX")
    return unescape(tostring(math, encoding="unicode"))  # as latex2mathml writes it: its entities kept


def markdown() -> MarkdownIt:
    """The Markdown renderer of the pages: CommonMark, tables, heading anchors, ``$``/``$$`` maths as MathML."""
    def math(content: str, options: dict) -> str:
        return tex_to_mathml(content, display=bool(options.get("display_mode")))

    md = MarkdownIt("commonmark", {"html": True, "typographer": False}).enable("table")
    return md.use(dollarmath_plugin, renderer=math, allow_digits=False).use(anchors_plugin, max_level=3)


def render_body(lesson: Lesson, out: Path) -> str:
    """The lesson's body as HTML: the template filled from the run, then Markdown, then the blocks put back."""
    blocks = _Blocks(_fold_solutions(_wrap_tables(markdown())))
    try:
        text = _environment(blocks, lesson, out).from_string(lesson.body).render()
    except jinja2.TemplateError as exc:
        raise CourseError(f"lesson {lesson.name}: {exc}") from None
    return blocks.restore(blocks.md.render(text))


def _wrap_tables(md: MarkdownIt) -> MarkdownIt:
    """``md`` with each table in a ``table-wrap`` box (a wide table scrolls on its own, not the page)."""
    def table_open(self, tokens, idx, options, env):
        return str(macro("table_open")()) + self.renderToken(tokens, idx, options, env)

    def table_close(self, tokens, idx, options, env):
        return self.renderToken(tokens, idx, options, env).rstrip("\n") + str(macro("table_close")()) + "\n"

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)
    return md


SOLUTION_SECTION = "Build it"  # its listings are the exercise's answers: folded, so the learner writes theirs first


def _fold_solutions(md: MarkdownIt) -> MarkdownIt:
    """``md`` with each code listing of the :data:`SOLUTION_SECTION` section folded (``macro("solution")``)."""
    fence = md.renderer.rules["fence"]

    def heading_open(self, tokens, idx, options, env):
        if tokens[idx].tag == "h2":
            env["section"] = tokens[idx + 1].content.strip()
        return self.renderToken(tokens, idx, options, env)

    def folded_fence(tokens, idx, options, env):
        html = fence(tokens, idx, options, env)
        return str(macro("solution")(Markup(html))) if env.get("section") == SOLUTION_SECTION else html

    md.add_render_rule("heading_open", heading_open)
    md.renderer.rules["fence"] = folded_fence
    return md


# ---- pages ----------------------------------------------------------------------------------------------------


MATH_FONT = "NotoSansMath-Regular.woff2"
"""The pages' maths font (Noto Sans Math, SIL OFL 1.1, ``site/fonts/OFL.txt``): its OpenType MATH table is what lets
a browser stretch brackets and centre accents. It ships in the package and is copied beside the pages."""
FONTS = "fonts"  # the folder of the course's output that holds it, beside the track page


def _assets(root: str) -> dict:
    """The page's stylesheet and script; ``root`` is the course folder relative to the page (``""``, ``"../"``)."""
    font = (f'@font-face{{font-family:"Noto Sans Math";src:url("{root}{FONTS}/{MATH_FONT}") format("woff2");'
            f"font-display:block}}\n")
    return {"css": font + (SITE / "course.css").read_text(encoding="utf-8"),
            "js": (SITE / "course.js").read_text(encoding="utf-8")}


def write_fonts(out: Path) -> None:
    """Copy the maths font and its licence into ``out/fonts``, where every page of the course folder ``out`` loads
    it from."""
    folder = Path(out) / FONTS
    folder.mkdir(parents=True, exist_ok=True)
    for source in (SITE / FONTS).iterdir():
        shutil.copyfile(source, folder / source.name)


def steps(lesson: Lesson) -> list[dict]:
    """The five steps of the page's checklist, with the commands each one runs, in order."""
    number = lesson.number
    exercise, check = cli_command(f"exercise {number} my-{number}"), cli_command(f"check {number} my-{number}")
    commands = ((), (exercise, check), (script_command(lesson, "experiment.py"),), (), ())
    return [{"title": t, "text": text, "commands": c} for (t, text), c in zip(STEPS, commands)]


def cli_command(args: str) -> str:
    """The ``physai`` command with ``args`` as a page shows it: in a clone's ``uv run`` form, like every command on
    the pages (``{{ physai("check 10 my-10") }}`` in a page's source).

    Examples
    --------
    >>> from physai.course.course import cli_command
    >>> cli_command("check 10 my-10")
    'uv run physai check 10 my-10'
    """
    return f"uv run physai {args}"


def script_command(lesson: Lesson, script: str) -> str:
    """The shell command that runs one of the lesson's scripts from a clone: every command a page shows is in the
    clone's ``uv run`` form (the track page says once that an install drops the ``uv run``)."""
    return f"uv run python experiments/{lesson.name}/{script}"


def appendix(runs) -> Markup:
    """The lesson's run record: per script, its status, time and folded transcripts (``runs``:
    ``[(ScriptRun, [(name, transcript text)])]``, one :class:`physai.course.report.ScriptRun` per script of this lesson).
    The transcripts hold no comparison with published figures: scripts write those to the audit only
    (:func:`physai.course.lesson.publish_claims`)."""
    return macro("appendix")(runs)


def lesson_page(lesson: Lesson, body: str, time: PageTime, lessons: dict[str, Lesson], runs, stamp: str,
                track: str) -> str:
    """The lesson's whole page as HTML around its rendered ``body`` (:func:`render_body`) and its ``time``
    (:func:`page_time`); ``lessons`` every lesson by number (for links), ``runs`` ``[(ScriptRun, [(name,
    transcript)])]``, ``track`` the track's title."""
    prerequisites = [lessons[n] for n in lesson.meta.get("prerequisites", []) if n in lessons]
    scripts = [run.script for run, _ in runs]
    return SITE_ENV.get_template("lesson.html").render(
        lesson=lesson, body=body, time=time, steps=steps(lesson), prerequisites=prerequisites,
        scripts=scripts, next=lessons.get(lesson.meta.get("next", "")), appendix=appendix(runs), stamp=stamp,
        track=track, words_per_minute=WORDS_PER_MINUTE, **_assets("../"))


def read_track(experiments: Path) -> tuple[dict, str]:
    """The track page's front matter and body HTML, from ``experiments/track.md``."""
    path = Path(experiments) / TRACK_FILE
    if not path.is_file():  # an experiments tree without a track page: list its lessons under one heading
        return {"title": "physai lessons", "tagline": "", "modules": []}, ""
    meta, body = split_front_matter(path.read_text(encoding="utf-8"), path)
    return meta, markdown().render(body)


def track_page(experiments: Path, lessons: list[Lesson], times: dict[str, PageTime], failed=(),
               stamp: str = "") -> str:
    """The track page: the question, what you can do by the end, the modules with their lessons (``times``: each
    built page's time by lesson number; progress from the browser's storage), how to run the commands, and the pages
    this run could not build."""
    meta, body = read_track(experiments)
    modules = [dict(m, lessons=[x for x in lessons if x.meta["module"] == m["name"]]) for m in meta["modules"]]
    others = [x for x in lessons if x.meta["module"] not in {m["name"] for m in modules}]
    modules += [{"name": "More lessons", "text": "", "lessons": others}] if others else []
    total = track_time(times.values()) if lessons and set(times) >= {x.number for x in lessons} else None
    return SITE_ENV.get_template("track.html").render(
        meta=meta, body=body, modules=modules, count=len(lessons), times=times, total=total, steps=len(STEPS),
        words_per_minute=WORDS_PER_MINUTE, failed=list(failed), stamp=stamp, **_assets(""))


def write_site(out: Path, experiments: Path, folders: list[Path], runs) -> tuple[Path, list[str]]:
    """Write each lesson's page ``out/NN-name/index.html`` (:func:`write_lesson`) and the track page
    ``out/index.html``; ``runs`` are the tour's ``ScriptRun``s. -> ``(track page, ["NN-name: why", ...] for
    pages that could not be built)``; a lesson whose scripts did not all pass gets no page."""
    (lessons, unbuilt), title = read_lessons(out, folders), read_track(experiments)[0]["title"]
    remove_pages(out, unbuilt)  # never leave an earlier run's page
    times = {}
    for lesson in lessons.values():
        try:
            times[lesson.number] = write_lesson(out, lesson, lessons, runs, title)[1]
        except PhysaiError as exc:
            unbuilt[lesson.name] = str(exc)
    failed = [f"{name}: {why}" for name, why in unbuilt.items()]
    page = track_page(experiments, list(lessons.values()), times, failed, run_stamp())
    index = _files.write_text(out / PAGE_HTML, page)
    write_fonts(out)
    return index, failed


def remove_pages(out: Path, names: Iterable[str], track: bool = False) -> None:
    """Remove the pages built from the results in ``out`` before a run replaces those results: each named lesson's
    ``out/NN-name/index.html`` and its notebook and, with ``track``, the track page and the audit (their totals). A
    run stopped half-way (killed, a full disk) then leaves no page beside data it does not show; the pages are written
    again, whole, once the run is done (:func:`write_site`, :func:`write_lesson`)."""
    for path in [out / name / PAGE_HTML for name in names] + ([out / PAGE_HTML, out / AUDIT_FILE] if track else []):
        path.unlink(missing_ok=True)
    for name in names:  # the notebook, written after the page from the same numbers
        (out / name / f"{name}.ipynb").unlink(missing_ok=True)


def read_lessons(out: Path, folders: list[Path]) -> tuple[dict[str, Lesson], dict[str, str]]:
    """Every lesson in ``folders`` that has a page, by number, with the results its run left in ``out/NN-name``;
    and ``{"NN-name": why}`` for the pages whose source cannot be read (the others are still built)."""
    lessons, unread = {}, {}
    for folder in (f for f in folders if (f / PAGE_FILE).is_file()):
        try:
            lesson = read_lesson(folder, out / folder.name)
        except PhysaiError as exc:
            unread[folder.name] = str(exc)
        else:
            lessons[lesson.number] = lesson
    return lessons, unread


def write_lesson(out: Path, lesson: Lesson, lessons: dict[str, Lesson], runs, track: str) -> tuple[Path, PageTime]:
    """Render ``lesson``'s page into ``out/NN-name/index.html`` (its figures and results are there) -> ``(its path,
    its time)``.
    A lesson whose scripts did not all pass in ``runs`` gets no page, and an earlier run's page is removed."""
    remove_pages(out, [lesson.name])
    path = out / lesson.name / PAGE_HTML
    broken = [f"{r.script} failed (exit {r.returncode})" for r in runs if r.lesson == lesson.name and not r.ok]
    if broken:  # results.json may still hold an earlier run's numbers for the script that failed
        raise CourseError(f"{', '.join(broken)}; a page is built only from a run whose scripts all pass")
    mine = [(r, [(t.name, (out / t).read_text(encoding="utf-8")) for t in r.tables]) for r in runs
            if r.lesson == lesson.name]
    body = render_body(lesson, out / lesson.name)
    time = page_time(lesson.meta["hands_on"], body)
    page = lesson_page(lesson, body, time, lessons, mine, run_stamp(), track)
    path.parent.mkdir(parents=True, exist_ok=True)
    _files.write_text(path, page)
    write_fonts(out)
    return path, time

