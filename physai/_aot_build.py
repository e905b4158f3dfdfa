"""Compile the compiled engine ahead of time into two extension modules (private).

``python -m physai._aot_build OUT_DIR KERNELS_NAME WALK_NAME`` writes ``OUT_DIR/<name><suffix>`` for each module
(``suffix``: :data:`physai._kernel_registry.EXT`), in a child process so that the compiler's output and
numba's import stay out of the caller's process. :mod:`physai._engine` runs it on first use (into the cache
folder) and ``hatch_build.py`` when a wheel is built (into the wheel):

- ``WALK_NAME``: the one-pose calls, ``physai/_walk.c`` (first: it needs only the C compiler, so a missing or
  hanging one shows at once);
- ``KERNELS_NAME``: the numba functions named in :data:`physai._kernel_registry.KERNELS` (:mod:`physai._numba_ik`,
  :mod:`physai._numba_collision`), exported with their one explicit signature each.

Started by :mod:`physai._engine`, the build ends (with the compilers it started) when its parent does: a killed
caller leaves no orphan build behind.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from importlib import import_module
from pathlib import Path

from physai._kernel_registry import EXT, KERNELS


def build(out_dir: str, kernels_name: str, walk_name: str) -> None:
    """Write both extension modules into ``out_dir``."""
    build_walk(out_dir, walk_name)
    build_kernels(out_dir, kernels_name)


def build_kernels(out_dir: str, name: str) -> None:
    """The extension module ``name``: every kernel of :data:`physai._kernel_registry.KERNELS`."""
    from numba.core.errors import NumbaPendingDeprecationWarning

    # numba's ahead-of-time compiler is "pending deprecation" (where it is gone, the JIT serves the kernels): its
    # warning goes to stderr, which Python's default filters would hide, and the wheel's build shows it
    warnings.simplefilter("default", NumbaPendingDeprecationWarning)
    from numba.pycc import CC, compiler

    compiler.Flags = _releasing_the_gil(compiler.Flags)

    cc = CC(name)
    cc.output_dir, cc.output_file = out_dir, name + EXT
    for kernel, module in KERNELS.items():
        jitted = getattr(import_module(module), kernel)
        cc.export(kernel, jitted.nopython_signatures[0])(jitted.py_func)
    cc.compile()


def _releasing_the_gil(flags_type):
    """numba.pycc's compile flags with ``release_gil`` set (its ``CC`` has no option for it): the exported kernels
    release the GIL while they run, as the JIT kernels declared ``nogil=True`` do, so threads can share a batch."""
    def flags():
        f = flags_type()
        f.release_gil = True
        return f

    return flags


def build_walk(out_dir: str, name: str) -> None:
    """The extension module ``name`` from ``physai/_walk.c``, arithmetic as written (no contraction into FMA,
    which would round differently from the numba kernels)."""
    import numpy as np
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    strict = [] if sys.platform == "win32" else ["-ffp-contract=off"]  # MSVC does not contract by default
    ext = Extension(name, [str(Path(__file__).with_name("_walk.c"))], include_dirs=[np.get_include()],
                    define_macros=[("PHYSAI_WALK_NAME", name)], extra_compile_args=strict)
    command = build_ext(Distribution({"ext_modules": [ext]}))
    command.build_lib, command.build_temp = out_dir, str(Path(out_dir) / "objects")
    command.ensure_finalized()
    command.run()
    os.replace(command.get_ext_fullpath(name), Path(out_dir) / (name + EXT))


def _end_with(parent: int) -> None:
    """End this build, and the compilers it started (its process group), once ``parent`` is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    if os.name == "posix" and os.getpgrp() == os.getpid():  # started as a group leader: by physai._engine
        threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
    build(*sys.argv[1:])
