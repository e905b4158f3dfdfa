"""Interleaved timing: candidates take turns in every round, so load spikes on a shared machine hit all alike."""

from __future__ import annotations

import time
import timeit
from collections.abc import Callable

import numpy as np


def per_call_seconds(fns: dict[str, Callable[[], object]], calls: int, rounds: int = 15) -> dict[str, np.ndarray]:
    """Seconds per call of each zero-argument function, one sample per round (``rounds`` samples each)."""
    samples = {k: [] for k in fns}
    for f in fns.values():
        f()  # warm: compilation, caches, first allocations
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            samples[k].append((time.perf_counter() - t0) / calls)
    return {k: np.array(v) for k, v in samples.items()}


def paired_ratio(t: dict[str, np.ndarray], a: str, b: str) -> float:
    """Median over the rounds of ``a``'s time over ``b``'s in the same round: a change of load between rounds
    cancels, where a ratio of the two medians would carry it."""
    return float(np.median(t[a] / t[b]))


def best_seconds(f: Callable[[], object], repeats: int = 5) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``f``, after one untimed call (compilation, first touches)."""
    f()
    return min(timeit.repeat(f, "gc.enable()", number=1, repeat=repeats))  # collection on, as per_call_seconds times
