"""No physai module reads another module's private names: a name that starts with one underscore belongs to the
module that defines it. Another module reaches it only through a public (or module-public, documented, trusted)
function, method or constant, so a reader sees every dependency between modules by name.

Two kinds of reach are refused, found in the source's syntax tree (the reference: Python's own parser):

- ``from physai.x import _name`` where ``_name`` is not a module (private modules are the package's own; their
  private names are not);
- ``obj._attr`` where ``obj`` is not ``self`` or ``cls`` and ``_attr`` is not an attribute the module itself
  defines (a class field, a method, an attribute it sets on ``self``), or where ``obj`` is an imported module.

Dunder names are Python's protocol, never private. The few standard-library and third-party names below are public
API spelled with an underscore; each says why.
"""

import ast
from pathlib import Path

import pytest

import physai

PACKAGE = Path(physai.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))
# Underscored names that are not private to a physai module.
NOT_PRIVATE = {
    "_replace": "NamedTuple's documented copy-with-changes (underscored so that no field can shadow it)",
    "_exit": "os._exit, the standard library's documented exit without clean-up (a child process's last call)",
    "_cache": "numba's dispatcher has no public setting for where one function's disk cache lives",
    "_physai_watched": "the marker physai sets on the functions it wraps, read back by getattr on any callable",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _owned(tree: ast.Module) -> set[str]:
    """The private attribute names a module defines: class-body names, methods, attributes set on self or cls (also
    by ``object.__setattr__(self, "_x", ...)``)."""
    owned = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owned.add(item.name)
                targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(
                    item, ast.AnnAssign) else []
                owned |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            owned.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
            owned.add(str(node.args[1].value))
    return {name for name in owned if _private(name)}


def private_reaches(path: Path, source: str | None = None) -> list[str]:
    """``"line: what"`` for each private name of another module that ``path`` (or ``source``, as if it were that
    file) reads."""
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    owned, modules, found = _owned(tree), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).partition(".")[0] for a in node.names if a.name.startswith("physai")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("physai"):
                continue
            for alias in node.names:
                if _is_module(f"{base}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
                elif _private(alias.name):
                    found.append(f"{node.lineno}: from {base} import {alias.name}")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            continue
        if isinstance(base, ast.Name) and base.id in modules:
            found.append(f"{node.lineno}: {ast.unparse(node)} (another module's private name)")
        elif node.attr not in owned and node.attr not in NOT_PRIVATE:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_reads_another_modules_private_names(path):
    assert private_reaches(path) == []


@pytest.mark.parametrize("source, reach", [
    ("from physai.kinematics import _check_engine\n", "from physai.kinematics import _check_engine"),
    ("from physai import kinematics\nkinematics._walk(1, 2)\n", "kinematics._walk"),
    ("def f(world):\n    return world._evaluate()\n", "world._evaluate"),
    ("from . import _engine\n_engine._missing\n", "_engine._missing"),
])
def test_the_check_finds_each_kind_of_reach(source, reach):
    """Each refused kind, planted in a module's place, is found (the check can fail)."""
    assert any(reach in line for line in private_reaches(PACKAGE / "ik.py", source))


def test_the_check_allows_a_modules_own_privates_and_private_modules():
    source = ("from physai import _engine\n"
              "class A:\n    _x: int\n    def _f(self): return self._x\n"
              "def g(a, b):\n    return a._x + b._f() + _engine.kernels\n")
    assert private_reaches(PACKAGE / "ik.py", source) == []
