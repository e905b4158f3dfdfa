"""Graded Build-it exercises.

A lesson's ``build.py`` writes from scratch the functions a learner types and lists them at module level:
``EXERCISE = ("hinge_column", "jacobian", "fd_jacobian")``. :func:`write_exercise` copies that file with each
listed function's body replaced by ``raise NotImplementedError`` (its signature and docstring kept), and
:func:`check` grades a learner's copy function by function with the lesson's ``_check.py``: for every listed
name, ``check_<name>(build)`` receives the learner's module, compares it with an independent reference (MuJoCo,
a closed form, finite differences, the library) and raises :class:`Hint` naming the likely mistake.

Example (``physai exercise 09 my-09`` and ``physai check 09 my-09`` from the shell)::

    grades = check(lesson_folder, Path("my-09"))
    [(g.function, g.passed) for g in grades]   # [("hinge_column", True), ("jacobian", False), ...]
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from physai import _files
from physai.errors import InputError, PhysaiError
from physai.lesson import lesson_number

BUILD_FILE = "build.py"
CHECK_FILE = "_check.py"
LIST_NAME = "EXERCISE"
NOT_WRITTEN = "not written yet"


class Hint(PhysaiError):
    """A graded function gave a wrong answer; the message names the likely mistake."""


def shaped(got, shape: tuple, name: str, advice: str = "") -> np.ndarray:
    """``got`` as a float array, if it has ``shape``; else a :class:`Hint` naming ``name`` and both shapes."""
    out = np.asarray(got, dtype=float)
    if out.shape != tuple(shape):
        raise Hint(f"{name} returned shape {out.shape}, expected {tuple(shape)}" + (f": {advice}" if advice else ""))
    return out


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


def exercise_names(source: str, path: str | Path = BUILD_FILE) -> tuple[str, ...]:
    """The names in the module-level ``EXERCISE = (...)`` of a build.py's ``source``."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == LIST_NAME for t in node.targets):
            names = ast.literal_eval(node.value)
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise InputError(f"{path}: {LIST_NAME} must be a tuple of function names, got {names!r}")
            return tuple(names)
    raise InputError(f"{path}: no module-level {LIST_NAME} = (...) listing the functions a learner writes")


def blank(source: str, lesson: str, path: str | Path = BUILD_FILE) -> str:
    """``source`` with the body of every function in its ``EXERCISE`` replaced by ``raise NotImplementedError``
    (signature and docstring kept, everything else unchanged)."""
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
        stub = f'{indent}raise NotImplementedError("{node.name}: write this function (lesson {lesson}, Build it)")\n'
        lines[doc.end_lineno:node.end_lineno] = [stub]
    return "".join(lines)


def write_exercise(folder: Path, dest: Path, force: bool = False) -> Path:
    """Write ``dest/build.py``: lesson ``folder``'s build.py with the learner's functions blanked -> its path.
    An existing file is kept (it may hold the learner's work) unless ``force``."""
    target = Path(dest) / BUILD_FILE
    if target.exists() and not force:
        raise InputError(f"{target} exists (your work?); pass --force to overwrite it")
    source = (Path(folder) / BUILD_FILE).read_text(encoding="utf-8")
    text = blank(source, lesson_number(folder), Path(folder) / BUILD_FILE)
    target.parent.mkdir(parents=True, exist_ok=True)
    return _files.write_text(target, text)


def load(path: Path) -> ModuleType:
    """Import the file at ``path`` as a fresh module (not as ``__main__``: its ``main()`` does not run)."""
    name = f"physai_exercise_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses defined in the file look their module up here
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def grade(checker, build: ModuleType, name: str) -> Grade:
    """Run ``checker.check_<name>(build)`` -> its :class:`Grade`."""
    if not callable(getattr(build, name, None)):
        return Grade(name, False, f"build.py defines no function {name}")
    try:
        getattr(checker, f"check_{name}")(build)
    except NotImplementedError as exc:  # this function, or a function of the learner's that it calls
        return Grade(name, False, f"{NOT_WRITTEN} ({exc})")
    except Hint as hint:
        return Grade(name, False, str(hint))
    except Exception as exc:  # the learner's code may fail in any way: report it and grade the rest
        return Grade(name, False, f"raised {type(exc).__name__}: {exc}")
    return Grade(name, True, "passed")


def check(folder: Path, dest: Path) -> list[Grade]:
    """Grade ``dest/build.py`` against lesson ``folder``'s checks, one :class:`Grade` per function it lists."""
    folder, target = Path(folder), Path(dest) / BUILD_FILE
    if not target.is_file():
        raise InputError(f"{target} does not exist; write it first with: physai exercise "
                         f"{lesson_number(folder)} {dest}")
    names = exercise_names((folder / BUILD_FILE).read_text(encoding="utf-8"), folder / BUILD_FILE)
    checker = load(folder / CHECK_FILE)
    try:
        build = load(target)
    except Exception as exc:  # a syntax error or a failing import in the learner's file
        return [Grade(n, False, f"{target} did not import: {type(exc).__name__}: {exc}") for n in names]
    return [grade(checker, build, name) for name in names]
