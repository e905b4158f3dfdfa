"""Grader of lesson 11's Build it and Hands-On Lab (``physai check 11 DIR``).

``damped_step`` against SciPy's least squares of the stacked problem ``[J; lam I] dq = [e; 0]``; ``ik_by_hand``
(the lab) against ``physai.solve_ik`` on 50 targets drawn like the lab's, one attempt each from the mid-range pose:
success within ``LAB_MARGIN`` of the library's and median iterations within ``LAB_FACTOR`` of its (or of the
lesson's own loop's, where that does worse on the draw); ``solve_by_hand`` against ``solve_ik`` with its random
restarts on 30 further targets (three of them missed from the mid-range pose), its step count exactly what the
learner's own ``ik_by_hand`` attempts add up to. The targets, the scoring and the thresholds are the lesson's own
build.py's (loaded from beside this file), so the page, the lab and the grade agree.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from scipy.linalg import lstsq

from physai import robots
from physai.course.exercise import Hint, close, load, parts, scalar, shaped
from physai.ik import solve_ik
from physai.kinematics import fk, jacobian

LAM = 0.02  # m/rad, the damping the step is graded at
STEP_TOL = 1e-9  # rad: the steps are at most |e| / (2 LAM) ~ 2 rad long, solved to round-off
RESTART_TARGETS = 30  # solve_by_hand's targets
OWN = {"damped_step": ("physai.singularity.damped_solve", "physai.singularity.damped_step"),
       "ik_by_hand": ("physai.ik.solve_ik", "physai.ik.solve_ik_batch"),
       "solve_by_hand": ("physai.ik.solve_ik", "physai.ik.solve_ik_batch")}
RESTART_MARGIN = 0.05  # with restarts the library reaches every target: miss at most one of 30
RESTART_POOL = 200  # targets drawn to find ones the mid-range start misses (about 15 % of a draw)
RESTART_HARD = 3  # of the graded targets, this many need a restart, so a count of the last attempt only shows


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
    for J, e, sigma_min in _test_jacobians(rng):
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


def _one_step(chain, p, q0, lam, max_step) -> dict:
    """The documented first step from ``q0`` and the slips that change it, each as the pose it lands on."""
    e = p - fk(chain, q0).p
    J = jacobian(chain, q0)[:3]
    dq = J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(3), e)
    uniform = dq * min(1.0, max_step / np.abs(dq).max())

    def land(step):
        return np.clip(q0 + step, chain.lower, chain.upper)

    return {"right": land(uniform),
            "per-joint clipping: the docstring asks for a uniform shrink, dq *= min(1, max_step / max|dq|), which "
            "keeps the step's direction (np.clip(dq, -max_step, max_step) bends it)": land(np.clip(dq, -max_step,
                                                                                                  max_step)),
            f"no step clipping: one step moved a joint {np.abs(land(dq) - q0).max():.3g} rad (at most max_step = "
            f"{max_step:g} rad); scale dq by min(1, max_step / max|dq|)": land(dq),
            "the wrong sign of the step: the next pose is q + dq with e = p_target - p(q)": land(-uniform),
            "the undamped inverse: add lam^2 I to J J^T": land(np.linalg.pinv(J) @ e * min(
                1.0, max_step / np.abs(np.linalg.pinv(J) @ e).max()))}


def _contract(build, chain, p, q0, max_step) -> None:
    """One target from ``q0``: the returned pair, the error history's first and last entries, ``iterations``
    obeyed, and the first step exactly as documented (damped, shrunk uniformly, clipped into the limits)."""
    out = parts(build.ik_by_hand(chain, p, q0, iterations=1, max_step=max_step), 2, "ik_by_hand",
                "a pair (q (n,), errors (k + 1,))")
    q1 = shaped(out[0], (chain.n,), "ik_by_hand's q")
    errors = np.atleast_1d(np.asarray(out[1], dtype=float))
    if len(errors) > 2:
        raise Hint(f"with iterations=1 the history has {len(errors)} entries: stop after `iterations` steps "
                   "(the argument, not a fixed count)")
    e0 = np.linalg.norm(p - fk(chain, q0).p)
    if not close(errors[0], e0, 1e-12):
        raise Hint(f"errors[0] is {errors[0]:.6g} m, the error at q0 is {e0:.6g} m: the history starts with |e| "
                   "before any step (errors[i] is |e| after i steps)")
    if len(errors) < 2:
        raise Hint("with iterations=1 and a far target one step is taken: the history holds |e| at q0 and after "
                   "the step")
    if not close(errors[-1], np.linalg.norm(p - fk(chain, q1).p), 1e-12):
        raise Hint("errors[-1] is not |p_target - p(q)| at the returned q: append |e| after each step")
    lesson = _lesson()
    steps = _one_step(chain, p, q0, lesson.LAMBDA, max_step)
    if close(q1, steps.pop("right"), 1e-9):
        return
    for hint, wrong in steps.items():
        if close(q1, wrong, 1e-9):
            raise Hint(hint)
    raise Hint("the first step differs from the documented one: e = p_target - p(q), dq = damped_step(J_position, "
               "e, lam), dq *= min(1, max_step / max|dq|), q = clip(q + dq, lower, upper)")


def _step_fails(build, rng) -> str:
    """'' if the learner's damped_step passes its own check, else the lead of a hint saying so: a wrong step makes
    every later check fail for a reason that is not its own."""
    try:
        check_damped_step(build, rng)
    except Hint:
        return "damped_step fails its own check and the loop calls it, so fix damped_step first; then: "
    return ""


def check_ik_by_hand(build, rng) -> None:
    try:
        _check_loop(build, rng)
    except Hint as hint:
        raise Hint(f"{_step_fails(build, rng)}{hint}") from None


def _check_loop(build, rng) -> None:
    """The lab's grade of ``ik_by_hand`` (see the module's docstring), without the lead naming damped_step."""
    lesson, chain = _lesson(), robots.load("so101")
    targets = lesson.lab_targets(chain, int(rng.integers(2**31)))
    for p in targets[:3]:
        _contract(build, chain, p, chain.q_middle.copy(), 0.05)
    runs = [build.ik_by_hand(chain, p, chain.q_middle.copy()) for p in targets]
    q = np.array([shaped(q, (chain.n,), "ik_by_hand's q") for q, _ in runs])
    errors = [np.atleast_1d(np.asarray(e, dtype=float)) for _, e in runs]
    n = len(targets)
    outside = int(np.sum(~np.all((q >= chain.lower) & (q <= chain.upper), axis=1)))
    if outside:
        raise Hint(f"{outside} of {n} answers lie outside the joint limits: clip q + dq into chain.lower, chain.upper "
                   "after every step")
    hand = lesson.score(chain, targets, q, np.array([len(e) - 1 for e in errors]))
    # the lab's rule is met by the lesson's own loop on the lab's targets, not on every draw (on about 1 in 5 its
    # success trails solve_ik's by more than LAB_MARGIN): the bar is the lower of solve_ik's and the lesson's own
    library, own = lesson.lab_library(chain, targets), lesson.lab_hand(chain, targets)
    needed = min(library.success, own.success) - lesson.LAB_MARGIN
    if hand.success < needed:
        raise Hint(f"success {hand.success:.0%} of {n} targets, solve_ik {library.success:.0%}, the lesson's own loop "
                   f"{own.success:.0%} (at least {needed:.0%} needed): is the loop stopping early (TOL, stalled) or "
                   "taking too little of each step (lam too large)?")
    allowed = lesson.LAB_FACTOR * max(library.median_iterations, own.median_iterations)
    if hand.median_iterations > allowed:
        raise Hint(f"median {hand.median_iterations:g} iterations, solve_ik {library.median_iterations:g}, the "
                   f"lesson's own loop {own.median_iterations:g} (at most {allowed:g}): too much damping makes each "
                   "step a short gradient step")


def _attempts(build, chain, p, rng, restarts: int) -> tuple[int, int, int]:
    """The documented restarts replayed with the learner's own ``ik_by_hand``: ``(steps over all attempts, the
    attempts made, the last attempt's steps)``."""
    steps = attempts = 0
    for q0 in [0.5 * (chain.lower + chain.upper)] + list(chain.random_q(rng, restarts)):
        errors = np.atleast_1d(np.asarray(build.ik_by_hand(chain, p, q0)[1], dtype=float))
        steps, attempts = steps + len(errors) - 1, attempts + 1
        if errors[-1] < _lesson().TOL:
            break
    return steps, attempts, len(errors) - 1


def _ik_fails(build, rng) -> str:
    """'' if the learner's damped_step and ik_by_hand pass their own checks, else the lead of a hint naming the
    first that fails."""
    lead = _step_fails(build, rng)
    if lead:
        return lead
    try:
        _check_loop(build, rng)
    except Hint:
        return "ik_by_hand fails its own check and solve_by_hand calls it, so fix ik_by_hand first; then: "
    return ""


def _restart_targets(lesson, chain, seed: int) -> np.ndarray:
    """``RESTART_TARGETS`` of the lab's targets (m), ``RESTART_HARD`` of them missed by the lesson's own loop from
    the mid-range pose: without these a draw may need no restart at all and leave the restarts ungraded."""
    pool = lesson.lab_targets(chain, seed, RESTART_POOL)
    missed = np.array([lesson.ik_by_hand(chain, p, chain.q_middle.copy())[1][-1] >= lesson.TOL for p in pool])
    hard = pool[missed][:RESTART_HARD]
    return np.r_[hard, pool[~missed][: RESTART_TARGETS - len(hard)]]


def check_solve_by_hand(build, rng) -> None:
    lesson, chain = _lesson(), robots.load("so101")
    targets = _restart_targets(lesson, chain, int(rng.integers(2**31)))
    seeds = rng.integers(2**31, size=len(targets))
    rs = [solve_ik(chain, p, task="position", rng=np.random.default_rng(s)) for s, p in zip(seeds, targets)]
    library = lesson.score(chain, targets, np.array([r.q for r in rs]), np.array([r.iterations for r in rs]))
    allowed = (1 - library.success + RESTART_MARGIN) * len(targets)  # misses
    runs = []
    for i, (s, p) in enumerate(zip(seeds, targets)):  # stop as soon as the misses are too many: a broken loop is slow
        out = parts(build.solve_by_hand(chain, p, np.random.default_rng(s)), 2, "solve_by_hand",
                    "a pair (q (n,), steps over all attempts)")
        runs.append((shaped(out[0], (chain.n,), "solve_by_hand's q"), out[1]))
        got = scalar(out[1], "solve_by_hand's steps")
        want, attempts, last = _attempts(build, chain, p, np.random.default_rng(s), lesson.RESTARTS)
        if got != want:
            why = ("each attempt's errors hold k + 1 entries for k steps: add len(errors) - 1" if got == want + attempts
                   else "that is the last attempt's count: return the steps of all attempts together"
                   if got == last != want else "count len(errors) - 1 steps for every attempt made, the failed "
                   "ones included, and stop at the first that converges")
            raise Hint(f"{_ik_fails(build, rng)}{got:g} steps where your ik_by_hand's {attempts} attempt(s) "
                       f"(mid-range pose, then chain.random_q(rng, restarts)) took {want}: {why}")
        hand = lesson.score(chain, targets[: i + 1], np.array([q for q, _ in runs]),
                            np.array([int(k) for _, k in runs]))
        if (1 - hand.success) * (i + 1) > allowed:
            raise Hint(f"{_ik_fails(build, rng)}with restarts {(1 - hand.success) * (i + 1):.0f} of the first {i + 1} "
                       f"targets were missed (solve_ik misses {1 - library.success:.0%} of {len(targets)}): after a "
                       "failed attempt, restart ik_by_hand from the next random in-limit pose (chain.random_q(rng, "
                       "restarts)) and return the first answer that converges")
    if hand.median_iterations > lesson.LAB_FACTOR * library.median_iterations:
        raise Hint(f"{_ik_fails(build, rng)}median {hand.median_iterations:g} steps over all attempts, solve_ik {library.median_iterations:g}"
                   f" (at most {lesson.LAB_FACTOR:g} x): stop at the first attempt that converges")


# (text in build.py, its replacement, a word the hint must contain)
EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "damped_step": "damped_step(np.array([[0.2, 0.0, 0.1], [0.0, 0.3, 0.0]]), np.array([0.01, -0.02]), 0.02)",
    "ik_by_hand": "ik_by_hand(robots.load(\"so101\"), np.array([0.2, 0.0, 0.1]), robots.load(\"so101\").q_middle)",
    "solve_by_hand": "solve_by_hand(robots.load(\"so101\"), np.array([0.2, 0.0, 0.1]), np.random.default_rng(0))",
}

MUTATIONS = [
    ("return J.T @ np.linalg.solve(", "return -J.T @ np.linalg.solve(", "sign"),
    ("lam**2 * np.eye(len(e))", "0.0 * np.eye(len(e))", "damping"),
    ("lam**2 * np.eye(len(e))", "lam * np.eye(len(e))", "fix damped_step first"),
    ("q = np.clip(q + dq, chain.lower, chain.upper)", "q = np.clip(q - dq, chain.lower, chain.upper)", "sign"),
    ("q = np.clip(q + dq, chain.lower, chain.upper)", "q = q + dq", "limits"),
    ("dq *= min(1.0, max_step / np.abs(dq).max())", "dq *= 1.0", "clipping"),
    ("dq *= min(1.0, max_step / np.abs(dq).max())", "dq = np.clip(dq, -max_step, max_step)", "uniform shrink"),
    ("or len(errors) > iterations:", "or len(errors) > 100:", "iterations"),
    ("            return q, np.array(errors)", "            return q, np.array(errors[1:])", "errors[0]"),
    ("        steps += len(errors) - 1", "        steps = len(errors) - 1", "all attempts"),
    ("        steps += len(errors) - 1", "        steps += len(errors)", "k + 1 entries"),
    ("[0.5 * (chain.lower + chain.upper)] + list(chain.random_q(rng, restarts))",
     "[0.5 * (chain.lower + chain.upper)]", "restart"),
]
