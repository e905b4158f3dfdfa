"""The grader against learner files that attack it, each run for real in the grader's child process: writes to the
package, the lesson, the cache and outside the scratch folder (through absolute paths, ``../`` and a symlink), the
grader's environment, a daemon that clears the subreaper flag and double-forks, and replies built to hang or
exhaust the grader. The reference is the file system and the process table as the kernel reports them."""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path

import pytest

import physai
from physai import _sandbox
from physai import exercise as ex

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
    monkeypatch.setattr(ex, "SANDBOX", False)  # a kernel without Landlock: the hashes are the guarantee
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
    for server in ex._SERVER:  # started before the token was set: a fresh one starts from this environment
        server.close()
    ex._SERVER.clear()
    report = ex.check(FOLDER, hostile(tmp_path, "import os\nprint(sorted(os.environ))\nprint(repr(os.environ))"),
                      seed=1)
    assert report.passed and "PATH" in report.output
    assert "s3cr3t" not in report.output and "CI_JOB_TOKEN" not in report.output


@linux_only
@pytest.mark.parametrize("fork_server", [True, False])
def test_a_daemon_that_clears_the_subreaper_flag_and_double_forks_ends_with_the_check(tmp_path, monkeypatch,
                                                                                       fork_server):
    monkeypatch.setattr(ex, "FORK_SERVER", fork_server)
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
    """Whether this user may make a user and PID namespace (a fork that tries, so nothing here changes)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _sandbox.pid_namespace(()) else 3)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


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
