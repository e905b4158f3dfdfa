"""Compile the compiled engine's kernels ahead of time into one extension module (private).

Run by :mod:`physai._engine` in a child process (``python -m physai._aot_build OUT_DIR NAME``), so that the
compiler's output and numba's import stay out of the caller's process. The kernels are the numba functions of
:mod:`physai._numba_kin` and :mod:`physai._numba_ik`, exported with their one explicit signature each.
"""

from __future__ import annotations

import sys
import warnings
from importlib import import_module


def build(out_dir: str, name: str) -> None:
    """Write the extension module ``NAME`` (every kernel of :data:`physai._engine.KERNELS`) into ``out_dir``."""
    from numba.core.errors import NumbaPendingDeprecationWarning

    with warnings.catch_warnings():
        # numba's ahead-of-time compiler is "pending deprecation"; where it is gone, the JIT serves the kernels.
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
        from numba.pycc import CC

    from physai._engine import KERNELS

    cc = CC(name)
    cc.output_dir = out_dir
    for kernel, module in KERNELS.items():
        jitted = getattr(import_module(module), kernel)
        cc.export(kernel, jitted.nopython_signatures[0])(jitted.py_func)
    cc.compile()


if __name__ == "__main__":
    build(*sys.argv[1:])
