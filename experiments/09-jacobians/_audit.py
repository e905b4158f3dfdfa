"""Lesson 09's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's printed figures, for the tour's audit page (``physai.course.lesson.run_script`` calls
``CLAIMS``)."""

from pathlib import Path

import numpy as np

from physai.course.lesson import Claim, factor_claim, fmt_row, lesson_number, number_claim, verdict

LESSON = lesson_number(Path(__file__).parent)
# The source lesson's printed figures, as it writes them.
SOURCE_LEVER, SOURCE_COLUMN_DIFF = "0.2202", "8.3e-17"
SOURCE_MAX_ERR = {"linear": "3.9e-16", "angular": "1.0e-15"}
SOURCE_SPEED = "0.312"
SOURCE_TAU = (("0.0000", "0.4385", "0.5194", "0.2586", "0.0042"),
              ("0.0052", "-0.0397", "-0.2571", "-0.1873", "-0.0036"),
              ("-0.3745", "0.0000", "0.0000", "0.0000", "0.0175"))
SOURCE_FD = "4.7e-12"
ROUNDOFF = 10.0  # round-off sized numbers agree within this factor (their digits follow operation order and CPU)


def at_roundoff(name, source, measured, bound=1e-14) -> Claim:
    return Claim(LESSON, name, source, f"{measured:.1e}", verdict(measured <= bound),
                 f"round-off sized: <= {bound:.0e} (its digits follow operation order and CPU)", "build.py")


def build_claims(steps: dict) -> list[Claim]:
    """build.py's steps against the source's printed figures (``steps``: what its ``main`` saved)."""
    column, jac, use, fd = steps["column"], steps["jac"], steps["use"], steps["fd"]
    out = [number_claim(LESSON, "Step 1: shoulder_lift lever |a x (p - o)|", SOURCE_LEVER,
                        column.lever, unit="m", script="build.py"),
           at_roundoff("Step 1: column vs MuJoCo, max difference", SOURCE_COLUMN_DIFF, column.diff),
           at_roundoff("Step 2: max entry error vs mj_jacSite, linear rows", SOURCE_MAX_ERR["linear"], jac.linear),
           at_roundoff("Step 2: max entry error vs mj_jacSite, angular rows", SOURCE_MAX_ERR["angular"],
                       jac.angular),
           number_claim(LESSON, "Step 3: tool speed at 1/sqrt(5) rad/s per joint", SOURCE_SPEED, use.speed,
                        unit="m/s", script="build.py")]
    for F, tau, source in zip(use.forces, use.tau, SOURCE_TAU):
        off = np.abs(tau - np.array(source, dtype=float)).max()
        out.append(Claim(LESSON, f"Step 3: J^T F for F = {F.tolist()} N", ", ".join(source) + " N m",
                         ", ".join(fmt_row([x]).strip() for x in tau) + " N m", verdict(off <= 0.5e-4 + 1e-12),
                         "every entry to the printed 4 decimals", "build.py"))
    out.append(factor_claim(LESSON, f"Step 4: median central-difference error at eps = {fd.eps:.0e}", SOURCE_FD,
                            fd.median,
                            script="build.py", factor=ROUNDOFF, why=f"round-off dominated: within {ROUNDOFF:g}x"))
    return out


CLAIMS = {"build.py": build_claims}
