"""Grader for lesson 12's Build it (``physai check 12 DIR``): each function the learner types, against SciPy's
null space and minimum-norm least squares of MuJoCo's mj_jacSite at seeded Panda poses, with hints that name the
likely mistake."""

from __future__ import annotations

import functools

import numpy as np
from scipy.linalg import lstsq, null_space

from physai import mj, robots
from physai.course.exercise import Hint, LearnerError, close, shaped

ALPHA = 0.3
OWN = {"pinv_by_hand": ("physai.nullspace.pinv",), "projector_by_hand": ("physai.nullspace.projector",
                                                                        "physai.nullspace.null_basis"),
       "redundant_rate_by_hand": ("physai.nullspace.redundant_rate",), "null_space_step": ()}


def _cases(rng, n: int = 3):
    """``(J, v, qdot0, grad_H)`` at ``n`` random Panda poses drawn from ``rng``, with the pose rows of ``J`` (6, a
    1-D null space), then the same poses with the position rows (3, a 4-D null space)."""
    chain, model = robots.load("panda"), robots.mujoco_model("panda")
    qs = chain.random_q(rng, n, inset=0.1)
    for rows in (6, 3):
        for q in qs:
            J = mj.site_jacobian(model, chain, q)[:rows]
            yield J, rng.normal(size=rows), rng.normal(size=7), rng.normal(size=7)


def _close(a, b, J) -> bool:
    """Equal to the round-off of the normal equations, ``eps kappa^2`` (scaled by the numbers' size)."""
    return close(a, b, 1e3 * np.finfo(float).eps * np.linalg.cond(J) ** 2 * max(1.0, np.abs(b).max()))


def _shape(name: str, out, shape) -> np.ndarray:
    return shaped(out, shape, name, "check which side J and J^T go on")


def _first_case():
    """``(J, v, qdot0, grad_H)`` of a fixed draw: where a helper is judged."""
    return next(_cases(np.random.default_rng(0), 1))


def _wrong(build, helper: str) -> bool:
    """Whether the learner's ``helper`` (``pinv_by_hand`` or ``projector_by_hand``) misses the exact answer at
    :func:`_first_case`."""
    J = _first_case()[0]
    Z = null_space(J)
    want = {"pinv_by_hand": np.linalg.pinv(J), "projector_by_hand": Z @ Z.T}[helper]
    try:
        got = getattr(build, helper)(J)
    except LearnerError:
        return True
    return not (isinstance(got, np.ndarray) and got.shape == want.shape and _close(got, want, J))


def _helpers_first(*helpers: str, call, formula):
    """``check`` judged on its own first; where it fails and one of ``helpers`` (the learner's functions it is built
    from, in the order the lesson builds them) is wrong, the hint blames that helper. ``call(build, J, v, qdot0,
    grad_H)`` runs the learner's function and ``formula`` (same arguments) the lesson's formula with the learner's
    own helpers: where the two agree at :func:`_first_case`, the function is right and only the helper is wrong."""

    def wrap(check):
        @functools.wraps(check)
        def checked(build, rng) -> None:
            try:
                check(build, rng)
            except Hint as hint:
                wrong = [h for h in helpers if _wrong(build, h)]
                if not wrong:
                    raise
                name, case = check.__name__.removeprefix("check_"), _first_case()
                try:
                    got, want = call(build, *case), formula(build, *case)
                    follows = (isinstance(got, np.ndarray) and isinstance(want, np.ndarray)
                               and got.shape == want.shape and _close(got, want, case[0]))
                except (LearnerError, TypeError, ValueError):  # a helper's answer that cannot enter the formula
                    follows = False
                if follows:
                    raise Hint(f"{name} follows the lesson's formula; {wrong[0]}, which it uses, is wrong: fix "
                               f"{wrong[0]} first") from None
                raise Hint(f"{wrong[0]} is wrong, and {name} is built from it: fix {wrong[0]} first; then: {hint}"
                           ) from None

        return checked

    return wrap


def check_pinv_by_hand(build, rng) -> None:
    for J, *_ in _cases(rng):
        P = _shape("pinv_by_hand", build.pinv_by_hand(J), (7, len(J)))
        if _close(P, np.linalg.pinv(J), J):
            continue
        if _close(P, J.T, J):
            raise Hint("you returned J^T: the inverse (J J^T)^-1 after it is missing")
        if not _close(J @ P, np.eye(len(J)), J):
            raise Hint("J @ J^+ is not the identity: the right inverse of a wide J is J^T (J J^T)^-1, "
                       "with the inverse of the small (m, m) matrix J J^T")
        raise Hint("a right inverse, but not the minimum-norm one: use J^T (J J^T)^-1, which moves the joints "
                   "only in the row space")


@_helpers_first("pinv_by_hand", call=lambda b, J, *_: b.projector_by_hand(J),
                formula=lambda b, J, *_: np.eye(J.shape[1]) - b.pinv_by_hand(J) @ J)
def check_projector_by_hand(build, rng) -> None:
    for J, *_ in _cases(rng):
        N = _shape("projector_by_hand", build.projector_by_hand(J), (7, 7))
        Z = null_space(J)
        if _close(N, Z @ Z.T, J):
            continue
        if _close(N, np.eye(7) - Z @ Z.T, J):
            raise Hint("this is J^+ J, the projector onto the row space (the directions the task sees); the "
                       "null-space projector is I - J^+ J")
        if not _close(J @ N, np.zeros((len(J), 7)), J):
            raise Hint(f"J @ N is not zero (largest entry {np.abs(J @ N).max():.1e}): the motion N qdot0 would "
                       "move the tool; N must be I - J^+ J")
        if not _close(N @ N, N, J):
            raise Hint("N is not idempotent (N N != N): projecting twice must change nothing; build I - J^+ J "
                       "from the exact pseudoinverse")
        raise Hint("N kills the task directions but is not the orthogonal projector I - J^+ J (not symmetric?)")


@_helpers_first("pinv_by_hand", "projector_by_hand",
                call=lambda b, J, v, qdot0, _: b.redundant_rate_by_hand(J, v, qdot0),
                formula=lambda b, J, v, qdot0, _: b.pinv_by_hand(J) @ v + b.projector_by_hand(J) @ qdot0)
def check_redundant_rate_by_hand(build, rng) -> None:
    for J, v, qdot0, _ in _cases(rng):
        qdot = _shape("redundant_rate_by_hand", build.redundant_rate_by_hand(J, v, qdot0), (7,))
        Z = null_space(J)
        least, free = lstsq(J, v)[0], Z @ (Z.T @ qdot0)  # minimum-norm solution; qdot0's null-space part
        if _close(qdot, least + free, J):
            continue
        if _close(qdot, least - free, J):
            raise Hint("sign: the secondary motion enters as + N qdot0 (move toward qdot0, not away from it)")
        if _close(qdot, least + qdot0, J):
            raise Hint("qdot0 is added without the projector: N qdot0, not qdot0, so the tool does not move")
        if _close(qdot, least, J):
            raise Hint("the secondary term N qdot0 is missing: qdot = J^+ v + N qdot0")
        if not _close(J @ qdot, v, J):
            raise Hint(f"J qdot misses v by {np.abs(J @ qdot - v).max():.1e}: the task part is J^+ v")
        raise Hint("J qdot = v holds but the null-space part differs from N qdot0: project qdot0 with I - J^+ J")


@_helpers_first("pinv_by_hand", "projector_by_hand", call=lambda b, J, _, __, g: b.null_space_step(J, g, ALPHA),
                formula=lambda b, J, _, __, g: -ALPHA * b.projector_by_hand(J) @ g)
def check_null_space_step(build, rng) -> None:
    for J, _, _, g in _cases(rng):
        step = _shape("null_space_step", build.null_space_step(J, g, ALPHA), (7,))
        Z = null_space(J)
        ref = -ALPHA * Z @ (Z.T @ g)
        if _close(step, ref, J):
            continue
        if _close(step, -ref, J):
            raise Hint(f"sign: grad H . step = {g @ step:.3g} > 0, an uphill step; descend with -alpha N grad H")
        if _close(step, -ALPHA * g, J):
            raise Hint("the gradient is not projected: -alpha grad H moves the tool; use -alpha N grad H")
        if _close(step, ref / ALPHA, J) or _close(step, -ALPHA**2 * Z @ (Z.T @ g), J):
            raise Hint("the step size alpha is missing or applied twice: -alpha N grad H")
        if _close(step, -ALPHA * g - ref, J):
            raise Hint("you projected onto the row space (J^+ J grad H): the task sees that step; use "
                       "N = I - J^+ J")
        raise Hint(f"the step differs from -alpha N grad H by {np.abs(step - ref).max():.1e}; J @ step = "
                   f"{np.abs(J @ step).max():.1e} (must be 0)")


EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "pinv_by_hand": "pinv_by_hand(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))",
    "projector_by_hand": "projector_by_hand(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))",
    "redundant_rate_by_hand": "redundant_rate_by_hand(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), "
                              "np.array([0.2, 0.1]), np.array([1.0, 0.0, 0.0]))",
    "null_space_step": "null_space_step(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), np.array([1.0, 0.0, 0.0]), 0.3)",
}

MUTATIONS = [
    ("    return pinv_by_hand(J) @ v + projector_by_hand(J) @ qdot0",
     "    return pinv_by_hand(J) @ v - projector_by_hand(J) @ qdot0", "sign"),
    ("    return -alpha * projector_by_hand(J) @ grad_H", "    return alpha * projector_by_hand(J) @ grad_H", "uphill"),
    ("    return np.eye(J.shape[1]) - pinv_by_hand(J) @ J", "    return pinv_by_hand(J) @ J", "row space"),
    ("    return J.T @ np.linalg.inv(J @ J.T)", "    return J.T", "inverse"),
    ("    return J.T @ np.linalg.inv(J @ J.T)", "    return np.linalg.inv(J.T @ J + 1e-12 * np.eye(J.shape[1])) @ J.T",
     "fix pinv_by_hand first"),
]
