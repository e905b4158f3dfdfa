"""Wheel build hook: compile the compiled engine into the wheel, so an installed physai compiles nothing at run time.

Runs ``python -m physai._aot_build`` (the same build physai runs on first use where a package has no modules) from
this source tree into a temporary folder, and adds both extension modules to the wheel under the names
``physai._engine`` looks for (``module_name(kind, prebuilt=True)``); the wheel is then a platform wheel. Editable
installs (``uv sync``) build nothing here: they build on first use, into the user's cache folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CompiledEngine(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        self._out = Path(tempfile.mkdtemp(prefix="physai-engine-"))
        env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(self._out / "numba")}
        names = subprocess.run(
            [sys.executable, "-c", "from physai._engine import EXT, KINDS, module_name; "
             "print(EXT, *(module_name(k, prebuilt=True) for k in KINDS))"],
            env=env, cwd=self._out, check=True, capture_output=True, text=True).stdout.split()
        ext, names = names[0], names[1:]
        subprocess.run([sys.executable, "-m", "physai._aot_build", str(self._out), *names], env=env, cwd=self._out,
                       check=True)
        for name in names:
            build_data["force_include"][str(self._out / (name + ext))] = f"physai/{name}{ext}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        if getattr(self, "_out", None):
            shutil.rmtree(self._out, ignore_errors=True)
