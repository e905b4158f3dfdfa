"""The compiled engine's kernels (private): an ahead-of-time module where one can be built, else numba's JIT.

The kernels are written once, as numba functions (:mod:`physai._numba_kin`, :mod:`physai._numba_ik`). Serving
them through numba's JIT costs every process about a second before its first answer (numba imports its compiler,
which imports SciPy, then loads its disk cache). So the first process that needs them also compiles them ahead of
time (``numba.pycc``, in a child process, ~15 s once) into an extension module in the cache directory; every later
process imports that module in under a millisecond, without numba. Both are the same machine code from the same
source (tests/test_engine.py compares them bit for bit).

One pose is too little arithmetic for numba's calling convention, which costs more than the walk itself; the
one-pose calls (:data:`WALK`) are numba's walk written again in C (``_walk.c``), built in the same step into a
second module and tested equal to the numba kernels bit for bit.

The modules' names are a hash of their sources, Python, the platform and the numba and NumPy versions, so an edited
kernel is never served from an old build. Where no module can be built (no C compiler, say), the reason is kept
beside it (``<name>.failed``; delete it to try again) and the JIT serves: the one-pose calls then decline (return
None) and their callers run the batch kernel on one row. Batches run numba's parallel JIT kernels either way
(:func:`physai._numba_kin.batch`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from importlib import import_module, metadata
from pathlib import Path

import numpy as np

# kernel -> the module that defines it; callers pass exactly each kernel's signature types (no dispatch checks them)
KERNELS = {
    "targets_ok": "physai._numba_ik", "solve_batch": "physai._numba_ik",
}
# The one-pose calls of _walk.c: ``(q, P)`` -> a new ``T (4, 4)``, ``J (6, n)``, ``(T, J)`` or ``(T, F (n, 6))``;
# None, having written nothing, unless q is an exact, aligned, native float64 vector of the chain's length, all finite,
# and P a chain's packed constants as built.
WALK = ("pose", "jacobian", "pose_jacobian", "frames")
_HERE = Path(__file__).resolve().parent
_SOURCES = ("_numba_kin.py", "_numba_ik.py", "_ik_record.py", "_aot_build.py", "_engine.py", "_walk.c")


def module_name(kind: str = "kernels") -> str:
    """``physai_<kind>_<hash>``: the hash of everything the ahead-of-time modules are built from."""
    h = hashlib.sha256()
    for source in _SOURCES:
        h.update((_HERE / source).read_bytes())
    h.update(f"{sys.version}|{sysconfig.get_platform()}|numba {metadata.version('numba')}|numpy {np.__version__}".encode())
    return f"physai_{kind}_" + h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where the module is kept: ``NUMBA_CACHE_DIR`` when set (beside numba's own cache), else physai's ``__pycache__``."""
    root = os.environ.get("NUMBA_CACHE_DIR")
    return Path(root) if root else _HERE / "__pycache__"


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(directory: Path, names: tuple[str, str]) -> str | None:
    """Build both modules (kernels, walk) in a child process; the reason they could not be, else None."""
    failed = directory / f"{names[0]}.failed"
    if failed.exists():
        return failed.read_text().strip().splitlines()[0]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(_HERE.parent), os.environ.get("PYTHONPATH"))))}
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
        out = subprocess.run([sys.executable, "-m", "physai._aot_build", tmp, *names], cwd=tmp, env=env,
                             capture_output=True, text=True, check=False)
        built = [Path(tmp) / _file_name(name) for name in names]
        if out.returncode != 0 or not all(path.is_file() for path in built):
            reason = f"building {names[0]} failed (exit {out.returncode})\n{out.stdout[-2000:]}{out.stderr[-4000:]}"
            failed.write_text(reason)
            return reason.splitlines()[0]
        for path in reversed(built):  # atomic, the kernels last: whoever finds them finds both modules whole
            os.replace(path, directory / path.name)
    return None


def _file_name(name: str) -> str:
    return name + sysconfig.get_config_var("EXT_SUFFIX")


def _ahead_of_time() -> tuple[tuple[object, object] | None, str]:
    """Both ahead-of-time modules (built on first use) and where they came from; None and why not, if unavailable."""
    directory, names = cache_dir(), (module_name("kernels"), module_name("walk"))
    paths = [directory / _file_name(name) for name in names]
    if not paths[0].is_file():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            why = _build(directory, names)
        except OSError as exc:  # a read-only install, say
            why = f"cannot build in {directory}: {exc}"
        if why:
            return None, why
    try:
        return tuple(_import(path, name) for path, name in zip(paths, names)), f"ahead-of-time module {paths[0]}"
    except ImportError as exc:
        return None, f"cannot import {directory}/{names}: {exc}"


def _numba_module(name: str):
    try:
        return import_module(name)
    except ImportError as exc:
        from physai.errors import InputError

        raise InputError(f"engine='compiled' needs numba, which does not import here ({exc}); "
                         "pass engine='numpy' for the readable NumPy engine") from exc


def jit_kernels() -> dict:
    """Each kernel's numba JIT function, called past numba's type dispatch (its compiled entry point)."""
    return {k: _entry_point(getattr(_numba_module(m), k)) for k, m in KERNELS.items()}


def batch(Q: np.ndarray, P: np.ndarray, T: np.ndarray, J: np.ndarray, F: np.ndarray) -> None:
    """numba's batch kernel, parallel over the CPU cores (:func:`physai._numba_kin.batch`)."""
    _numba_module("physai._numba_kin").batch(Q, P, T, J, F)


def declined(q, P) -> None:
    """The one-pose calls where _walk.c could not be built: the caller then runs the batch kernel on one row."""
    return None


def _entry_point(dispatcher):
    """The compiled function behind the dispatcher's one signature. Dispatch costs a few microseconds per call;
    without it numba's unboxing checks only item sizes, hence the callers' exact types."""
    return dispatcher.overloads[dispatcher.signatures[0]].entry_point


class Kernels:
    """The kernels and one-pose calls as attributes (``kernels.pose(q, P)``), loaded on first use; ``origin`` says
    from where."""

    def __getattr__(self, name: str):
        modules, origin = _ahead_of_time()
        if modules:
            table = {k: getattr(modules[0], k) for k in KERNELS} | {k: getattr(modules[1], k) for k in WALK}
        else:
            table, origin = jit_kernels() | dict.fromkeys(WALK, declined), f"numba JIT ({origin})"
        self.__dict__.update(table, origin=origin)
        if name not in self.__dict__:
            raise AttributeError(f"the compiled engine has no kernel {name!r}")
        return self.__dict__[name]


kernels = Kernels()
