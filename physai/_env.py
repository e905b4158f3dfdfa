"""The environment variables physai reads, each parsed here and nowhere else (private).

A value that cannot be meant (``PHYSAI_BUILD_TIMEOUT=nan``, ``PHYSAI_FULL=yes please``) is ignored with one warning
line naming the variable and the values it takes where a default is safe, and refused with an
:class:`~physai.errors.InputError` naming them where it is not (an output folder that is a file). The values are
read when asked for, not at import, so a variable set later in the process counts. The README's table lists them.

``NUMBA_DISABLE_JIT`` (and numba's other settings) numba parses itself, when it is imported; physai asks
``numba.config`` rather than reading the variable again.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from pathlib import Path

from physai.errors import InputError

BUILD_TIMEOUT, DEFAULT_BUILD_TIMEOUT = "PHYSAI_BUILD_TIMEOUT", 600.0
LESSON_OUT = "PHYSAI_LESSON_OUT"
FULL = "PHYSAI_FULL"
NUMBA_CACHE_DIR = "NUMBA_CACHE_DIR"
MUJOCO_GL = "MUJOCO_GL"  # MuJoCo's own; the lessons' pictures choose a headless one when it is unset
_PACKAGE = Path(__file__).resolve().parent


def _warn(message: str) -> None:
    """One line on stderr (no source line under it), filterable as a ``UserWarning`` from module ``physai``."""
    warnings.warn_explicit(message, UserWarning, filename="physai", lineno=0)


def build_timeout() -> float:
    """``PHYSAI_BUILD_TIMEOUT``: seconds a run-time build of the compiled engine may take, ``> 0``; ``inf`` for no
    limit; unset or empty 600. Anything else (``nan``, ``0``, ``-5``, ``soon``) warns once and gives 600."""
    return _build_timeout(os.environ.get(BUILD_TIMEOUT, "").strip())


@functools.cache  # one warning per value, however often the engine asks
def _build_timeout(raw: str) -> float:
    if not raw:
        return DEFAULT_BUILD_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if value > 0:  # False for nan
        return value
    _warn(f"{BUILD_TIMEOUT}={raw!r} ignored: expected seconds > 0, or inf for no limit; the build's limit is "
          f"{DEFAULT_BUILD_TIMEOUT:g} s")
    return DEFAULT_BUILD_TIMEOUT


def full() -> bool:
    """``PHYSAI_FULL``: ``1`` runs the lessons' large sizes, ``0`` or unset their small ones. Anything else warns once
    and counts as unset."""
    return _full(os.environ.get(FULL, "").strip())


@functools.cache
def _full(raw: str) -> bool:
    if raw in ("", "0", "1"):
        return raw == "1"
    _warn(f"{FULL}={raw!r} ignored: expected 1 (the lessons' large runs) or 0")
    return False


def absolute(raw: str) -> Path:
    """A path from the environment as an absolute path, a relative one taken from the working directory now."""
    return Path(os.path.abspath(raw))


def lesson_out() -> Path | None:
    """``PHYSAI_LESSON_OUT``: the folder the lessons write under (``<it>/NN-name/``), absolute, or None when unset or
    empty. A relative path is taken from the working directory when this is called (``physai tour`` and
    ``physai lesson`` make it absolute before they change into a lesson's folder). Refused, naming the variable:
    a path that is a file, or one inside the physai package (nothing is written inside the install)."""
    raw = os.environ.get(LESSON_OUT, "")
    if not raw.strip():
        return None
    path = absolute(raw)
    if path.exists() and not path.is_dir():
        raise InputError(f"{LESSON_OUT}={raw!r}: {path} is a file; expected a folder for the lessons' outputs "
                         "(made if missing)")
    if path == _PACKAGE or _PACKAGE in path.parents:
        raise InputError(f"{LESSON_OUT}={raw!r}: {path} is inside the physai package; expected a folder outside it")
    return path


def mujoco_gl() -> str:
    """``MUJOCO_GL``: the OpenGL backend the user chose for MuJoCo, lower case ("" when unset or empty); MuJoCo itself
    judges the value."""
    return os.environ.get(MUJOCO_GL, "").strip().lower()


def numba_cache_dir() -> Path | None:
    """``NUMBA_CACHE_DIR``: where the compiled engine's run-time builds and numba's cache go, absolute (a relative
    path taken from the working directory), or None when unset or empty (the user's cache folder is used)."""
    raw = os.environ.get(NUMBA_CACHE_DIR, "")
    return absolute(raw) if raw.strip() else None
