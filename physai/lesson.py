"""Small helpers the lesson scripts share: tee printed output into a file beside the script."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s: str) -> int:
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


@contextlib.contextmanager
def transcript(path: str | Path):
    """Print as usual and also write everything printed to ``path`` (the lesson's ``*_output.txt``)."""
    path = Path(path)
    with open(path, "w", encoding="utf-8") as fh:
        old = sys.stdout
        sys.stdout = _Tee(old, fh)
        try:
            yield path
        finally:
            sys.stdout.flush()
            sys.stdout = old


def fmt_row(values, width: int = 8, prec: int = 4) -> str:
    """Numbers right-aligned at fixed precision, as the lessons print them (``-0.0000`` shown as ``0.0000``)."""
    return " ".join(f"{(0.0 if abs(v) < 0.5 * 10**-prec else v):{width}.{prec}f}" for v in values)
