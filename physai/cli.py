"""The ``physai`` command line.

``physai tour`` runs every lesson (``experiments/NN-name/{build.py,experiment.py,<variant>.py}``, discovered,
so a new lesson needs no edit here) in one process and builds the course site; ``lesson`` runs one lesson,
``exercise`` and ``check`` write and grade a lesson's Build it; ``fk``, ``jacobian``, ``health`` and ``ik`` print
one robot's numbers as tables (``--json`` for scripts); ``view`` opens the interactive 3-D viewer.

Exit codes: 0 ok, 1 a lesson or benchmark failed, 2 bad input (one line on stderr naming the input) or a
missing extra (one line naming it and its install command).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer._click.exceptions import UsageError  # typer vendors click: every bad-option error derives from it
from typer.core import TyperGroup

from physai import _env, _extras, _files
from physai._validate import count, nonnegative
from physai.errors import InputError, MissingExtraError, PhysaiError

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks" / "run.py"
SCRIPTS = ("build.py", "experiment.py")
FULL_ENV = _env.FULL  # set to 1: the lessons' large runs (what ``--full`` passes on)
VECTOR_OPTIONS = ("--q", "--target")
# Piped output (files, CI logs, tests) has no terminal width; 80 columns would squeeze the tables.
console = Console(width=None if sys.stdout.isatty() else 120)


def _join_vectors(args: list[str]) -> list[str]:
    """Let ``--q 0 -0.6 0.9`` take all its numbers: the words after a vector option, up to the next
    ``--option``, become that option's one value (negative numbers included)."""
    out, i = [], 0
    while i < len(args):
        out.append(args[i])
        i += 1
        if out[-1] in VECTOR_OPTIONS:
            j = i
            while j < len(args) and not args[j].startswith("--"):
                j += 1
            if j > i:
                out.append(" ".join(args[i:j]))
                i = j
    return out


class _Group(TyperGroup):
    def parse_args(self, ctx, args):
        return super().parse_args(ctx, _join_vectors(list(args)))

    def invoke(self, ctx):
        """A command's bad option (``--seed abc``, a missing ``--target``) is one line and exit 2, like bad values."""
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            _fail(" ".join(exc.format_message().split()))
        except MissingExtraError as exc:  # a command of the course or the viewer, without its extra
            _fail(str(exc))
        except OSError as exc:  # a path the file system refuses: too long, a file where a folder goes, /proc, ...
            _fail(_os_error(exc))


def _os_error(exc: OSError) -> str:
    """``exc`` as one line naming its path (a long one cut in the middle) and the system's reason."""
    name = str(exc.filename) if exc.filename is not None else ""
    if len(name) > 120:
        name = f"{name[:60]}...{name[-40:]} (a name of {len(name)} characters)"
    return f"{name}: {exc.strerror or exc}" if name else str(exc)


app = typer.Typer(
    cls=_Group, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="physai: robot-arm kinematics you can learn from.",
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from physai._extras import DISTRIBUTION

        typer.echo(f"{DISTRIBUTION} {version(DISTRIBUTION)}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="print the installed version and exit")) -> None:
    """physai: robot-arm kinematics you can learn from."""


def _fail(message: str) -> None:
    typer.echo(f"physai: error: {message}", err=True)
    raise typer.Exit(2)


@contextlib.contextmanager
def _bad_input():
    """Turn physai's errors (bad shapes, unknown names, missing models) into one line and exit code 2.

    Warnings (a model MuJoCo compiles with a complaint, a missing mesh) are printed one line each once
    the input was accepted; when it is refused, the error line alone says why.
    """
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        try:
            yield
        except PhysaiError as exc:
            _fail(str(exc).splitlines()[0])
    for w in heard:
        typer.echo(f"physai: warning: {str(w.message).splitlines()[0]}", err=True)


def _numbers(text: str, option: str) -> np.ndarray:
    """Parse ``"0 -0.6, 0.9"`` (spaces and/or commas) into floats; a word that is not a number is an error."""
    values = []
    for word in re.split(r"[\s,]+", text.strip()):
        if word:
            try:
                values.append(float(word))
            except ValueError:
                raise InputError(f"{option}: expected numbers, got {word!r} in {text!r}") from None
    return np.array(values)


# ---- lessons -------------------------------------------------------------------------------------


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
        _fail(f"--out: {why}")
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
        _fail(str(exc))
    if mine is not None and (why := _cannot_write(mine)):
        _fail(f"{_env.LESSON_OUT}={os.environ[_env.LESSON_OUT]!r}: {why}")
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


@app.command()
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
    table = _table("lesson", "script", "status", "time", "claims", "agree", "disagree", "figures", title="tour")
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
        _fail(f"unknown lesson {number!r}; lessons: {', '.join(d.name for d in lesson_dirs()) or '(none)'}")
    return matches[0]


@app.command()
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
        _fail(f"lesson {folder.name} has no {' or '.join(which)}")
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
    return course.write_lesson(out, mine, lessons, runs, course.read_track(lesson.LESSONS_DIR)[0]["title"])


@app.command()
def exercise(
    number: str = LESSON_NUMBER,
    folder: Path = typer.Argument(..., help="where to write build.py for you to fill in"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing build.py there"),
) -> None:
    """Write FOLDER/build.py: the lesson's Build it with the functions you type left blank (docstrings kept)."""
    _extras.require("course", "physai exercise")
    from physai.course import exercise as ex

    lesson_folder = _lesson_dir(number)
    with _bad_input():
        why = _cannot_write(Path(os.path.abspath(folder)))
        if why:
            raise InputError(f"{folder}: cannot write {ex.BUILD_FILE} there: {why}")
        path = ex.write_exercise(lesson_folder, folder, force)
        names = ex.exercise_names(path.read_text(encoding="utf-8"), path)
    console.print(f"wrote [bold]{escape(str(path))}[/bold]; write {', '.join(names)}, then run: "
                  f"physai check {number.zfill(2)} {escape(str(folder))}")


@app.command()
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

    with _bad_input():
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


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench(ctx: typer.Context) -> None:
    """Run the benchmark suite (benchmarks/run.py; extra arguments are passed to it)."""
    if not BENCHMARKS.exists():
        typer.echo(f"physai: no benchmark suite in this checkout ({BENCHMARKS} is missing)", err=True)
        raise typer.Exit(1)
    raise typer.Exit(subprocess.call([sys.executable, str(BENCHMARKS), *ctx.args], cwd=ROOT))



# ---- one robot's numbers -----------------------------------------------------------------------------

ROBOT = typer.Option("so101", "--robot", "-r", help="a named robot (see `physai robots`) or an MJCF/URDF file")
SITE = typer.Option(None, "--tool", "--site",
                    help="tool frame: a site, an MJCF body or a URDF link (named robots have one)")
Q = typer.Option(None, "--q", help="joint values, rad (m for slides): --q 0 -0.6 0.9 0.4 0.3; default q_ref")
JSON = typer.Option(False, "--json", help="print JSON instead of tables")
MAX_RESTARTS = 10_000  # each restart is a row of starts: 10**9 of them would allocate tens of GiB before failing


def _load(robot: str, site: str | None):
    from physai import robots

    return robots.load(robot, site=site)


def _joint_values(chain, text: str | None, option: str = "--q", inside_limits: bool = False) -> np.ndarray:
    if text is None:  # an IK start must lie inside the limits; qpos0 need not (the Panda's joint4)
        return np.clip(chain.q_ref, chain.lower, chain.upper) if inside_limits else chain.q_ref.copy()
    q = _numbers(text, option)
    if q.shape != (chain.n,):
        raise InputError(f"{option}: expected {chain.n} joint values for {chain.name} "
                         f"({', '.join(chain.joint_names)}), got {q.size}")
    return chain.check_q(q, option)


def _robot_at(robot: str, site: str | None, q: str | None, start_inside_limits: bool = False):
    """``(chain, q)`` from the command's options, refusing a model whose kinematics overflow at ``q``
    (a body 1e308 m out: every number printed would be inf or NaN)."""
    from physai.kinematics import jacobian, tool_pose

    chain = _load(robot, site)
    qv = _joint_values(chain, q, inside_limits=start_inside_limits)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.all(np.isfinite(tool_pose(chain, qv))) and np.all(np.isfinite(jacobian(chain, qv)))
    if not finite:
        raise InputError(f"--robot: the kinematics of {chain.name!r} overflow at q = [{_vec(qv).strip()}] "
                         "(non-finite tool pose or Jacobian); the model's positions are too large")
    return chain, qv


def _header(chain) -> str:
    """The chain's summary line, its model-provided names escaped for rich (``[/bold]`` is a name, not markup)."""
    return escape(f"{chain.name}: {chain.n} joints, tool {chain.tool_name!r}, from {chain.source}")


def _vec(v, prec: int = 4) -> str:
    return " ".join(f"{x: .{prec}f}" for x in np.asarray(v, dtype=float).ravel())


def _table(*columns: str, title: str) -> Table:
    """A rich table whose cells never wrap (a vector split over two lines misreads as two rows)."""
    table = Table(title=title)
    for c in columns:
        table.add_column(c, no_wrap=True)
    return table


def _print_json(payload: dict) -> None:
    typer.echo(json.dumps(payload, indent=2))


@app.command()
def robots(as_json: bool = JSON) -> None:
    """Named robots and where each one's model comes from."""
    from physai import robots as reg

    rows = []
    for name in reg.names():
        info = reg.ROBOTS[name]
        menagerie = f"Menagerie {info.menagerie[0]}/{info.menagerie[1]}.xml" if info.menagerie else ""
        bundled = f"physai/models/{info.bundled}" if info.bundled else ""
        rows.append({"name": name, "site": info.site, "bundled": bundled, "menagerie": menagerie,
                     "builtin": info.builtin is not None, "description": info.description})
    root = os.environ.get("MENAGERIE_ROOT")
    if as_json:
        _print_json({"robots": rows, "MENAGERIE_ROOT": root})
        return
    table = Table("name", "tool site", "bundled model", "source='menagerie'", "built-in", "description",
                  title="named robots")
    for r in rows:
        table.add_row(*map(escape, (r["name"], r["site"] or "", r["bundled"] or "-", r["menagerie"] or "-",
                                    "yes" if r["builtin"] else "no", r["description"])))
    console.print(table)
    console.print(f"Menagerie registry robots load from MENAGERIE_ROOT={root}" if root else
                  "Any Menagerie registry robot downloads through mujoco_menagerie on first use "
                  "(set MENAGERIE_ROOT offline).")
    console.print("Any MJCF/URDF file works too: --robot path/to/model.urdf --tool <site, body or link>.")


@app.command()
def fk(robot: str = ROBOT, q: str | None = Q, site: str | None = SITE, as_json: bool = JSON) -> None:
    """Forward kinematics: joint frames and the tool pose (world frame, m)."""
    from physai.kinematics import fk as chain_fk
    from physai.kinematics import tool_pose
    from physai.transforms import matrix_to_quat

    with _bad_input():
        chain, qv = _robot_at(robot, site, q)
    axes, anchors, p = chain_fk(chain, qv)
    T = tool_pose(chain, qv)
    quat = matrix_to_quat(T[:3, :3])
    if as_json:
        _print_json({"robot": chain.name, "source": chain.source, "tool": chain.tool_name,
                     "joints": list(chain.joint_names), "q": qv.tolist(), "position": p.tolist(),
                     "rotation": T[:3, :3].tolist(), "quaternion_wxyz": quat.tolist(), "T_world_tool": T.tolist(),
                     "joint_axes": axes.tolist(), "joint_anchors": anchors.tolist()})
        return
    console.print(_header(chain))
    table = _table("joint", "q (rad)", "axis (world)", "anchor (world, m)", title="joint frames")
    for i, name in enumerate(chain.joint_names):
        table.add_row(escape(name), f"{qv[i]: .4f}", _vec(axes[i], 3), _vec(anchors[i]))
    console.print(table)
    console.print(f"tool position (world, m):     {_vec(p)}")
    console.print(f"tool quaternion (w, x, y, z): {_vec(quat)}")
    console.print("tool rotation R_world_tool:\n" + "\n".join("  " + _vec(row) for row in T[:3, :3]))


JACOBIAN_ROWS = ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z")


@app.command()
def jacobian(robot: str = ROBOT, q: str | None = Q, site: str | None = SITE, as_json: bool = JSON) -> None:
    """The geometric Jacobian at the tool point: linear rows (m/rad) then angular rows (rad/rad), world axes."""
    from physai.kinematics import jacobian as chain_jacobian

    with _bad_input():
        chain, qv = _robot_at(robot, site, q)
    J = chain_jacobian(chain, qv)
    if as_json:
        _print_json({"robot": chain.name, "source": chain.source, "tool": chain.tool_name, "q": qv.tolist(),
                     "rows": list(JACOBIAN_ROWS), "columns": list(chain.joint_names), "jacobian": J.tolist(),
                     "frame": "world axes, tool point; linear rows m/rad, angular rows rad/rad"})
        return
    console.print(_header(chain))
    console.print(f"q (rad): {_vec(qv)}")
    table = _table("row", *map(escape, chain.joint_names),
                   title="Jacobian (world axes, tool point): v rows m/rad, w rows rad/rad")
    for name, row in zip(JACOBIAN_ROWS, J):
        table.add_row(name, *(f"{x: .4f}" for x in row))
    console.print(table)


def _health_rows(J) -> list[dict]:
    from physai.singularity import health

    rows = []
    for block in ("position", "orientation", "full"):
        h = health(J, block=block)
        rows.append({"block": block, "sigma": np.asarray(h.sigma).tolist(), "sigma_min": h.sigma_min,
                     "kappa": h.kappa, "manipulability": h.manipulability})
    return rows


def _health_table(rows: list[dict], title: str) -> Table:
    table = _table("block", "singular values", "sigma_min", "kappa", "manipulability", title=title)
    for r in rows:
        table.add_row(r["block"], _vec(r["sigma"]), f"{r['sigma_min']:.4g}", f"{r['kappa']:.4g}",
                      f"{r['manipulability']:.4g}")
    return table


_HEALTH_NOTE = ("position: m/rad, orientation: rad/rad, full: angular rows scaled by 0.3 m so units agree; "
                "kappa = sigma_max / sigma_min, inf at a singularity (and always for the 6-row full block "
                "of an arm with fewer than 6 joints)")


def _json_safe(x):
    """JSON has no inf: write it as the string "inf" (kappa at a singularity)."""
    if isinstance(x, float) and not np.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


@app.command()
def health(robot: str = ROBOT, q: str | None = Q, site: str | None = SITE, as_json: bool = JSON) -> None:
    """Singularity health of the Jacobian: singular values, sigma_min, condition number, manipulability."""
    from physai.kinematics import jacobian as chain_jacobian

    with _bad_input():
        chain, qv = _robot_at(robot, site, q)
    rows = _health_rows(chain_jacobian(chain, qv))
    if as_json:
        _print_json(_json_safe({"robot": chain.name, "q": qv.tolist(), "health": rows}))
        return
    console.print(_header(chain))
    console.print(f"q (rad): {_vec(qv)}")
    console.print(_health_table(rows, "Jacobian health"))
    console.print(_HEALTH_NOTE)


@app.command(context_settings={"ignore_unknown_options": True})  # -0.1 is a number here, not an option
def ik(
    words: list[str] | None = typer.Argument(None, metavar="[ROBOT X Y Z [QW QX QY QZ]]", show_default=False,
                                             help="the robot and the target in words: physai ik so101 0.2 0 0.1"),
    target: str | None = typer.Option(None, "--target", help="x y z (m, world): position task; "
                                      "x y z qw qx qy qz: full pose task"),
    robot: str = ROBOT,
    q: str | None = typer.Option(None, "--q", help="initial guess (rad), inside the joint limits; default q_ref "
                                 "(the model's qpos0) clipped into the limits"),
    method: str = typer.Option("lm", "--method", help="transpose | pinv | dls | adaptive | lm"),
    restarts: int | None = typer.Option(None, "--restarts", help=f"random restarts allowed, 0 to {MAX_RESTARTS} "
                                        "(default: the solver's)"),
    seed: int = typer.Option(0, "--seed", help="seed of the random restarts, a whole number >= 0"),
    site: str | None = SITE,
    avoid: bool = typer.Option(False, "--avoid", help="collision-aware: every geom of the model that the chain does "
                               "not move is an obstacle (with the arm's own self-collision pairs); only answers that "
                               "keep --margin count as converged"),
    margin: float = typer.Option(0.01, "--margin", help="clearance (m) every pair keeps with --avoid"),
    as_json: bool = JSON,
) -> None:
    """Inverse kinematics to a target position (or pose): the solution, its errors and its health.

    Exit code 1 when the solver did not converge (the best effort is still printed)."""
    from physai.ik import Solver, solve_ik
    from physai.kinematics import jacobian as chain_jacobian
    from physai.kinematics import tool_pose
    from physai.transforms import make_transform, quat_to_matrix

    with _bad_input():
        if words:
            if unknown := next((w for w in words if w.startswith("--")), None):
                raise InputError(f"{unknown}: no such option")
            if target is not None:
                raise InputError(f"--target: the target is given twice (the words {' '.join(words[1:])!r} and "
                                 "--target)")
            robot, target = words[0], " ".join(words[1:])
        if not target:
            raise InputError("--target: missing (physai ik ROBOT X Y Z, or --target X Y Z)")
        seed = count(seed, "--seed", maximum=2**64 - 1)
        restarts = None if restarts is None else count(restarts, "--restarts", maximum=MAX_RESTARTS)
        chain, q0 = _robot_at(robot, site, q, start_inside_limits=True)
        tv = _numbers(target, "--target")
        if tv.size == 3:
            task, goal = "position", tv
        elif tv.size == 7:
            task, goal = "pose", make_transform(quat_to_matrix(tv[3:]), tv[:3])
        else:
            raise InputError(f"--target: expected 3 numbers (x y z) or 7 (x y z qw qx qy qz), got {tv.size}")
        world = _world(robot, chain, margin) if avoid else None
        solver = Solver(method=method) if restarts is None else Solver(method=method, restarts=restarts)
        result = solve_ik(chain, goal, q0 if q is not None or world is None else None, task=task, solver=solver,
                          rng=np.random.default_rng(seed), avoid=world)
    reached = tool_pose(chain, result.q)
    rows = _health_rows(chain_jacobian(chain, result.q))
    if as_json:
        _print_json(_json_safe({
            "robot": chain.name, "target": tv.tolist(), "task": task, "method": result.method, "q": result.q.tolist(),
            "joints": list(chain.joint_names), "converged": bool(result.converged), "reason": result.reason,
            "iterations": int(result.iterations), "restarts": int(result.restarts),
            "position_error": float(result.position_error), "orientation_error": float(result.orientation_error),
            "reached_position": reached[:3, 3].tolist(), "health": rows,
            **({} if world is None else {"clearance": world.closest(result.q, "obstacle")[0], "margin": world.margin,
                                         "self_clearance": world.closest(result.q, "self")[0],
                                         "self_margin": world.self_margin})}))
    else:
        console.print(_header(chain))
        console.print(f"target ({task}, world, m): {_vec(tv)}   method {result.method}, seed {seed}")
        table = _table("joint", "q (rad)", "q (deg)", "lower", "upper", title="solution")
        for i, name in enumerate(chain.joint_names):
            table.add_row(escape(name), f"{result.q[i]: .5f}", f"{np.degrees(result.q[i]): .2f}",
                          f"{chain.lower[i]: .3f}", f"{chain.upper[i]: .3f}")
        console.print(table)
        style = "green" if result.converged else "yellow"
        console.print(f"[{style}]{result.reason}[/] after {result.iterations} iterations, {result.restarts} restarts")
        console.print(f"position error {result.position_error:.3e} m, orientation error "
                      f"{result.orientation_error:.3e} rad; reached {_vec(reached[:3, 3])} m")
        if world is not None:
            for among, margin_of in (("obstacle", world.margin), ("self", world.self_margin)):
                dist, pair = world.closest(result.q, among)
                console.print(f"{among} clearance " + ("none: no such pair" if dist is None else
                              f"{dist:.4f} m ({escape(pair[0])} - {escape(pair[1])})") + f", margin {margin_of} m")
            console.print(f"{len(world.pairs)} pairs checked, {len(world.allowed)} of the robot's own left out")
        console.print(_health_table(rows, "health at the solution"))
        console.print(_HEALTH_NOTE)
    if not result.converged:
        raise typer.Exit(1)


def _world(robot: str, chain, margin: float):
    """The collision world of ``--robot``'s model file for ``--avoid``: the scene's own geoms are the obstacles."""
    from physai.collision import collision_world

    return collision_world(robot, chain, margin=nonnegative(margin, "--margin"))


@app.command()
def view(
    robot: str = ROBOT,
    site: str | None = SITE,
    port: int = typer.Option(8080, "--port", help="port on 127.0.0.1"),
    avoid: bool = typer.Option(False, "--avoid", help="keep the arm clear of the scene's other geoms (and itself): "
                               "obstacles drawn, a pair within --margin painted red"),
    margin: float = typer.Option(0.01, "--margin", help="clearance (m) with --avoid"),
) -> None:
    """Interactive 3-D viewer on http://127.0.0.1:PORT: drag the target, the arm follows through physai's IK."""
    from physai.viewer import Viewer

    with _bad_input():
        world = _world(robot, _load(robot, site), margin) if avoid else None
        viewer = Viewer(robot, site=site, port=port, avoid=world)
    console.print(f"physai viewer for {escape(viewer.chain.name)}: open [bold]{viewer.url}[/] (Ctrl-C to stop)")
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()


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


@app.command()
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
        _fail(f"{folder}: {why}")
    with tempfile.TemporaryDirectory(prefix="physai-notebook-") as scratch:
        if results is None:
            results = Path(scratch)
            _run_for_results(folders, results)
        for lesson_folder in folders:
            if not (results / lesson_folder.name / "results.json").is_file():
                _fail(f"--results {results}: no {lesson_folder.name}/results.json there (run physai tour --out "
                      f"{results} first)")
            with _bad_input():
                path = nb.write_notebook(lesson_folder, results / lesson_folder.name, folder, solutions)
            console.print(f"wrote [bold]{escape(str(path))}[/bold]")


def main() -> None:
    app()
