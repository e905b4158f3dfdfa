"""Lesson 12's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)


def build_claims(steps: dict) -> list[Claim]:
    """build.py's hand-built projector leaves the task alone (``steps``: what its ``main`` saved)."""
    leak, round_off = steps["task_leak"], steps["round_off"]
    return [Claim(LESSON, "null-space projection: a secondary motion that leaves the task alone", "J N = 0",
                  f"|J N qdot0| / |qdot0| <= {leak:.0e}", verdict(leak < 10 * round_off),
                  "MuJoCo's J times the hand-built N, within 10 eps kappa^2 (round-off)", "build.py")]


CLAIMS = {"build.py": build_claims}
