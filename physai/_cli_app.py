"""The ``physai`` command line's application (private): the Typer app, its console, and the one-line errors every
command shares (:mod:`physai.cli` holds the robot commands, :mod:`physai._cli_course` the course's)."""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table
from typer._click.exceptions import UsageError  # typer vendors click: every bad-option error derives from it
from typer.core import TyperGroup

from physai.errors import InputError, MissingExtraError, PhysaiError

ROOT = Path(__file__).resolve().parent.parent
VECTOR_OPTIONS = ("--q", "--target")
# Piped output (files, CI logs, tests) has no terminal width; 80 columns would squeeze the tables.
console = Console(width=None if sys.stdout.isatty() else 120)


def join_vectors(args: list[str]) -> list[str]:
    """Let ``--q 0 -0.6 0.9`` take all its numbers: the words after a vector option, up to the next
    ``--option``, become that option's one value (negative numbers included)."""
    out, i = [], 0
    while i < len(args):
        out.append(args[i])
        i += 1
        if out[-1] in VECTOR_OPTIONS:
            j = i
            while j < len(args) and not args[j].startswith("--"):
                j += 1
            if j > i:
                out.append(" ".join(args[i:j]))
                i = j
    return out


class _Group(TyperGroup):
    def parse_args(self, ctx, args):
        return super().parse_args(ctx, join_vectors(list(args)))

    def invoke(self, ctx):
        """A command's bad option (``--seed abc``, a missing ``--target``) is one line and exit 2, like bad values."""
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            fail(" ".join(exc.format_message().split()))
        except MissingExtraError as exc:  # a command of the course or the viewer, without its extra
            fail(str(exc))
        except OSError as exc:  # a path the file system refuses: too long, a file where a folder goes, /proc, ...
            fail(os_error(exc))


def os_error(exc: OSError) -> str:
    """``exc`` as one line naming its path (a long one cut in the middle) and the system's reason."""
    name = str(exc.filename) if exc.filename is not None else ""
    if len(name) > 120:
        name = f"{name[:60]}...{name[-40:]} (a name of {len(name)} characters)"
    return f"{name}: {exc.strerror or exc}" if name else str(exc)


app = typer.Typer(
    cls=_Group, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="physai: robot-arm kinematics you can learn from.",
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from physai._extras import DISTRIBUTION

        typer.echo(f"{DISTRIBUTION} {version(DISTRIBUTION)}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="print the installed version and exit")) -> None:
    """physai: robot-arm kinematics you can learn from."""


def fail(message: str) -> None:
    typer.echo(f"physai: error: {message}", err=True)
    raise typer.Exit(2)


@contextlib.contextmanager
def bad_input():
    """Turn physai's errors (bad shapes, unknown names, missing models) into one line and exit code 2.

    Warnings (a model MuJoCo compiles with a complaint, a missing mesh) are printed one line each once
    the input was accepted; when it is refused, the error line alone says why.
    """
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        try:
            yield
        except PhysaiError as exc:
            fail(str(exc).splitlines()[0])
    for w in heard:
        typer.echo(f"physai: warning: {str(w.message).splitlines()[0]}", err=True)


def parse_numbers(text: str, option: str) -> np.ndarray:
    """Parse ``"0 -0.6, 0.9"`` (spaces and/or commas) into floats; a word that is not a number is an error."""
    values = []
    for word in re.split(r"[\s,]+", text.strip()):
        if word:
            try:
                values.append(float(word))
            except ValueError:
                raise InputError(f"{option}: expected numbers, got {word!r} in {text!r}") from None
    return np.array(values)


def new_table(*columns: str, title: str) -> Table:
    """A rich table whose cells never wrap (a vector split over two lines misreads as two rows)."""
    table = Table(title=title)
    for c in columns:
        table.add_column(c, no_wrap=True)
    return table
