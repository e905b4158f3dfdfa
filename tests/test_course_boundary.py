"""The course (:mod:`physai.course`: lessons' helpers, pages, exercises, notebooks) sits on top of the library and
needs the ``course`` extra: no library module imports it, by an import statement or by a name in a string
(``importlib.import_module``, ``__import__``, ``python -m``), so the library installs and runs without the extra.

Two doors lead to it, each reaching it only when asked: the command line's course commands (``tour``, ``lesson``,
``exercise``, ``check``, ``notebook``) import it inside their functions, and the front door resolves ``physai.check``
on first use. The reference is the source itself (its syntax tree) and a process's ``sys.modules``.
"""

import ast
import subprocess
import sys
from pathlib import Path

import physai

PACKAGE = Path(physai.__file__).parent
COURSE = PACKAGE / "course"
LIBRARY = sorted(p for p in PACKAGE.rglob("*.py") if COURSE not in p.parents)


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _names_course(name: str) -> bool:
    return name == "physai.course" or name.startswith("physai.course.")


def course_references(path: Path, source: str | None = None) -> list[tuple[int, str, bool]]:
    """``(line, what, inside a function)`` for each import of physai.course in ``path`` (or ``source``, as if it were
    that file): import statements (relative ones resolved) and string constants that name it (docstrings aside: they
    are prose)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)}
    found = []

    def visit(node, in_function: bool):
        in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            names = [word.strip("'\"`,;:()") for word in node.value.replace("=", " ").split()]
        for name in names:
            if _names_course(name):
                found.append((node.lineno, name, in_function))
                break
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return found


def test_the_check_finds_imports_by_statement_relative_and_by_string():
    source = ("import physai.course.lesson\nfrom physai import course\nfrom .course import report\n"
              "import importlib\nimportlib.import_module('physai.course.notebook')\n"
              "def f():\n    import subprocess\n    subprocess.run(['python', '-m', 'physai.course.exercise'])\n"
              "x = __import__('physai.course')\ndoc = 'physai.courses is another name'\n")
    found = course_references(PACKAGE / "kinematics.py", source)  # as if a library module held these lines
    assert [(line, inside) for line, _, inside in found] == [(1, False), (2, False), (3, False), (5, False),
                                                             (8, True), (9, False)]


def test_no_library_module_imports_the_course():
    commands = [PACKAGE / "cli.py", PACKAGE / "_cli_course.py"]
    doors = {*commands, PACKAGE / "__init__.py"}
    assert COURSE / "__init__.py" in set(COURSE.rglob("*.py")) and PACKAGE / "kinematics.py" in LIBRARY
    offenders = [f"{p.relative_to(PACKAGE.parent)}:{line} {name}" for p in LIBRARY if p not in doors
                 for line, name, _ in course_references(p)]
    assert not offenders
    # the command line (its course commands in _cli_course): inside those commands only, never when a module loads
    at_load = [(p.name, line, name) for p in commands for line, name, inside in course_references(p) if not inside]
    assert not at_load
    # the front door: the name physai.check resolves to, on first use; no import statement
    front = course_references(PACKAGE / "__init__.py")
    assert [name for _, name, _ in front] == ["physai.course.exercise"]


def test_the_library_and_its_command_line_run_without_loading_the_course():
    code = ("import sys, physai; from physai import cli\n"
            "physai.solve_ik(physai.load('so101'), [0.2, 0.0, 0.1], task='position')\n"
            "print(sorted(m for m in sys.modules if m.startswith('physai.course')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
