"""What a session's functions need, written as module text the grader's child can run (private; used by
:func:`physai.course.exercise.check_functions`).

A function graded from a notebook runs in a child process, as source text. Everything it reads from its globals must
be sent as the session defines it (not replaced by the lesson's own version of the same name, which may be right
where the session's is wrong): the session's functions and classes as their source (decorators and all), modules
as imports, numbers and strings as literals (``inf`` and ``nan`` too), other modules' functions as imports. What
cannot be written as text (a session's dict, a model) is named, so the learner can define it inside the function.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import math
import sys
import textwrap

import numpy as np

_SIMPLE = (bool, int, float, complex, str, bytes, type(None))


def _global_names(code) -> set[str]:
    """The global names ``code`` and the functions, lambdas and comprehensions inside it may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _global_names(const)
    return names


def _literal(value) -> str | None:
    """``value`` as Python text that evaluates to it (``float('inf')`` for inf), or None if it has none."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    if isinstance(value, complex) and not (math.isfinite(value.real) and math.isfinite(value.imag)):
        return f"complex({repr(value)!r})"
    if type(value) in _SIMPLE:
        return repr(value)
    if type(value) is tuple:
        items = [_literal(v) for v in value]
        return None if None in items else "(" + "".join(f"{i}, " for i in items) + ")"
    return None


def _decorator_names(tree: ast.AST) -> set[str]:
    """The names the decorators, base classes and class-level statements of ``tree`` read (not function bodies)."""
    names, todo = set(), [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo += [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        todo += [c for c in ast.iter_child_nodes(node) if c is not None]
    return names


def _reads(obj, source: str) -> set[str]:
    """The global names a session's function or class (its ``source``) may read."""
    names = _decorator_names(ast.parse(source))
    if inspect.isclass(obj):
        for method in _methods(obj):
            names |= _global_names(method.__code__)
    else:
        names |= _global_names(inspect.unwrap(obj).__code__)
    return names


def source(obj) -> str:
    """The source text of a session's function or class (decorators included), dedented; OSError or TypeError
    where it cannot be read (a built-in, a class of a notebook cell that is gone, a class with no method)."""
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        if not inspect.isclass(obj):
            raise
    # A notebook's class: Python before 3.13 finds no file for it, but its methods name their cell
    for method in _methods(obj):
        code = method.__code__
        lines = linecache.getlines(code.co_filename)
        for node in ast.walk(ast.parse("".join(lines))) if lines else ():
            if isinstance(node, ast.ClassDef) and node.name == obj.__name__ and (
                    node.lineno <= code.co_firstlineno <= node.end_lineno):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                return textwrap.dedent("".join(lines[first - 1:node.end_lineno]))
    raise OSError(f"no source found for class {obj.__name__}")


def _methods(cls) -> list:
    return [inspect.unwrap(getattr(m, "__func__", m)) for m in vars(cls).values()
            if inspect.isfunction(inspect.unwrap(getattr(m, "__func__", m)))]


def is_session_code(value, namespace: dict) -> bool:
    """Whether ``value`` is a function (decorated or not) or a class defined in the session whose globals are
    ``namespace``."""
    if inspect.isclass(value):
        return (any(m.__globals__ is namespace for m in _methods(value))
                or value.__module__ == namespace.get("__name__", "builtins"))
    return callable(value) and inspect.isfunction(inspect.unwrap(value)) and inspect.unwrap(value).__globals__ is namespace


def dependencies(functions, provided: set[str]) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """What ``functions`` (of this session) read from their globals, in turn -> ``(sources, lines, missing)``:
    ``sources`` the session's functions and classes by name (their source), ``lines`` the imports and literals
    that define the other names, ``missing`` each name that cannot be sent and why. A name that cannot be sent but
    the build.py also defines (``provided``) is left to the build.py."""
    sources, lines, missing, seen = {}, [], {}, set()
    todo = [(f, source(f), inspect.unwrap(f).__globals__) for f in functions]
    while todo:
        f, text, namespace = todo.pop()
        for name in sorted(_reads(f, text) - seen):
            if name not in namespace:
                continue  # a builtin, an attribute name, or a name the function itself never reaches
            seen.add(name)
            value = namespace[name]
            literal = _literal(value)
            if is_session_code(value, namespace):
                try:
                    sources[name] = source(value)
                except (OSError, TypeError):
                    missing[name] = f"a {'class' if inspect.isclass(value) else 'function'} whose source could not be read"
                    continue
                if value.__name__ != name:
                    lines.append(f"{name} = {value.__name__}")
                todo.append((value, sources[name], namespace))
            elif inspect.ismodule(value):
                lines.append(f"import {value.__name__} as {name}")
            elif literal is not None:
                lines.append(f"{name} = {literal}")
            elif isinstance(value, np.ufunc) and getattr(np, value.__name__, None) is value:
                lines.append(f"from numpy import {value.__name__} as {name}")
            elif (owner := getattr(value, "__module__", None)) not in (None, "__main__", namespace.get("__name__")) and callable(value) and getattr(
                    sys.modules.get(owner), getattr(value, "__qualname__", ""), None) is value:
                lines.append(f"from {owner} import {value.__qualname__} as {name}")
            elif name not in provided:
                missing[name] = f"a {type(value).__name__}"
    return sources, lines, missing
