"""The parts of physai that need more than the core install: each names the extra of the ``physai-kinematics``
distribution that brings what it imports, and is checked where it is first needed, so a missing one is one line
naming the extra and the command that installs it, never an ImportError from deep inside (private)."""

from __future__ import annotations

import importlib.util

from physai.errors import MissingExtraError

DISTRIBUTION = "physai-kinematics"  # the name on the package index (``physai`` there is another project)
# extra -> the modules physai imports from what it installs (pyproject.toml's [project.optional-dependencies])
EXTRAS = {
    "course": ("matplotlib", "jinja2", "markdown_it", "mdit_py_plugins", "latex2mathml", "nbformat", "scipy",
               "jax", "optax"),
    "jax": ("jax", "optax"),
    "viewer": ("viser",),
    "jit": ("numba",),
}


def install_command(extra: str) -> str:
    return f'pip install "{DISTRIBUTION}[{extra}]"'


def require(extra: str, what: str) -> None:
    """Return if every module of ``extra`` can be imported, else raise :class:`MissingExtraError`: ``what`` (the
    command or function asked for) needs the extra, which modules are missing, and the install command."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(f"{what} needs {DISTRIBUTION}[{extra}] ({', '.join(missing)} not installed): "
                                f"{install_command(extra)}")
