"""The compiled kernels' registry (private): which module defines each kernel, and the extension suffix of the
modules built from them. Imports nothing of physai, so both the loader (:mod:`physai._engine`) and the builder
(:mod:`physai._aot_build`, which the loader runs) read it from below."""

from __future__ import annotations

import importlib.machinery

# kernel -> the module that defines it; callers pass exactly each kernel's signature types (no dispatch checks them)
KERNELS = {
    "targets_ok": "physai._numba_ik", "solve_batch": "physai._numba_ik", "screen": "physai._numba_collision",
    "verdicts": "physai._numba_collision", "restarts": "physai._numba_avoid",
}
# Kernels served by numba's JIT even where the ahead-of-time module exists: compiled for this processor's vector
# instructions, which the batch walk is written for (the module, built for any processor of its platform, runs it at
# two thirds of the speed).
JIT_KERNELS = {"batch": "physai._numba_kin"}
# The import system's own suffix: sysconfig's EXT_SUFFIX is initialised lazily, and not thread-safe on Python 3.11.
EXT = importlib.machinery.EXTENSION_SUFFIXES[0]
