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
# The import system's own suffix: sysconfig's EXT_SUFFIX is initialised lazily, and not thread-safe on Python 3.11.
EXT = importlib.machinery.EXTENSION_SUFFIXES[0]
