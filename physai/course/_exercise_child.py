"""The process that runs a learner's file for :mod:`physai.course.exercise`: started as ``python -I -B`` with
``main(["FD"])``, or forked by the fork server (``main(["--serve", "FD"])``) that has imported what lessons import.

It first confines itself (:mod:`physai.course._sandbox`) and says how, before the file's first line runs; then it
imports the file, calls its functions on the inputs the grader sends over the socket ``FD`` and sends back
what they returned, the input arrays as they are after the call (so the grader can see a changed input), the
physai functions the call used that the learner is asked to write, and an exception's type, text and the learner's
line. It judges nothing: every reference and every verdict is computed in the grader's own process, so nothing the
learner's file changes here (``physai.course.exercise`` included) reaches a grade. Only plain data goes back: arrays,
numbers, strings, and tuples, lists and dicts of them; anything else goes back as its type's name.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import io
import linecache
import os
import pickle
import sys
import tempfile
import traceback
import types
from multiprocessing.connection import Connection

import numpy as np

from physai import _env
from physai.course._reply import OPAQUE

MAX_TEXT = 500  # characters of an exception's message sent back


def plain(x, depth: int = 0):
    """``x`` as plain data the grader unpickles without running code: arrays (not of objects; a JAX or PyTorch
    array as its NumPy array), Python and NumPy numbers, strings, None, and tuples, lists and dicts of them."""
    if depth > 20:
        return (OPAQUE, "a structure nested too deep")
    if x is None or type(x) in (bool, int, float, complex):
        return x
    if type(x) is str:
        return x[:MAX_TEXT]
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True) if x.dtype.kind in "biufc" else (OPAQUE, f"ndarray of dtype {x.dtype}")
    if isinstance(x, np.generic) and x.dtype.kind in "biufc":
        return x
    if type(x) in (tuple, list):
        return type(x)(plain(v, depth + 1) for v in x)
    if type(x) is dict:
        return {str(k): plain(v, depth + 1) for k, v in x.items()}
    if hasattr(type(x), "__array__"):  # a JAX or PyTorch array: graded as the NumPy array it converts to
        try:
            a = np.asarray(x)
        except Exception:  # noqa: BLE001 - the learner's object may refuse
            return (OPAQUE, type(x).__name__)
        return plain(a, depth + 1) if isinstance(a, np.ndarray) else (OPAQUE, type(x).__name__)
    return (OPAQUE, type(x).__name__)


def leaves(args) -> list:
    """The arrays inside ``args`` (a list of inputs), depth first, as ``(input index, array)``."""
    out = []

    def walk(i, x, depth=0):
        if isinstance(x, np.ndarray):
            out.append((i, x))
        elif isinstance(x, (tuple, list)) and depth < 20:
            for v in x:
                walk(i, v, depth + 1)
        elif isinstance(x, dict) and depth < 20:
            for v in x.values():
                walk(i, v, depth + 1)

    for i, a in enumerate(args):
        walk(i, a)
    return out


class _Inputs(pickle.Unpickler):
    """Unpickles the grader's inputs; a function of the lesson's grader (a test function passed as an input) is
    found by importing that grader's file under the name the grader registered it with."""

    def __init__(self, file, checker: tuple[str, str] | None):
        super().__init__(file)
        self.checker = checker

    def find_class(self, module, name):
        if self.checker and module == self.checker[0] and module not in sys.modules:
            spec = importlib.util.spec_from_file_location(module, self.checker[1])
            mod = importlib.util.module_from_spec(spec)
            sys.modules[module] = mod
            spec.loader.exec_module(mod)
        return super().find_class(module, name)


def _where(exc: BaseException, path: str) -> str:
    """``file:line: text`` of the deepest frame of ``exc``'s traceback in the learner's file ('' if none)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    if not frames:
        return ""
    f = frames[-1]
    text = (f.line or linecache.getline(path, f.lineno)).strip()
    return f"{os.path.basename(path)}:{f.lineno}: {text}"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:MAX_TEXT]
    except Exception:  # noqa: BLE001 - a learner's exception class may fail to print itself
        return ""


def _watch(forbidden: dict[str, list[str]], used: set) -> None:
    """Replace each physai function in ``forbidden`` (graded name -> dotted physai names) by a wrapper that
    records its use, in every loaded physai module that holds it (``physai.jacobian`` is
    ``physai.kinematics.jacobian``), before the learner's file imports it; again whenever a physai module is
    imported or reloaded (:class:`_Rewatch`). The wrapper keeps no ``__wrapped__`` that would lead past it."""
    import physai

    for dotted in {d for names in forbidden.values() for d in names}:
        module, _, attr = dotted.rpartition(".")
        original = getattr(importlib.import_module(module), attr)
        if getattr(original, "_physai_watched", False):
            continue
        getattr(physai, attr, None)  # resolve physai's lazy top-level name, so the scan below finds it
        wrapper = _recorder(original, dotted, used)
        for name, mod in list(sys.modules.items()):
            if name == "physai" or name.startswith("physai."):
                for key, value in list(vars(mod).items()):
                    if value is original:
                        setattr(mod, key, wrapper)


def _recorder(original, dotted: str, used: set):
    """``original`` wrapped to add ``dotted`` to ``used`` when called; its name and docstring, not a way back."""

    def wrapper(*a, **k):
        used.add(dotted)
        return original(*a, **k)

    functools.update_wrapper(wrapper, original)
    del wrapper.__wrapped__
    wrapper._physai_watched = True
    return wrapper


class _Rewatch:
    """A ``sys.meta_path`` entry that, after a physai module is imported again (``importlib.reload``, or a fresh
    import after ``del sys.modules[...]``), watches its functions anew (:func:`_watch`)."""

    def __init__(self, forbidden: dict, used: set):
        self.forbidden, self.used = forbidden, used

    def find_spec(self, name, path=None, target=None):
        if not (name == "physai" or name.startswith("physai.")):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _RewatchingLoader(spec.loader, self)
        return spec


class _RewatchingLoader:
    def __init__(self, loader, rewatch: _Rewatch):
        self.loader, self.rewatch = loader, rewatch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _watch(self.rewatch.forbidden, self.rewatch.used)

    def __getattr__(self, name):  # get_source, get_code, ... as the file loader answers them
        return getattr(self.loader, name)


def low_precision(x) -> bool:
    """Whether ``x`` holds a float16 or float32 array or number (NumPy's, or any array with a NumPy dtype: JAX's)."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):
        return dtype.kind == "f" and dtype.itemsize < 8
    if isinstance(x, (tuple, list)):
        return any(low_precision(v) for v in x)
    return isinstance(x, dict) and any(low_precision(v) for v in x.values())


def _watch_precision(module, low: list) -> None:
    """Wrap each function the learner's ``module`` defines so that a float32 result of any of them (one the
    graded function then mixes into float64) is noted in ``low``."""
    for name, f in list(vars(module).items()):
        if callable(f) and getattr(f, "__module__", None) == module.__name__ and not isinstance(f, type):

            @functools.wraps(f)
            def wrapper(*a, _f=f, **k):
                out = _f(*a, **k)
                if low_precision(out):
                    low.append(True)
                return out

            setattr(module, name, wrapper)


def _send(conn: Connection, message: tuple) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=4))


def _subreaper() -> None:
    """On Linux, adopt the orphans of what the learner's code starts (a daemon's grandchild), so the grader finds
    every process below this one and ends them with it."""
    if sys.platform == "linux":
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):  # no prctl: processes in a session of their own are still found
            pass


def _confine(fd: int) -> str:
    """Confine this process before the learner's code runs (:mod:`physai.course._sandbox`): a PID namespace of its own
    where the kernel allows one, writes only in the scratch folder (the current one), temporary files there ->
    what confines its writes ('' where nothing does)."""
    from physai.course import _sandbox

    scratch = os.getcwd()
    _sandbox.pid_namespace((fd,))
    how = _sandbox.confine(scratch)
    os.environ.update(TMPDIR=scratch, MPLCONFIGDIR=scratch)
    tempfile.tempdir = None
    return how


def run(fd: int) -> None:
    """Import the learner's file named on the socket ``fd`` and run its functions on request until it closes."""
    conn = Connection(fd)
    path, checker, forbidden, sandbox = conn.recv()
    os.environ[_env.LESSON_OUT] = os.getcwd()  # what the file writes at import (out_dir) goes to the scratch folder
    # said before the learner's code runs, so nothing it sends can come first
    _send(conn, ("confined", _confine(fd) if sandbox else ""))
    _subreaper()
    used: set = set()
    try:
        _watch(forbidden, used)
        sys.meta_path.insert(0, _Rewatch(forbidden, used))
        module = types.ModuleType("build")
        module.__file__ = path
        sys.modules["build"] = module  # dataclasses defined in the file look their module up here
        # compiled from the text as it is now: a cached .pyc of an edit made within the same second, at the same
        # size, would be taken for it
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, vars(module))  # noqa: S102 - the learner's file, in this process made to run it
    except BaseException as exc:  # noqa: BLE001 - whatever the import raises is reported, not obeyed
        _send(conn, ("raise", (type(exc).__name__, _message(exc), _where(exc, path))))
        return
    _send(conn, ("ok", [n for n in vars(module) if callable(vars(module)[n])]))
    low: list = []
    _watch_precision(module, low)
    while True:
        try:
            name, blob = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        args, kwargs = _Inputs(io.BytesIO(blob), checker).load()
        used.clear()
        low.clear()
        try:
            out = getattr(module, name)(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: reported, not obeyed
            reply = ("raise", (type(exc).__name__, _message(exc), _where(exc, path)))
        else:
            reply = ("ok", plain(out))
        after = [(i, np.array(a, copy=True)) for i, a in leaves([*args, *kwargs.values()])]
        _send(conn, (*reply, after, sorted(used), bool(low)))


# What the lessons' build.py files import, loaded once by the server so each forked child starts with them (JAX
# is left out: it starts threads, which a fork does not copy).
PRELOAD = ("scipy.linalg", "scipy.spatial.transform", "mujoco", "matplotlib.pyplot", "pinocchio", "physai.chain",
           "physai.transforms", "physai.kinematics", "physai.robots", "physai.mj", "physai.singularity", "physai.ik",
           "physai.nullspace", "physai.course.lesson")


def serve(control_fd: int) -> None:
    """A fork server: import :data:`PRELOAD`, then for each request on the socket ``control_fd`` (a scratch folder,
    with a socket and an output pipe passed along) fork a child that runs :func:`run` there, in its own session,
    its stdout and stderr on the pipe, and answer with the child's pid. It never runs a learner's code itself."""
    import signal
    import socket

    import matplotlib

    matplotlib.use("Agg")
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # a lesson dependency missing here is imported, and reported, by the file that needs it
            pass
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they end
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, 2)
        except OSError:
            return
        if not message or len(fds) != 2:
            return
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                os.setsid()
                np.random.seed()  # not the server's global generator state, shared by every fork
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.dup2(fds[1], 1)
                os.dup2(fds[1], 2)
                os.close(fds[1])
                os.chdir(message.decode())
                run(fds[0])
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        control.sendall(pid.to_bytes(8, "little"))


def main(argv: list[str]) -> None:
    """``FD`` (run one learner's file on the socket FD) or ``--serve FD`` (the fork server)."""
    if argv[0] == "--serve":
        serve(int(argv[1]))
    else:
        run(int(argv[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
