"""The tour's report: one static HTML page with every lesson's claims, figures and transcripts.

``physai tour`` runs each lesson script, then :func:`collect_run` picks up what that script wrote beside itself
*in that run* (older files are left out, so the page never shows stale numbers): its claims from the folder's
``claims.json`` (:mod:`physai.lesson`), its ``*_output.txt`` transcript and its ``*.png`` figures, copied under the
output folder. :func:`write_report` writes ``index.html`` with relative links, so the folder opens from disk and can
be moved as a whole. The summary's agree/disagree counts are counted from the same claim rows the tables show.
"""

from __future__ import annotations

import ast
import html
import importlib.metadata
import os
import platform
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from physai import _files
from physai.lesson import CLAIMS_FILE, RESULTS_FILE, Claim, read_claims
from physai.lesson import out_dir as written_to

TABLE_GLOB = "*_output.txt"
FIGURE_GLOB = "*.png"
VERSIONED = ("physai", "numpy", "scipy", "mujoco", "jax", "matplotlib", "viser")
AUDIT_FILE = "audit.html"
FIGURE_LINE = "figure: "  # a transcript line "figure: name.png (caption)" gives the figure its caption


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
    """Now, as the file system where ``script`` writes (:func:`physai.lesson.out_dir`) stamps files: a file it writes
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
    ``$PHYSAI_LESSON_OUT`` (:func:`physai.lesson.out_dir`): its transcript, figures and the lesson's ``results.json``
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


def figure_captions(transcript: str) -> dict[str, str]:
    """``{file name: caption}`` from the transcript's ``figure: name.png (caption)`` lines."""
    out = {}
    for line in transcript.splitlines():
        if line.startswith(FIGURE_LINE):
            name, _, rest = line[len(FIGURE_LINE):].partition(" ")
            out[name] = rest.strip().removeprefix("(").removesuffix(")") or name
    return out


def claims_html(claims) -> str:
    """The claims as an HTML table: claim, source, measured, verdict, why (one row per claim)."""
    if not claims:
        return '<p class="meta">This run wrote no claims.</p>'
    cols = "".join(f'<col style="width:{w}%">' for w in (27, 17, 19, 10, 27))  # fixed widths: long cells wrap
    head = "".join(f"<th>{h}</th>" for h in ("claim", "source", "measured", "verdict", "why"))
    rows = "".join(
        f'<tr class="{c.verdict}"><td>{html.escape(c.claim)}</td><td>{html.escape(c.source)}</td>'
        f"<td>{html.escape(c.measured)}</td><td>{'✓' if c.verdict == 'agree' else '✗'} {c.verdict}</td>"
        f"<td>{html.escape(c.why)}</td></tr>"
        for c in claims
    )
    return (f'<table class="claims"><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _status(run: ScriptRun) -> str:
    return '<span class="ok">ok</span>' if run.ok else f'<span class="fail">failed (exit {run.returncode})</span>'


def _run_html(out_dir: Path, run: ScriptRun) -> str:
    """One script's section: status, claims table, figures with captions, transcript folded."""
    parts = [f"<h3>{html.escape(run.script)} — {html.escape(run.title)}</h3>",
             f'<p class="meta">{_status(run)} · {run.seconds:.1f} s · {run.count("agree")} agree, '
             f'{run.count("disagree")} disagree</p>', claims_html(run.claims)]
    texts = [(out_dir / t).read_text(encoding="utf-8") for t in run.tables]
    captions = {k: v for text in texts for k, v in figure_captions(text).items()}
    parts += [f'<figure><img src="{html.escape(f.as_posix())}" alt="{html.escape(f.name)}">'
              f"<figcaption>{html.escape(captions.get(f.name, f.name))}</figcaption></figure>" for f in run.figures]
    parts += [f"<details><summary>transcript: {html.escape(t.name)}</summary><pre>{html.escape(text)}</pre></details>"
              for t, text in zip(run.tables, texts)]
    if not run.tables:
        parts.append('<p class="meta">This run wrote no transcript.</p>')
    return "\n".join(parts)


def _summary_row(run: ScriptRun) -> str:
    lesson = html.escape(run.lesson)
    return (f'<tr><td><a href="#{lesson}">{lesson}</a></td><td>{html.escape(run.script)}</td><td>{_status(run)}</td>'
            f'<td class="num">{run.seconds:.1f} s</td><td class="num">{len(run.claims)}</td>'
            f'<td class="num">{run.count("agree")}</td><td class="num">{run.count("disagree")}</td>'
            f'<td class="num">{len(run.figures)}</td></tr>')


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;max-width:100%} td,th{padding:.25em .6em;border-bottom:1px solid #eee;text-align:left;
vertical-align:top;overflow-wrap:anywhere} table.claims{width:100%;font-size:.9em;table-layout:fixed}
.num{text-align:right!important;font-variant-numeric:tabular-nums}
pre{background:#f7f7f7;padding:.8em;font-size:.85em;line-height:1.35;white-space:pre-wrap;overflow-wrap:anywhere}
.ok{color:#17752f;font-weight:600} .fail{color:#b00020;font-weight:600}
tr.agree{background:#e3f5e6} tr.disagree{background:#fde4e4}
figure{display:inline-block;margin:.5em;max-width:48%;vertical-align:top}
figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.85em;color:#555} .meta{color:#555;font-size:.9em;overflow-wrap:anywhere}
details{margin:.5em 0} summary{cursor:pointer;color:#444}
"""


def run_stamp() -> str:
    """The time of a run as its pages state it (UTC, to the minute)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def tally(runs: list[ScriptRun]) -> tuple[int, int]:
    """The claim rows of ``runs`` that agree with their source, and those that disagree."""
    return sum(r.count("agree") for r in runs), sum(r.count("disagree") for r in runs)


def write_report(out_dir: Path, runs: list[ScriptRun], versions: dict[str, str], wall_s: float) -> Path:
    """Write the tour's full record ``out_dir/audit.html`` for its ``runs`` (``wall_s``: the tour's wall time);
    returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    by_lesson: dict[str, list[ScriptRun]] = {}
    for run in runs:
        by_lesson.setdefault(run.lesson, []).append(run)
    sections = [f'<h2 id="{html.escape(lesson)}">{html.escape(lesson)}</h2>\n' + "\n".join(_run_html(out_dir, r)
                for r in lesson_runs) for lesson, lesson_runs in by_lesson.items()]
    agree, disagree = tally(runs)
    version_rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in versions.items())
    stamp = run_stamp()
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>physai tour</title><style>{_CSS}</style></head>
<body>
<h1>physai tour</h1>
<p class="meta">Every claim, table and figure below was computed in the run of {stamp}.
Tour wall time: <b id="wall">{wall_s:.1f} s</b> ({sum(r.ok for r in runs)}/{len(runs)} scripts ok).</p>
<p id="totals">Claims of the source material checked: <b>{agree + disagree}</b> — <span class="ok">{agree} agree</span>,
<span class="fail">{disagree} disagree</span> (each row below says why).</p>
<table class="summary"><thead><tr><th>lesson</th><th>script</th><th>status</th><th>time</th><th>claims</th>
<th>agree</th><th>disagree</th><th>figures</th></tr></thead>
<tbody>{"".join(_summary_row(r) for r in runs)}</tbody>
</table>
{"".join(sections)}
<h2>Versions</h2><table class="summary">{version_rows}</table>
</body></html>
"""
    return _files.write_text(out_dir / AUDIT_FILE, page)
