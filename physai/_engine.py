"""The compiled engine's kernels (private): modules compiled ahead of time where they exist, else numba's JIT.

The kernels are written once, as numba functions (:mod:`physai._numba_kin`, :mod:`physai._numba_ik`,
:mod:`physai._numba_collision`). Serving them through numba's JIT costs every process about a second before its
first answer (numba imports its compiler, which imports SciPy, then loads its disk cache). So they are also
compiled ahead of time (``numba.pycc``) into an extension module, which a process imports in under a millisecond,
without numba. Both are the same machine code from the same source (tests/test_engine.py compares them bit for bit).

One pose is too little arithmetic for numba's calling convention, which costs more than the walk itself; the
one-pose calls (:data:`WALK`) are numba's walk written again in C (``_walk.c``), built in the same step into a
second module and tested equal to the numba kernels bit for bit.

Where the modules come from, first found first served:

1. the package: a wheel is built with both (``hatch_build.py`` runs :mod:`physai._aot_build` at build time), so an
   installed package compiles nothing and writes nothing, read-only or not;
2. the cache folder (:func:`cache_dir`: ``NUMBA_CACHE_DIR`` when set, else the user's cache folder), where the first
   process that needs them builds them (a source checkout, a platform without a wheel; ~15 s once), in a child
   process with a time limit (``PHYSAI_BUILD_TIMEOUT`` seconds, default 600, ``inf`` for none:
   :func:`physai._env.build_timeout`), one build per folder at a time (a file lock: other processes wait for it, as
   long as a build may take, then import what it built). A module that does not import (truncated, corrupt, half
   of the pair missing) is removed and built again. A failed build is remembered (``<name>.failed``) only when it
   would fail again (the compiler's error, a time-out): for an hour, or until the compiler changes; a killed build,
   a full disk (said by the compiler, or less than :data:`LOW_SPACE` left) or missing memory are not remembered,
   and debris of a killed build is removed by the next build. With less than :data:`LOW_SPACE` free no build is
   tried: the JIT serves at once, and a process that finds room builds.

Where neither serves, the JIT does, each kernel compiled (or loaded from numba's cache) when first called, so a
first ``jacobian`` waits for the kinematics kernels only: the one-pose calls then decline (return None) and their
callers run the batch kernel on one row. The JIT's disk cache lives in the cache folder too
(:func:`physai._jit.njit`), never in the package. No failure of the build or of a cache reaches a kinematics call: it
answers through the JIT, uncached if need be.

The module names are a hash of their sources (and, in the cache folder, which several environments may share, of
Python, the platform and the numba and NumPy versions), so an edited kernel is never served from an old build.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from importlib import import_module, metadata
from pathlib import Path

import numpy as np

from physai import _env, _files
from physai._jit import cache_dir  # the cache folder of both the built modules and numba's JIT (re-exported)
from physai._kernel_registry import EXT, JIT_KERNELS, KERNELS  # re-exported: the registry this module loads by name

# The one-pose calls of _walk.c: ``(q, P)`` -> a new ``T (4, 4)``, ``J (6, n)``, ``(T, J)`` or ``(T, F (n, 6))``;
# None, having written nothing, unless q is an exact, aligned, native float64 vector of the chain's length, all finite,
# and P a chain's packed constants as built.
WALK = ("pose", "jacobian", "pose_jacobian", "frames")
KINDS = ("kernels", "walk")  # the two modules, built in one step
TIMEOUT_ENV, TIMEOUT = _env.BUILD_TIMEOUT, _env.DEFAULT_BUILD_TIMEOUT  # seconds a build may take (inf: no limit)
RETRY_AFTER = 3600.0  # seconds a failed build is remembered (unless the compiler changes first)
# A build that failed with one of these may succeed next time: not remembered. A linker writing through a memory
# map into a full file system dies of a bus error rather than an error number.
TRANSIENT = ("No space left on device", "Disk quota exceeded", "File too large", "Cannot allocate memory",
             "MemoryError", "Bus error", "signal 7")
# Less free space than this in the cache folder (a build's objects, the modules, numba's cache) and no build is
# tried; a build that fails with less than this left is taken to have filled the disk, whatever the compiler said.
LOW_SPACE = 64 * 2**20
_HERE = Path(__file__).resolve().parent
# every numba module is a kernel source, so a new one cannot be left out of the hash
_SOURCES = (*sorted(p.name for p in _HERE.glob("_numba_*.py")), "_ik_record.py", "_aot_build.py", "_engine.py",
            "_jit.py", "_kernel_registry.py", "_walk.c")
_LOCK = threading.RLock()  # one thread loads the modules; the others wait for what it found


def module_name(kind: str = "kernels", *, prebuilt: bool = False) -> str:
    """``physai_<kind>_<hash>``: the hash of the sources the ahead-of-time modules are built from, and unless
    ``prebuilt`` (the modules a wheel carries, built for its own tag) of Python, the platform and the numba and
    NumPy versions."""
    h = hashlib.sha256()
    for source in _SOURCES:
        h.update((_HERE / source).read_bytes())
    if not prebuilt:
        h.update(f"{sys.version}|{EXT}|numba {metadata.version('numba')}|numpy {np.__version__}".encode())
    return f"physai_{kind}_" + h.hexdigest()[:16]


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seal_name(names: tuple[str, ...]) -> str:
    return f"{names[0]}.sha256"


def _seal(directory: Path, names: tuple[str, ...]) -> None:
    """Record the modules' hashes beside them: a truncated file can import (its missing end read as it runs)."""
    digests = {name: hashlib.sha256((directory / (name + EXT)).read_bytes()).hexdigest() for name in names}
    _files.write_text(directory / _seal_name(names), json.dumps(digests))


def _sealed(directory: Path, names: tuple[str, ...]) -> bool:
    """Both modules present in ``directory``, as their build recorded them."""
    try:
        digests = json.loads((directory / _seal_name(names)).read_text(encoding="utf-8"))
        return all(digests[name] == hashlib.sha256((directory / (name + EXT)).read_bytes()).hexdigest()
                   for name in names)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _import_pair(directory: Path, names: tuple[str, ...], sealed: bool = True) -> tuple | None:
    """Both modules from ``directory``, or None when one is missing, not as built (unless ``sealed`` is False:
    the package's own, installed with their hashes checked), or does not import."""
    paths = [directory / (name + EXT) for name in names]
    if not all(path.is_file() for path in paths) or (sealed and not _sealed(directory, names)):
        return None
    try:
        return tuple(_import(path, name) for path, name in zip(paths, names))
    except (ImportError, OSError):  # truncated, corrupt, built for another NumPy
        return None


def _toolchain() -> str:
    """What a failed build is remembered against: the compiler settings, and the compiler's file (installed or
    updated since, the build is tried again)."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    found = shutil.which(cc[0]) if cc else None
    stamp = os.stat(found).st_mtime_ns if found else None
    flags = [os.environ.get(k) for k in ("CC", "LDSHARED", "CFLAGS", "LDFLAGS", "CPPFLAGS", "PATH")]
    return json.dumps([found, stamp, *flags])


def _remembered(marker: Path) -> str | None:
    """The reason in a failure marker, while it holds: younger than :data:`RETRY_AFTER`, same toolchain.
    A marker that cannot be read (empty, not UTF-8, not JSON, not physai's) holds nothing."""
    try:
        age = time.time() - marker.stat().st_mtime
        record = json.loads(marker.read_bytes().decode("utf-8"))
        reason, toolchain = str(record["reason"]), record["toolchain"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if age > RETRY_AFTER or toolchain != _toolchain() or not reason.strip():
        return None
    return reason.strip().splitlines()[0]


def _remember(marker: Path, reason: str) -> None:
    with contextlib.suppress(OSError):  # a full disk: nothing remembered, the next process tries again
        _files.write_text(marker, json.dumps({"reason": reason, "toolchain": _toolchain()}))


def _low_on_space(directory: Path) -> bool:
    try:
        usage = shutil.disk_usage(directory)
    except OSError:
        return True
    return usage.free < LOW_SPACE


def _wait(child: subprocess.Popen, limit: float) -> str:
    """The child's output once it ends, within ``limit`` seconds (inf: no limit; raises ``TimeoutExpired``), in
    waits of an hour at most (the longest a platform's wait takes)."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return child.communicate(timeout=max(0.0, min(deadline - time.monotonic(), 3600.0)))[0]
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise


def _run_build(out: Path, names: tuple[str, ...]) -> tuple[str | None, bool]:
    """Run :mod:`physai._aot_build` into ``out``: ``(None, _)`` when it built both modules, else ``(why, transient)``.
    The child leads its own process group, so a time-out kills the compiler it started too."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}  # set, the build would compile nothing
    env |= {"NUMBA_CACHE_DIR": str(out.parent), "TMPDIR": str(out),  # the compilers' files too
            "PYTHONPATH": os.pathsep.join(filter(None, (str(_HERE.parent), os.environ.get("PYTHONPATH"))))}
    posix = os.name == "posix"
    child = subprocess.Popen([sys.executable, "-m", "physai._aot_build", str(out), *names], cwd=out, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", start_new_session=posix)
    limit = _env.build_timeout()
    try:
        output = _wait(child, limit)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL) if posix else child.kill()
        child.communicate()
        return f"building {names[0]} timed out after {limit:g} s ({TIMEOUT_ENV} sets the limit)", False
    if child.returncode == 0 and all((out / (name + EXT)).is_file() for name in names):
        return None, False
    if child.returncode < 0:
        return f"building {names[0]} was killed by signal {-child.returncode}", True
    why = f"building {names[0]} failed (exit {child.returncode})\n{output[-6000:]}"
    return why, any(text in output for text in TRANSIENT) or _low_on_space(out)


def _clean(directory: Path, names: tuple[str, ...]) -> None:
    """Under the build lock: remove killed builds' folders and the modules that would not import."""
    for debris in directory.glob(".build-*"):
        shutil.rmtree(debris, ignore_errors=True)
    for file in (*(name + EXT for name in names), _seal_name(names)):
        (directory / file).unlink(missing_ok=True)


def _build(directory: Path, names: tuple[str, ...], marker: Path) -> str | None:
    """Build both modules into ``directory`` (the caller holds the build lock); why not, else None. A failure that
    would recur is remembered in ``marker``, a success removes it."""
    _clean(directory, names)
    out = Path(tempfile.mkdtemp(dir=directory, prefix=".build-"))
    try:
        why, transient = _run_build(out, names)
        if why:
            if not transient:
                _remember(marker, why)
            return why.splitlines()[0]
        _seal(out, names)
        for file in (_seal_name(names), *(name + EXT for name in reversed(names))):
            os.replace(out / file, directory / file)  # atomic, the kernels last: who finds them finds the rest
    finally:
        shutil.rmtree(out, ignore_errors=True)
    marker.unlink(missing_ok=True)
    return None


def _cached(directory: Path) -> tuple[tuple | None, str]:
    """Both modules from the cache folder, built there if need be; None and why not, if unavailable."""
    names = tuple(module_name(kind) for kind in KINDS)
    origin, marker = f"ahead-of-time module {directory / (names[0] + EXT)}", directory / f"{names[0]}.failed"
    modules = _import_pair(directory, names)
    if modules is None and not (why := _remembered(marker)):
        import filelock

        directory.mkdir(parents=True, exist_ok=True)
        if _low_on_space(directory):  # the build would fail for want of room: the JIT serves until there is some
            return None, f"less than {LOW_SPACE >> 20} MiB free in {directory}: not building there"
        try:
            limit = _env.build_timeout()  # the longest a build takes, so the longest to wait for another's
            with filelock.FileLock(directory / "physai-build.lock", timeout=-1 if limit == np.inf else limit):
                modules = _import_pair(directory, names)  # built by another process meanwhile
                if modules is None and not (why := _remembered(marker)):
                    if not marker.exists():  # the first try here, not a retry after a remembered failure
                        print(f"physai: compiling the engine once into {directory} (about a minute; later runs "
                              "reuse it)", file=sys.stderr, flush=True)
                    why = _build(directory, names, marker)
                    modules = None if why else _import_pair(directory, names)
                    if not why and modules is None:
                        why = f"the modules built in {directory} do not import"
                        _remember(marker, why)
        except filelock.Timeout:
            why = f"another process has been building in {directory} for too long"
    return (modules, origin) if modules else (None, why)


def _ahead_of_time() -> tuple[tuple | None, str]:
    """Both ahead-of-time modules and where they came from: the package's, else the cache folder's (built there on
    first use); None and why not, if unavailable."""
    names = tuple(module_name(kind, prebuilt=True) for kind in KINDS)
    modules = _import_pair(_HERE, names, sealed=False)
    if modules:
        return modules, f"prebuilt module {_HERE / (names[0] + EXT)}"
    directory = cache_dir()
    try:
        return _cached(directory)
    except OSError as exc:  # no cache folder can be written: a read-only home, a full disk
        return None, f"cannot build in {directory}: {exc}"


def _numba_module(name: str):
    try:
        return import_module(name)
    except ImportError as exc:
        from physai._extras import install_command
        from physai.errors import MissingExtraError

        raise MissingExtraError(f"engine='compiled' needs numba here, where no prebuilt engine serves ({exc}): "
                                f"{install_command('jit')}, or pass engine='numpy' for the readable NumPy engine"
                                ) from None


def jit_kernel(name: str):
    """The numba JIT function of kernel ``name`` (of :data:`KERNELS` or :data:`JIT_KERNELS`), called past numba's type
    dispatch (its compiled entry point); compiled, or loaded from numba's cache, on first use."""
    return _entry_point(getattr(_numba_module((KERNELS | JIT_KERNELS)[name]), name))


def jit_kernels() -> dict:
    """Each kernel's numba JIT function (:func:`jit_kernel`)."""
    return {k: jit_kernel(k) for k in KERNELS}


@functools.cache
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def _rows_through_walk(Q: np.ndarray, P: np.ndarray, T: np.ndarray, J: np.ndarray, A: np.ndarray, O: np.ndarray,
                       X_tool: np.ndarray) -> None:
    """:func:`physai._numba_kin.batch` by the one-pose walk (:data:`WALK`), row by row: what serves batches where
    numba is not installed and a prebuilt walk is (a wheel's, which needs no numba). The same numbers (the walk is
    tested equal to the kernels bit for bit), one pose per call."""
    for b in range(Q.shape[0]):
        q = np.ascontiguousarray(Q[b])
        T_b = None if len(J) or len(A) else kernels.pose(q, P)
        if len(J):
            T_b, J[b] = kernels.pose_jacobian(q, P)
        if len(A):
            T_b, F = kernels.frames(q, P)
            A[b], O[b] = F[:, :3], F[:, 3:]
        if len(T):
            T[b] = T_b
        if len(X_tool):
            X_tool[b] = T_b[:3, 3]


def declined(q, P) -> None:
    """The one-pose calls where _walk.c could not be built: the caller then runs the batch kernel on one row."""
    return None


def _entry_point(dispatcher):
    """The compiled function behind the dispatcher's one signature. Dispatch costs a few microseconds per call;
    without it numba's unboxing checks only item sizes, hence the callers' exact types. With ``NUMBA_DISABLE_JIT``
    set the "dispatcher" is the Python function, which serves as it is."""
    if not hasattr(dispatcher, "overloads"):
        return dispatcher
    return dispatcher.overloads[dispatcher.signatures[0]].entry_point


class Kernels:
    """The kernels and one-pose calls as attributes (``kernels.pose(q, P)``), loaded on first use by one thread
    (the others wait for it); ``origin`` says from where. Served by the JIT, each kernel compiles (or loads from
    numba's cache) when first asked for, so a process pays only for the kernels it calls."""

    def __getattr__(self, name: str):
        with _LOCK:
            if "origin" not in self.__dict__:
                modules, origin = _ahead_of_time()
                if modules:
                    table = {k: getattr(modules[0], k) for k in KERNELS} | {k: getattr(modules[1], k) for k in WALK}
                else:
                    table, origin = dict.fromkeys(WALK, declined), f"numba JIT ({origin})"
                self.__dict__.update(table, origin=origin)
            if name in JIT_KERNELS and name not in self.__dict__ and not _numba_installed() \
                    and self.__dict__["pose"] is not declined:
                self.__dict__[name] = _rows_through_walk
            if (name in KERNELS or name in JIT_KERNELS) and name not in self.__dict__:
                self.__dict__[name] = jit_kernel(name)
        if name not in self.__dict__:
            raise AttributeError(f"the compiled engine has no kernel {name!r}")
        return self.__dict__[name]


kernels = Kernels()
