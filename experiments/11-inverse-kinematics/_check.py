"""Grader of lesson 11's Build it and Hands-On Lab (``physai check 11 DIR``).

``damped_step`` against SciPy's least squares of the stacked problem ``[J; lam I] dq = [e; 0]``; ``ik_by_hand``
(the lab) against ``physai.solve_ik`` on the lab's 50 targets, one attempt each from the mid-range pose: success
within ``LAB_MARGIN`` of the library's and median iterations within ``LAB_FACTOR`` of its; ``solve_by_hand``
against ``solve_ik`` with its random restarts on 30 further targets. The targets, the scoring and the thresholds
are the lesson's own build.py's (loaded from beside this file), so the page, the lab and the grade agree.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from scipy.linalg import lstsq

from physai import robots
from physai.exercise import Hint, close, load, shaped
from physai.ik import solve_ik

LAM = 0.02  # m/rad, the damping the step is graded at
STEP_TOL = 1e-9  # rad: the steps are at most |e| / (2 LAM) ~ 2 rad long, solved to round-off
RESTART_SEED, RESTART_TARGETS = 12, 30  # solve_by_hand's targets (none of the lab's)
RESTART_MARGIN = 0.05  # with restarts the library reaches every target: miss at most one of 30


@functools.cache
def _lesson():
    """The lesson's own build.py (not the learner's): the lab's targets, scoring and thresholds."""
    return load(Path(__file__).with_name("build.py"))


def _test_jacobians(rng: np.random.Generator):
    """A healthy and a nearly singular 3 x 5 Jacobian (singular values in m/rad) with a position error (m)."""
    for sigmas in ((0.5, 0.3, 0.08), (0.5, 0.3, 1e-6)):
        U = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        V = np.linalg.qr(rng.normal(size=(5, 5)))[0]
        yield U @ np.diag(sigmas) @ V[:3], 0.05 * rng.normal(size=3), sigmas[-1]


def check_damped_step(build, rng) -> None:
    for J, e, sigma_min in _test_jacobians(np.random.default_rng(11)):
        want = lstsq(np.r_[J, LAM * np.eye(5)], np.r_[e, np.zeros(5)])[0]
        got = shaped(build.damped_step(J, e, LAM), (5,), "damped_step", "(n,) for J of shape (m, n) = (3, 5)")
        if close(got, want, STEP_TOL):
            continue
        where = f"at a Jacobian with sigma_min {sigma_min:g} m/rad"
        known = (
            (-want, "a sign flip: the step points away from the target (dq = +J^T (J J^T + lam^2 I)^-1 e)"),
            (np.linalg.pinv(J) @ e, f"no damping: that is the undamped pseudoinverse step, {np.abs(got).max():.3g} "
                                    "rad here; add lam^2 I to J J^T before solving"),
            (J.T @ np.linalg.solve(J @ J.T + LAM * np.eye(3), e), "lam is not squared: the damping term is lam^2 I"),
            (J.T @ e, "that is the Jacobian-transpose (gradient) step J^T e; damped least squares first solves "
                      "(J J^T + lam^2 I) y = e, then dq = J^T y"),
        )
        for wrong, why in known:
            if close(got, wrong, STEP_TOL):
                raise Hint(f"damped_step {where}: {why}")
        raise Hint(f"damped_step {where} differs from J^T (J J^T + lam^2 I)^-1 e by {np.abs(got - want).max():.2e} "
                   "rad (a transposed J, or an identity of the wrong size?)")


def _first_step_too_long(build, chain, targets, max_step: float) -> None:
    q1 = np.array([build.ik_by_hand(chain, p, chain.q_middle.copy(), iterations=1)[0] for p in targets])
    jump = np.abs(q1 - chain.q_middle).max()
    if jump > max_step * (1 + 1e-9):
        raise Hint(f"no step clipping: one step moved a joint {jump:.3g} rad (at most max_step = {max_step:g} rad); "
                   "scale dq by min(1, max_step / max|dq|) so far targets are approached in short steps")


def check_ik_by_hand(build, rng) -> None:
    lesson, chain = _lesson(), robots.load("so101")
    targets = lesson.lab_targets(chain)
    runs = [build.ik_by_hand(chain, p, chain.q_middle.copy()) for p in targets]
    q = np.array([shaped(q, (chain.n,), "ik_by_hand's q") for q, _ in runs])
    errors = [np.atleast_1d(np.asarray(e, dtype=float)) for _, e in runs]
    n = len(targets)
    grew = sum(e[-1] > e[0] for e in errors)
    if grew > n // 2:
        raise Hint(f"the error grows instead of falling on {grew} of {n} targets: a sign flip (e = p_target - p(q), "
                   "and the next pose is q + dq)")
    outside = int(np.sum(~np.all((q >= chain.lower) & (q <= chain.upper), axis=1)))
    if outside:
        raise Hint(f"{outside} of {n} answers lie outside the joint limits: clip q + dq into chain.lower, chain.upper "
                   "after every step")
    _first_step_too_long(build, chain, targets, lesson.MAX_STEP)
    hand = lesson.score(chain, targets, q, np.array([len(e) - 1 for e in errors]))
    library = lesson.lab_library(chain, targets)
    if hand.success < library.success - lesson.LAB_MARGIN:
        raise Hint(f"success {hand.success:.0%} of {n} targets, solve_ik {library.success:.0%} (at least "
                   f"{library.success - lesson.LAB_MARGIN:.0%} needed): is the loop stopping early (TOL, stalled) "
                   "or taking too little of each step (lam too large)?")
    if hand.median_iterations > lesson.LAB_FACTOR * library.median_iterations:
        raise Hint(f"median {hand.median_iterations:g} iterations, solve_ik {library.median_iterations:g} (at most "
                   f"{lesson.LAB_FACTOR:g} x): too much damping makes each step a short gradient step")


def check_solve_by_hand(build, rng) -> None:
    lesson, chain = _lesson(), robots.load("so101")
    targets = lesson.lab_targets(chain, RESTART_SEED, RESTART_TARGETS)
    rs = [solve_ik(chain, p, task="position", rng=np.random.default_rng(i)) for i, p in enumerate(targets)]
    library = lesson.score(chain, targets, np.array([r.q for r in rs]), np.array([r.iterations for r in rs]))
    allowed = (1 - library.success + RESTART_MARGIN) * len(targets)  # misses
    runs = []
    for i, p in enumerate(targets):  # stop as soon as the misses are too many: a broken loop is slow here
        runs.append(build.solve_by_hand(chain, p, np.random.default_rng(i)))
        hand = lesson.score(chain, targets[: i + 1], np.array([q for q, _ in runs]), np.array([s for _, s in runs]))
        if (1 - hand.success) * (i + 1) > allowed:
            raise Hint(f"with restarts {(1 - hand.success) * (i + 1):.0f} of the first {i + 1} targets were missed "
                       f"(solve_ik misses {1 - library.success:.0%} of {len(targets)}): after a failed attempt, "
                       "restart ik_by_hand from the next random in-limit pose (chain.random_q(rng, restarts)) and "
                       "return the first answer that converges (and if ik_by_hand fails its own check, fix that first)")
    if hand.median_iterations > lesson.LAB_FACTOR * library.median_iterations:
        raise Hint(f"median {hand.median_iterations:g} steps over all attempts, solve_ik {library.median_iterations:g}"
                   f" (at most {lesson.LAB_FACTOR:g} x): stop at the first attempt that converges")


# (text in build.py, its replacement, a word the hint must contain)
MUTATIONS = [
    ("return J.T @ np.linalg.solve(", "return -J.T @ np.linalg.solve(", "sign"),
    ("lam**2 * np.eye(len(e))", "0.0 * np.eye(len(e))", "damping"),
    ("q = np.clip(q + dq, chain.lower, chain.upper)", "q = np.clip(q - dq, chain.lower, chain.upper)", "sign"),
    ("q = np.clip(q + dq, chain.lower, chain.upper)", "q = q + dq", "limits"),
    ("dq *= min(1.0, max_step / np.abs(dq).max())", "dq *= 1.0", "clipping"),
    ("[0.5 * (chain.lower + chain.upper)] + list(chain.random_q(rng, restarts))",
     "[0.5 * (chain.lower + chain.upper)]", "restart"),
]
