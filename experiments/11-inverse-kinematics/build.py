"""Lesson 11, Build it and the Hands-On Lab: position IK in a dozen lines (iterate the damped step of lesson 10 on
the position error), checked against physai's solve_ik and against MuJoCo's site position.

Steps: ``run`` solves random reachable SO-101 targets with restarts (``solve_by_hand``); ``lab_hand`` and
``lab_library``: the lab, one attempt per target from the mid-range pose against ``solve_ik``; Break it: the lab's
loop without damping, without a step limit, with heavy damping (``VARIANTS``), and ``near_singular``, one start
next to a singularity. ``damped_step``, ``ik_by_hand`` and ``solve_by_hand`` are the functions you write
(``physai exercise 11 DIR`` blanks them, ``physai check 11 DIR`` grades them).

Run: uv run python experiments/11-inverse-kinematics/build.py   (writes build_output.txt,
results.json and singular_start.png)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from physai import mj, robots  # noqa: E402
from physai.ik import DEFAULT_RESTARTS, Solver, solve_ik  # noqa: E402
from physai.kinematics import fk, jacobian  # noqa: E402
from physai.course.lesson import (  # noqa: E402
    Figure,
    fmt_row,
    full_run,
    out_dir,
    run_script,
    save_figure,
    save_results,
    unsaved,
)

EXERCISE = ("damped_step", "ik_by_hand", "solve_by_hand")  # what `physai exercise 11` leaves for you to write
HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
SEED = 0
N_TARGETS = 20  # random targets of the by-hand solver's run
LAMBDA = 0.02  # m/rad
TOL = 1e-4  # m
MAX_STEP = 0.3  # rad, the largest joint change per step
PATIENCE = 10  # steps in which the error must fall by 1 %
ITERATIONS = 100  # steps per attempt
RESTARTS = 50  # random restarts after the mid-range start
NEAR_LIMIT = 0.1  # rad: a joint this close to a limit, where clipped steps stall


def damped_step(J: np.ndarray, e: np.ndarray, lam: float) -> np.ndarray:
    """The damped least-squares step ``dq: (n,)`` (rad) for a task Jacobian ``J: (m, n)`` and error ``e: (m,)``.

    ``dq`` minimises ``|J dq - e|^2 + lam^2 |dq|^2``: ``dq = J^T (J J^T + lam^2 I)^-1 e``, with ``I`` the m x m
    identity and ``lam`` in the units of ``J``'s entries (m/rad for position rows).
    """
    return J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(len(e)), e)


def stalled(errors: list[float]) -> bool:
    """True when the error fell by less than 1 % over the last ``PATIENCE`` steps (typically stuck against a
    joint limit: a restart does better than more steps)."""
    return len(errors) > PATIENCE and errors[-1] > 0.99 * errors[-1 - PATIENCE]


STOPS = ("converged", "stalled", "limit")  # why an attempt stops: |e| < TOL, stalled(), or out of steps


def stop_reason(errors) -> str:
    """Why :func:`ik_by_hand` stopped, read from its error trace ``errors: (k + 1,)`` m, in the loop's own order of
    tests: ``"converged"`` (``|e| < TOL``), ``"stalled"`` (:func:`stalled`) or ``"limit"`` (out of steps)."""
    return "converged" if errors[-1] < TOL else "stalled" if stalled(list(errors)) else "limit"


def ik_by_hand(chain, p_target: np.ndarray, q0: np.ndarray, lam: float = LAMBDA, max_step: float = MAX_STEP,
               iterations: int = ITERATIONS):
    """Position IK from ``q0`` by damped least squares -> ``(q: (n,) rad, errors: (k + 1,) m)`` after ``k`` steps.

    ``p_target: (3,)`` world frame, m. Each step takes ``e = p_target - p(q)``, the damped step of the position
    rows of the Jacobian, shrinks it uniformly so that no joint moves more than ``max_step`` (rad), and clips
    ``q + dq`` into the joint limits ``chain.lower``, ``chain.upper``. ``errors[i]`` is ``|e|`` after ``i`` steps.
    Stops when ``|e| < TOL`` (converged), when :func:`stalled`, or after ``iterations`` steps.
    """
    q, errors = np.array(q0, dtype=float), []
    while True:
        e = p_target - fk(chain, q).p
        errors.append(np.linalg.norm(e))
        if errors[-1] < TOL or stalled(errors) or len(errors) > iterations:
            return q, np.array(errors)
        dq = damped_step(jacobian(chain, q)[:3], e, lam)
        dq *= min(1.0, max_step / np.abs(dq).max())  # far from the target the linear model is poor: short steps
        q = np.clip(q + dq, chain.lower, chain.upper)


def solve_by_hand(chain, p_target: np.ndarray, rng: np.random.Generator, restarts: int = RESTARTS):
    """:func:`ik_by_hand` from the mid-range pose, then from up to ``restarts`` random in-limit poses
    (``chain.random_q(rng, restarts)``) until one converges -> ``(q: (n,) rad, steps over all attempts)``.

    An attempt whose ``errors`` has ``k + 1`` entries took ``k`` steps. ``q`` is the converged attempt's answer;
    when none converges, the last attempt's (the steps still count every attempt).
    """
    starts = [0.5 * (chain.lower + chain.upper)] + list(chain.random_q(rng, restarts))
    steps = 0
    for q0 in starts:
        q, errors = ik_by_hand(chain, p_target, q0)
        steps += len(errors) - 1
        if errors[-1] < TOL:
            break
    return q, steps


@dataclass(frozen=True)
class BuildRun:
    n: int  # targets
    converged: int  # hand-built answers within TOL of the target (MuJoCo's site position)
    rate: float  # converged / n
    steps_median: float  # hand-built steps over all attempts, median over the targets ...
    steps_max: int  # ... and the most
    mujoco_error_hand: float  # m, median |p_target - MuJoCo site position| at the hand-built answers ...
    mujoco_error_lib: float  # m, ... and at solve_ik's
    # per target missed: {"error_mm": its answer's error, "library_error_mm": solve_ik's, "near_limit": [{"joint",
    # "to_limit" (rad)}]}, the joints of the pose it came from that lie within NEAR_LIMIT of a limit, and how far
    misses: list
    targets: np.ndarray = unsaved()  # (k, 3) m
    q_true: np.ndarray = unsaved()  # (k, 5) the in-limit poses the targets come from
    q_hand: np.ndarray = unsaved()  # (k, 5) the hand-built solver's answers
    q_lib: np.ndarray = unsaved()  # (k, 5) solve_ik's answers (position task)
    steps: np.ndarray = unsaved()  # (k,) hand-built steps taken over all attempts
    errors_hand: np.ndarray = unsaved()  # (k,) m, |p_target - MuJoCo site position at q_hand|
    errors_lib: np.ndarray = unsaved()  # (k,) m


def run(n_targets: int = 20, seed: int = SEED) -> BuildRun:
    """Random reachable SO-101 positions (FK of in-limit poses, seeded), solved by hand and by solve_ik."""
    chain, model = robots.load("so101"), robots.mujoco_model("so101")
    rng = np.random.default_rng(seed)
    q_true = chain.random_q(rng, n_targets)
    targets = fk(chain, q_true).p
    hand = [solve_by_hand(chain, p, rng) for p in targets]
    lib = [solve_ik(chain, p, task="position", rng=np.random.default_rng(seed)).q for p in targets]

    def err(qs):
        return np.array([np.linalg.norm(p - mj.site_pose(model, chain, q)[:3, 3]) for p, q in zip(targets, qs)])

    q_hand, steps = np.array([q for q, _ in hand]), np.array([n for _, n in hand])
    e_hand, e_lib = err(q_hand), err(lib)
    ok = e_hand < TOL
    to_limit = np.minimum(q_true - chain.lower, chain.upper - q_true)  # (k, 5) rad
    misses = [{"error_mm": 1000 * e_hand[i], "library_error_mm": 1000 * e_lib[i], "near_limit": [
                  {"joint": name, "to_limit": float(d)} for name, d in zip(chain.joint_names, to_limit[i])
                  if d < NEAR_LIMIT]}
              for i in np.flatnonzero(~ok)]
    return BuildRun(len(ok), int(ok.sum()), float(ok.mean()), float(np.median(steps)), int(steps.max()),
                    float(np.median(e_hand)), float(np.median(e_lib)), misses, targets, q_true, q_hand, np.array(lib),
                    steps, e_hand, e_lib)


def print_run(r: BuildRun) -> None:
    print(f"== IK by hand: damped least squares on the position error (lambda {LAMBDA} m/rad), SO-101, "
          f"{r.n} random reachable targets, from the mid-range pose then up to {RESTARTS} random "
          "restarts ==")
    print(f"  converged (MuJoCo site within {TOL:g} m): {r.converged} of {r.n}; "
          f"steps median {r.steps_median:.3g}, max {r.steps_max}")
    for m in r.misses:
        near = ", ".join(f"{j['joint']} {j['to_limit']:.3f} rad" for j in m["near_limit"]) or "none"
        print(f"  missed by {m['error_mm']:.2f} mm (solve_ik: {m['library_error_mm']:.1e} mm); joints of its "
              f"generating pose within {NEAR_LIMIT} rad of a limit: {near}")
    print(f"  MuJoCo error at the hand-built answers: median {r.mujoco_error_hand:.1e} m; "
          f"at solve_ik's: median {r.mujoco_error_lib:.1e} m")


# ---- the lab: your loop against the library's solver ----------------------------------------------------

LAB_SEED, LAB_TARGETS = 11, 50  # the lab's targets: FK images of seeded uniform in-limit SO-101 poses
LAB_MARGIN = 0.1  # the lab passes when success >= solve_ik's minus this (5 of 50 targets) ...
LAB_FACTOR = 2.0  # ... and the median iterations over converged targets are at most this times solve_ik's


@dataclass(frozen=True)
class Score:
    """One solver on the lab's targets, each solved once from the mid-range pose (no restarts)."""

    success: float  # fraction with |p(q) - p_target| < TOL and q inside the joint limits
    median_iterations: float | None  # steps, median over the successful targets (None: none succeeded)
    reached: int  # targets that succeeded
    q: np.ndarray = unsaved()  # (k, n) rad
    iterations: np.ndarray = unsaved()  # (k,) steps
    stops: dict | None = None  # {reason: attempts} for each of STOPS (ik_by_hand's attempts only)


def lab_targets(chain, seed: int = LAB_SEED, n: int = LAB_TARGETS) -> np.ndarray:
    """The lab's targets ``(n, 3)`` m, world frame: positions of seeded uniform in-limit poses (all reachable)."""
    return fk(chain, chain.random_q(np.random.default_rng(seed), n)).p


def score(chain, targets: np.ndarray, q: np.ndarray, iterations: np.ndarray) -> Score:
    """Success (FK within ``TOL``, inside the limits) and median iterations of answers ``q: (k, n)``."""
    inside = np.all((q >= chain.lower) & (q <= chain.upper), axis=1)
    ok = (np.linalg.norm(fk(chain, q).p - targets, axis=1) < TOL) & inside
    return Score(float(ok.mean()), float(np.median(iterations[ok])) if ok.any() else None, int(ok.sum()), q,
                 iterations)


def lab_hand(chain, targets: np.ndarray, **options) -> Score:
    """:func:`ik_by_hand` (``options``: its ``lam``, ``max_step``) once per target from the mid-range pose."""
    runs = [ik_by_hand(chain, p, chain.q_middle.copy(), **options) for p in targets]
    s = score(chain, targets, np.array([q for q, _ in runs]), np.array([len(e) - 1 for _, e in runs]))
    reasons = [stop_reason(e) for _, e in runs]
    return dataclasses.replace(s, stops={k: reasons.count(k) for k in STOPS})


def lab_library(chain, targets: np.ndarray, **options) -> Score:
    """``solve_ik`` (its default method, ``lm``) once per target from the mid-range pose, no restarts (``options``:
    further :class:`Solver` fields, such as ``step``)."""
    rs = [solve_ik(chain, p, chain.q_middle, task="position", solver=Solver(restarts=0, **options)) for p in targets]
    return score(chain, targets, np.array([r.q for r in rs]), np.array([r.iterations for r in rs]))


def passes(hand: Score, library: Score) -> bool:
    """The lab's rule: success within ``LAB_MARGIN`` of the library's, median iterations within ``LAB_FACTOR``."""
    return (hand.success >= library.success - LAB_MARGIN and hand.median_iterations is not None
            and hand.median_iterations <= LAB_FACTOR * library.median_iterations)


@dataclass(frozen=True)
class Lab:
    """The lab's judgement on ``n`` targets (``seed``): both scores, the rule (``margin``, ``factor``), whether the
    hand-built loop passes, and the rule's two thresholds (success, median iterations) it is held to."""

    n: int
    seed: int
    margin: float
    factor: float
    hand: Score
    library: Score
    passes: bool
    success_needed: float
    iterations_allowed: float
    in_noise: bool  # the success gap is under twice its standard error sqrt(2 p (1 - p) / n), p the pooled success


def judge_lab(hand: Score, library: Score) -> Lab:
    """The lab's rule (:func:`passes`) applied to the hand-built loop's and ``solve_ik``'s scores."""
    n, p = len(hand.q), (hand.success + library.success) / 2
    return Lab(n, LAB_SEED, LAB_MARGIN, LAB_FACTOR, hand, library, passes(hand, library),
               library.success - LAB_MARGIN, LAB_FACTOR * library.median_iterations,
               abs(hand.success - library.success) < 2 * np.sqrt(2 * p * (1 - p) / n))


@dataclass(frozen=True)
class StepLimits:
    """Why ``solve_ik`` needs fewer iterations in the lab: its default step limit ``library_step`` (rad) against the
    lab's ``MAX_STEP``; the lab's loop at the library's limit (``hand``) and ``solve_ik`` at the lab's (``library``)."""

    library_step: float
    hand: Score
    library: Score


def step_limits(chain, targets: np.ndarray) -> StepLimits:
    """Both lab solvers with their step limits swapped (:class:`StepLimits`), on ``targets``."""
    step = Solver().step
    return StepLimits(step, lab_hand(chain, targets, max_step=step), lab_library(chain, targets, step=MAX_STEP))


def print_lab(lab: Lab, swap: StepLimits) -> None:
    print(f"\n== The lab: {lab.n} SO-101 targets (seed {lab.seed}), one attempt each from the mid-range pose ==")
    for label, s in (("ik_by_hand", lab.hand), ("solve_ik (lm)", lab.library)):
        its = "-" if s.median_iterations is None else f"{s.median_iterations:.1f}"
        print(f"  {label:14s} success {s.success:4.0%}   median iterations {its}")
    print(f"  passes (success >= solve_ik's - {lab.margin:g}, iterations <= {lab.factor:g} x): {lab.passes}")
    print(f"  step limits swapped: ik_by_hand at solve_ik's {swap.library_step:g} rad: success {swap.hand.success:4.0%}, "
          f"median iterations {swap.hand.median_iterations:.1f}; solve_ik at {MAX_STEP:g} rad: success "
          f"{swap.library.success:4.0%}, median iterations {swap.library.median_iterations:.1f}")


# ---- break it: no damping, no step limit, too much damping ----------------------------------------

HEAVY = 0.5  # m/rad, Break it's heavy damping: about the size of the position rows' largest singular value
VARIANTS = (("built", "as built", LAMBDA, MAX_STEP), ("undamped", "undamped, step-limited", 0.0, MAX_STEP),
            ("unlimited", "no step limit", LAMBDA, np.inf), ("wild", "plain Gauss-Newton (neither)", 0.0, np.inf),
            ("heavy", "heavy damping", HEAVY, MAX_STEP))
Q_STRETCHED = np.array([0.0, 1.3, -1.3, 0.0, 0.0])  # rad: reaching far out, near a singularity of the position rows
PULL = 0.03  # m: the target there, this far back along the direction the arm can barely move


@dataclass(frozen=True)
class Variant:
    """The lab's loop with parts removed (one of VARIANTS): its damping (m/rad), step limit (rad; None: none) and
    its score on the lab's targets."""

    key: str
    label: str
    lam: float
    max_step: float | None
    success: float
    median_iterations: float | None  # None: no target reached
    stops: dict  # {reason: attempts} for each of STOPS
    keywords: str  # how to ask ik_by_hand for this variant: "lam=0.0, max_step=np.inf" ("": the defaults)


@dataclass(frozen=True)
class BreakIt:
    """Every variant of VARIANTS on the lab's targets; those that solved some targets, those that solved none, and
    the heavy damping one (the page's stop counts); each variant's Score (unsaved)."""

    variants: tuple[Variant, ...]
    solved: tuple[Variant, ...]
    unsolved: tuple[Variant, ...]
    heavy: Variant
    scores: dict[str, Score] = unsaved()


def keywords(lam: float, max_step: float) -> str:
    """The keyword arguments that turn :func:`ik_by_hand`'s defaults into this damping and step limit, as Python
    source: ``keywords(0.0, np.inf)`` -> ``"lam=0.0, max_step=np.inf"``; ``""`` for the defaults."""
    return ", ".join([f"lam={lam!r}"] * (lam != LAMBDA) + [
        "max_step=np.inf" if np.isinf(max_step) else f"max_step={max_step!r}"] * (max_step != MAX_STEP))


def break_step(chain, targets: np.ndarray) -> BreakIt:
    """The lab's loop (:func:`lab_hand`) with each of VARIANTS' damping and step limit on ``targets``."""
    scores = {key: lab_hand(chain, targets, lam=lam, max_step=max_step) for key, _, lam, max_step in VARIANTS}
    variants = tuple(Variant(key, label, lam, max_step if np.isfinite(max_step) else None, scores[key].success,
                             scores[key].median_iterations, scores[key].stops, keywords(lam, max_step))
                     for key, label, lam, max_step in VARIANTS)
    return BreakIt(variants, tuple(v for v in variants if v.median_iterations is not None),
                   tuple(v for v in variants if v.median_iterations is None),
                   next(v for v in variants if v.key == "heavy"), scores)


@dataclass(frozen=True)
class NearSingular:
    """Solves from ``q`` (Q_STRETCHED) with each guard rail on or off (VARIANTS' keys ``"built"``, ``"undamped"``,
    ``"unlimited"``, ``"wild"``) toward a target ``pull`` m back along the weak direction; and the first step toward
    a ``mixed`` target, ``pull`` m away along the strong and the weak directions alike."""

    labels: dict  # key -> the variant's name, as in Break it's table
    q: np.ndarray  # (5,) rad, the start
    sigma_min: float  # m/rad, smallest singular value of the position rows at the start
    pull: float  # m
    step_bound: float  # rad, pull / (2 LAMBDA): the damped step's largest length
    target: np.ndarray  # (3,) m
    mixed: np.ndarray  # (3,) m, the mixed target: pull / sqrt(2) m back along the weak direction and up the strong one
    mixed_each: float  # m, pull / sqrt(2): the mixed target's offset along each of the two directions
    first_step: dict  # key -> largest joint change of the first step, rad
    first_step_norm: dict  # key -> length |q1 - q_start| of the first step, rad (the bound limits this)
    asked: float  # rad, largest joint change the undamped first step asks for, before the joint limits clip it
    mixed_asked: float  # rad, the same toward the mixed target: the step limit scales that step by MAX_STEP / this
    # rad, largest joint change of the damped second step toward ``target`` before the step limit: above MAX_STEP,
    # so "as built" shortens it and "no step limit" does not, and their paths part there
    second_asked: float
    peak_error: dict  # key -> largest |e| on the way, m
    final_error: dict  # key -> m
    steps: dict  # key -> steps taken to converge (or to stop)
    falls: dict  # key -> the error fell at every step
    distance: dict  # key -> max |q - q_start| of the answer, rad
    mixed_after_mm: dict  # key -> |e| after one step toward the mixed target, mm
    mixed_kept: dict  # key -> fraction of the Gauss-Newton step's strong-direction share its first step keeps there
    errors: dict = unsaved()  # key -> (k + 1,) m, |e| after each step toward ``target``


SINGULAR_KEYS = ("built", "undamped", "unlimited", "wild")  # the VARIANTS tried from the stretched pose


def near_singular(chain) -> NearSingular:
    """From the stretched-out pose, a target ``PULL`` back along the weak direction, with damping and the step limit
    each on or off (the undamped, unlimited Gauss-Newton step divides by ``sigma_min``); and a target as far along
    the strong and weak directions alike, where a step limit shrinks the strong share with the weak one."""
    J = jacobian(chain, Q_STRETCHED)[:3]
    U, S, Vt = np.linalg.svd(J)
    p0 = fk(chain, Q_STRETCHED).p
    weak = -np.sign(U[:, -1] @ p0) * U[:, -1]  # the weak direction, pointing back toward the base
    strong = np.sign(U[2, 0]) * U[:, 0]  # the strong direction, pointing up (an SVD may return either sign)
    target, mixed = p0 + PULL * weak, p0 + PULL * (weak + strong) / np.sqrt(2)
    mixed_gn = damped_step(J, mixed - p0, 0.0)
    strong_gn = Vt[0] @ mixed_gn  # the Gauss-Newton step's share along the strong direction
    out = {k: {} for k in ("first_step", "first_step_norm", "peak_error", "final_error", "steps", "falls", "distance",
                           "mixed_after_mm", "mixed_kept", "errors")}
    for key, _, lam, max_step in (v for v in VARIANTS if v[0] in SINGULAR_KEYS):
        q1, _ = ik_by_hand(chain, target, Q_STRETCHED, lam, max_step, iterations=1)
        q, errors = ik_by_hand(chain, target, Q_STRETCHED, lam, max_step)
        m1, after = ik_by_hand(chain, mixed, Q_STRETCHED, lam, max_step, iterations=1)
        out["first_step"][key] = np.abs(q1 - Q_STRETCHED).max()
        out["first_step_norm"][key] = np.linalg.norm(q1 - Q_STRETCHED)
        out["peak_error"][key], out["final_error"][key] = errors.max(), errors[-1]
        out["steps"][key], out["falls"][key] = len(errors) - 1, bool(np.all(np.diff(errors) < 0))
        out["distance"][key] = np.abs(q - Q_STRETCHED).max()
        out["mixed_after_mm"][key] = 1000 * after[1]
        out["mixed_kept"][key] = float(Vt[0] @ (m1 - Q_STRETCHED) / strong_gn)
        out["errors"][key] = errors
    asked = float(np.abs(damped_step(J, target - p0, 0.0)).max())
    q1, _ = ik_by_hand(chain, target, Q_STRETCHED, iterations=1)
    second = damped_step(jacobian(chain, q1)[:3], target - fk(chain, q1).p, LAMBDA)
    labels = {key: label for key, label, *_ in VARIANTS if key in SINGULAR_KEYS}
    return NearSingular(labels, Q_STRETCHED, float(S[-1]), PULL, PULL / (2 * LAMBDA), target, mixed,
                        PULL / np.sqrt(2), asked=asked, mixed_asked=float(np.abs(mixed_gn).max()),
                        second_asked=float(np.abs(second).max()), **out)


@dataclass(frozen=True)
class DampingScale:
    """The damping against the position rows' singular values (m/rad). Along a direction of singular value ``sigma``
    the damped step keeps ``sigma^2 / (sigma^2 + lam^2)`` of the Gauss-Newton step; it is ``J^T e / lam^2`` only
    when every ``sigma`` is far below ``lam``."""

    lam: float  # HEAVY
    sigma_max_median: float  # largest singular value, median over the poses the lab's targets come from ...
    sigma_min_median: float  # ... and the smallest
    sigma_start: np.ndarray  # (3,) at the mid-range start, where every lab attempt begins
    kept_strong: float  # HEAVY's fraction of the Gauss-Newton step kept there along the strongest direction ...
    kept_weak: float  # ... and along the weakest
    gradient_gap: float  # median over the lab's targets of |dq - J^T e / lam^2| / |dq|, dq HEAVY's first step


def damping_scale(chain, seed: int = LAB_SEED, n: int = LAB_TARGETS) -> DampingScale:
    """:class:`DampingScale` of ``HEAVY`` at the lab's poses (those of :func:`lab_targets`) and first steps."""
    poses = chain.random_q(np.random.default_rng(seed), n)
    sigma = np.linalg.svd(jacobian(chain, poses)[:, :3], compute_uv=False)
    J = jacobian(chain, chain.q_middle)[:3]
    s0 = np.linalg.svd(J, compute_uv=False)
    kept = s0**2 / (s0**2 + HEAVY**2)
    e = fk(chain, poses).p - fk(chain, chain.q_middle).p
    gaps = [np.linalg.norm((dq := damped_step(J, ei, HEAVY)) - J.T @ ei / HEAVY**2) / np.linalg.norm(dq) for ei in e]
    return DampingScale(HEAVY, float(np.median(sigma[:, 0])), float(np.median(sigma[:, -1])), s0, float(kept[0]),
                        float(kept[-1]), float(np.median(gaps)))


def print_break(brk: BreakIt, ns: NearSingular, scale: DampingScale) -> None:
    print("\n== Break it: the lab's loop with parts removed (same targets and start) ==")
    print(f"  {'variant':24s} {'lambda':>6s} {'max_step':>8s} {'success':>8s} {'median it':>9s}   stopped: "
          + ", ".join(STOPS))
    for (_, label, lam, max_step), s in zip(VARIANTS, brk.variants):
        its = "-" if s.median_iterations is None else f"{s.median_iterations:.1f}"
        print(f"  {label:24s} {lam:6g} {max_step:8g} {s.success:8.0%} {its:>9s}   "
              + ", ".join(str(s.stops[k]) for k in STOPS))
    print(f"  singular values of the position rows at the lab's poses (m/rad): median largest "
          f"{scale.sigma_max_median:.3f}, median smallest {scale.sigma_min_median:.3f}; at the mid-range start "
          f"{fmt_row(scale.sigma_start, 6, 3)}")
    print(f"  lambda {HEAVY:g} keeps {scale.kept_strong:.0%} of the Gauss-Newton step along the strongest direction "
          f"there and {scale.kept_weak:.0%} along the weakest; its first step differs from J^T e / lambda^2 by a "
          f"median {scale.gradient_gap:.0%}")
    print(f"  near the singularity: start q = {Q_STRETCHED} (sigma_min {ns.sigma_min:.4f} m/rad), target {PULL} m "
          f"back along the weak direction")
    labels = {key: label for key, label, *_ in VARIANTS}
    for key in ns.first_step:
        print(f"  {labels[key]:24s} first step {ns.first_step[key]:.3f} rad, peak error {ns.peak_error[key]:.3f} m, "
              f"{ns.steps[key]} steps (error fell at each: {ns.falls[key]}), final {ns.final_error[key]:.1e} m, "
              f"answer's largest joint change from the start, max |q - q_start|, {ns.distance[key]:.3f} rad")
    print(f"  toward a target {PULL} m away along the strong and weak directions alike, after one step:")
    for key in ns.first_step:
        print(f"  {labels[key]:24s} error {ns.mixed_after_mm[key]:.1f} mm; the step, after clipping to the joint "
              f"limits, keeps {ns.mixed_kept[key]:.1%} of the unclipped Gauss-Newton step's share along the strong "
              "direction")


@plt.rc_context({"font.size": 12})  # and larger text, for a phone's width
def plot_near_singular(ns: NearSingular) -> None:
    fig, ax = plt.subplots(figsize=(5.2, 4.9))  # narrow: the text stays legible at a phone's width
    labels = {key: label for key, label, *_ in VARIANTS}
    for key, style in zip(SINGULAR_KEYS, ("o-", "^-", "v:", "s--")):
        ax.semilogy(ns.errors[key], style, label=labels[key])
    ax.axhline(TOL, color="k", ls=":", lw=1, label=f"tolerance {TOL:.0e} m")
    ax.set_xlabel("step")
    ax.set_ylabel("|p_target - p(q)|  (m)")
    ax.set_title(f"From a stretched pose, σ_min {ns.sigma_min:.4f} m/rad")
    ax.legend(fontsize=10, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.17))  # below: no curve hidden
    fig.tight_layout()
    save_figure(fig, HERE / "singular_start.png", dpi=110)
    plt.close(fig)


def main(full: bool = False) -> dict:
    """The lesson's build steps, printed; their numbers saved and returned. ``full``: no larger size
    here."""
    r = run(N_TARGETS)
    print_run(r)
    chain = robots.load("so101")
    targets = lab_targets(chain)
    brk = break_step(chain, targets)
    lab = judge_lab(brk.scores["built"], lab_library(chain, targets))  # "built": the lab's loop as written
    swap = step_limits(chain, targets)
    print_lab(lab, swap)
    ns = near_singular(chain)
    scale = damping_scale(chain)
    print_break(brk, ns, scale)
    plot_near_singular(ns)
    figures = [
        Figure("singular_start.png",
               "The error per step from the stretched pose: with damping, a step limit or both the error "
               "falls at every step; with neither the first step throws the tool far away, then it comes back.",
               "Position error per step, log scale, from the stretched SO-101 pose, for the loop as built, "
               "undamped with the step limit, damped without it, and with neither. The first three fall at "
               "every step to below the tolerance within a few steps; the last first jumps far above the "
               "starting error, then falls back and converges later."),
    ]
    return save_results(HERE, "build.py", {
        "lam": LAMBDA, "tol": TOL, "max_step": MAX_STEP, "patience": PATIENCE, "iterations": ITERATIONS,
        "restarts": RESTARTS, "library_restarts": DEFAULT_RESTARTS, "run": r, "lab": lab,
        "swap": swap,
        "break": brk.solved, "break_none": brk.unsolved, "heavy": brk.heavy,  # break_none: no median to show
        "scale": scale,
        "singular": ns}, figures=figures)


if __name__ == "__main__":
    run_script(main, __file__, full_run())
