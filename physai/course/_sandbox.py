"""What keeps a learner's code from changing the grader (private; used by :mod:`physai.course.exercise` and its child).

The child process that runs a learner's file confines itself before the file's first line runs:

- Landlock (Linux 5.13+, no privilege needed): from then on the child, and everything it starts, may create,
  write, rename or delete files only inside its scratch folder (and write ``/dev/null``); on Linux 6.12+ it also
  cannot signal processes outside it (the grader, the fork server). Reading stays open: lessons import MuJoCo.
- A user and PID namespace (where the kernel lets an unprivileged process make one): the learner's code runs as
  process 1 of a namespace of its own, and the kernel ends every process in it when that process ends, however
  it detached (a double fork, a new session, the subreaper flag cleared).
- An allowlisted environment (:func:`environment`): no token or password of the grader's reaches the child.

Where the kernel offers neither (macOS, Windows, old kernels), :class:`Snapshot` is the guarantee: the grader hashes
every file it reads while grading (the package, the lesson's folder, the cached statistics) before the child starts,
checks them again before every verdict and before any module it imports while grading, and refuses the run, in one
line, if one changed. Processes the file starts then end with its process group, its session and, on Linux, the
processes the child adopted as a subreaper; one that leaves all three can outlive the check.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
from pathlib import Path

from physai.errors import PhysaiError

# The environment variables a child keeps: where things are (PATH, HOME, the caches, Menagerie), the locale, and
# the numeric libraries' settings. Everything else (tokens, keys, passwords of CI) stays with the grader.
_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "SYSTEMROOT", "XDG_CACHE_HOME",
         "MENAGERIE_ROOT", "MUJOCO_GL", "PYOPENGL_PLATFORM", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
         "MKL_NUM_THREADS", "XLA_FLAGS", "CUDA_VISIBLE_DEVICES")
_KEEP_PREFIXES = ("LC_", "NUMBA_", "PHYSAI_", "JAX_")


class Tampered(PhysaiError):
    """A file the grader reads changed while a learner's code ran: the run is refused."""


def environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allowlisted part of ``environ`` (``os.environ`` if None) a learner's child is started with; no Python it
    starts writes bytecode (a library that runs ``sys.executable`` would otherwise write it beside its sources)."""
    environ = os.environ if environ is None else environ
    kept = {k: v for k, v in environ.items() if k in _KEEP or k.startswith(_KEEP_PREFIXES)}
    return {**kept, "PYTHONDONTWRITEBYTECODE": "1"}


# ---- Landlock (linux/landlock.h), three system calls through ctypes ----------------------------------------------

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every Linux architecture
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH = 1  # LANDLOCK_RULE_PATH_BENEATH
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # MAKE_CHAR, _DIR, _REG, _SOCK, _FIFO, _BLOCK, _SYM
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_SCOPE_SIGNAL = 1 << 1  # ABI 6: no signal to a process outside the domain
_NO_NEW_PRIVS = 38  # PR_SET_NO_NEW_PRIVS


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, an old kernel, Landlock off)."""
    if sys.platform != "linux":
        return 0
    try:
        abi = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)


def confine(scratch: str) -> str:
    """Let this process, and all it starts, write files only under ``scratch`` (and ``/dev/null``) -> what
    confines it (``"landlock ABI n"``), or '' where the kernel offers nothing."""
    abi = landlock_abi()
    if abi < 1:
        return ""
    libc = _libc()
    write = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE | (_REFER if abi >= 2 else 0) | (
        _TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(write, 0, _SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return ""
    try:
        for path, allowed in ((scratch, write), ("/dev/null", _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0))):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(allowed, fd)
                if libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    return ""
            finally:
                os.close(fd)
        if libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 or libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) < 0:
            return ""
    finally:
        os.close(ruleset)
    return f"landlock ABI {abi}"


# ---- a PID namespace: every process the learner's code starts ends with it ----------------------------------------

_CLONE_NEWUSER, _CLONE_NEWPID = 0x10000000, 0x20000000
_PDEATHSIG = 1  # PR_SET_PDEATHSIG


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def pid_namespace(keep_fds: tuple[int, ...]) -> bool:
    """Move what runs next into a PID namespace of its own, as its process 1 -> whether it did.

    This process forks: the parent stays outside, waits for process 1 and exits with it (killing it, or it,
    ends the namespace, whose every process the kernel then kills); the child returns True. A user namespace
    (mapping this user to itself) makes it possible without privilege; where the kernel refuses both, nothing
    happens and the call returns False. ``keep_fds`` are closed in the waiting parent.
    """
    if sys.platform != "linux":
        return False
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID) == 0:
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError:  # unmapped: the code runs as the overflow user, which still owns nothing outside
            pass
    elif libc.unshare(_CLONE_NEWPID) != 0:  # root without user namespaces
        return False
    pid = os.fork()
    if pid == 0:
        libc.prctl(_PDEATHSIG, 9, 0, 0, 0)  # SIGKILL when the waiting parent ends (the grader killed it)
        return True
    for fd in keep_fds:
        os.close(fd)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    os._exit(code if code >= 0 else 1)


# ---- where nothing confines the child: the files the grader reads, hashed -----------------------------------------

_WATCHED = (".py", ".json")  # in the package and the lesson: what the grader imports and reads


class Snapshot:
    """What identifies the content of each file the grader may read while it grades: those ending in
    :data:`_WATCHED` under ``folders`` (their names too, so a new module is seen) and every file under ``trees``
    (a cache of compiled code and statistics, which other processes add to: there a file that was present must
    stay as it was, and new or hidden ones, another process's work in progress, do not count); :meth:`verify`
    raises :class:`Tampered` naming the first one that changed.

    On POSIX systems a file's size, inode, modification and change times identify its content: any write, rename or
    ``touch`` moves the change time to now, which no process can set back without the privilege to set the clock.
    On Windows, whose ``st_ctime`` is the creation time, the content itself is hashed.
    """

    def __init__(self, folders: list[Path], trees: list[Path] = ()):
        self.roots = [(str(f), _WATCHED) for f in folders] + [(str(t), None) for t in trees]
        self.hashes = self._hash()
        self.confined: bool | None = None  # whether every child so far confined its writes (None: none started)

    def note(self, confined: bool) -> None:
        """A child started, confined (it can write nothing the grader reads) or not; :meth:`verify` is needed
        unless every child was."""
        self.confined = confined and self.confined is not False

    def _hash(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for root, suffixes in self.roots:
            todo = [root]
            while todo:
                try:
                    entries = list(os.scandir(todo.pop()))
                except OSError:  # gone, or not a folder: its absence is what is compared
                    continue
                for entry in entries:
                    if entry.name == "__pycache__" or (suffixes is None and entry.name.startswith(".")):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    elif suffixes is None or entry.name.endswith(suffixes):
                        out[entry.path] = _identity(entry.path)
        return out

    def verify(self) -> None:
        if self.confined:
            return  # no child could write a file: nothing to compare
        now = self._hash()
        trees = tuple(os.path.join(root, "") for root, suffixes in self.roots if suffixes is None)
        now = {p: h for p, h in now.items() if p in self.hashes or not p.startswith(trees)}
        if now != self.hashes:
            changed = sorted({*now, *self.hashes} - {p for p in now if now[p] == self.hashes.get(p)})
            raise Tampered(f"refused: {changed[0]} changed while the learner's code ran (the grader reads it); no "
                           "verdict is given: restore it (reinstall physai, or the lesson) and grade again")


def _identity(path: str):
    """What identifies the content of the file at ``path`` (:class:`Snapshot`); None if it cannot be read."""
    try:
        if os.name == "nt":
            with open(path, "rb") as f:
                return hashlib.file_digest(f, "blake2b").hexdigest()
        st = os.stat(path)
        return st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns
    except OSError:
        return None


class ImportGuard:
    """A ``sys.meta_path`` entry that verifies ``snapshot`` before the grader imports any module while it grades
    (and :func:`before_loading`, before it loads a file by path), so a module the learner's code could have written
    is refused before it runs."""

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot

    def find_spec(self, name, path=None, target=None):
        if name not in sys.modules:
            self.snapshot.verify()
        return None  # the usual finders import it

    def __enter__(self):
        sys.meta_path.insert(0, self)
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        _ACTIVE.remove(self)
        if self in sys.meta_path:
            sys.meta_path.remove(self)


_ACTIVE: list[ImportGuard] = []


def before_loading() -> None:
    """Verify the snapshot of the grading under way, if any (a lesson's file is about to be loaded by path)."""
    for guard in _ACTIVE:
        guard.snapshot.verify()
