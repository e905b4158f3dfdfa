"""The docstrings' examples run as written (doctest), so the API reference can never show a stale output.

Every public callable of ``physai.__all__`` has an *Examples* section, and every example in the modules of
``physai.__all__`` is checked against the output its docstring prints. The examples assume ``import numpy as np``
and ``import physai`` (the reference's front page says so). Outputs are rounded to a few decimals, so they hold on
any CPU; the one difference the comparison forgives is the sign of a zero (``-0.`` and ``0.`` in a rounded array),
which depends on round-off of about 1e-17.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re

import numpy as np
import pytest

import physai

_PUBLIC = [importlib.import_module(f"physai.{name}") for name in physai.__all__
           if inspect.ismodule(getattr(physai, name))]
# the public modules, and the modules defining what physai.__all__ or a public module's __all__ names
MODULES = sorted(set(_PUBLIC)
                 | {inspect.getmodule(obj) for obj in [getattr(physai, name) for name in physai.__all__]
                    + [getattr(m, name) for m in _PUBLIC for name in getattr(m, "__all__", ())]
                    if inspect.isclass(obj) or inspect.isfunction(obj)},
                 key=lambda module: module.__name__)
SIGNED_ZERO = re.compile(r"-(0\.0*)(?![0-9])")


def _zero_sign_blind(text: str) -> str:
    """``text`` with ``-0.`` read as ``0.``, and without the padding numpy adds inside brackets for a sign."""
    return re.sub(r"\s+\]", "]", re.sub(r"\[\s+", "[", SIGNED_ZERO.sub(r"\1", text)))


class _ZeroSignBlind(doctest.OutputChecker):
    """doctest's comparison, blind to the sign of a rounded zero: that sign is round-off, not a result."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        return super().check_output(_zero_sign_blind(want), _zero_sign_blind(got), optionflags)


def _examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for module in MODULES for t in finder.find(module, globs={})]
    return sorted((t for t in tests if t.examples), key=lambda t: t.name)


EXAMPLES = _examples()


def test_every_public_callable_has_an_examples_section():
    missing = []
    for name in physai.__all__:
        obj = getattr(physai, name)
        if inspect.ismodule(obj) or not callable(obj):
            continue
        doc = inspect.getdoc(obj) or ""
        if not re.search(r"^Examples\n-+\n(.*\n)*>>> ", doc, re.MULTILINE):
            missing.append(name)
    assert not missing, f"public callables without an Examples section of doctest lines: {missing}"


@pytest.mark.parametrize("test", EXAMPLES, ids=[t.name for t in EXAMPLES])
def test_docstring_example_prints_what_it_shows(test):
    runner = doctest.DocTestRunner(checker=_ZeroSignBlind(),
                                   optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    test.globs = {"np": np, "physai": physai}  # a fresh namespace: the runner clears it afterwards
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
