"""Lesson 08's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)
# What the source lesson prints about the WidowX AI's reach and the bound on a linear Jacobian entry.
SOURCE_TEXT = {"bound": "0.77"}


def build_claims(steps: dict) -> list[Claim]:
    """build.py's claim on the source's illustrative chain (``steps``: what its ``main`` saved)."""
    ill, bound = steps["reach"]["wxai_illustrative"], SOURCE_TEXT["bound"]
    return [
        Claim(LESSON, f"no linear entry exceeds {bound} (the source's illustrative chain)", f"<= {bound}",
              f"{ill.top:.3f}", verdict(ill.top <= float(bound)), f"largest |J_ij|, rows 0-2, {steps['n_reach']} poses",
              "build.py"),
    ]


CLAIMS = {"build.py": build_claims}
