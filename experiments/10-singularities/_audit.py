"""Lesson 10's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)


def build_claims(steps: dict) -> list[Claim]:
    """build.py's bound on the damped gain (``steps``: what its ``main`` saved)."""
    checks, lam = steps["checks"], steps["lambda"]
    peak = max(c.peak_gain for c in checks)
    return [Claim(LESSON, "the damped gain never exceeds 1/(2 lambda)", f"<= {1 / (2 * lam):.0f} (lambda {lam})",
                  f"{peak:.3f} (largest over {sum(c.n_poses for c in checks)} poses)",
                  verdict(peak <= 1 / (2 * lam) + 1e-12), "|qdot| for a unit request along the weakest direction",
                  "build.py")]


CLAIMS = {"build.py": build_claims}
