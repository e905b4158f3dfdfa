"""The ``physai`` command line: ``physai tour`` runs every lesson; more commands grow with the lessons."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True, help="physai: robot-arm kinematics you can learn from.")
console = Console()
EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def lesson_dirs() -> list[Path]:
    """Lesson folders ``experiments/NN-name`` in lesson order."""
    return sorted(p for p in EXPERIMENTS.glob("[0-9][0-9]-*") if p.is_dir())


def _run_script(script: Path) -> tuple[int, float]:
    t0 = time.perf_counter()
    rc = subprocess.call([sys.executable, str(script)], cwd=script.parent)
    return rc, time.perf_counter() - t0


@app.command()
def tour() -> None:
    """Run every lesson's build.py and experiment.py: tables on screen, outputs and figures beside each script."""
    results = []
    for d in lesson_dirs():
        for name in ("build.py", "experiment.py"):
            script = d / name
            if script.exists():
                console.rule(f"[bold]{d.name} / {name}")
                rc, dt = _run_script(script)
                results.append((f"{d.name}/{name}", rc, dt))
    console.rule("[bold]summary")
    for label, rc, dt in results:
        console.print(f"{'ok ' if rc == 0 else 'FAIL'}  {label:45s} {dt:7.1f} s")
    if any(rc for _, rc, _ in results):
        raise typer.Exit(1)


@app.command()
def lesson(number: str, build: bool = typer.Option(False, "--build"), experiment: bool = typer.Option(False, "--experiment")) -> None:
    """Run one lesson by number (e.g. ``physai lesson 09 --build``)."""
    matches = [d for d in lesson_dirs() if d.name.split("-")[0] == number.zfill(2)]
    if not matches:
        console.print(f"unknown lesson {number!r}; lessons: {', '.join(d.name for d in lesson_dirs())}")
        raise typer.Exit(2)
    which = [n for n, on in (("build.py", build), ("experiment.py", experiment)) if on] or ["build.py", "experiment.py"]
    rc = 0
    for name in which:
        if (matches[0] / name).exists():
            rc |= _run_script(matches[0] / name)[0]
    raise typer.Exit(rc)


def main() -> None:
    app()
