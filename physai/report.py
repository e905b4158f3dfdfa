"""The tour's report: one static HTML page with every lesson's tables and figures, versions and times.

``physai tour`` runs each lesson script, then :func:`collect_outputs` picks up the ``*_output.txt``
tables and ``*.png`` figures that script wrote beside itself *in that run* (older files are left out,
so the page never shows stale numbers), copies them under the output folder, and :func:`write_report`
writes ``index.html`` with relative links, so the folder opens from disk and can be moved as a whole.
"""

from __future__ import annotations

import ast
import html
import importlib.metadata
import platform
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

TABLE_GLOB = "*_output.txt"
FIGURE_GLOB = "*.png"
VERSIONED = ("physai", "numpy", "scipy", "mujoco", "jax", "matplotlib", "viser")

# A line that compares with the seed carries a verdict word; "disagree" is tested first because it
# contains "agree" (and "does not match" contains "match").
_SEED = re.compile(r"\bseed'?s?\b", re.IGNORECASE)
_DISAGREE = re.compile(r"disagree|differ|wrong|mismatch|does not match|not reproduced", re.IGNORECASE)
_AGREE = re.compile(r"agree|match|reproduce|consistent", re.IGNORECASE)


@dataclass(frozen=True)
class ScriptRun:
    """One lesson script run by the tour.

    ``tables`` and ``figures`` are paths relative to the report folder (copies of what the script wrote).
    """

    lesson: str
    script: str
    title: str
    returncode: int
    seconds: float
    tables: tuple[Path, ...] = ()
    figures: tuple[Path, ...] = ()

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def script_title(script: Path) -> str:
    """First line of the script's module docstring ("" when it has none)."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
    return doc.strip().splitlines()[0] if doc else ""


def collect_outputs(lesson_dir: Path, since: float, out_dir: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """Copy the tables and figures written in ``lesson_dir`` at or after ``since`` (a ``time.time()``) into
    ``out_dir/<lesson>/``; returns their paths relative to ``out_dir`` as ``(tables, figures)``."""
    dest = out_dir / lesson_dir.name
    found = []
    for pattern in (TABLE_GLOB, FIGURE_GLOB):
        fresh = sorted(p for p in lesson_dir.glob(pattern) if p.stat().st_mtime >= since)
        if fresh:
            dest.mkdir(parents=True, exist_ok=True)
        for p in fresh:
            shutil.copy2(p, dest / p.name)
        found.append(tuple(Path(lesson_dir.name) / p.name for p in fresh))
    return found[0], found[1]


def versions() -> dict[str, str]:
    """Python, platform and the versions of the packages the numbers depend on."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def seed_verdict(line: str) -> str | None:
    """``"agree"``/``"disagree"`` for a printed line that compares a number with the seed's, else ``None``."""
    if not _SEED.search(line):
        return None
    if _DISAGREE.search(line):
        return "disagree"
    if _AGREE.search(line):
        return "agree"
    return None


def _table_html(text: str) -> tuple[str, int, int]:
    """The table as ``<pre>`` with seed-comparison lines marked; also the agree/disagree counts."""
    lines, counts = [], {"agree": 0, "disagree": 0}
    for line in text.splitlines():
        verdict = seed_verdict(line)
        esc = html.escape(line)
        if verdict:
            counts[verdict] += 1
            mark = "✓" if verdict == "agree" else "✗"
            esc = f'<span class="{verdict}" title="seed {verdict}s">{mark} {esc}</span>'
        lines.append(esc)
    return "<pre>" + "\n".join(lines) + "</pre>", counts["agree"], counts["disagree"]


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table.summary{border-collapse:collapse} .summary td,.summary th{padding:.25em .8em;border-bottom:1px solid #eee;text-align:left}
.num{text-align:right!important;font-variant-numeric:tabular-nums}
pre{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.85em;line-height:1.35}
.ok{color:#17752f;font-weight:600} .fail{color:#b00020;font-weight:600}
.agree{background:#e3f5e6} .disagree{background:#fde4e4}
figure{display:inline-block;margin:.5em;max-width:48%} figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.85em;color:#555} .meta{color:#555;font-size:.9em}
"""


def write_report(out_dir: Path, runs: list[ScriptRun], versions: dict[str, str]) -> Path:
    """Write ``out_dir/index.html`` for the tour's ``runs`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_rows, sections = [], []
    by_lesson: dict[str, list[ScriptRun]] = {}
    for run in runs:
        by_lesson.setdefault(run.lesson, []).append(run)
    for lesson, lesson_runs in by_lesson.items():
        parts = [f'<h2 id="{html.escape(lesson)}">{html.escape(lesson)}</h2>']
        for run in lesson_runs:
            status = '<span class="ok">ok</span>' if run.ok else f'<span class="fail">failed (exit {run.returncode})</span>'
            parts.append(f"<h3>{html.escape(run.script)} — {html.escape(run.title)}</h3>")
            parts.append(f'<p class="meta">{status} · {run.seconds:.1f} s</p>')
            agree = disagree = 0
            for table in run.tables:
                block, a, d = _table_html((out_dir / table).read_text(encoding="utf-8"))
                agree, disagree = agree + a, disagree + d
                parts.append(f'<p class="meta">{html.escape(table.name)}</p>{block}')
            if not run.tables:
                parts.append('<p class="meta">This run wrote no table.</p>')
            parts.extend(
                f'<figure><img src="{html.escape(fig.as_posix())}" alt="{html.escape(fig.name)}">'
                f"<figcaption>{html.escape(fig.name)}</figcaption></figure>"
                for fig in run.figures
            )
            summary_rows.append(
                f'<tr><td><a href="#{html.escape(lesson)}">{html.escape(lesson)}</a></td><td>{html.escape(run.script)}</td>'
                f'<td>{status}</td><td class="num">{run.seconds:.1f} s</td><td class="num">{len(run.tables)}</td>'
                f'<td class="num">{len(run.figures)}</td><td class="num">{agree} / {disagree}</td></tr>'
            )
        sections.append("\n".join(parts))
    total = sum(r.seconds for r in runs)
    version_rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in versions.items())
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>physai tour</title><style>{_CSS}</style></head>
<body>
<h1>physai tour</h1>
<p class="meta">Every table and figure below was computed in the run of {stamp} ({total:.1f} s in all).
Lines that compare a number with the seed are marked <span class="agree">✓ agree</span> or
<span class="disagree">✗ disagree</span>; the lesson's own text says why where they differ.</p>
<table class="summary"><tr><th>lesson</th><th>script</th><th>status</th><th>time</th><th>tables</th><th>figures</th>
<th>seed ✓ / ✗</th></tr>
{"".join(summary_rows)}
</table>
<h2>Versions</h2><table class="summary">{version_rows}</table>
{"".join(sections)}
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
