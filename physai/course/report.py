"""The tour's report: one static HTML page with every lesson's claims, figures and transcripts.

``physai tour`` runs each lesson script, then :func:`collect_run` picks up what that script wrote beside itself
*in that run* (older files are left out, so the page never shows stale numbers): its claims from the folder's
``claims.json`` (:mod:`physai.course.lesson`), its ``*_output.txt`` transcript and its ``*.png`` figures, copied under the
output folder. :func:`write_report` writes ``index.html`` with relative links, so the folder opens from disk and can
be moved as a whole. The summary's agree/disagree counts are counted from the same claim rows the tables show.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import platform
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jinja2
from markupsafe import Markup

from physai import _files
from physai.course.lesson import CLAIMS_FILE, RESULTS_FILE, Claim, read_claims, read_figures
from physai.course.lesson import out_dir as written_to

TABLE_GLOB = "*_output.txt"
FIGURE_GLOB = "*.png"
VERSIONED = ("physai", "numpy", "scipy", "mujoco", "jax", "matplotlib", "viser")
AUDIT_FILE = "audit.html"  # the page, and its template in SITE
SITE = Path(__file__).with_name("site")  # the pages' templates, macros, stylesheet and script
BLOCKS = "blocks.html"  # the macros of the pages' blocks
SITE_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(SITE), autoescape=True, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)
"""The one Jinja2 environment every page is written through; it escapes every value, so only HTML the project
rendered itself (Markdown, MathML, highlighted source, a macro's output) comes in, as :class:`markupsafe.Markup`."""


@dataclass(frozen=True)
class ScriptRun:
    """One lesson script run by the tour.

    ``tables`` and ``figures`` are paths relative to the report folder (copies of what the script wrote);
    ``claims`` are the rows the script wrote to its folder's ``claims.json`` in this run.
    """

    lesson: str
    script: str
    title: str
    returncode: int
    seconds: float
    tables: tuple[Path, ...] = ()
    figures: tuple[Path, ...] = ()
    claims: tuple[Claim, ...] = ()

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def count(self, verdict: str) -> int:
        """How many of this run's claim rows carry ``verdict``."""
        return sum(c.verdict == verdict for c in self.claims)


def script_title(script: Path) -> str:
    """First paragraph of the script's module docstring, on one line ("" when it has none)."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc else ""


def file_clock(script: Path) -> float:
    """Now, as the file system where ``script`` writes (:func:`physai.course.lesson.out_dir`) stamps files: a file it writes
    after this call has an mtime at or after the value returned. Linux stamps files from a coarse clock that can lag
    ``time.time()`` by a tick, so against ``time.time()`` a figure written within milliseconds of the start reads as
    stale."""
    folder = written_to(script)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder) as f:
        return os.fstat(f.fileno()).st_mtime


def _fresh(paths, since: float) -> list[Path]:
    return sorted(p for p in paths if p.stat().st_mtime >= since)


def collect_run(script: Path, since: float, out_dir: Path) -> dict:
    """What ``script`` wrote at or after ``since`` (a :func:`file_clock` stamp), beside itself or under
    ``$PHYSAI_LESSON_OUT`` (:func:`physai.course.lesson.out_dir`): its transcript, figures and the lesson's ``results.json``
    copied into ``out_dir/<lesson>/`` (paths relative to ``out_dir``), and its claims.

    -> ``{"tables": (...), "figures": (...), "claims": (...)}``, keyword arguments of :class:`ScriptRun`.
    The transcript is the ``<script stem>_*_output.txt`` file; figures are the PNGs written since ``since``.
    """
    folder, stem = written_to(script), script.stem
    tables = [p for p in _fresh(folder.glob(TABLE_GLOB), since) if p.name.startswith(stem + "_")]
    figures = _fresh(folder.glob(FIGURE_GLOB), since)
    results = _fresh(folder.glob(RESULTS_FILE), since)  # what the lesson's page reads its numbers from
    dest = out_dir / folder.name
    if tables or figures or results:
        dest.mkdir(parents=True, exist_ok=True)
    for p in tables + figures + results:
        if p.resolve() != (dest / p.name).resolve():  # out_dir may be where the script wrote
            _files.copy(p, dest / p.name)
    fresh_claims = bool(_fresh(folder.glob(CLAIMS_FILE), since))
    claims = tuple(c for c in read_claims(folder) if c.script == script.name) if fresh_claims else ()
    return {"tables": tuple(Path(folder.name) / p.name for p in tables),
            "figures": tuple(Path(folder.name) / p.name for p in figures), "claims": claims}


def versions() -> dict[str, str]:
    """Python, platform and the versions of the packages the numbers depend on."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def macro(name: str):
    """The macro ``name`` of ``physai/course/site/blocks.html`` (the quiz, figure, claims table, ...): call it with the
    block's parts -> its HTML as :class:`markupsafe.Markup`, every part that is not Markup escaped.

    Examples
    --------
    >>> from physai.course.report import macro
    >>> str(macro("transcript")("a<b.txt", "x < 1 & y"))
    '<details><summary>transcript: a&lt;b.txt</summary><pre>x &lt; 1 &amp; y</pre></details>'
    """
    return getattr(SITE_ENV.get_template(BLOCKS).module, name)


def claims_html(claims) -> Markup:
    """The claims as an HTML table: claim, published (the ``source`` value), measured, verdict, why (one row per claim)."""
    return macro("claims")(claims)


def run_stamp() -> str:
    """The time of a run as its pages state it (UTC, to the minute)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def tally(runs: list[ScriptRun]) -> tuple[int, int]:
    """The claim rows of ``runs`` that agree with their source, and those that disagree."""
    return sum(r.count("agree") for r in runs), sum(r.count("disagree") for r in runs)


def _texts(figure: Path) -> tuple[str, str]:
    """The alt text and caption its run recorded for ``figure`` (in its lesson's ``results.json``), or its file
    name for both where the run recorded none."""
    record = read_figures(figure.parent).get(figure.name)
    return (record.alt, record.caption) if record else (figure.name, figure.name)


def write_report(out_dir: Path, runs: list[ScriptRun], versions: dict[str, str], wall_s: float) -> Path:
    """Write the tour's full record ``out_dir/audit.html`` for its ``runs`` (``wall_s``: the tour's wall time);
    returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    by_lesson: dict[str, list] = {}
    for run in runs:
        texts = [(t.name, (out_dir / t).read_text(encoding="utf-8")) for t in run.tables]
        figures = [(f.as_posix(), *_texts(out_dir / f)) for f in run.figures]
        by_lesson.setdefault(run.lesson, []).append((run, texts, figures))
    agree, disagree = tally(runs)
    page = SITE_ENV.get_template(AUDIT_FILE).render(runs=runs, by_lesson=by_lesson, agree=agree, disagree=disagree,
                                                    versions=versions, wall_s=wall_s, stamp=run_stamp())
    return _files.write_text(out_dir / AUDIT_FILE, page)
