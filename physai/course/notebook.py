"""Jupyter notebooks of the lessons, generated from the lessons' own sources.

``physai notebook 09 DIR`` writes ``DIR/09-jacobians.ipynb`` (:func:`write_notebook`), built from the lesson folder:

- its page (``lesson.md``) as Markdown cells, the numbers it quotes filled from a run of the lesson
  (``results.json``), maths as ``$...$`` for Jupyter to render; quizzes, predict-first questions and exercises as
  Markdown with their answers folded in a ``<details>`` block;
- each function of ``build.py``'s ``EXERCISE`` as a code cell, its body blank and its docstring kept (or the
  lesson's own code with ``solutions``), after the page's text that shows it, each followed by a grading cell
  (``physai.check("09", jacobian)``);
- each lesson script as a cell that runs it (:func:`lesson_script`, :func:`run`): it prints its tables and shows
  its figures inline, after the page's text that introduces it.

The first cell installs physai (``physai-kinematics[course]``) where it is missing (Colab), says in one line when
another package answers to ``import physai``, and turns on matplotlib's inline backend. The cells
write only under the notebook's folder (``physai-out/NN-name/``, unless ``PHYSAI_LESSON_OUT`` says otherwise).
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import jinja2
import nbformat

from physai import _files
from physai._extras import DISTRIBUTION
from physai.course.course import (
    FORMATS, CourseError, Result, figure_record, format_value, quiz_parts, quiz_places, read_lesson, result_value,
)
from physai.errors import InputError
from physai.course.report import SITE
from physai.course.exercise import BUILD_FILE, LIST_NAME, blank, exercise_names, lesson_folder, load
from physai.course.lesson import FIGURES_KEY, OUT_ENV, lesson_number, out_dir

SUFFIX = ".ipynb"
INSTALL = '%pip install --quiet "physai-kinematics[course]"'  # what the first cell runs where physai is missing
FIGURES = (".png", ".svg", ".jpg")
CELL_NAMES = ("physai", "nb", "build")  # what the cells import and name: a lesson's names never replace them
_CELLS = "\x00cells:{}\x00"  # where the prose names a script: its cells follow that passage
_SHOWN = "\x00shown:{}\x00"  # where a script's figure is shown: its cells follow, if the prose never names it
_MARK = re.compile("\x00(cells|shown):([^\x00]+)\x00")


# ---- run in the notebook ---------------------------------------------------------------------------------------


def lesson_script(lesson: str | int, script: str = "experiment.py") -> ModuleType:
    """The lesson's ``script`` imported as a module (its ``main()`` not run), writing its outputs under
    ``./physai-out/NN-name/`` (``PHYSAI_LESSON_OUT``, when set, is kept): change one of its constants, then
    :func:`run` it again.

    Examples
    --------
    >>> from physai.course.notebook import lesson_script
    >>> lesson_script("09", "build.py").EXERCISE
    ('hinge_column', 'jacobian', 'fd_jacobian')
    """
    path = lesson_folder(lesson) / script
    if not path.is_file():
        raise InputError(f"lesson {lesson} has no script {script}")
    os.environ.setdefault(OUT_ENV, str(Path("physai-out").resolve()))
    return load(path)


def context(script: ModuleType) -> dict:
    """The names a lesson's ``build.py`` gives the functions a learner writes (its imports, constants and helpers),
    without those functions themselves and without the names the notebook's own cells use (:data:`CELL_NAMES`):
    ``globals().update(nb.context(build))`` in a notebook."""
    skip = set(getattr(script, LIST_NAME, ())) | set(CELL_NAMES)
    return {k: v for k, v in vars(script).items() if not k.startswith("__") and k not in skip}


def run(script: ModuleType):
    """Run a lesson script's ``main()`` (:func:`lesson_script`) -> what it returns; its tables print as it runs, and
    the figures it writes are shown inline (in Jupyter) or listed (elsewhere). A lesson's run takes seconds to a
    minute.

    Examples
    --------
    >>> from physai.course.notebook import lesson_script, run
    >>> experiment = lesson_script("09")
    >>> results = run(experiment)  # doctest: +SKIP
    """
    folder = out_dir(script.__file__)
    before = _figures(folder)
    try:
        result = script.main()
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")  # the figures are shown from their files
    for figure, stamp in _figures(folder).items():
        if before.get(figure) != stamp:  # written by this run
            _show(figure)
    return result


def _figures(folder: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.iterdir()) if p.suffix in FIGURES}


def _show(figure: Path) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(Image(filename=str(figure)))
    else:
        print(f"figure: {figure}")


# ---- the page as Markdown --------------------------------------------------------------------------------------


def _number(fmt: str):
    def apply(node, digits: int = 0) -> str:
        if not isinstance(node, Result):
            raise CourseError(f"| {fmt}: format a result of the run (R....), not {node!r} typed into the page")
        text = format_value(result_value(node), fmt, digits)
        return _saved_text(text) if fmt == "text" else text

    return apply


def _saved_text(text: str) -> str:
    """``text`` a run saved, as Markdown that shows it as it is, in running text, a table cell or an HTML block
    alike: HTML and the marks that would start emphasis, a link, a code span, maths or a table cell (``< > & * | `
    [ ] \\ $``) as character references, so a saved string can neither run in the notebook nor break a table. (Names
    such as ``link_4`` hold none of them and are left as they are, also inside a code span.)"""
    return re.sub(r"[<>&*|`\[\]\\$]", lambda m: f"&#{ord(m.group())};", " ".join(text.splitlines()))


# Markdown, not HTML: nothing is escaped (a notebook renders the Markdown, as the page's own text)
_MARKDOWN_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(SITE), autoescape=False,
                                   undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _folded(head: str, label: str, body: str) -> str:
    """``head`` shown, then ``body`` folded under ``label`` (a Markdown ``details`` block, from the site's
    ``notebook_folded.md``)."""
    return _MARKDOWN_ENV.get_template("notebook_folded.md").render(head=head, label=label,
                                                                    body=inspect.cleandoc(body))


def _quiz(places, question: str, caller) -> str:
    """The page's three-option question as Markdown: the options listed, then the right one with its why and each
    wrong one with its why-not, folded."""
    options, why = quiz_parts(question, caller(), next(places))
    letters = "ABC"
    listed = "\n".join(f"- **{letters[i]}.** {text}" for i, (_, text, _) in enumerate(options))
    right = next(i for i, (ok, _, _) in enumerate(options) if ok)
    whynots = [f"- **{letters[i]}** is not it: {' '.join(whynot)}" for i, (ok, _, whynot) in enumerate(options)
               if not ok and whynot]
    answer = f"**{letters[right]}.** {options[right][1]}\n\n" + "\n".join(why) + "\n\n" + "\n".join(whynots)
    return _folded(f"**Question.** {question}\n\n{listed}", "Answer", answer)


def _misconception(title: str, caller) -> str:
    lines = inspect.cleandoc(caller()).splitlines()
    return "\n\n" + "\n".join(["> **A common misconception: " + title + "**", ">"]
                               + [f"> {line}".rstrip() for line in lines]) + "\n\n"


def _source(dotted: str) -> str:
    import importlib

    module, _, name = dotted.rpartition(".")
    lines, start = inspect.getsourcelines(getattr(importlib.import_module(module), name))
    where = f"{module.replace('.', '/')}.py, lines {start}-{start + len(lines) - 1}"
    return f"\n\n`{dotted}`, {where}, as installed:\n\n```python\n{''.join(lines)}```\n\n"


def page_markdown(folder: Path, results: Path) -> tuple[dict, str]:
    """Lesson ``folder``'s front matter and page as Markdown, its numbers from the run saved in ``results`` (the
    lesson's output folder, holding ``results.json``). A place where the page names a script holds a marker
    (:data:`_CELLS`) for that script's cells."""
    lesson = read_lesson(folder, results)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters.update({name: _number(name) for name in FORMATS})
    env.globals.update(
        R=Result(lesson.results, ""),
        quiz=functools.partial(_quiz, quiz_places(lesson.name)),
        predict=lambda question, caller: _folded(f"**Predict first.** {question}", "Answer", caller()),
        exercise=lambda level, question, caller: _folded(f"**{level}.** {question}", "Answer", caller()),
        details=lambda summary, caller: _folded("", summary, caller()),
        misconception=_misconception,
        figure=lambda name: (f"\n\n*Figure `{name}`, shown under the cell that runs the script: "
                             f"{_saved_text(figure_record(lesson, name).alt)}*"
                             + _SHOWN.format(lesson.results[FIGURES_KEY][name]["script"]) + "\n\n"),
        source=_source,
        command=lambda script: f"`{script}` (the code cells below)" + _CELLS.format(script),
        physai=lambda args: f"`physai {args}`",
    )
    try:
        text = env.from_string(lesson.body).render()
    except jinja2.TemplateError as exc:
        raise CourseError(f"lesson {lesson.name}: {exc}") from None
    return lesson.meta, re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


# ---- cells ------------------------------------------------------------------------------------------------------


def _functions(source: str, names: tuple[str, ...]) -> dict[str, str]:
    """Each named top-level function's source text (decorators included)."""
    lines = source.splitlines(keepends=True)
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found[node.name] = "".join(lines[first - 1:node.end_lineno]).rstrip() + "\n"
    return found


def _code(text: str, tag: str) -> nbformat.NotebookNode:
    """A code cell, its role in its metadata's tags: ``setup`` (install, import), ``context`` (the names the
    functions use), ``exercise`` (a function you write), ``grade`` (its grading), ``script`` (a lesson script's run)."""
    return nbformat.v4.new_code_cell(text.strip("\n"), metadata={"tags": [tag]})


def _markdown(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip("\n"))


def _script_cells(number: str, script: str) -> list:
    name = Path(script).stem
    return [_code(f'{name} = nb.lesson_script("{number}", "{script}")  # the lesson\'s script as a module: change one '
                  f"of its constants and run it again\n{name}_results = nb.run({name})  # prints its tables, shows "
                  "its figures", "script")]


def _exercise_cells(number: str, name: str, code: str) -> list:
    return [_code(code, "exercise"),
            _code(f'physai.check("{number}", {name})  # grades your {name}: pass, or a hint', "grade")]


def _setup_cell() -> nbformat.NotebookNode:
    return _code(f"""# Run this cell first: it installs physai-kinematics where it is missing (Colab) and shows figures inline.
from importlib import invalidate_caches, metadata
from importlib.util import find_spec
if find_spec("physai") is None:
    {INSTALL}
    invalidate_caches()
try:
    metadata.version("physai-kinematics")
    import physai
    ours = hasattr(physai, "load")
except ImportError:  # not installed (PackageNotFoundError), or the physai found cannot import: another project's
    ours = False
if not ours:  # another project answers to `import physai`: say so here, not as an AttributeError further down
    class PhysaiClash(Exception):
        def _render_traceback_(self):  # Jupyter shows this one line instead of a traceback
            return [str(self)]
    raise PhysaiClash(f"`import physai` finds another package ({{find_spec('physai').origin}}), not "
                      '{DISTRIBUTION}: run %pip uninstall -y physai {DISTRIBUTION}, then '
                      '{INSTALL.replace("--quiet ", "")}, and restart the kernel')
try:
    import physai.course
except physai.errors.MissingExtraError:  # physai-kinematics without its course extra
    {INSTALL}
    invalidate_caches()
%matplotlib inline
from physai.course import notebook as nb""", "setup")


_FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def _section_end(text: str, start: int, level: int = 2) -> int:
    """Where the section holding offset ``start`` ends: the next heading of ``level`` or above, or the end. A line
    of a fenced code block is never a heading (a Python comment starts with ``# `` too)."""
    fenced = [m.span() for m in _FENCED.finditer(text)]
    for found in re.compile(rf"^#{{1,{level}}} ", re.M).finditer(text, start):
        if not any(a < found.start() < b for a, b in fenced):
            return found.start()
    return len(text)


def notebook(folder: Path, results: Path, solutions: bool = False) -> nbformat.NotebookNode:
    """Lesson ``folder``'s notebook, its page's numbers from the run saved in ``results``; the functions a learner
    writes are blank (docstrings kept), or the lesson's own code with ``solutions``."""
    folder, number = Path(folder), lesson_number(folder)
    meta, text = page_markdown(folder, results)
    source = (folder / BUILD_FILE).read_text(encoding="utf-8")
    names = exercise_names(source, folder / BUILD_FILE, required=False)  # a lesson may ask for no function
    code = _functions(source if solutions or not names else blank(source, number, folder / BUILD_FILE), names)
    build_it = text.find("\n## Build it")
    build_end = _section_end(text, text.find("\n", build_it + 1)) if build_it >= 0 else len(text)
    cuts: list[tuple[int, int, list]] = []  # (offset, order, cells): the cells go in before that offset
    scripts = [s for s in (BUILD_FILE, "experiment.py") if (folder / s).is_file()]
    scripts += sorted(p.name for p in folder.glob("*.py") if not p.name.startswith("_") and p.name not in scripts)
    named: dict[str, int] = {}  # the first place the prose names each script, and where its first figure is shown
    pictured: dict[str, int] = {}
    for m in _MARK.finditer(text):
        (named if m.group(1) == "cells" else pictured).setdefault(m.group(2), m.start())
    if BUILD_FILE in scripts:
        for name in names:  # after the page's code that shows the function, else at the end of Build it
            shown = re.search(rf"```python\n(?:(?!```).)*?\bdef {name}\(.*?```\n", text[build_it:build_end], re.S)
            at = build_it + shown.end() if build_it >= 0 and shown else build_end
            cuts.append((at, 1, _exercise_cells(number, name, code[name])))
        first = min((at for at, _, _ in cuts), default=build_end)
        cuts.append((first, 0, [_code(f'build = nb.lesson_script("{number}", "{BUILD_FILE}")  # its imports, '
                                      "constants and helpers, for the functions you write\n"
                                      "globals().update(nb.context(build))", "context")]))
        cuts.append((build_end, 2, [_code("build_results = nb.run(build)  # the lesson's own Build it: prints its "
                                          "tables", "script")]))
    for script in scripts[1:]:
        at = named.get(script, pictured.get(script, len(text)))
        cuts.append((_section_end(text, at, 6), 0, _script_cells(number, script)))
    missing = [s for s in named if s not in scripts]
    if missing:
        raise CourseError(f"lesson {folder.name}: the page names {', '.join(missing)}, which the lesson lacks")
    # at one place: the context cell, then the exercise cells, then the build's run
    cuts.sort(key=lambda c: (c[0], c[1]))
    cells = [_markdown(f"# Lesson {number} · {meta['title']}\n\n*{meta['summary']}*\n\n{meta['module']} · "
                       f"~{meta['hands_on']} min hands-on, besides the reading. Run the cells in order; each function "
                       "you write is graded by the cell under it."), _setup_cell()]
    done = 0
    for at, _, extra in cuts:
        chunk = _MARK.sub("", text[done:at])
        if chunk.strip():
            cells.append(_markdown(chunk))
        cells += extra
        done = at
    if _MARK.sub("", text[done:]).strip():
        cells.append(_markdown(_MARK.sub("", text[done:])))
    for i, cell in enumerate(cells):
        cell.id = f"{number}-{i:03d}"  # the same sources make the same file
    book = nbformat.v4.new_notebook(cells=cells)
    book.metadata.update({"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                          "language_info": {"name": "python"}})
    return book


def notebook_name(folder: Path) -> str:
    """``NN-name.ipynb``: the file a lesson's notebook is written to."""
    return Path(folder).name + SUFFIX


def write_notebook(folder: Path, results: Path, dest: Path, solutions: bool = False) -> Path:
    """Write lesson ``folder``'s notebook (:func:`notebook`) to ``dest/NN-name.ipynb`` -> its path."""
    book = notebook(folder, results, solutions)
    nbformat.validate(book)
    path = Path(dest) / notebook_name(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    return _files.write_text(path, nbformat.writes(book))
