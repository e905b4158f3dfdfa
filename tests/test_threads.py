"""physai._threads.in_threads: every row once, whatever the threads; a chunk's error reaches the caller."""

import threading

import numpy as np
import pytest

from physai import _threads


@pytest.fixture
def three_cores(monkeypatch):
    monkeypatch.setattr(_threads, "cores", lambda: 3)


@pytest.mark.parametrize("B", [1, 7, 100, 1001])
def test_every_row_is_handed_out_exactly_once(three_cores, B):
    seen, lock = np.zeros(B, int), threading.Lock()

    def rows(lo, hi):
        with lock:
            seen[lo:hi] += 1

    _threads.in_threads(rows, B, per_thread=4, min_rows=2)
    np.testing.assert_array_equal(seen, 1)


def test_a_chunks_error_is_raised_in_the_callers_thread(three_cores):
    def rows(lo, hi):
        if lo <= 500 < hi:
            raise ArithmeticError(f"row 500 in {lo}..{hi}")

    with pytest.raises(ArithmeticError, match="row 500"):
        _threads.in_threads(rows, 1000, per_thread=8, min_rows=1)


def test_below_min_rows_per_thread_the_caller_runs_the_batch_alone(three_cores):
    calls = []
    _threads.in_threads(lambda lo, hi: calls.append((lo, hi, threading.current_thread().name)), 5, min_rows=3)
    assert calls == [(0, 5, threading.current_thread().name)]
