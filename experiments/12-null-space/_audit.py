"""Lesson 12's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

import numpy as np

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)


def build_claims(steps: dict) -> list[Claim]:
    """build.py's hand-built projector leaves the task alone (``steps``: what its ``main`` saved)."""
    leak, round_off = steps["task_leak"], steps["round_off"]
    return [Claim(LESSON, "null-space projection: a secondary motion that leaves the task alone", "J N = 0",
                  f"|J N qdot0| / |qdot0| <= {leak:.0e}", verdict(leak < 10 * round_off),
                  "MuJoCo's J times the hand-built N, within 10 eps kappa^2 (round-off)", "build.py")]


def self_motion_claims(s) -> list[Claim]:
    """experiment.py's self-motion (``s``: its ``SelfMotion``)."""
    dp, dr = s.drift[-1]
    swing = s.elbow_swing
    return [Claim(LESSON, "more joints than task dimensions: infinitely many answers", "a family of answers",
                  f"elbow swings {swing:.3f} m, tool drifts {dp:.0e} m / {dr:.0e} rad",
                  verdict(swing > 0.01 and dp < 1e-6 and dr < 1e-5),
                  "a continuous self-motion: elbow moves > 1 cm while the tool stays within 1e-6 m, 1e-5 rad",
                  "experiment.py")]


def choice_claims(choices) -> list[Claim]:
    """experiment.py's choice on purpose (``choices``: its ``Choice`` per robot)."""
    better = []
    for c in choices:
        m = c.measures
        better += [m[1, 1] > m[0, 1], m[2, 2] > m[0, 2], m[3, 3] < m[0, 3], np.all(m[1:, 0] == m[0, 0])]
    return [Claim(LESSON, "choose among the answers on purpose", "a secondary objective picks one",
                  f"{sum(better)} of {len(better)} checks: each objective improves its own measure, success kept",
                  verdict(all(better)), "median margin up, manipulability up, posture distance down; same success",
                  "experiment.py")]


def experiment_claims(steps: dict) -> list[Claim]:
    """experiment.py's claims (``steps``: what its ``main`` saved)."""
    return self_motion_claims(steps["self_motion"]) + choice_claims(list(steps["choice"].values()))


CLAIMS = {"build.py": build_claims, "experiment.py": experiment_claims}
