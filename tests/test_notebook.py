"""The lessons as Jupyter notebooks (``physai notebook``, :mod:`physai.course.notebook`), executed headless and offline by
nbclient on an ipykernel kernel, as a learner's "Run all" would.

Lesson 09's blank notebook runs top to bottom: the lesson's scripts print their tables and show their figures,
nothing is written outside the notebook's folder, and each grading cell says "not written yet". The solutions
notebook (``--solutions``) differs only in the functions a learner writes; its grading cells pass. Grading goes
through ``physai.check``; where this physai has none, the grading cells' output is not checked.
"""

import json
import os
import re

import nbformat
import pytest
from typer.testing import CliRunner

import physai
from physai import cli
from physai.course import notebook as nb
from physai.course.exercise import exercise_names

pytestmark = pytest.mark.slow
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
LESSON = cli.ROOT / "experiments" / "09-jacobians"
GRADES = hasattr(physai, "check")


def tagged(book, tag: str) -> list:
    return [c for c in book.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def text_of(cell) -> str:
    return "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def errors(cell) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]


def execute(book, folder):
    client = nbclient.NotebookClient(book, timeout=600, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(folder)}})
    env = {k: os.environ.pop(k) for k in ("PHYSAI_LESSON_OUT",) if k in os.environ}
    try:
        client.execute()
    finally:
        os.environ.update(env)
    return book


def listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def blank(tmp_path_factory):
    """Lesson 09's blank notebook as ``physai notebook 09 DIR`` writes it, executed in DIR: ``(book, DIR)``."""
    folder = tmp_path_factory.mktemp("blank")
    before = listing(LESSON)
    res = CliRunner().invoke(cli.app, ["notebook", "09", str(folder)])
    assert res.exit_code == 0, res.output
    path = folder / "09-jacobians.ipynb"
    book = execute(nbformat.read(path, as_version=4), folder)
    assert listing(LESSON) == before  # the run for the page's numbers and the notebook's cells wrote elsewhere
    return book, folder


def test_the_notebook_holds_the_page_the_functions_to_write_and_the_scripts(blank, tmp_path):
    book, _ = blank
    names = exercise_names((LESSON / "build.py").read_text(encoding="utf-8"))
    exercises, grades = tagged(book, "exercise"), tagged(book, "grade")
    assert [re.search(r"^def (\w+)\(", c.source, re.M).group(1) for c in exercises] == list(names)
    assert [c.source.split(")")[0] for c in grades] == [f'physai.check("09", {n}' for n in names]
    assert all("NotImplementedError" in c.source and '"""' in c.source for c in exercises)  # blank, docstring kept
    scripts = [c.source.split(" = ")[0] for c in tagged(book, "script")]
    assert scripts == ["scene", "build_results", "experiment", "wxai"]  # the scene's figure opens The problem
    markdown = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    for heading in ("## The problem", "## Build it", "## Experiment", "## Break it", "## Check yourself"):
        assert f"\n{heading}\n" in markdown
    assert "<details><summary>Answer</summary>" in markdown and "{{" not in markdown and "{%" not in markdown
    assert "\x00" not in markdown
    nbformat.validate(book)


def test_the_pages_numbers_are_the_runs_written_as_the_page_formats_them(blank):
    book, folder = blank
    results = json.loads((folder / "physai-out" / "09-jacobians" / "results.json").read_text(encoding="utf-8"))
    markdown = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    # the notebook's own run measured the same lever as the run its page was written from
    lever = results["build"]["column"]["lever"]
    assert f"Its length, {lever:.4f} m, is the tool's distance from the lift axis." in markdown


def test_the_blank_notebook_runs_to_the_end_printing_tables_and_showing_figures(blank):
    book, folder = blank
    for cell in book.cells:
        if cell.cell_type == "code" and "grade" not in cell.metadata["tags"]:
            assert not errors(cell), (cell.source, errors(cell))
    experiment = next(c for c in tagged(book, "script") if c.source.startswith("experiment = "))
    assert "== Step 2. Finite-difference step sweep" in text_of(experiment)
    shown = [o for c in tagged(book, "script") for o in c.outputs if "image/png" in o.get("data", {})]
    written = list((folder / "physai-out" / "09-jacobians").glob("*.png"))
    assert written and len(shown) == len(written)


@pytest.mark.skipif(not GRADES, reason="this physai has no physai.check")
def test_each_blank_function_is_graded_not_written_yet(blank):
    book, _ = blank
    for cell in tagged(book, "grade"):
        assert not errors(cell) and "not written yet" in text_of(cell), (cell.source, text_of(cell), errors(cell))


def test_the_solutions_notebook_differs_only_in_the_functions_and_they_pass(blank, tmp_path):
    book, folder = blank
    res = CliRunner().invoke(cli.app, ["notebook", "09", str(tmp_path), "--solutions", "--results",
                                       str(folder / "physai-out")])
    assert res.exit_code == 0, res.output
    solved = nbformat.read(tmp_path / "09-jacobians.ipynb", as_version=4)
    assert [c.source for c in solved.cells if "exercise" not in c.metadata.get("tags", [])] == \
           [c.source for c in book.cells if "exercise" not in c.metadata.get("tags", [])]
    source = (LESSON / "build.py").read_text(encoding="utf-8")
    for cell in tagged(solved, "exercise"):
        assert cell.source in source  # the lesson's own code
    # the cells that differ, and what they need: the scripts' cells are the blank notebook's, run above
    solved.cells = [c for c in solved.cells if set(c.metadata.get("tags", [])) & {"setup", "context", "exercise",
                                                                                  "grade"}]
    execute(solved, tmp_path)
    for cell in solved.cells:
        if "grade" not in cell.metadata["tags"] or GRADES:
            assert not errors(cell), (cell.source, errors(cell))
        if "grade" in cell.metadata["tags"] and GRADES:
            assert "not written yet" not in text_of(cell) and "True" in text_of(cell), text_of(cell)


def test_the_same_sources_and_run_make_the_same_file(blank, tmp_path):
    _, folder = blank
    results = folder / "physai-out" / "09-jacobians"
    first = nb.write_notebook(LESSON, results, tmp_path / "a").read_bytes()
    assert nb.write_notebook(LESSON, results, tmp_path / "b").read_bytes() == first


def test_an_unknown_lesson_or_a_results_folder_without_its_run_is_refused_in_one_line(tmp_path):
    for args in (["notebook", "99", str(tmp_path)], ["notebook", "09", str(tmp_path), "--results", str(tmp_path)]):
        res = CliRunner().invoke(cli.app, args)
        assert res.exit_code == 2 and res.stderr.count("\n") == 1 and res.stderr.startswith("physai: error:"), args
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not GRADES, reason="this physai has no physai.check")
@pytest.mark.parametrize("number", ["07", "08", "10", "11", "12", "13"])
def test_every_lesson_notebook_grades_its_functions_blank_then_with_the_lessons_own_code(site, number, tmp_path):
    """The notebook the tour wrote beside lesson ``number``'s page runs top to bottom with no error, and every
    grading cell says "not written yet"; its ``--solutions`` twin, run through its setup, function and grading
    cells, passes every one. The grader is the one ``physai check`` uses."""
    folder = next(d for d in cli.lesson_dirs() if d.name.startswith(number + "-"))
    names = exercise_names((folder / "build.py").read_text(encoding="utf-8"))
    graded = ("setup", "context", "exercise", "grade")
    blank_book = execute(nbformat.read(site / folder.name / nb.notebook_name(folder), as_version=4), tmp_path)
    assert not [(c.source, errors(c)) for c in blank_book.cells if c.cell_type == "code" and errors(c)]
    assert tagged(blank_book, "script")  # the lesson's own scripts ran in it
    solutions_book = nb.notebook(folder, site / folder.name, solutions=True)
    solutions_book.cells = [c for c in solutions_book.cells
                            if c.cell_type == "code" and set(graded) & set(c.metadata["tags"])]
    (tmp_path / "solutions").mkdir()
    for solutions, book in ((False, blank_book), (True, execute(solutions_book, tmp_path / "solutions"))):
        grades = tagged(book, "grade")
        assert len(grades) == len(names)
        for cell in grades:
            assert not errors(cell), (cell.source, errors(cell))
            if solutions:
                assert "not written yet" not in text_of(cell) and "True" in text_of(cell), text_of(cell)
            else:
                assert "not written yet" in text_of(cell), text_of(cell)


@pytest.mark.parametrize("number", ["07", "08", "09", "10", "11", "12", "13"])
def test_every_notebooks_cells_hold_whole_code_blocks_and_its_scene_runs_under_the_problem(site, number):
    """A cell boundary never falls inside a fenced listing (a Python comment's ``# `` is no heading): each markdown
    cell holds an even number of fence lines, and Build it's listings end before the functions' cells."""
    folder = next(d for d in cli.lesson_dirs() if d.name.startswith(number + "-"))
    book = nb.notebook(folder, site / folder.name)
    fences = [len(re.findall(r"^```", c.source, re.M)) for c in book.cells if c.cell_type == "markdown"]
    assert all(n % 2 == 0 for n in fences), fences
    # a script the prose never names runs under the section that shows its first figure (the scene in The problem)
    scene = next(i for i, c in enumerate(book.cells) if c.cell_type == "code" and c.source.startswith("scene = "))
    core = next(i for i, c in enumerate(book.cells) if c.cell_type == "markdown" and "\n## Core idea" in f"\n{c.source}")
    assert scene < core


@pytest.mark.parametrize("stand_in", ["__version__ = '5.5.0'\n", "import a_framework_not_installed_here\n"],
                         ids=["without-load", "failing-import"])
def test_the_setup_cell_names_another_package_answering_import_physai_in_one_line(stand_in, tmp_path):
    """Another project on the index is called physai and installs an import package ``physai`` with no ``load`` (one
    that may not even import where its own dependencies are missing): here a stand-in on the kernel's path answers
    ``import physai``. The first cell stops "Run all" with one line naming the clash and the command that fixes it,
    never an AttributeError further down."""
    (tmp_path / "physai").mkdir()
    (tmp_path / "physai" / "__init__.py").write_text(stand_in)
    book = nbformat.v4.new_notebook(cells=[nb._setup_cell(), nbformat.v4.new_code_cell("print('went on')")])
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tmp_path)  # the kernel's import physai finds the stand-in first
    try:
        client = nbclient.NotebookClient(book, timeout=120, kernel_name="python3", allow_errors=False,
                                         resources={"metadata": {"path": str(tmp_path)}})
        with pytest.raises(nbclient.exceptions.CellExecutionError):
            client.execute()
    finally:
        os.environ.pop("PYTHONPATH") if saved is None else os.environ.update(PYTHONPATH=saved)
    (error,) = [o for o in book.cells[0].outputs if o.output_type == "error"]
    assert error.traceback == [f"`import physai` finds another package ({tmp_path / 'physai' / '__init__.py'}), "
                               "not physai-kinematics: run %pip uninstall -y physai physai-kinematics, then "
                               '%pip install "physai-kinematics[course]", and restart the kernel']
    assert not book.cells[1].outputs  # "Run all" stopped at the first cell
