"""Every page's HTML comes from the templates in ``physai/course/site/``: no Python source in ``physai/`` holds an HTML
tag in a string literal or f-string (docstrings, which may name a tag, aside)."""

import ast
import re
from pathlib import Path

import physai

TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(\s[^<>]*)?/?>")  # a whole tag: <p>, </td>, <span class="x">, <br/>
PACKAGE = Path(physai.__file__).parent
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "_lessons" not in p.relative_to(PACKAGE).parts)


def _docstrings(tree: ast.AST) -> set[int]:
    """The string statements: module, class and function docstrings, and those documenting an attribute."""
    return {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}


def html_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string constant or f-string in ``source`` that holds an HTML tag."""
    tree = ast.parse(source)
    skip, found = _docstrings(tree), []
    skip |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}  # seen whole
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # the literal parts joined: an f-string may split a tag at a {field}
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        else:
            continue
        if TAG.search(text):
            found.append((node.lineno, text[:80]))
    return found


def test_the_tag_scan_finds_tags_in_strings_and_f_strings():
    source = 'def f(x):\n    """A <p> in a docstring is prose."""\n    a = "<td>"\n    return f\'<span class="{x}">\'\n'
    assert html_literals(source) == [(3, "<td>"), (4, '<span class="{}">')]


def test_no_html_tag_in_physai_python_sources():
    found = {str(p.relative_to(PACKAGE)): html_literals(p.read_text(encoding="utf-8")) for p in SOURCES}
    assert {name: rows for name, rows in found.items() if rows} == {}
