"""The grader against learner files that attack it, each run for real in the grader's child process: writes to the
package, the lesson, the cache and outside the scratch folder (through absolute paths, ``../`` and a symlink), the
grader's environment, a daemon that clears the subreaper flag and double-forks, and replies built to hang or
exhaust the grader. The reference is the file system and the process table as the kernel reports them."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import physai
from physai.course import _sandbox
from physai.course import _learner
from physai.course import exercise as ex

FOLDER = ex.lesson_folder("09")
SOURCE = (FOLDER / "build.py").read_text()
LANDLOCK = _sandbox.landlock_abi() > 0
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")


def hostile(tmp_path: Path, code: str, source: str = SOURCE) -> Path:
    """A learner folder holding lesson 09's own (correct) build.py with ``code`` run at its import."""
    folder = tmp_path / "me"
    folder.mkdir(exist_ok=True)
    (folder / "build.py").write_text(source.replace("EXERCISE = (", code + "\nEXERCISE = (", 1))
    return folder


def lesson_copy(tmp_path: Path) -> Path:
    """A copy of lesson 09's folder (build.py and _check.py), which a failed defence may change without harm."""
    return Path(shutil.copytree(FOLDER, tmp_path / FOLDER.name, ignore=shutil.ignore_patterns("out*", "__pycache__")))


@pytest.mark.skipif(not LANDLOCK, reason="the kernel offers no Landlock")
def test_a_learner_file_cannot_write_the_package_the_lesson_the_cache_or_outside_its_scratch_folder(tmp_path):
    lesson = lesson_copy(tmp_path)
    outside = tmp_path / "outside.txt"
    targets = [Path(physai.__file__), lesson / "_check.py", tmp_path / "new.py", outside, "../escape.py", "link"]
    code = (f"import os\nos.symlink({str(outside)!r}, 'link')\n"
            f"for _t in {[str(t) for t in targets]!r}:\n"
            "    try:\n        open(_t, 'a').close()\n        print('ALLOWED', _t)\n"
            "    except OSError:\n        print('DENIED', _t)\n"
            "open('mine.txt', 'w').write('scratch is writable')\nprint('WROTE', open('mine.txt').read())\n")
    report = ex.check(lesson, hostile(tmp_path, code), seed=1)
    assert report.passed  # the file's functions are right; its attack changes nothing
    assert "ALLOWED" not in report.output and report.output.count("DENIED") == len(targets), report.output
    assert "WROTE scratch is writable" in report.output
    assert not outside.exists() and not (tmp_path / "new.py").exists()
    assert (lesson / "_check.py").read_bytes() == (FOLDER / "_check.py").read_bytes()


def test_without_a_sandbox_a_changed_check_file_refuses_the_run_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(_learner, "SANDBOX", False)  # a kernel without Landlock: the hashes are the guarantee
    lesson = lesson_copy(tmp_path)
    noop = "\\n".join(f"def check_{n}(build, rng):\\n    pass" for n in ("hinge_column", "jacobian", "fd_jacobian"))
    code = f"open({str(lesson / '_check.py')!r}, 'a').write('\\n{noop}\\n')\n"
    blank = ex.write_exercise(FOLDER, tmp_path / "blank").parent
    (blank / "build.py").write_text((blank / "build.py").read_text().replace("EXERCISE = (", code + "EXERCISE = (", 1))
    with pytest.raises(_sandbox.Tampered) as refused:
        ex.check(lesson, blank, seed=1)
    assert "_check.py changed while the learner's code ran" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert "def check_hinge_column" in (lesson / "_check.py").read_text()  # the write really happened


def test_the_child_gets_an_allowlisted_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_JOB_TOKEN", "s3cr3t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    for server in _learner._SERVER:  # started before the token was set: a fresh one starts from this environment
        server.close()
    _learner._SERVER.clear()
    report = ex.check(FOLDER, hostile(tmp_path, "import os\nprint(sorted(os.environ))\nprint(repr(os.environ))"),
                      seed=1)
    assert report.passed and "PATH" in report.output
    assert "s3cr3t" not in report.output and "CI_JOB_TOKEN" not in report.output


@linux_only
@pytest.mark.parametrize("fork_server", [True, False])
def test_a_daemon_that_clears_the_subreaper_flag_and_double_forks_ends_with_the_check(tmp_path, monkeypatch,
                                                                                       fork_server):
    monkeypatch.setattr(_learner, "FORK_SERVER", fork_server)
    if not _namespaces():
        pytest.skip("the kernel offers no PID namespace to this user: the documented weaker guarantee holds")
    token = f"40{secrets.randbelow(10**6)}.5"
    code = ("import ctypes, os\nctypes.CDLL(None).prctl(36, 0, 0, 0, 0)\n"  # PR_SET_CHILD_SUBREAPER off
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        os.execvp('sleep', ['sleep', '{token}'])\n    os._exit(0)\n"
            "os.wait()\nprint('daemon started')\n")
    report = ex.check(FOLDER, hostile(tmp_path, code), seed=1)
    assert report.passed and "daemon started" in report.output
    deadline = time.monotonic() + 5
    while _running(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(token)


def _namespaces() -> bool:
    """Whether this user may make a user and PID namespace (a fresh process tries, so nothing here changes; a fork
    of this one would copy the threads of whatever the suite imported before, JAX's among them)."""
    code = "import os\nfrom physai.course import _sandbox\nos._exit(0 if _sandbox.pid_namespace(()) else 3)\n"
    return subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def _running(token: str) -> list[int]:
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if token.encode() in cmdline.read_bytes():
                state = (cmdline.parent / "stat").read_text().rpartition(")")[2].split()[0]
                out += [] if state == "Z" else [int(cmdline.parent.name)]
        except (OSError, ValueError):
            continue
    return out


# ---- replies the child's code writes to the grader's socket itself --------------------------------------------

SEND = '''
import os, pickle, stat, struct, sys, time
import numpy as _np


def _socket():
    return next(fd for fd in range(3, 256) if _is_socket(fd))


def _is_socket(fd):
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _send(payload, header=None):
    os.write(_socket(), struct.pack("!i", len(payload)) if header is None else header)
    os.write(_socket(), payload)
    time.sleep(60)  # the grader has its reply: it must end this process, not wait for the real one
'''

_SELF = "_l = []\n    _l.append(_l)\n    _send(pickle.dumps(('ok', _l, [], [], False)))"
_DEEP = ("sys.setrecursionlimit(50000)\n    _l = []\n    for _ in range(5000):\n        _l = [_l]\n"
         "    _send(pickle.dumps(('ok', _l, [], [], False)))")
_TERABYTE = ("from numpy._core.multiarray import _reconstruct\n"
             "    class _Big:\n        def __reduce__(self):\n"
             "            return (_reconstruct, (_np.ndarray, (2**37,), b'f8'))\n"
             "    _send(pickle.dumps(('ok', _Big(), [], [], False)))")
BAD_REPLIES = {
    "a header then silence": ("_send(b'', header=struct.pack('!i', 1000))", "stopped after 1 s running hinge_column"),
    "300 MiB announced": ("_send(b'', header=struct.pack('!i', 300 * 2**20))", "a reply of 314572800 bytes"),
    "a list that holds itself": (_SELF, "nested more than"),
    "a 5,000-deep list": (_DEEP, "nested more than"),
    "a tuple of the wrong shape": ("_send(pickle.dumps(('ok',)))", "a reply to a call that is not"),
    "a terabyte array": (_TERABYTE, "an array of shape (137438953472,)"),
    "a class to run": ("_send(pickle.dumps(('ok', os.system, [], [], False)))", "refused posix.system"),
    "bytes that are no pickle": ("_send(b'\\x80\\x04garbage')", "a malformed reply"),
}


@pytest.mark.parametrize("case", list(BAD_REPLIES))
def test_a_reply_that_breaks_a_bound_fails_its_function_in_one_line_and_the_rest_are_graded(tmp_path, case):
    body, expected = BAD_REPLIES[case]
    source = SOURCE.replace("    return np.concatenate([np.cross(axis, p - o), axis])\n", f"    {body}\n", 1)
    folder = tmp_path / "me"
    folder.mkdir()
    (folder / "build.py").write_text(source.replace("EXERCISE = (", SEND + "\nEXERCISE = (", 1))
    start = time.monotonic()
    report = ex.check(FOLDER, folder, seed=1, timeout=1, only=("hinge_column", "fd_jacobian"))
    assert time.monotonic() - start < 20  # a 1 s limit over the whole reply, never the 60 s sleep
    grades = {g.function: g for g in report.grades}
    assert not grades["hinge_column"].passed and expected in grades["hinge_column"].message
    assert "\n" not in grades["hinge_column"].message
    assert grades["fd_jacobian"].passed  # a fresh child grades the next function


def test_a_timeout_that_is_no_number_of_seconds_is_one_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from physai import cli

    folder = hostile(tmp_path, "")
    for junk in ("1e308", "inf", "nan", "-1", "0", "soon"):
        res = CliRunner().invoke(cli.app, ["check", "09", str(folder), "--timeout", junk])
        assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, (junk, res.output)


# ---- grading a session's functions (physai.check in a notebook) ------------------------------------------------


def session(cell: str, tag: str) -> dict:
    """The globals of a notebook session that ran ``cell`` (its text kept in linecache, as IPython does)."""
    import linecache

    import numpy as np

    name = f"<ipython-input-{tag}-0123456789ab>"
    linecache.cache[name] = (len(cell), None, cell.splitlines(keepends=True), name)
    namespace = {"np": np, "__name__": f"session_{tag}"}
    exec(compile(cell, name, "exec"), namespace)
    return namespace


RODRIGUES = """
def rodrigues(axis, angle):
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)
"""
RIGHT_SKEW = """
def skew(v):
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
"""


def test_notebook_grading_sends_the_sessions_own_helper_never_the_lessons(capsys):
    """The reference is SciPy's rotation (lesson 07's check): a right rodrigues on a wrong skew is wrong."""
    wrong = session(RIGHT_SKEW.replace("[z, 0.0, -x]", "[z, 0.0, x]") + RODRIGUES, "41")
    assert physai.check("07", wrong["rodrigues"], seed=5) is False
    assert "fail rodrigues" in capsys.readouterr().out
    right = session(RIGHT_SKEW + RODRIGUES, "42")
    assert physai.check("07", right["rodrigues"], seed=5) is True
    assert "skew" not in capsys.readouterr().out.replace("K = skew", "")  # sent, not graded


def test_notebook_grading_of_a_decorated_function_globals_inf_and_nan_and_a_class(capsys):
    cell = ("import functools\nfrom numpy import inf, nan\n"
            "class Basis:\n    E = np.eye(3)\n    def col(self, i):\n        return Basis.E[:, i]\n"
            "@functools.lru_cache(maxsize=None)\ndef _unit(i):\n    return tuple(Basis().col(i))\n"
            "def traced(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n    return inner\n"
            "@traced\n"
            "def skew(v):\n    assert inf > 1e300 and nan != nan\n    x, y, z = v\n"
            "    e = np.array(_unit(0)) + np.array(_unit(1)) + np.array(_unit(2)) - 1.0\n"
            "    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]) + 0.0 * e.sum()\n")
    namespace = session(cell, "43")
    assert physai.check("07", namespace["skew"], seed=5) is True, capsys.readouterr().out
    cached = session("import functools\n@functools.lru_cache(maxsize=None)\ndef skew(v):\n"
                     "    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])\n", "44")
    assert physai.check("07", cached["skew"], seed=5) is False  # an ndarray is no cache key: the learner's error
    out = " ".join(capsys.readouterr().out.split())
    assert "fail skew: raised TypeError: unhashable type" in out and "Traceback" not in out


def test_notebook_grading_with_no_function_or_a_class_says_what_it_needs_in_one_line():
    with pytest.raises(physai.InputError, match=r'physai.check\("07", skew, rodrigues, invert_transform'):
        physai.check("07")
    namespace = session("class skew:\n    pass\n", "45")
    with pytest.raises(physai.InputError, match="grades the functions .*; got 'skew', a class"):
        physai.check("07", namespace["skew"])


# ---- the rule against calling physai's own version of the graded function --------------------------------------

JACOBIAN = "    return np.column_stack([hinge_column(a, o, p) for a, o in zip(axes, anchors)])\n"
BYPASSES = {
    "the watched function itself": "    import physai\n    return physai.jacobian(chain, q)\n",
    "__wrapped__": "    import physai\n    return physai.jacobian.__wrapped__(chain, q)\n",
    "importlib.reload": ("    import importlib, physai.kinematics\n"
                         "    return importlib.reload(physai.kinematics).jacobian(chain, q)\n"),
    "a fresh import": ("    import sys\n    sys.modules.pop('physai.kinematics')\n"
                       "    import physai.kinematics as k\n    return k.jacobian(chain, q)\n"),
}


@pytest.mark.parametrize("case", list(BYPASSES))
def test_calling_physais_own_jacobian_is_named_however_it_is_reached(tmp_path, case):
    body = "    axes, anchors, p = fk(chain, q)\n" + JACOBIAN
    assert SOURCE.count(body) == 1
    source = SOURCE.replace(body, BYPASSES[case])
    report = ex.check(FOLDER, hostile(tmp_path, "", source), seed=1, only=("jacobian",))
    (grade,) = report.grades
    named = "uses physai.kinematics.jacobian, the function you are asked to write"
    gone = "raised AttributeError: 'function' object has no attribute '__wrapped__'"  # no way past the watch
    assert not grade.passed and grade.message.startswith(gone if case == "__wrapped__" else named), grade.message


def test_without_a_sandbox_a_lesson_file_changed_before_the_grader_loads_it_refuses_the_run(tmp_path, monkeypatch):
    """The grader loads lesson files while it grades (lesson 11 loads its own build.py): one the learner's code
    changed is refused before any of it runs in the grader."""
    monkeypatch.setattr(_learner, "SANDBOX", False)
    lesson = lesson_copy(tmp_path)
    (lesson / "_helper.py").write_text("VALUE = 1\n")
    check = (lesson / "_check.py").read_text()
    (lesson / "_check.py").write_text(check.replace(
        "def check_hinge_column(build, rng) -> None:\n",
        "def check_hinge_column(build, rng) -> None:\n    from pathlib import Path\n    from physai.course.exercise import load\n"
        "    load(Path(__file__).with_name('_helper.py'))\n", 1))
    assert "load(Path(__file__)" in (lesson / "_check.py").read_text()
    ran = tmp_path / "ran-in-the-grader"
    payload = f"open({str(ran)!r}, 'w').close()\n"
    code = f"open({str(lesson / '_helper.py')!r}, 'a').write({payload!r})\n"
    with pytest.raises(_sandbox.Tampered, match="_helper.py changed while the learner's code ran"):
        ex.check(lesson, hostile(tmp_path, code), seed=1)
    assert not ran.exists() and "ran-in-the-grader" in (lesson / "_helper.py").read_text()
