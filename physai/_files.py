"""Files physai writes, written whole or not at all (private).

The files physai writes (pages, the audit, results, claims, transcripts and the tour's copies of them, the engine's
cache, exercises, learned models) go to a temporary file beside their destination, then replace it in one rename
(:func:`os.replace`, atomic on one file system): a process killed mid-write, or a disk that fills, leaves the
previous file or none, never half of one.
"""

from __future__ import annotations

import contextlib
import os
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
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
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
