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


def gradient_claims(g) -> list[Claim]:
    """experiment.py's gradient check (``g``: its ``GradientCheck``)."""
    diff = g.max_difference
    return [Claim(LESSON, "iterating the easy direction is exactly gradient descent", "J^T e = -grad |e|^2/2",
                  f"max difference {diff:.0e}", verdict(diff < 1e-9), "central differences, eps 1e-5: error ~1e-10")]


def convergence_claims(c) -> list[Claim]:
    """experiment.py's methods from the same starts (``c``: its ``Convergence``)."""
    rate = dict(zip(c.names, c.converged))
    slow, fast = c.methods["transpose"].reached_median, c.methods["lm"].reached_median
    slower = fast is not None and (slow is None or slow > 5 * fast)
    return [
        Claim(LESSON, "IK with the pseudoinverse and with damped least squares", "solves it",
              f"pinv {rate['pinv']:.0%}, dls {rate['dls']:.0%}, lm {rate['lm']:.0%} converged",
              verdict(min(rate["pinv"], rate["dls"], rate["lm"]) >= 0.9), "at least 90 % from starts 0.4 rad away"),
        Claim(LESSON, "gradient descent (J^T) is the slow one", "slower than Gauss-Newton",
              f"median {'-' if slow is None else f'{slow:.0f}'} vs {'-' if fast is None else f'{fast:.0f}'} "
              "iterations (lm), over the targets each reached", verdict(slower),
              "over 5 x the iterations of lm, or none reached"),
    ]


def success_claims(rows) -> list[Claim]:
    """experiment.py's success table (``rows``: its ``Success`` rows)."""
    worst = min(rows, key=lambda r: r.rate)
    return [Claim(LESSON, "solve the hard direction by iterating the easy one", "it solves IK",
                  f"worst {worst.rate:.1%} ({worst.robot}, {worst.task}) over {len(rows)} robot/tasks",
                  verdict(worst.rate >= 0.99), "at least 99 % of reachable random targets, every robot and task")]


def experiment_claims(steps: dict) -> list[Claim]:
    """experiment.py's claims (``steps``: what its ``main`` saved)."""
    return (gradient_claims(steps["gradient"]) + convergence_claims(steps["convergence"])
            + success_claims(steps["success"].rows))


CLAIMS = {"build.py": build_claims, "experiment.py": experiment_claims}
