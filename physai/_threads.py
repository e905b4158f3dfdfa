"""Rows of a batch shared among threads: the compiled kernels release the GIL, so one thread per core runs them at
once. Below every module that runs a batch (kinematics, IK, collision verdicts)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# Rows per thread below which a batch runs on one thread: handing rows to a thread costs about as much as a few solves.
THREAD_MIN_TARGETS = 8

_POOL: list = [None, None]  # the helper threads and the process they belong to (a forked child makes its own)
_POOL_LOCK = threading.Lock()


def in_threads(rows: Callable[[int, int], None], B: int, per_thread: int = 32,
               min_rows: int = THREAD_MIN_TARGETS) -> None:
    """``rows(lo, hi)`` over consecutive chunks of ``range(B)``, on as many threads as this process has cores, each
    given at least ``min_rows`` rows (one thread, the caller's, where ``B`` is smaller).

    The compiled kernel releases the GIL, so the threads run at once. Each row's answer depends on its own
    inputs only, so the rows are bit for bit those of one thread whatever the chunks or their order; the chunks are
    small (about ``per_thread`` per thread) and taken in turn, so a thread that drew slow rows takes fewer of them. Each
    chunk is one kernel call (some microseconds to dispatch): fewer, larger chunks suit rows that are quick.

    The helper threads live for the process (started on first use) and the caller works from the first chunk on: on
    a busy machine a helper that is not scheduled in time takes no chunk, and nobody waits for it.
    """
    workers = min(cores(), B // min_rows)
    if workers < 2:
        rows(0, B)
        return
    size = max(1, B // (per_thread * workers))
    chunks, errors = iter(range(0, B, size)), []
    done = threading.Condition()
    busy = [0]  # chunks taken and not finished

    def work():
        while not errors:
            with done:
                lo = next(chunks, None)
                if lo is None:
                    return
                busy[0] += 1
            try:
                rows(lo, min(lo + size, B))
            except BaseException as exc:  # re-raised in the caller's thread
                errors.append(exc)
            finally:
                with done:
                    busy[0] -= 1
                    done.notify_all()

    pool = _pool()
    for _ in range(workers - 1):
        pool.submit(work)
    work()
    with done:
        done.wait_for(lambda: busy[0] == 0)
    if errors:
        raise errors[0]


def _pool() -> ThreadPoolExecutor:
    """This process's helper threads (one fewer than its cores)."""
    with _POOL_LOCK:
        if _POOL[1] != os.getpid():  # first use, or a forked child: its parent's threads are not here
            _POOL[:] = ThreadPoolExecutor(max(1, cores() - 1), thread_name_prefix="physai"), os.getpid()
        return _POOL[0]


def cores() -> int:
    """The cores this process may run on (its affinity, as ``taskset`` sets it, where the platform tells)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
