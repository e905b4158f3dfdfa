"""Files physai writes, written whole or not at all (private).

The files physai writes (pages, the audit, results, claims, transcripts and the tour's copies of them, the engine's
cache, exercises, learned models) go to a temporary file beside their destination, then replace it in one rename
(:func:`os.replace`, atomic on one file system): a process killed mid-write, or a disk that fills, leaves the
previous file or none, never half of one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path


@contextlib.contextmanager
def replacing(path: str | Path, *, binary: bool = False, keep_on_error: bool = False):
    """Open a new file beside ``path`` for writing; on leaving the block it replaces ``path``.

    On an exception the temporary file is removed and ``path`` left as it was, unless ``keep_on_error`` (a
    transcript of a failed run is still that run's record). The file is created with the usual permissions
    (the umask's), not a temporary file's owner-only ones.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")
    opened = written = False
    try:
        with open(tmp, "xb") if binary else open(tmp, "x", encoding="utf-8") as fh:
            opened = True
            yield fh
        written = True
    finally:
        if written or (opened and keep_on_error):
            os.replace(tmp, path)
        else:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically -> ``path``."""
    with replacing(path) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically -> ``path``."""
    with replacing(path, binary=True) as fh:
        fh.write(data)
    return Path(path)


def copy(src: str | Path, dest: str | Path) -> Path:
    """Copy ``src`` to ``dest`` atomically, its modification time kept -> ``dest``."""
    with replacing(dest, binary=True) as fh, open(src, "rb") as source:
        shutil.copyfileobj(source, fh)
    shutil.copystat(src, dest)
    return Path(dest)


_TMP = re.compile(r"\..+\.(\d+)-[0-9a-f]{12}\.tmp")  # .NAME.PID-HEX.tmp, as replacing() names them


def sweep(folder: str | Path) -> list[Path]:
    """Remove the temporary files (:func:`replacing`) that processes killed mid-write left in ``folder`` (not in its
    subfolders): those whose writer is no longer running (a live writer's file is its work in progress) -> what was
    removed."""
    removed = []
    for tmp in Path(folder).glob(".*.tmp"):
        match = _TMP.fullmatch(tmp.name)
        if match is None or _running(int(match[1])):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process's writes are done when it sweeps
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # none, or no process id at all
        return False
    except PermissionError:  # another user's
        return True
    return True


def read_json(path: str | Path, kind: type):
    """The JSON value of ``kind`` (dict or list) in the file at ``path`` physai wrote; None where the file is cut
    short, is not JSON or holds another kind (a run killed before :func:`replacing` existed, a hand edit)."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, kind) else None
