"""Lesson 11's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)


def build_claims(steps: dict) -> list[Claim]:
    """build.py's by-hand solver's success rate (``steps``: what its ``main`` saved)."""
    r = steps["run"]
    return [Claim(LESSON, "iterate the damped step on a pose error and you have Levenberg-Marquardt IK",
                  "it solves IK", f"{r.rate:.0%} of {r.n} targets within {steps['tol']:g} m (MuJoCo)",
                  verdict(r.rate >= 0.9), "at least 90 % of reachable targets with at most 50 restarts (solve_ik: 200)",
                  "build.py")]


CLAIMS = {"build.py": build_claims}
