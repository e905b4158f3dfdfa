"""Graded Build-it exercises.

A lesson's ``build.py`` writes from scratch the functions a learner types and lists them at module level:
``EXERCISE = ("hinge_column", "jacobian", "fd_jacobian")``. :func:`write_exercise` copies that file with each
listed function's body replaced by ``raise NotImplementedError`` (its signature, docstring and one worked call
kept), and :func:`check` grades a learner's copy function by function with the lesson's ``_check.py``: for every
listed name, ``check_<name>(build, rng)`` calls the learner's functions on inputs drawn from ``rng``, compares
what they return with an independent reference (MuJoCo, a closed form, finite differences, the library) and
raises :class:`Hint` naming the likely mistake.

The learner's file runs in a child process (:mod:`physai.course._learner`: its own interpreter, ``python -I``, in a
scratch folder), never in the grader's: the child only imports the file and runs the functions on the inputs it is
sent; the references and the verdicts are computed here. Each graded function has ``timeout`` seconds of the
child's time; an endless loop, an exit, a crash, an input changed in place, a reply that breaks a bound, or a call
of the physai function the learner is asked to write fails that function with one line. What the file prints is
captured and shown truncated. The child confines itself before the file runs (:mod:`physai.course._sandbox`:
Landlock, a PID namespace, an allowlisted environment); where the kernel cannot, a file the grader reads that
changed refuses the run.

Example (``physai exercise 09 my-09`` and ``physai check 09 my-09`` from the shell)::

    report = check(lesson_folder("09"), Path("my-09"))
    report.seed, [(g.function, g.passed) for g in report.grades]   # 123, [("hinge_column", True), ...]

From a notebook, ``physai.check("09", hinge_column, jacobian)`` grades functions defined in the session (with the
session's helpers they use).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import secrets
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from physai import _files
from physai.course import _sandbox, _sendable
from physai.course._learner import OUTPUT_HEAD, Hint, Learner, LearnerError, Session, Stopped
from physai.course._reply import Opaque
from physai.errors import InputError
from physai.course.lesson import LESSONS_DIR, lesson_number, load_module

BUILD_FILE = "build.py"
CHECK_FILE = "_check.py"
LIST_NAME = "EXERCISE"
NOT_WRITTEN = "not written yet"
TIMEOUT = 20.0  # s of the child's time per graded function (``physai check --timeout``)
MAX_TIMEOUT = 86400.0  # s: the longest --timeout (a longer one overflows the operating system's clocks)
FLOAT32 = ("returned float32 numbers: compute in float64 (float32 keeps about 7 significant digits, the check "
           "compares to about 12): no dtype=np.float32, and JAX computes in float32 unless jax_enable_x64 is on")




def _kind(got) -> str:
    """How a returned value is named in a hint: 'a list', 'an ndarray of shape (3,)', 'None', ..."""
    if isinstance(got, Opaque):
        return f"a {got.type_name}"
    if isinstance(got, np.ndarray):
        return f"an ndarray of shape {got.shape}"
    return "None" if got is None else f"a {type(got).__name__}"


def shaped(got, shape: tuple, name: str, advice: str = "") -> np.ndarray:
    """``got`` as a float64 array, if it is an ndarray of real numbers of ``shape``; else a :class:`Hint` naming
    ``name`` and what it was (a list, a tuple, another shape)."""
    if not isinstance(got, np.ndarray):
        raise Hint(f"{name} returned {_kind(got)}, expected an ndarray of shape {tuple(shape)}"
                   + (": return the array itself (np.array(...)), not .tolist()" if isinstance(got, list) else ""))
    if got.dtype.kind not in "biuf":
        raise Hint(f"{name} returned an ndarray of dtype {got.dtype}, expected real numbers (float64)")
    if got.shape != tuple(shape):
        raise Hint(f"{name} returned shape {got.shape}, expected {tuple(shape)}" + (f": {advice}" if advice else ""))
    return got.astype(float)


def scalar(got, name: str) -> float:
    """``got`` as a float, if it is one number (a Python or NumPy number, or a 0-d array); else a :class:`Hint`."""
    if isinstance(got, (bool, np.bool_)) or not (isinstance(got, (int, float, np.integer, np.floating))
                                                 or (isinstance(got, np.ndarray) and got.shape == ())):
        raise Hint(f"{name} returned {_kind(got)}, expected one number (a float): reduce with np.mean / np.sum "
                   "over every axis, or float(...)")
    return float(got)


def parts(got, k: int, name: str, what: str) -> tuple:
    """``got`` as a tuple, if it is a tuple or list of ``k`` items; else a :class:`Hint` saying ``name`` returns
    ``what``."""
    if not (isinstance(got, (tuple, list)) and len(got) == k):
        raise Hint(f"{name} returned {_kind(got)}; it returns {what}")
    return tuple(got)


def close(got, want, tol: float) -> bool:
    """Whether ``got`` has ``want``'s shape, is finite, and is within ``tol`` of it in every entry."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return got.shape == want.shape and bool(np.isfinite(got).all()) and bool(np.abs(got - want).max(initial=0) <= tol)


@dataclass(frozen=True)
class Grade:
    """One graded function: ``passed``, and ``message`` (what was checked, or the hint)."""

    function: str
    passed: bool
    message: str


@dataclass(frozen=True)
class Report:
    """A graded file: one :class:`Grade` per function, the ``seed`` that drew the inputs (``--seed`` replays it),
    and the first :data:`OUTPUT_HEAD` bytes of what the file printed (``output``) out of ``output_bytes``."""

    grades: tuple[Grade, ...]
    seed: int
    output: str
    output_bytes: int

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.grades)


def exercise_names(source: str, path: str | Path = BUILD_FILE, required: bool = True) -> tuple[str, ...]:
    """The names in the module-level ``EXERCISE = (...)`` of a build.py's ``source`` (``()`` where it has none and
    not ``required``)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == LIST_NAME for t in node.targets):
            names = ast.literal_eval(node.value)
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise InputError(f"{path}: {LIST_NAME} must be a tuple of function names, got {names!r}")
            return tuple(names)
    if not required:
        return ()
    raise InputError(f"{path}: no module-level {LIST_NAME} = (...) listing the functions a learner writes")


def blank(source: str, lesson: str, path: str | Path = BUILD_FILE, examples: dict[str, str] | None = None) -> str:
    """``source`` with the body of every function in its ``EXERCISE`` replaced by ``raise NotImplementedError``
    (signature and docstring kept, everything else unchanged), after the comment ``examples[name]`` if given."""
    names = exercise_names(source, path)
    functions = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name in names}
    missing = [n for n in names if n not in functions]
    if missing:
        raise InputError(f"{path}: {LIST_NAME} names {missing}, which are not top-level functions there")
    lines = source.splitlines(keepends=True)
    for node in sorted(functions.values(), key=lambda n: n.lineno, reverse=True):
        doc = node.body[0]
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            raise InputError(f"{path}: {node.name} needs a docstring (the learner's instructions)")
        indent = " " * node.body[0].col_offset
        example = textwrap.indent((examples or {}).get(node.name, ""), indent + "# ")
        stub = f'{indent}raise NotImplementedError("{node.name}: write this function (lesson {lesson}, Build it)")\n'
        lines[doc.end_lineno:node.end_lineno] = [example, stub]
    return "".join(lines)


def _shown(value) -> str:
    """``value`` as a worked call shows it: numbers to 4 significant digits, arrays as NumPy prints them."""
    if isinstance(value, tuple):
        return "(" + ",\n ".join(_shown(v) for v in value) + ")"
    if isinstance(value, (float, np.floating)):
        text = f"{value:.4g}"
        return text if any(c in text for c in ".ein") else text + ".0"  # 1.0, not 1: a float, as returned
    return repr(value)


def worked_calls(folder: Path) -> dict[str, str]:
    """Each exercise's worked call from the lesson's ``_check.py`` (``EXAMPLES``: name -> a call written in the
    build.py's names), with what the lesson's own solution returns for it, as comment text for the stub."""
    checker = Path(folder) / CHECK_FILE
    calls = getattr(load(checker), "EXAMPLES", {}) if checker.exists() else {}  # a lesson without a grader: none
    if not calls:
        return {}
    reference = vars(load(Path(folder) / BUILD_FILE))
    out = {}
    with np.printoptions(precision=4, suppress=True, floatmode="maxprec"):
        for name, call in calls.items():
            value = eval(call, dict(reference))  # noqa: S307 - the lesson's own text, run on its own solution
            out[name] = f"A worked call and the lesson's own answer (rounded):\n>>> {call}\n{_shown(value)}\n"
    return out


def write_exercise(folder: Path, dest: Path, force: bool = False) -> Path:
    """Write ``dest/build.py``: lesson ``folder``'s build.py with the learner's functions blanked -> its path.
    An existing file is kept (it may hold the learner's work) unless ``force``."""
    target = Path(dest) / BUILD_FILE
    if target.is_dir():
        raise InputError(f"{target} is a folder, not a file: choose another folder for the exercise")
    if target.exists() and not force:
        raise InputError(f"{target} exists (your work?); pass --force to overwrite it")
    source = (Path(folder) / BUILD_FILE).read_text(encoding="utf-8")
    text = blank(source, lesson_number(folder), Path(folder) / BUILD_FILE, worked_calls(folder))
    target.parent.mkdir(parents=True, exist_ok=True)
    return _files.write_text(target, text)


@dataclass(frozen=True)
class Arm:
    """An arm the graders draw inputs from: its chain and MuJoCo's compiled model of it (the reference)."""

    label: str
    chain: object  # physai.chain.Chain
    model: object  # mujoco.MjModel


def arms(rng: np.random.Generator) -> list[Arm]:
    """The SO-101 (every axis z, every ``q_ref`` 0), the WidowX AI (axes z, y, -y, -y, -z, x) and the WidowX AI
    with a ``ref`` of +-0.1..0.4 rad drawn from ``rng`` on each joint, compiled by MuJoCo (so ``q_ref != 0``)."""
    import mujoco

    from physai import robots
    from physai.chain import chain_from_mujoco

    out = [Arm(name, robots.load(name), robots.mujoco_model(name)) for name in ("so101", "wxai")]
    wxai = out[1].chain
    spec = mujoco.MjSpec.from_file(str(robots.model_path("wxai")))
    refs = rng.choice([-1, 1], wxai.n) * rng.uniform(0.1, 0.4, wxai.n)
    for name, ref in zip(wxai.joint_names, refs):
        spec.joint(name).ref = ref
    model = spec.compile()
    chain = chain_from_mujoco(model, wxai.tool_name, joints=list(wxai.joint_names), name="wxai, q_ref != 0")
    return [*out, Arm("the WidowX AI with q_ref != 0", chain, model)]


def poses(chain, rng: np.random.Generator, k: int = 2) -> np.ndarray:
    """``k`` random in-limit poses of ``chain``, then the edge cases: every joint at ``q_ref`` (zero displacement;
    the WidowX AI's arm is then nearly singular, sigma_min 3e-4 m/rad), at its lower and at its upper limit ->
    ``(k + 3, n)``."""
    return np.r_[chain.random_q(rng, k), [chain.q_ref, chain.lower, chain.upper]]


def load(path: Path) -> ModuleType:
    """Import the file at ``path`` as a fresh module (not as ``__main__``: its ``main()`` does not run). Used for
    the lesson's own files, never for the learner's (those run in the child)."""
    _sandbox.before_loading()  # while grading: never a file the learner's code changed
    return load_module(path)


def _load_checker(folder: Path) -> ModuleType:
    """The lesson's ``_check.py``, kept in ``sys.modules`` under a fixed name while it grades, so a test function
    of its own passed as an input (``fd_jacobian(f, x)``) pickles by name and the child imports the same file."""
    name = f"_physai_check_{lesson_number(folder)}"
    spec = importlib.util.spec_from_file_location(name, Path(folder) / CHECK_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# What the graders import while they grade (arms, the lessons' checks), imported before any learner's code runs.
_AHEAD = ("mujoco", "physai.robots", "physai.chain")


def _import_ahead(checker: Path) -> None:
    """Import every module ``checker``'s source names (also inside its functions) and :data:`_AHEAD`, before a
    child starts, so that the grader imports nothing a learner's code could have written."""
    st = checker.stat()
    for name in (*_AHEAD, *_imported_names(checker, st.st_mtime_ns, st.st_size)):
        parent = sys.modules.get(name.rpartition(".")[0])
        if name in sys.modules or (parent is not None and not hasattr(parent, "__path__")):
            continue  # imported already, or a name imported from a module (not a package)
        try:
            importlib.import_module(name)
        except ImportError:  # a name imported from a package, not a module; or a lesson dependency missing here
            pass


@functools.lru_cache(maxsize=16)
def _imported_names(checker: Path, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The module names the source of ``checker`` (as of ``mtime_ns`` and ``size``) imports, or may import."""
    names = []
    for node in ast.walk(ast.parse(checker.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return tuple(names)


def _read_while_grading(folder: Path) -> tuple[list[Path], list[Path]]:
    """The folders whose modules and data the grader reads while it grades (this package, the lesson), and the one
    whose every file it may load (the cache: compiled engines, numba's cache, self-collision statistics)."""
    from physai import _engine

    return [Path(__file__).resolve().parents[1], Path(folder).resolve()], [_engine.cache_dir()]




def grade(checker: ModuleType, session: Session, name: str, rng: np.random.Generator) -> Grade:
    """Run ``checker.check_<name>(build, rng)`` on the learner's file -> its :class:`Grade`."""
    session.begin(name)
    if session.import_error:
        return Grade(name, False, session.import_error)
    if not session.defines(name):
        return Grade(name, False, f"{session.path.name} defines no function {name}")
    try:
        getattr(checker, f"check_{name}")(Learner(session), rng)
    except Stopped as exc:
        culprits = [n for n in session.timed_out if n in session.calls(name)]
        session.timed_out += [name] if str(exc).startswith("stopped after") else []
        return Grade(name, False, str(exc) + (f"; {culprits[0]}, which it calls, ran out of time too: fix "
                                              f"{culprits[0]} first" if culprits and name in session.timed_out else ""))
    except LearnerError as exc:  # this function, or a function of the learner's that it calls
        where = f" at {exc.where}" if exc.where else ""
        if exc.type_name == "NotImplementedError":
            return Grade(name, False, f"{NOT_WRITTEN} ({exc.message})")
        if exc.type_name == "SystemExit":
            return Grade(name, False, f"called sys.exit({exc.message}){where}: a graded function must return "
                                      "its answer")
        return Grade(name, False, f"raised {exc}{where}")
    except Hint as hint:
        return Grade(name, False, FLOAT32 if session.low_precision else str(hint))
    except Exception as exc:  # noqa: BLE001 - what the learner returned broke a check: fail it, grade the rest
        return Grade(name, False, f"returned something the check could not use ({type(exc).__name__}: {exc})")
    return Grade(name, True, "passed")


def parameters(source: str) -> dict[str, list[str]]:
    """Each top-level function of ``source`` -> its parameter names in order (to name a changed input)."""
    return {n.name: [a.arg for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs)]
            for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def new_seed() -> int:
    """A fresh seed for a grading run (printed, so ``--seed`` can replay it)."""
    return secrets.randbelow(10**6)


def check(folder: Path, dest: Path, seed: int | None = None, timeout: float = TIMEOUT,
          only: tuple[str, ...] | None = None) -> Report:
    """Grade ``dest/build.py`` against lesson ``folder``'s checks -> a :class:`Report` with one :class:`Grade` per
    function the lesson lists (or per name in ``only``), its inputs drawn from ``seed`` (fresh if None), each
    function limited to ``timeout`` s of the child's time."""
    folder, target = Path(folder), Path(dest) / BUILD_FILE
    if not target.is_file():
        raise InputError(f"{target} does not exist; write it first with: physai exercise "
                         f"{lesson_number(folder)} {dest}")
    if not (isinstance(timeout, (int, float)) and 0 < timeout <= MAX_TIMEOUT):
        raise InputError(f"timeout: expected seconds, more than 0 and at most {MAX_TIMEOUT:g} (a day), got {timeout!r}")
    source = (folder / BUILD_FILE).read_text(encoding="utf-8")
    names = exercise_names(source, folder / BUILD_FILE)
    seed = new_seed() if seed is None else seed
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise InputError(f"seed: expected a whole number >= 0 (a run prints its seed), got {seed!r}")
    checker = _load_checker(folder)
    _import_ahead(folder / CHECK_FILE)
    snapshot = _sandbox.Snapshot(*_read_while_grading(folder))
    session = Session(target.resolve(), checker, parameters(source), timeout, snapshot)
    grades = []
    try:
        with _sandbox.ImportGuard(snapshot):
            for i, n in enumerate(names):
                if only is None or n in only:
                    grades.append(grade(session.checker, session, n, np.random.default_rng([seed, i])))
                    snapshot.verify()  # no verdict on a changed grader
    finally:
        session.close()
    return Report(tuple(grades), seed, session.output.text(), session.output.total)


def lesson_folder(lesson: str | int | Path) -> Path:
    """The folder of lesson ``lesson`` (``"09"``, ``9``, or a folder) in this installation.

    Examples
    --------
    >>> from physai.course.exercise import lesson_folder
    >>> lesson_folder(9).name
    '09-jacobians'
    """
    if isinstance(lesson, Path):
        return lesson
    number = str(lesson).zfill(2)
    matches = [d for d in sorted(LESSONS_DIR.glob(f"{number}-*")) if d.is_dir()]
    if not matches:
        raise InputError(f"unknown lesson {lesson!r}; lessons: "
                         f"{', '.join(d.name for d in sorted(LESSONS_DIR.glob('[0-9][0-9]-*')))}")
    return matches[0]


def _with_functions(source: str, functions: dict[str, str]) -> str:
    """``source`` with each top-level function named in ``functions`` replaced by the given source text."""
    lines = source.splitlines(keepends=True)
    nodes = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name in functions]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        lines[first - 1:node.end_lineno] = [functions[node.name].rstrip("\n") + "\n"]
    return "".join(lines)


def _after_imports(source: str, block: str) -> str:
    """``source`` with ``block`` put after its leading docstring and imports (so a decorator or base class it
    defines exists before the functions below use it)."""
    body = ast.parse(source).body
    head = 0
    for node in body:
        if not (isinstance(node, (ast.Import, ast.ImportFrom))
                or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))):
            break
        head = node.end_lineno
    lines = source.splitlines(keepends=True)
    return "".join(lines[:head]) + block + "\n" + "".join(lines[head:])


def _top_level(source: str) -> set[str]:
    """The names a module's ``source`` binds at top level (functions, classes, assignments, imports)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            names |= {t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    return names


def _located(message: str, blocks: list[tuple[str, int]]) -> str:
    """``message`` with a location in the scratch build.py (``at build.py:12: text``) named by the session's
    function it falls in (``at line 3 of hinge_column: text``)."""

    def name(match):
        line = int(match.group(1))
        for block, first in blocks:
            if first <= line < first + block.count("\n") + 1:
                head = re.match(r"\s*(?:async\s+)?(?:def|class)\s+(\w+)", block)
                return f"at line {line - first + 1} of {head.group(1) if head else 'your code'}: "
        return "in the lesson's own code: "

    return re.sub(rf"at {re.escape(BUILD_FILE)}:(\d+): ", name, message)


def check_functions(lesson: str | int | Path, *functions: Callable, seed: int | None = None,
                    timeout: float = TIMEOUT) -> bool:
    """Grade functions defined in this session (a notebook, a script) against lesson ``lesson``'s checks, with the
    same isolation as ``physai check``: their source, put in place of the lesson's own in a copy of its build.py,
    runs in a child process. Prints one line per function (pass, or the hint) and the seed; returns whether all
    passed. A learner's mistake never raises; naming a function the lesson does not list does (InputError).

    In a notebook (``physai.check`` is this function)::

        def skew(v):
            raise NotImplementedError

        physai.check("07", skew)   # prints "fail skew: not written yet (...)" -> False
    """
    folder = lesson_folder(lesson)
    source = (folder / BUILD_FILE).read_text(encoding="utf-8")
    names = exercise_names(source, folder / BUILD_FILE)
    if not functions:
        raise InputError(f"physai.check grades the functions you pass it: physai.check(\"{lesson_number(folder)}\", "
                         f"{', '.join(names)}) (any of them)")
    texts, unreadable = {}, {}
    for f in functions:
        name = getattr(f, "__name__", None)
        if name not in names or isinstance(f, type) or not callable(f):
            raise InputError(f"lesson {lesson_number(folder)} grades the functions {', '.join(names)}; got "
                             f"{name or f!r}" + (", a class" if isinstance(f, type) else ""))
        try:
            texts[name] = _sendable.source(f)
            _sendable.dependencies([f], set())
        except (OSError, TypeError, SyntaxError) as exc:  # a lambda's line, a built-in, a cell that is gone
            unreadable[name] = f"its source could not be read ({exc}): define it with def in a cell"
            texts.pop(name, None)
    provided = _top_level(source) | set(names)
    for f in [f for f in functions if f.__name__ in texts]:
        missing = _sendable.dependencies([f], provided)[2]
        if missing:
            name = sorted(missing)[0]
            unreadable[f.__name__] = (f"uses {name}, {missing[name]} defined in your session that cannot be sent "
                                      "to the grader (only functions, classes, modules, numbers and strings are): "
                                      "define it inside the function")
            del texts[f.__name__]
    # the session's helpers as the session defines them, in place of the lesson's own of the same name
    helpers, extra, _ = _sendable.dependencies([f for f in functions if f.__name__ in texts], provided)
    functions_there = {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    replaced = {**{n: t for n, t in helpers.items() if n in functions_there}, **texts}
    # imports and numbers first, then each helper after those it was found through (a decorator before its use)
    extra = [*extra, *reversed([t for n, t in helpers.items() if n not in replaced])]
    text = _after_imports(_with_functions(source, replaced), "".join(f"\n\n{line.rstrip()}\n" for line in extra))
    # a number the build.py also binds keeps the session's value
    text += "".join(f"\n{line}\n" for line in extra if line.split(" = ")[0] in provided and " = " in line)
    with tempfile.TemporaryDirectory(prefix="physai-notebook-") as scratch:
        (Path(scratch) / BUILD_FILE).write_text(text, encoding="utf-8")
        report = check(folder, Path(scratch), seed, timeout, only=tuple(texts))
    blocks = [(b, text[:text.index(b.rstrip("\n"))].count("\n") + 1) for b in [*replaced.values(), *extra]]
    grades = [*(Grade(g.function, g.passed, _located(g.message, blocks)) for g in report.grades),
              *(Grade(n, False, m) for n, m in unreadable.items())]
    print(f"lesson {lesson_number(folder)}, seed {report.seed}")
    for g in grades:
        print(f"{'pass' if g.passed else 'fail'} {g.function}: {g.message}")
    if report.output_bytes:
        print(f"your code printed {report.output_bytes} bytes; the first {len(report.output)}:\n{report.output}")
    return all(g.passed for g in grades)
