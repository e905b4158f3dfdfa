"""A Griffe extension for the API reference: physai's reST-flavoured docstrings as the Markdown mkdocstrings renders.

The docstrings are written for ``help()``: reST roles (``:func:`fk```), ``::`` before a literal block, and lists
that start right after a line of text. Python-Markdown would print the roles verbatim and run such a list into the
paragraph above it, so this rewrites each docstring, in the documentation build only:

- a role whose target is on a reference page becomes a link to its entry; any other target becomes code;
- a list gets the blank lines Markdown needs before and after it;
- a trailing ``::`` becomes ``:`` (the indented block after it is already a Markdown code block);
- a reST simple table (columns framed by lines of ``=``) becomes a Markdown table.
"""

from __future__ import annotations

import re
from pathlib import Path

import griffe

# The modules that have a page: docs/api/NAME.md documents physai.NAME.
DOCUMENTED = {page.stem for page in (Path(__file__).parent / "api").glob("*.md")} - {"index"}
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):`(~?)([\w.]+)`")
ITEM = re.compile(r"^(\s*)[-*] ")
BORDER = re.compile(r"^=+( +=+)+$")


class MarkdownDocstrings(griffe.Extension):
    """Rewrite every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = to_markdown(obj.docstring.value, obj, pkg)


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


def to_markdown(text: str, obj: griffe.Object, pkg: griffe.Module) -> str:
    text = ROLE.sub(lambda m: _role(m.group(1), m.group(2), obj, pkg), text)
    return _rst_tables(_separate_lists(re.sub(r"::$", ":", text, flags=re.MULTILINE)))


def _role(tilde: str, target: str, obj: griffe.Object, pkg: griffe.Module) -> str:
    label = f"`{target.rsplit('.', 1)[-1] if tilde else target}`"
    path = _documented_path(target, obj, pkg)
    return f"[{label}][{path}]" if path else label


def _documented_path(target: str, obj: griffe.Object, pkg: griffe.Module) -> str | None:
    """The canonical path of ``target`` as seen from ``obj``, if that object has an entry on a reference page."""
    scopes = [s.path for s in (obj, obj.parent, obj.module) if s is not None and not s.is_function]
    candidates = [target] + [f"{scope}.{target}" for scope in scopes] + [f"{pkg.path}.{target}"]
    for candidate in candidates:
        parts = candidate.split(".")
        if parts[0] != pkg.path or len(parts) < 2:
            continue
        try:
            found = pkg[parts[1:]]
            found = found.final_target if found.is_alias else found
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        path = found.path.split(".")
        if path[1] in DOCUMENTED and not any(p.startswith("_") for p in path) and (
                found.is_module or found.docstring is not None):
            return found.path
    return None


def _separate_lists(text: str) -> str:
    out: list[str] = []
    in_list = False
    for line in text.split("\n"):
        item = ITEM.match(line)
        if item and not in_list and out and out[-1].strip():
            out.append("")
        elif in_list and line.strip() and not item and not line.startswith(" "):
            out.append("")  # text after a list is a new paragraph, not a lazy continuation of the last item
        in_list = bool(item) or (in_list and (line.startswith(" ") or not line.strip()))
        if not line.strip():
            in_list = False
        out.append(line)
    return "\n".join(out)


def _rst_tables(text: str) -> str:
    """Each reST simple table (top border, header row, border, body rows, bottom border) as a Markdown table."""
    lines = text.split("\n")
    borders = [i for i, line in enumerate(lines) if BORDER.match(line)]
    for top, mid, bottom in reversed(list(zip(borders[::3], borders[1::3], borders[2::3]))):
        spans = [m.span() for m in re.finditer(r"=+", lines[top])]
        cells = [[row[a:b if k < len(spans) - 1 else None].strip() for k, (a, b) in enumerate(spans)]
                 for row in lines[top + 1:mid] + lines[mid + 1:bottom]]
        header, body = cells[:mid - top - 1], cells[mid - top - 1:]
        table = [f"| {' | '.join(row)} |" for row in header] + ["|" + "---|" * len(spans)]
        table += [f"| {' | '.join(row)} |" for row in body]
        lines[top:bottom + 1] = table
    return "\n".join(lines)
