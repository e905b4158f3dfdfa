"""Lesson 07's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)


def build_claims(steps: dict) -> list[Claim]:
    """The track overview's statement about this lesson, measured on the SO-101 chain (``steps``: what build.py's
    ``main`` saved)."""
    ch = steps["chain"]
    return [Claim(LESSON, "a 4x4 matrix moves you between frames; the algebra is matrix multiplication",
                  "T_world_tool = product of 4x4 transforms", f"|product - MuJoCo site pose| = {ch.tool_err:.1e}",
                  verdict(ch.tool_err <= 1e-14), "the product of the chain's 4x4s equals MuJoCo's site pose to "
                  "1e-14", "build.py")]


CLAIMS = {"build.py": build_claims}
