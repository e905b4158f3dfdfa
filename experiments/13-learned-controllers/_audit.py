"""Lesson 13's audit (the course's private file, as ``_check.py`` is): the claims its scripts' runs make about the
source material's statements, for the tour's audit page (``physai.course.lesson.run_script`` calls ``CLAIMS``)."""

from pathlib import Path

from physai.course.lesson import Claim, lesson_number, verdict

LESSON = lesson_number(Path(__file__).parent)


def build_claims(b) -> list[Claim]:
    """build.py's two statements on averaging the elbows (``b``: the ``BuildRun`` its ``main`` saved)."""
    gap, t = b.mean_miss_gap, b.trained
    return [Claim(LESSON, "regression onto both elbows learns their mean: a straight arm that overshoots",
                  "averaging two elbows", f"miss = L1 + L2 - r to {gap:.0e} m", verdict(gap < 1e-12),
                  "closed form: the mean of q2 and -q2 is 0, the straight arm reaches r = L1 + L2", "build.py"),
            Claim(LESSON, "a network trained by squared error on both elbows learns their mean", "trained on both elbows",
                  f"loss {t.loss[1]:.4f} vs floor {t.floor:.4f} rad^2; {t.to_mean:.2f} rad from the mean, "
                  f"{t.to_nearest:.2f} rad from the nearer elbow",
                  verdict(t.loss[1] >= t.floor and t.to_mean < 0.25 * t.to_nearest),
                  "the loss stays above the closed-form floor, and the joints sit nearer the elbows' mean than either "
                  "elbow", "build.py")]


CLAIMS = {"build.py": build_claims}
