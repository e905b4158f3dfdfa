"""The learner's code in a child process (private to :mod:`physai.course`): a :class:`Session` starts the child,
sends it one call at a time, bounds its time and its replies, and ends it with everything it started; a
:class:`Learner` is the learner's module as a check sees it. A call ends in an answer, a :class:`Hint` (an input
changed in place, the function being written called), a :class:`LearnerError` or :class:`Stopped`."""

from __future__ import annotations

import ast
import atexit
import functools
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType

import numpy as np

from physai.course import _reply, _sandbox
from physai.course._exercise_child import leaves, low_precision
from physai.errors import PhysaiError

IMPORT_FACTOR = 3  # importing the file may take this many times as long (the lessons import MuJoCo, JAX, ...)
OUTPUT_HEAD = 2000  # bytes of the learner's printed output kept to show


class Hint(PhysaiError):
    """A graded function gave a wrong answer; the message names the likely mistake."""


class LearnerError(Exception):
    """The learner's function raised: its exception's type name, message and the learner's ``file:line: text``."""

    def __init__(self, type_name: str, message: str, where: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message, self.where = type_name, message, where


class Stopped(Exception):
    """The child process stopped answering (time limit, exit, crash); the message says which."""


class _Output:
    """Drains the child's stdout and stderr on a thread (so a flood of prints never blocks it), keeping the first
    :data:`OUTPUT_HEAD` bytes and counting the rest."""

    def __init__(self):
        self.head, self.total, self._threads = bytearray(), 0, []

    def drain(self, stream) -> None:
        def run():
            while chunk := stream.read1(65536):
                self.total += len(chunk)
                if len(self.head) < OUTPUT_HEAD:
                    self.head += chunk[: OUTPUT_HEAD - len(self.head)]
            stream.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self._threads.append(thread)

    def text(self) -> str:
        for thread in self._threads:
            thread.join(timeout=1.0)
        return self.head.decode("utf-8", errors="replace")


# Children are forked from a server that has imported what the lessons import (physai.course._exercise_child.serve), so
# a file starts in a fraction of a second; where fork is not safe (macOS, Windows) each child is a fresh interpreter.
FORK_SERVER = sys.platform == "linux"
SANDBOX = True  # the child confines itself (physai.course._sandbox); False only to test the grader without it
# An isolated interpreter (-I: no user site, no PYTHON* variables, not the current folder on sys.path) that writes
# no bytecode anywhere (-B: -I ignores PYTHONDONTWRITEBYTECODE) and imports this very physai (its folder first on
# sys.path), also where only the caller's sys.path found it.
CHILD = (sys.executable, "-I", "-B", "-u", "-c",
         "import sys; sys.path.insert(0, sys.argv.pop(1)); import physai.course._exercise_child as c; "
         "c.main(sys.argv[1:])",
         str(Path(__file__).resolve().parents[2]))


class _Server:
    """The fork server: a ``python -I`` process that forks a child per learner file and answers with its pid."""

    def __init__(self):
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [*CHILD, "--serve", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, cwd=tempfile.gettempdir(),
            env=_sandbox.environment())
        theirs.close()
        self.sock, self.lock = ours, threading.Lock()
        self.sock.settimeout(120.0)  # the first answer waits for the server's imports

    def spawn(self, cwd: str, conn_fd: int, out_fd: int) -> int:
        """Fork a child running in ``cwd`` on the socket ``conn_fd``, its output on ``out_fd`` -> its pid."""
        with self.lock:
            socket.send_fds(self.sock, [cwd.encode()], [conn_fd, out_fd])
            data = b""
            while len(data) < 8:
                chunk = self.sock.recv(8 - len(data))
                if not chunk:
                    raise OSError("the fork server ended")
                data += chunk
        return int.from_bytes(data, "little")

    def close(self) -> None:
        self.sock.close()  # the server ends when its socket closes
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_SERVER: list[_Server] = []  # the running fork server, started on first use


def _fork(cwd: str, conn_fd: int, out_fd: int) -> int:
    """A child forked by the fork server (started, or restarted if a child ended it) -> its pid."""
    for attempt in range(2):
        if not _SERVER or _SERVER[0].proc.poll() is not None:
            _SERVER[:] = [_Server()]
            atexit.register(_SERVER[0].close)
        try:
            return _SERVER[0].spawn(cwd, conn_fd, out_fd)
        except OSError:
            if attempt:
                raise
            _SERVER[0].close()
            _SERVER.clear()
    raise AssertionError("unreachable")


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children, theirs, ...), read from /proc; [] where there is none (macOS)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()  # after "pid (comm)": comm may hold spaces
        except OSError:  # it ended while the table was read
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        out += below
        todo += below
    return out


class _Child:
    """One child process that has imported the learner's file (see :mod:`physai.course._exercise_child`); what it said
    confines it, before the file ran, is noted in ``snapshot``."""

    def __init__(self, path: Path, checker: ModuleType, forbidden: dict, output: _Output, timeout: float,
                 snapshot: _sandbox.Snapshot):
        ours, theirs = socket.socketpair()
        self.scratch = tempfile.TemporaryDirectory(prefix="physai-check-", ignore_cleanup_errors=True)
        self.proc = None
        if FORK_SERVER:
            read, write = os.pipe()
            try:
                self.pid = _fork(self.scratch.name, theirs.fileno(), write)
            finally:
                os.close(write)
                theirs.close()
            output.drain(os.fdopen(read, "rb"))
        else:
            self.proc = subprocess.Popen(
                [*CHILD, str(theirs.fileno())],
                pass_fds=[theirs.fileno()], cwd=self.scratch.name, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                env=_sandbox.environment())
            theirs.close()
            self.pid = self.proc.pid
            output.drain(self.proc.stdout)
        self.conn = Connection(ours.detach())
        self.conn.send((str(path), (checker.__name__, checker.__file__), forbidden, SANDBOX))
        snapshot.note(bool(self.receive(IMPORT_FACTOR * timeout, "starting", _reply.confined_reply)[1]))
        status, value = self.receive(IMPORT_FACTOR * timeout, f"importing {path.name}", _reply.import_reply,
                                     f"{IMPORT_FACTOR} x --timeout for the import")
        if status == "raise":
            self.close()
            raise LearnerError(*value)
        self.names: list[str] = value

    def receive(self, timeout: float, doing: str, check: Callable = _reply.call_reply,
                limit: str = "--timeout per function") -> tuple:
        """The child's next message, whole, of the shape ``check`` accepts, or :class:`Stopped` (the process is
        ended, SIGKILL) if none comes in ``timeout`` s (``limit`` says which limit that is) or it breaks a bound."""
        try:
            return check(_reply.loads(_reply.read(self.conn.fileno(), time.monotonic() + max(timeout, 0.0))))
        except _reply.TooSlow:
            self.close()
            raise Stopped(f"stopped after {timeout:.3g} s {doing}: an endless loop? (the limit is {limit})") from None
        except (EOFError, OSError):
            self.close()
            raise Stopped(f"the process running your code ended while {doing} (os._exit, sys.exit or a crash): a "
                          "graded function must return its answer") from None
        except _reply.BadReply as exc:
            self.close()
            raise Stopped(f"the process running your code sent something unexpected while {doing} ({exc})") from None

    def _alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def close(self, wait: float = 0.0) -> None:
        """End the child (after up to ``wait`` s: it exits by itself when the socket closes) and anything it
        started: its process group, and every process below it, also one in a session of its own (the child is a
        subreaper, so even a daemon's orphaned grandchild stays below it)."""
        spawned = _descendants(self.pid)
        self.conn.close()
        deadline = time.monotonic() + wait
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        spawned += _descendants(self.pid)
        for pid, group in ((self.pid, True), *((p, False) for p in spawned)):
            try:
                (os.killpg if group else os.kill)(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc is not None:
            self.proc.wait()
        self.scratch.cleanup()


class Session:
    """Runs the learner's file in a child process and its functions on request, one graded function at a time.

    ``build`` (a :class:`Learner`) is what a ``check_<name>`` receives: its attributes are the learner's
    functions, each call sent to the child and judged here (an input changed in place, the physai function being
    written called, float32 results)."""

    def __init__(self, path: Path, checker: ModuleType, params: dict, timeout: float, snapshot: _sandbox.Snapshot):
        self.path, self.checker, self.params, self.timeout = Path(path), checker, params, timeout
        self.snapshot = snapshot
        self.forbidden: dict = getattr(checker, "OWN", {})
        self.output, self.child, self.import_error = _Output(), None, ""
        self.grading, self.budget, self.low_precision = "", timeout, False
        self.timed_out: list[str] = []  # the graded functions stopped by the time limit, in order

    def calls(self, name: str) -> set[str]:
        """The names function ``name`` of the learner's file calls directly (read from its text, never run)."""
        try:
            tree = ast.parse(self.path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return set()
        return {c.func.id for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name
                for c in ast.walk(n) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}

    def begin(self, name: str) -> None:
        self.grading, self.budget, self.low_precision = name, self.timeout, False
        if self.child is None and not self.import_error:
            try:
                self.child = _Child(self.path, self.checker, self.forbidden, self.output, self.timeout,
                                    self.snapshot)
            except Stopped as exc:
                self.import_error = f"{self.path.name} could not be imported: {exc}"
            except LearnerError as exc:
                what = ("called sys.exit while importing" if exc.type_name == "SystemExit"
                        else f"did not import: {exc}")
                self.import_error = f"{self.path.name} {what}" + (f" ({exc.where})" if exc.where else "")

    def defines(self, name: str) -> bool:
        return self.child is not None and name in self.child.names

    def call(self, name: str, *args, **kwargs):
        if self.child is None:
            raise Stopped("the process running your code had stopped")
        started, request = time.monotonic(), pickle.dumps((name, pickle.dumps((args, kwargs))))
        try:
            try:
                self.child.conn.send_bytes(request)
            except OSError:  # it ended between calls (a thread of the learner's, a signal)
                self.child.close()
                raise Stopped(f"the process running your code had ended before {name} was called") from None
            status, value, after, used, low = self.child.receive(self.budget, f"running {name}")
        except Stopped:
            self.child = None
            raise
        finally:
            self.budget -= time.monotonic() - started
        if status == "raise":
            raise LearnerError(*value)
        own = sorted(set(used) & set(self.forbidden.get(self.grading, ())))
        if own:
            raise Hint(f"uses {own[0]}, the function you are asked to write: write it yourself (other physai "
                       "helpers are allowed)")
        self._unchanged(name, [*args, *kwargs.values()], list(kwargs), after)
        self.low_precision |= bool(low) or low_precision(value)
        return value

    def _unchanged(self, name: str, inputs: list, keywords: list, after: list) -> None:
        """A :class:`Hint` if the call changed one of its input arrays in place."""
        before = leaves(inputs)
        positional = len(inputs) - len(keywords)
        for (i, a), (j, b) in zip(before, after):
            if i == j and isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=True):
                continue
            params = self.params.get(name, [])
            arg = keywords[i - positional] if i >= positional else (params[i] if i < len(params) else f"#{i + 1}")
            raise Hint(f"{name} changed its input {arg!r} in place (the caller's array): work on a copy "
                       f"({arg} = {arg}.copy(), or q = q + dq instead of q += dq)")
        if len(after) != len(before):
            raise Hint(f"{name} changed the arrays it was given in place")

    def close(self) -> None:
        if self.child is not None:
            self.child.close(wait=1.0)
            self.child = None


class Learner:
    """The learner's module as a ``check_<name>`` sees it: ``build.jacobian(chain, q)`` runs the learner's
    ``jacobian`` in the child process and returns what it returned (plain data: arrays, numbers, containers;
    anything else as an :class:`Opaque`)."""

    def __init__(self, session: Session):
        self._session = session

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(self._session.call, name)
