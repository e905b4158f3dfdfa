"""physai._engine's build and cache: first use under threads and processes, and a cache that heals.

Every build here but two is a stand-in: a "python" that copies the modules this test session already built (same
names, so they import) into the folder it is given, or fails the way a real build fails (killed, a full disk, a
compiler error). The two real ones meet a C compiler that hangs, through ``CC``, as setuptools reads it.
"""

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import physai
from physai import _engine, _env, _jit

PYTHON = sys.executable  # the tests' own: the stand-in replaces sys.executable for the build only
NAMES = tuple(_engine.module_name(kind) for kind in _engine.KINDS)

FAKE_BUILD = """
import os, shutil, signal, sys, time
from pathlib import Path
args = sys.argv[1:]
if args[:2] == ["-m", "physai._aot_build"]:
    args = args[2:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if os.environ.get("NUMBA_DISABLE_JIT"):  # numba.pycc would find plain functions to compile, and fail
    sys.exit("AttributeError: 'function' object has no attribute 'nopython_signatures'")
mode = os.environ.get("FAKE_MODE", "copy")
if mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "full":
    sys.exit("OSError: [Errno 28] No space left on device: 'physai_walk.o'")
if mode == "fail":
    sys.exit("error: command 'cc' failed: No such file or directory")
if mode == "bus":  # a linker writing through a memory map into a full file system
    sys.exit("collect2: fatal error: ld terminated with signal 7 [Bus error], core dumped")
for name in args[1:]:
    file = name + os.environ["FAKE_EXT"]
    shutil.copy(Path(os.environ["FAKE_REF"]) / file, Path(args[0]) / file)
"""


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory):
    """A stand-in for ``sys.executable`` in the build: copies this session's modules (or fails, per FAKE_MODE)."""
    if not _engine.kernels.origin.startswith("ahead-of-time"):
        pytest.skip(f"no modules built at run time here: {_engine.kernels.origin}")
    root = tmp_path_factory.mktemp("fake")
    (root / "fake_build.py").write_text(FAKE_BUILD)
    python = root / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{root / "fake_build.py"}" "$@"\n')
    python.chmod(0o755)
    return python


@pytest.fixture
def cache(tmp_path, monkeypatch, fake_python):
    """An empty cache folder, builds by the stand-in (``FAKE_MODE`` copy), their count in ``cache.log``."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "builds.log"))
    monkeypatch.setenv("FAKE_REF", str(Path(_engine.kernels.origin.split(" ", 2)[-1]).parent))
    monkeypatch.setenv("FAKE_EXT", _engine.EXT)
    monkeypatch.setattr(_engine.sys, "executable", str(fake_python))
    return folder


def builds(folder: Path) -> int:
    log = folder.parent / "builds.log"
    return len(log.read_text().split()) if log.exists() else 0


def served(why: str) -> bool:
    return why.startswith("ahead-of-time module")


def put_modules(folder: Path) -> list[Path]:
    """This session's modules, copied into ``folder`` as a previous build would have left them."""
    folder.mkdir(parents=True, exist_ok=True)
    ref = Path(os.environ["FAKE_REF"])
    paths = [folder / (name + _engine.EXT) for name in NAMES]
    for path in paths:
        path.write_bytes((ref / path.name).read_bytes())
    _engine._seal(folder, NAMES)
    return paths


def test_first_use_from_16_threads_loads_the_modules_once(monkeypatch):
    found, calls = _engine._ahead_of_time, []

    def slow_first_use():
        calls.append(threading.get_ident())
        time.sleep(0.2)  # every thread arrives while the first one loads
        return found()

    monkeypatch.setattr(_engine, "_ahead_of_time", slow_first_use)
    kernels, barrier = _engine.Kernels(), threading.Barrier(16)

    def first_call(_):
        barrier.wait()
        return kernels.pose

    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(first_call, range(16)))
    assert len(calls) == 1 and all(g is got[0] for g in got)


THREADS_IN_A_FRESH_PROCESS = """
import threading, numpy as np, physai
chain = physai.load("so101", source="builtin")
Q = chain.random_q(np.random.default_rng(0), 16)
barrier, out = threading.Barrier(16), {}
def first_call(i):
    barrier.wait()
    out[i] = physai.jacobian(chain, Q[i])
threads = [threading.Thread(target=first_call, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(len(out), max(np.abs(out[i] - physai.jacobian(chain, Q[i], engine="numpy")).max() for i in range(16)))
"""


def test_16_threads_making_the_first_call_of_a_fresh_process_all_answer_as_the_numpy_engine():
    for _ in range(3):
        out = subprocess.run([PYTHON, "-c", THREADS_IN_A_FRESH_PROCESS], capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        count, diff = out.stdout.split()
        assert int(count) == 16 and float(diff) < 1e-13  # the engines agree to 1e-13 (tests/test_kinematics.py)


def test_the_extension_suffix_comes_from_the_import_system_not_sysconfig(cache, monkeypatch):
    put_modules(cache)

    def racing(*args):
        raise TypeError("can only concatenate str (not 'NoneType') to str")  # sysconfig half initialised

    monkeypatch.setattr(sysconfig, "get_config_var", racing)
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 0


FIRST_USE = "import sys; from physai import _engine; sys.executable = {python!r}; print(_engine._ahead_of_time()[1])"


def test_processes_starting_together_on_an_empty_cache_build_once(cache, fake_python):
    env = {**os.environ, "FAKE_SLEEP": "2"}
    code = FIRST_USE.format(python=str(fake_python))
    procs = [subprocess.Popen([PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(served(out) for out in outs), outs
    assert builds(cache) == 1


@pytest.mark.parametrize("mode", ["kill", "full", "bus"], ids=["killed with -9", "full disk", "linker's bus error"])
def test_a_transient_build_failure_is_not_remembered_and_the_next_use_builds(cache, monkeypatch, mode):
    monkeypatch.setenv("FAKE_MODE", mode)
    modules, why = _engine._ahead_of_time()
    assert modules is None and ("signal 9" in why if mode == "kill" else "exit 1" in why)
    assert not list(cache.glob("*.failed"))
    monkeypatch.setenv("FAKE_MODE", "copy")  # the memory or the space is back
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 2


def test_a_compiler_failure_is_remembered_until_the_compiler_changes_or_an_hour_passes(cache, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "fail")
    _, why = _engine._ahead_of_time()
    assert why.startswith(f"building {NAMES[0]} failed (exit 1)")
    assert _engine._ahead_of_time() == (None, why) and builds(cache) == 1  # remembered: not built again
    monkeypatch.setenv("CC", "another-cc")  # a new compiler: tried again
    _engine._ahead_of_time()
    assert builds(cache) == 2
    marker = cache / f"{NAMES[0]}.failed"
    past = time.time() - _engine.RETRY_AFTER - 1
    os.utime(marker, (past, past))
    monkeypatch.setenv("FAKE_MODE", "copy")
    modules, why = _engine._ahead_of_time()  # an hour later: tried again, built, forgotten
    assert modules and served(why) and builds(cache) == 3 and not marker.exists()


def test_numba_disable_jit_set_for_debugging_does_not_reach_the_build(cache, monkeypatch):
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 1


def test_on_a_nearly_full_disk_no_build_is_tried_and_the_next_process_with_room_builds(cache, monkeypatch):
    with monkeypatch.context() as disk:
        disk.setattr(_engine.shutil, "disk_usage", lambda path: SimpleNamespace(free=_engine.LOW_SPACE - 1))
        modules, why = _engine._ahead_of_time()
    assert modules is None and why == f"less than 64 MiB free in {cache}: not building there"
    assert builds(cache) == 0 and not list(cache.glob("*.failed"))
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 1


def test_a_build_failure_that_fills_the_disk_is_not_remembered_whatever_the_compiler_said(cache, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "fail")
    free = iter([_engine.LOW_SPACE, _engine.LOW_SPACE - 1])  # room before the build, none after it
    monkeypatch.setattr(_engine.shutil, "disk_usage", lambda path: SimpleNamespace(free=next(free)))
    modules, why = _engine._ahead_of_time()
    assert modules is None and why.startswith(f"building {NAMES[0]} failed")
    assert not list(cache.glob("*.failed"))
    monkeypatch.setenv("FAKE_MODE", "copy")  # space is back
    monkeypatch.setattr(_engine.shutil, "disk_usage", lambda path: SimpleNamespace(free=_engine.LOW_SPACE))
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 2


@pytest.mark.parametrize(("value", "junk"), [("inf", False), ("1e400", False), ("30", False), ("nan", True),
                                             ("0", True), ("-5", True), ("soon", True), (" ", False)])
def test_any_build_timeout_value_still_builds_and_serves_the_modules(cache, monkeypatch, value, junk):
    monkeypatch.setenv(_engine.TIMEOUT_ENV, value)
    _env._build_timeout.cache_clear()  # each value warns once per process
    with pytest.warns(UserWarning, match=f"^{_engine.TIMEOUT_ENV}=") if junk else contextlib.nullcontext():
        modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 1


def test_the_first_build_says_so_in_one_line_and_a_retry_after_a_failure_does_not(cache, monkeypatch, capfd):
    monkeypatch.setenv("FAKE_MODE", "fail")
    _engine._ahead_of_time()
    assert capfd.readouterr().err.splitlines() == [
        f"physai: compiling the engine once into {cache} (about a minute; later runs reuse it)"]
    monkeypatch.setenv("CC", "another-cc")  # a new compiler: tried again, already announced
    _engine._ahead_of_time()
    assert builds(cache) == 2 and capfd.readouterr().err == ""


def corrupt(paths: list[Path], how: str) -> None:
    kernels, walk = paths
    if how == "empty":
        kernels.write_bytes(b"")
    elif how == "truncated":
        kernels.write_bytes(kernels.read_bytes()[: kernels.stat().st_size // 2])
    elif how == "garbage":
        kernels.write_bytes(np.random.default_rng(0).bytes(4096))
    else:
        walk.unlink()


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage", "walk module deleted"])
def test_a_cached_module_that_does_not_import_is_removed_and_built_again(cache, how):
    corrupt(put_modules(cache), how)
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 1
    chain = physai.load("so101", source="builtin")
    q = chain.random_q(np.random.default_rng(4))
    np.testing.assert_allclose(modules[1].jacobian(q, chain.packed), physai.jacobian(chain, q, engine="numpy"),
                               atol=1e-13)


@pytest.mark.parametrize("content", [b"", b" \n\n", b"\xff\xfe\x80 not utf-8", b"building failed", b"[1, 2]",
                                     b'{"reason": "x"}', b'{"reason": " ", "toolchain": null}'],
                         ids=["empty", "blank", "not UTF-8", "not JSON", "a list", "no toolchain", "blank reason"])
def test_a_failure_marker_that_cannot_be_read_is_ignored_and_the_build_runs(cache, content):
    cache.mkdir()
    (cache / f"{NAMES[0]}.failed").write_bytes(content)
    modules, why = _engine._ahead_of_time()
    assert modules and served(why) and builds(cache) == 1


def test_a_relative_numba_cache_dir_is_taken_from_the_working_directory_as_an_absolute_path(cache, monkeypatch):
    monkeypatch.chdir(cache.parent)
    monkeypatch.setenv("NUMBA_CACHE_DIR", "relcache")
    assert _engine.cache_dir() == cache.parent / "relcache"
    modules, why = _engine._ahead_of_time()
    assert modules and why == f"ahead-of-time module {cache.parent / 'relcache' / (NAMES[0] + _engine.EXT)}"


def test_a_cache_folder_that_cannot_be_written_means_the_jit_serves_not_an_error(cache, monkeypatch):
    cache.write_text("a file where the folder should be")
    modules, why = _engine._ahead_of_time()
    assert modules is None and why.startswith(f"cannot build in {cache}")


def _double(x):
    return 2.0 * x


def _triple(x):
    return 3.0 * x


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME places the user's cache folder on Linux")
def test_numbas_jit_cache_goes_to_the_users_cache_folder_not_beside_the_source(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # platformdirs' user cache folder on Linux
    triple = _jit.njit("float64(float64)", cache=True)(_triple)
    assert triple(2.0) == 6.0  # exact: one rounding of a small integer
    assert list(tmp_path.glob("physai/jit-*/*/*_triple*.nbi"))
    assert not list(Path(__file__).parent.glob("__pycache__/*_triple*"))


def test_the_jit_cache_folder_is_named_by_every_kernel_source(tmp_path):
    """numba checks a cached kernel against its own file only: a helper changed in another kernel module (inlined
    into it) must lead to another cache folder, or the stale kernel would be loaded, and copied into an
    ahead-of-time build."""
    package = Path(_jit.__file__).parent
    for path in [*package.glob("_numba_*.py"), package / "_ik_record.py", package / "_jit.py"]:
        shutil.copy(path, tmp_path / path.name)
    before = _jit.kernel_sources_digest(tmp_path)
    assert before == _jit.kernel_sources_digest()  # the package's own sources, copied unchanged
    helper = tmp_path / "_numba_kin.py"
    helper.write_text(helper.read_text() + "\n# a changed helper\n")
    assert _jit.kernel_sources_digest(tmp_path) != before


def test_a_jit_cache_that_cannot_be_saved_compiles_uncached_instead_of_raising(tmp_path, monkeypatch):
    from numba.core import caching

    def full_disk(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", full_disk)
    double = _jit.njit("float64(float64)", cache=True)(_double)
    assert double(1.5) == 3.0  # exact: one rounding of a small number


def _five_times(x):
    return _doubled(x) + _tripled(x)


_doubled = _tripled = None  # the callees _five_times compiles with, set by the test


@pytest.fixture
def full_disk(small_fs):
    """A small file system, filled up."""
    folder = small_fs()
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()
    return folder


def test_a_jit_cache_on_a_full_disk_compiles_uncached_callees_included(full_disk, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(full_disk))
    for name, func in (("_doubled", _double), ("_tripled", _triple)):  # compiled lazily, in the caller's compile
        monkeypatch.setitem(globals(), name, _jit.njit(cache=True)(func))
    five_times = _jit.njit("float64(float64)", cache=True)(_five_times)
    assert five_times(1.5) == 7.5  # exact: small numbers


def test_served_by_the_jit_a_jacobian_compiles_the_kinematics_kernels_only(monkeypatch):
    code = ("import sys, numpy as np, physai; from physai import _engine\n"
            "_engine._ahead_of_time = lambda: (None, 'no modules in this test')\n"
            "chain = physai.load('so101', source='builtin')\n"
            "J = physai.jacobian(chain, np.zeros(5))\n"
            "print(np.abs(J - physai.jacobian(chain, np.zeros(5), engine='numpy')).max())\n"
            "print(sorted(m for m in sys.modules if m.startswith('physai._numba_')))\n")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    error, loaded = out.stdout.splitlines()
    assert float(error) <= 1e-13  # tests/test_kinematics.py: the engines agree to 1e-13
    assert loaded == "['physai._numba_kin']"  # not the IK, collision and avoidance kernels (a minute more, cold)


def test_numba_disable_jit_runs_batches_as_python_with_the_numpy_engines_numbers(monkeypatch):
    code = ("import numpy as np, physai; from physai import _engine\n"
            "chain = physai.load('so101', source='builtin')\n"
            "Q = chain.random_q(np.random.default_rng(3), 300)\n"
            "print(np.abs(physai.jacobian(chain, Q) - physai.jacobian(chain, Q, engine='numpy')).max())\n"
            "print(all(callable(k) for k in _engine.jit_kernels().values()))\n")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert out.returncode == 0, out.stderr
    error, callable_ = out.stdout.splitlines()
    assert float(error) <= 1e-13 and callable_ == "True"


# ---- real builds meeting a compiler that hangs ------------------------------------------------------------

HANG = '#!/bin/sh\necho "$$ $PPID" > "{pids}"\nexec sleep 600\n'


def alive(pid: int) -> bool:
    """A process that still runs (a zombie waiting for its parent to read it has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def ended(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not any(alive(p) for p in pids)


@pytest.fixture
def hanging_cc(tmp_path, monkeypatch):
    if not Path("/proc/self/stat").exists() or os.name != "posix":
        pytest.skip("reads process states from /proc")
    pids, cc = tmp_path / "cc.pids", tmp_path / "hanging-cc"
    cc.write_text(HANG.format(pids=pids))
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    return pids


def test_a_build_whose_compiler_hangs_is_killed_at_the_time_limit_and_says_so(hanging_cc, monkeypatch):
    monkeypatch.setenv(_engine.TIMEOUT_ENV, "20")
    code = "from physai import _engine; print(_engine._ahead_of_time()[1])"
    t0 = time.monotonic()
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert f"building {NAMES[0]} timed out after 20 s ({_engine.TIMEOUT_ENV} sets the limit)" in out.stdout
    assert time.monotonic() - t0 < 120
    assert hanging_cc.exists() and ended([int(p) for p in hanging_cc.read_text().split()], within=10)


def test_a_killed_caller_takes_its_build_along_and_the_next_build_clears_the_debris(hanging_cc, monkeypatch, cache):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    code = "from physai import _engine; print(_engine._ahead_of_time()[1])"
    caller = subprocess.Popen([PYTHON, "-c", code])
    deadline = time.monotonic() + 180
    while not hanging_cc.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert hanging_cc.exists(), "the build never reached the compiler"
    time.sleep(0.2)
    caller.send_signal(signal.SIGKILL)
    caller.wait()
    assert ended([int(p) for p in hanging_cc.read_text().split()], within=10)  # the compiler and the build
    assert list(cache.glob(".build-*"))  # what the killed build left
    monkeypatch.delenv("CC")
    modules, why = _engine._ahead_of_time()  # the stand-in build
    assert modules and served(why) and not list(cache.glob(".build-*"))


KERNEL_MODULES = sorted(p.name for p in Path(_engine.__file__).parent.glob("_numba_*.py"))


def test_the_kernel_modules_checked_below_hold_every_kernel_the_engine_serves():
    assert {m.rsplit(".", 1)[1] + ".py" for m in _engine.KERNELS.values()} <= set(KERNEL_MODULES)


@pytest.mark.parametrize("module", KERNEL_MODULES)
def test_every_kernel_is_decorated_by_physais_njit_so_its_cache_stays_out_of_the_package(module):
    source = (Path(_engine.__file__).parent / module).read_text(encoding="utf-8")
    assert "numba.njit(" not in source and "@njit(" in source
