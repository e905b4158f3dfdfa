"""Wheel build hook: compile the compiled engine into the wheel, so an installed physai compiles nothing at run time.

Runs ``python -m physai._aot_build`` (the same build physai runs on first use where a package has no modules) from
this source tree into a temporary folder, and adds both extension modules to the wheel under the names
``physai._engine`` looks for (``module_name(kind, prebuilt=True)``); the wheel is then a platform wheel, tagged
``manylinux_2_NN`` on Linux when the modules link only glibc (NN: the newest glibc symbol version they use), so a
package index accepts it. Editable installs (``uv sync``) build nothing here: they build on first use, into the
user's cache folder.

Where the engine cannot be built (no C compiler, no Python headers), the wheel is built without it and says so, and
requires the ``jit`` extra's numba: the install still works, and physai's first use compiles the engine once into the
user's cache folder (or serves numba's JIT, cached there, where no compiler runs at all). An installer that resolves
from the sdist's metadata alone (which cannot know whether a compiler will be found) may miss that requirement; the
first compiled call then says in one line to install ``physai-kinematics[jit]``.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# glibc's own libraries (and its dynamic loader, ld-linux*): a module that links nothing else runs on any glibc as
# new as the symbol versions it uses (PEP 600)
GLIBC_LIBRARIES = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1"}


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
        build = subprocess.run([sys.executable, "-m", "physai._aot_build", str(self._out), *names], env=env,
                               cwd=self._out, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               errors="replace")
        if build.returncode != 0:
            why = next((line.strip() for line in reversed((build.stdout + build.stderr).splitlines()) if line.strip()),
                       f"exit {build.returncode}")
            self.app.display_warning(f"physai: the compiled engine was not built ({why}); the wheel carries none, "
                                     "and physai's first use compiles it once into the user's cache folder (with "
                                     "numba, which this wheel therefore requires)")
            build_data["dependencies"] += self.metadata.core.optional_dependencies["jit"]  # pyproject.toml's
            return
        for line in (build.stdout + build.stderr).splitlines():  # numba's pycc deprecation, said as numba says it
            if "NumbaPendingDeprecationWarning" in line:
                self.app.display_warning("physai: " + re.sub(r"\x1b\[[0-9;]*m", "", line.split(":", 2)[-1]).strip())
        modules = [self._out / (name + ext) for name in names]
        for module in modules:
            build_data["force_include"][str(module)] = f"physai/{module.name}"
        build_data["pure_python"] = False
        platform_tag = manylinux_tag(modules)
        if platform_tag:
            from packaging.tags import sys_tags

            best = next(iter(sys_tags()))
            build_data["tag"] = f"{best.interpreter}-{best.abi}-{platform_tag}"
        else:
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        if getattr(self, "_out", None):
            shutil.rmtree(self._out, ignore_errors=True)


def manylinux_tag(modules: list[Path]) -> str | None:
    """``manylinux_2_NN_<arch>`` for extension modules that link only :data:`GLIBC_LIBRARIES`, NN the newest glibc
    symbol version they reference (at least 17, manylinux2014's); None off glibc Linux or where they link more."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    newest = 17
    for module in modules:
        with module.open("rb") as file:
            for section in ELFFile(file).iter_sections():
                if isinstance(section, DynamicSection):
                    needed = {tag.needed for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"}
                    if any(name not in GLIBC_LIBRARIES and not name.startswith("ld-linux") for name in needed):
                        return None
                elif isinstance(section, GNUVerNeedSection):
                    for _, versions in section.iter_versions():
                        for aux in versions:
                            if match := re.fullmatch(r"GLIBC_2\.(\d+)(?:\.\d+)?", aux.name):
                                newest = max(newest, int(match.group(1)))
    arch = sysconfig.get_platform().split("-", 1)[1].replace("-", "_").replace(".", "_")
    return f"manylinux_2_{newest}_{arch}"
