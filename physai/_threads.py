"""Rows of a batch shared among threads: the compiled kernels release the GIL, so one thread per core runs them at
once. Below every module that runs a batch (IK, collision verdicts)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

# Rows per thread below which a batch runs on one thread: starting a thread costs about as much as a few solves.
THREAD_MIN_TARGETS = 8


def in_threads(rows: Callable[[int, int], None], B: int, per_thread: int = 32,
               min_rows: int = THREAD_MIN_TARGETS) -> None:
    """``rows(lo, hi)`` over consecutive chunks of ``range(B)``, on as many threads as this process has cores, each
    given at least ``min_rows`` rows (one thread, the caller's, where ``B`` is smaller).

    The compiled kernel releases the GIL, so the threads run at once. Each row's answer depends on its own
    inputs only, so the rows are bit for bit those of one thread whatever the chunks or their order; the chunks are
    small (about ``per_thread`` per thread) and taken in turn, so a thread that drew slow rows takes fewer of them. Each
    chunk is one kernel call (some microseconds to dispatch): fewer, larger chunks suit rows that are quick.
    """
    workers = min(cores(), B // min_rows)
    if workers < 2:
        rows(0, B)
        return
    size = max(1, B // (per_thread * workers))
    chunks, errors = iter(range(0, B, size)), []  # next() on one shared range iterator is atomic under the GIL

    def work():
        try:
            for lo in chunks:
                rows(lo, min(lo + size, B))
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers - 1)]
    for t in threads:
        t.start()
    work()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def cores() -> int:
    """The cores this process may run on (its affinity, as ``taskset`` sets it, where the platform tells)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
