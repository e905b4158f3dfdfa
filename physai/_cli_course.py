"""The ``physai`` command line's course commands (private): ``tour``, ``lesson``, ``exercise``, ``check`` and
``notebook``, registered on the app by :mod:`physai.cli`. Each imports the course inside its function, so the command
line loads without it."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

import typer
from rich.markup import escape

from physai import _env, _extras, _files
from physai._cli_app import bad_input, console, fail, new_table
from physai.errors import InputError, PhysaiError

SCRIPTS = ("build.py", "experiment.py")
FULL_ENV = _env.FULL  # set to 1: the lessons' large runs (what ``--full`` passes on)


def lesson_dirs() -> list[Path]:
    """Lesson folders ``NN-name`` in lesson order: a clone's ``experiments/``, an installed package's
    ``physai/course/_lessons/`` (:data:`physai.course.lesson.LESSONS_DIR`)."""
    from physai.course import lesson  # the course loads for the course's commands only

    return sorted(p for p in lesson.LESSONS_DIR.glob("[0-9][0-9]-*") if p.is_dir())


def _cannot_write(folder: Path) -> str | None:
    """Why no file can be written into ``folder`` (made if missing), or None when one can."""
    file = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if file is not None:
        return f"{file} is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        return f"cannot write into {folder}: {exc.strerror or exc}"
    return None


def _output_folder(out: Path) -> Path:
    """``--out`` as an absolute folder that takes files (made if missing); else one line and exit 2."""
    out = Path(os.path.abspath(out))
    why = _cannot_write(out)
    if why:
        fail(f"--out: {why}")
    return out


@contextlib.contextmanager
def _outputs_outside_the_install(out: Path):
    """Lessons installed with the package (or not writable) write under ``out/NN-name/`` instead of beside their
    scripts (:func:`physai.course.lesson.out_dir`), so nothing is written inside the install; a clone's lessons
    write beside their scripts. A ``PHYSAI_LESSON_OUT`` the user set is kept, made absolute from the folder the command runs in
    (each script runs in its own folder), and checked first: a file, a folder that cannot be written or one inside
    the package ends the command with one line."""
    try:
        mine = _env.lesson_out()
    except PhysaiError as exc:
        fail(str(exc))
    if mine is not None and (why := _cannot_write(mine)):
        fail(f"{_env.LESSON_OUT}={os.environ[_env.LESSON_OUT]!r}: {why}")
    from physai.course import lesson

    installed = lesson.LESSONS_DIR == lesson.PACKAGED_LESSONS or not os.access(lesson.LESSONS_DIR, os.W_OK)
    if mine is None and not installed:
        yield
        return
    before = os.environ.get(_env.LESSON_OUT)
    os.environ[_env.LESSON_OUT] = str(mine or out)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_env.LESSON_OUT, None)
        else:
            os.environ[_env.LESSON_OUT] = before


def lesson_scripts(folder: Path) -> list[Path]:
    """A lesson's scripts in reading order: ``build.py``, ``experiment.py``, then its variants (any other
    ``*.py`` not starting with ``_``, e.g. ``wxai.py``; ``_name.py`` files are helpers, not scripts)."""
    rank = {name: i for i, name in enumerate(SCRIPTS)}
    scripts = [p for p in folder.glob("*.py") if not p.name.startswith("_")]
    return sorted(scripts, key=lambda p: (rank.get(p.name, len(rank)), p.name))


def _run_script(script: Path, full: bool = False) -> tuple[int, float]:
    """Run one lesson script as ``__main__`` in this process (numpy, MuJoCo, JAX imported once for the whole
    tour), in its folder, ``--full`` passed on when asked; ``(exit code, seconds)``."""
    import runpy
    import traceback

    argv, cwd, env_full = sys.argv, Path.cwd(), os.environ.get(FULL_ENV)
    sys.argv = [str(script)] + (["--full"] if full else [])
    if full:
        os.environ[FULL_ENV] = "1"
    t0, rc = time.perf_counter(), 0
    try:
        os.chdir(script.parent)
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception:  # a failing lesson is reported and the tour goes on
        traceback.print_exc(file=sys.stdout)
        rc = 1
    finally:
        sys.stdout.flush()
        sys.argv = argv
        os.chdir(cwd)
        if full and env_full is None:
            os.environ.pop(FULL_ENV)
        _close_figures()
    return rc, time.perf_counter() - t0


def _close_figures() -> None:
    """Free the figures a lesson left open (they would pile up over the tour's scripts)."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


FULL_OPTION = typer.Option(False, "--full", help="the lessons' large runs (the sizes of the published sources); slower")


def _run_scripts(scripts: list[Path], out: Path, full: bool, track: bool = False) -> list:
    """Run each script in this process and collect what it wrote into ``out`` -> the report's ``ScriptRun``s.
    The pages built from those lessons' results (with ``track``, the track page and the audit too) are removed
    first: the run replaces the results, and the pages are written again, whole, once it is done."""
    from physai.course import course, lesson, report

    runs = []
    with _outputs_outside_the_install(out):
        course.remove_pages(out, sorted({script.parent.name for script in scripts}), track)
        for script in scripts:
            console.rule(f"[bold]{script.parent.name}/{script.name}")
            started = report.file_clock(script)
            rc, seconds = _run_script(script, full)
            runs.append(report.ScriptRun(script.parent.name, script.name, report.script_title(script), rc, seconds,
                                         **report.collect_run(script, started, out)))
        # what runs killed mid-write left behind (their writers are gone)
        for place in {out, *(out / s.parent.name for s in scripts), *(lesson.out_dir(s) for s in scripts)}:
            _files.sweep(place)
    return runs


OUT_OPTION = typer.Option(Path("physai-out"), "--out", help="folder for the course pages and copies of outputs")


def tour(out: Path = OUT_OPTION, full: bool = FULL_OPTION) -> None:
    """Run every lesson's scripts in one process, then build the course: OUT/index.html (the track), each lesson's
    page OUT/NN-name/index.html from the numbers the run saved, and the full record OUT/audit.html."""
    _extras.require("course", "physai tour")
    from physai.course import course, lesson, report

    wall0 = time.perf_counter()
    out = _output_folder(out)
    scripts = [s for d in lesson_dirs() for s in lesson_scripts(d)]
    if not scripts:
        typer.echo(f"physai: error: no lesson scripts found in {lesson.LESSONS_DIR}", err=True)
        raise typer.Exit(1)
    runs = _run_scripts(scripts, out, full, track=True)
    wall = time.perf_counter() - wall0
    report.write_report(out, runs, report.versions(), wall)
    index, unbuilt = course.write_site(out, lesson.LESSONS_DIR, lesson_dirs(), runs)
    _write_notebooks([d for d in lesson_dirs() if (out / d.name / course.PAGE_HTML).is_file()], out)
    console.rule("[bold]summary")
    table = new_table("lesson", "script", "status", "time", "claims", "agree", "disagree", "figures", title="tour")
    for r in runs:
        table.add_row(r.lesson, r.script, "[green]ok" if r.ok else f"[red]FAIL ({r.returncode})", f"{r.seconds:.1f} s",
                      str(len(r.claims)), str(r.count("agree")), str(r.count("disagree")), str(len(r.figures)))
    console.print(table)
    for why in unbuilt:
        console.print(f"[red]page not built[/red]: {escape(why)}")
    console.print(f"{sum(r.ok for r in runs)}/{len(runs)} scripts ok; tour wall time {wall:.1f} s; "
                  f"course: [bold]{index}")
    if unbuilt or not all(r.ok for r in runs):
        raise typer.Exit(1)


LESSON_NUMBER = typer.Argument(..., help="lesson number, 07-13 (e.g. 09)")


def _lesson_dir(number: str) -> Path:
    from physai.course.lesson import lesson_number

    matches = [d for d in lesson_dirs() if lesson_number(d) == number.zfill(2)]
    if not matches:
        fail(f"unknown lesson {number!r}; lessons: {', '.join(d.name for d in lesson_dirs()) or '(none)'}")
    return matches[0]


def lesson(
    number: str = LESSON_NUMBER,
    build: bool = typer.Option(False, "--build", help="run only build.py"),
    experiment: bool = typer.Option(False, "--experiment", help="run only experiment.py"),
    out: Path = OUT_OPTION,
    full: bool = FULL_OPTION,
) -> None:
    """Run one lesson by number (build.py, experiment.py and its variants) and write its page
    OUT/NN-name/index.html (e.g. ``physai lesson 09``; ``--build`` runs build.py alone and writes no page)."""
    _extras.require("course", "physai lesson")
    from physai.course import course

    folder = _lesson_dir(number)
    which = [n for n, on in zip(SCRIPTS, (build, experiment)) if on]
    scripts = [s for s in lesson_scripts(folder) if not which or s.name in which]
    if not scripts:
        fail(f"lesson {folder.name} has no {' or '.join(which)}")
    out = _output_folder(out)
    runs = _run_scripts(scripts, out, full)
    rc = max(r.returncode != 0 for r in runs)
    if not which and (folder / course.PAGE_FILE).is_file():
        try:
            page = _write_page(folder, out, runs)
        except PhysaiError as exc:
            console.print(f"[red]page not built[/red]: {escape(str(exc))}")
            raise typer.Exit(1) from None
        _write_notebooks([folder], out)
        console.print(f"page: [bold]{page}")
    raise typer.Exit(int(rc))


def _write_notebooks(folders: list[Path], out: Path) -> None:
    """Each lesson's notebook beside its page, OUT/NN-name/NN-name.ipynb (the page links it), its prose's numbers
    from the run saved there."""
    from physai.course import notebook as nb

    for folder in folders:
        nb.write_notebook(folder, out / folder.name, out / folder.name)


def _write_page(folder: Path, out: Path, runs) -> Path:
    """Lesson ``folder``'s page from this run's ``runs`` (the other lessons are read for their links) -> its path."""
    from physai.course import course, lesson

    lessons, unread = course.read_lessons(out, lesson_dirs())
    mine = lessons.get(lesson.lesson_number(folder))
    if mine is None:
        raise course.CourseError(f"{folder.name}: {unread[folder.name]}")
    return course.write_lesson(out, mine, lessons, runs, course.read_track(lesson.LESSONS_DIR)[0]["title"])[0]


def exercise(
    number: str = LESSON_NUMBER,
    folder: Path = typer.Argument(..., help="where to write build.py for you to fill in"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing build.py there"),
) -> None:
    """Write FOLDER/build.py: the lesson's Build it with the functions you type left blank (docstrings kept)."""
    _extras.require("course", "physai exercise")
    from physai.course import exercise as ex

    lesson_folder = _lesson_dir(number)
    with bad_input():
        why = _cannot_write(Path(os.path.abspath(folder)))
        if why:
            raise InputError(f"{folder}: cannot write {ex.BUILD_FILE} there: {why}")
        path = ex.write_exercise(lesson_folder, folder, force)
        names = ex.exercise_names(path.read_text(encoding="utf-8"), path)
    # under `uv run` (a clone) the bare `physai` is not on the shell's PATH: say the command the learner can type
    prefix = "uv run " if "UV_RUN_RECURSION_DEPTH" in os.environ else ""
    console.print(f"wrote [bold]{escape(str(path))}[/bold]; write {', '.join(names)}, then run: "
                  f"{prefix}physai check {number.zfill(2)} {escape(str(folder))}")


def check(
    number: str = LESSON_NUMBER,
    folder: Path = typer.Argument(..., help="the folder holding your build.py"),
    seed: int = typer.Option(None, "--seed", help="replay a run's inputs (each run prints its seed)"),
    timeout: float = typer.Option(20.0, "--timeout", help="seconds each function may run"),
) -> None:
    """Grade FOLDER/build.py function by function against the lesson's references, on fresh inputs; your file runs
    in a separate process in a scratch folder. Exit 1 unless all pass."""
    _extras.require("course", "physai check")
    from physai.course import exercise as ex

    with bad_input():
        report = ex.check(_lesson_dir(number), folder, seed=seed, timeout=timeout)
    console.print(f"inputs from seed {report.seed} (replay them with --seed {report.seed})")
    for g in report.grades:  # one line each, not a table: a hint is a sentence and must wrap, not be cut
        mark = "[green]pass[/green]" if g.passed else "[red]fail[/red]"
        console.print(f"{mark} [bold]{escape(g.function)}[/bold]: {escape(g.message)}")
    if report.output_bytes:
        console.print(f"your code printed {report.output_bytes} bytes; the first {len(report.output)}:")
        console.print(report.output, markup=False, highlight=False)
    console.print(f"{sum(g.passed for g in report.grades)}/{len(report.grades)} functions pass")
    raise typer.Exit(0 if report.passed else 1)


def _run_for_results(folders: list[Path], out: Path) -> None:
    """Run the lessons' scripts, their outputs (and the numbers their pages quote) into ``out/NN-name/``; their
    tables are not printed (the notebooks print them)."""
    import io

    from physai.course.lesson import OUT_ENV

    saved, os.environ[OUT_ENV] = os.environ.get(OUT_ENV), str(out)
    try:
        for folder in folders:
            t0, log = time.perf_counter(), io.StringIO()
            with contextlib.redirect_stdout(log):
                failed = [s.name for s in lesson_scripts(folder) if _run_script(s)[0] != 0]
            if failed:
                typer.echo(log.getvalue()[-3000:], err=True)
                typer.echo(f"physai: error: lesson {folder.name}: {', '.join(failed)} failed", err=True)
                raise typer.Exit(1)
            seconds = time.perf_counter() - t0
            console.print(f"ran lesson {folder.name} for the numbers its page quotes ({seconds:.0f} s)")
    finally:
        if saved is None:
            os.environ.pop(OUT_ENV)
        else:
            os.environ[OUT_ENV] = saved


def notebook(
    number: str = typer.Argument(..., help="lesson number, 07-13 (e.g. 09), or all"),
    folder: Path = typer.Argument(Path("."), help="where to write NN-name.ipynb"),
    solutions: bool = typer.Option(False, "--solutions", help="fill in the functions you write with the lesson's "
                                   "own code"),
    results: Path | None = typer.Option(None, "--results", help="a run's output folder (physai tour's or physai "
                                        "lesson's --out) to take the pages' numbers from; without it the lessons "
                                        "run first"),
) -> None:
    """Write FOLDER/NN-name.ipynb: the lesson as a Jupyter notebook (its page, the Build-it functions to write, each
    graded in the cell under it, its scripts printing their tables and showing their figures); ``all``: every one."""
    _extras.require("course", "physai notebook")
    import tempfile

    from physai.course import notebook as nb

    folders = lesson_dirs() if number == "all" else [_lesson_dir(number)]
    why = _cannot_write(Path(os.path.abspath(folder)))  # before the lessons run for their numbers
    if why:
        fail(f"{folder}: {why}")
    with tempfile.TemporaryDirectory(prefix="physai-notebook-") as scratch:
        if results is None:
            results = Path(scratch)
            _run_for_results(folders, results)
        for lesson_folder in folders:
            if not (results / lesson_folder.name / "results.json").is_file():
                fail(f"--results {results}: no {lesson_folder.name}/results.json there (run physai tour --out "
                      f"{results} first)")
            with bad_input():
                path = nb.write_notebook(lesson_folder, results / lesson_folder.name, folder, solutions)
            console.print(f"wrote [bold]{escape(str(path))}[/bold]")
