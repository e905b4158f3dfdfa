"""Lesson 12, Redundancy and the Null Space, Experiment and Break it: "With more joints than task dimensions
there are infinitely many answers. Choose among them on purpose."

Steps (each returns its numbers; call them from a Python prompt with small sizes):
1. ``null_dimensions``: how many directions of joint motion leave the task alone (Panda pose/position, planar 3R).
2. ``panda_self_motion``: the Panda swings its elbow through the null space while the tool pose stays fixed;
   resolved-rate open loop vs corrected; ``planar_family``: a planar 3R's whole 1-D family of arms on one tip point.
3. ``choose_on_purpose``: random targets for the Panda (pose) and the SO-101 (position: 5 joints for 3 task
   dimensions), plain IK vs IK refined in the null space for joint-limit avoidance, manipulability, posture.
4. ``priority``: hold the tool (primary) and raise the elbow (secondary); the conflicting case and its
   algorithmic singularity, undamped vs damped; the priorities swapped. ``conflict_spread``: the undamped conflict
   rerun with changes the size of round-off; ``leading_projector``: what the leading N1 guards against.
5. ``elbow_post``: the self-motion sweeps the elbow into a post; with ``avoid=`` it stops clear while the tool holds.

Run: uv run python experiments/12-null-space/experiment.py [--full]
Writes experiment_output.txt, results.json, self_motion.png, planar3r_self_motion.png, priority.png and
elbow_post.png beside this file. Deterministic (seeds below). ``--full`` (or PHYSAI_FULL=1) uses 1,000 targets per
robot instead of 40 and 1 s of self-motion instead of 0.25 s.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from physai import nullspace as ns  # noqa: E402
from physai.nullspace import DAMPER_GAIN  # noqa: E402
from physai import robots  # noqa: E402
from physai.ik import solve_ik_batch, task_residual  # noqa: E402
from physai.kinematics import fk, jacobian, tool_pose, tool_pose_and_jacobian  # noqa: E402
from physai.course.lesson import (  # noqa: E402
    Figure,
    full_run,
    out_dir,
    run_script,
    save_figure,
    save_results,
    unsaved,
)
from physai.transforms import pose_error  # noqa: E402

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
PANDA_HOME = np.array([0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853])  # keyframe "home"
# libfranka's "ready" pose: shoulder bent (joint2 != 0), so joints 1 and 3 are not coaxial as at home
PANDA_READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
SEED_TARGETS, SEED_IK = 0, 1
PLANAR_Q0 = np.array([0.2, 0.9, 0.8])
DT = 1e-3  # s, a 1 kHz resolved-rate loop
SELF_SPEED = 1.0  # rad/s, joint-space speed along the null space
SELF_T = 1.0  # s
ELBOW = 3  # the Panda's joint4 anchor (body link4 origin) is "the elbow"
PRIORITY_T = 0.75  # s
PRIORITY_DT = 5e-3  # s
K_ELBOW = 4.0  # 1/s, secondary task gain
LAM2 = 0.02  # m/rad, damping of the secondary task (0: undamped, no bound on its gain)
DIVERGED = 1e3  # rad: a run whose joints pass this has diverged and is stopped there
K_TOOL_SECONDARY = 10.0  # 1/s, the tool pose gain when it is demoted to the secondary task
TOOL_LEFT = 1e-3  # m: a tool this far from where it is held has left the held pose (the priority figure fades it)
CHAR_LENGTH = 0.3  # m: the Panda's manipulability scales its rotation rows by this length to mix them with metres
SOFTMIN_TAU = 0.01  # the soft minimum's temperature, in fractions of a joint's range
SWING_T, SWING_DT = 1.0, 1e-2  # s: the corrected self-motion from 'ready' that swings the elbow down for Break it


def _save(fig, name: str) -> None:
    fig.tight_layout()
    save_figure(fig, HERE / name, dpi=110)
    plt.close(fig)


def residual(chain, q, T_target, task):
    """Primary residual ``e`` (target minus current), task Jacobian and errors at one ``q`` (physai.ik's definition)."""
    T, J = tool_pose_and_jacobian(chain, q[None])
    e, Jt, perr, oerr = task_residual(task, T, J, T_target[None], np.array([0.0, 0.0, 1.0]))
    return e[0], Jt[0], perr[0], oerr[0]


def drift(chain, qs, T0):
    """Largest tool position (m) and orientation (rad) change from ``T0`` over a joint trajectory ``qs: (k, n)``."""
    err = pose_error(tool_pose(chain, qs), T0)
    return np.linalg.norm(err[:, :3], axis=-1).max(), np.linalg.norm(err[:, 3:], axis=-1).max()


def self_motion(chain, q0, task, speed, dt, steps, correct):
    """Resolved-rate self-motion: ``qdot = J^+ (e / dt) + N (speed n)``, ``n`` the unit null vector kept continuous.

    ``correct=False`` drops the ``e / dt`` term (open-loop Euler), so the tool drifts by the second-order error
    of each tick.
    """
    T0 = tool_pose(chain, q0)
    q, prev, traj = q0.copy(), None, [q0.copy()]
    for _ in range(steps):
        e, Jt, _, _ = residual(chain, q, T0, task)
        n = ns.null_basis(Jt)[:, 0]
        if prev is not None and n @ prev < 0:
            n = -n
        prev = n
        v = e / dt if correct else np.zeros_like(e)
        q = q + dt * ns.redundant_rate(Jt, v, speed * n)
        traj.append(q.copy())
    return np.array(traj)



# ---- 1. how many answers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Dimension:
    """One robot and task: its joints, the task Jacobian's rank and the null space's dimension."""

    robot: str
    task: str
    joints: int
    rank: int
    null: int


@dataclass(frozen=True)
class Dimensions:
    """The Panda at 'ready' (pose and position tasks) and a planar 3R pose; and the Panda's null vector at the
    keyframe 'home' (unit, joint space)."""

    rows: tuple[Dimension, ...]
    home_null_vector: np.ndarray  # (7,)

    def at(self, robot: str, task: str) -> Dimension:
        return next(d for d in self.rows if (d.robot, d.task) == (robot, task))


def null_dimensions() -> Dimensions:
    """Joints, task rank and null-space dimension at the Panda's 'ready' pose and at a planar 3R pose."""
    panda, planar3r = robots.load("panda"), robots.load("planar3r")
    out = []
    for chain, rows, task, q in ((panda, 6, "pose", PANDA_READY), (panda, 3, "position", PANDA_READY),
                                 (planar3r, 2, "2-D position", PLANAR_Q0)):
        rank = int(np.linalg.matrix_rank(jacobian(chain, q)[:rows]))
        out.append(Dimension(chain.name, task, chain.n, rank, chain.n - rank))
    return Dimensions(tuple(out), ns.null_basis(jacobian(panda, PANDA_HOME))[:, 0])


def print_dimensions(dims: Dimensions) -> None:
    print("== 1. More joints than task dimensions: a null space of joint motions that leave the task alone ==")
    for d in dims.rows:
        print(f"  {d.robot:9s} {d.task:13s}: n = {d.joints}, task rank {d.rank}, null space dimension {d.null}")
    n_home = dims.home_null_vector
    print(f"  at the keyframe 'home' (joint2 = 0) the null vector is {np.round(n_home, 3)}: joints 1 and 3 are")
    print("  coaxial and counter-rotate, a self-motion that moves nothing, not even the elbow. Start from 'ready'.")


# ---- 2. self-motion --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftRow:
    """One resolved-rate variant: its time step (s), whether it feeds the task error back, and the largest tool
    position (m) and orientation (rad) change."""

    label: str
    dt: float
    corrected: bool
    pos: float
    rot: float


@dataclass(frozen=True)
class SelfMotion:
    seconds: float  # of self-motion
    speed: float  # rad/s along the null space
    variants: tuple[DriftRow, ...]
    elbow_swing: float  # m, the elbow's largest distance from its start (corrected dt = 1e-3 run)
    elbow_rise: float  # m, the largest change of its height (world z) along the same run
    joint_travel: float  # rad, the largest joint change over that run
    drift: np.ndarray = unsaved()  # (variants, 2) largest tool position (m) and orientation (rad) change
    trajectory: np.ndarray = unsaved()  # (ticks + 1, 7) the corrected dt = 1e-3 run
    elbow: np.ndarray = unsaved()  # (ticks + 1, 3) m, the elbow (joint4 anchor) along it


def panda_self_motion(seconds: float = SELF_T) -> SelfMotion:
    """The Panda from 'ready' along its null space at 1 rad/s for ``seconds``: open loop vs corrected."""
    panda = robots.load("panda")
    T0 = tool_pose(panda, PANDA_READY)
    variants = (("open loop (no correction), dt = 1e-3", False, DT),
                ("with correction J^+ e/dt, dt = 1e-2", True, 1e-2),
                ("with correction J^+ e/dt, dt = 1e-3", True, DT))
    runs = [self_motion(panda, PANDA_READY, "pose", SELF_SPEED, dt, round(seconds / dt), correct)
            for _, correct, dt in variants]
    drifts, trajectory = np.array([drift(panda, tr, T0) for tr in runs]), runs[-1]
    elbow = fk(panda, trajectory).anchors[:, ELBOW]
    return SelfMotion((len(trajectory) - 1) * DT, SELF_SPEED,
                      tuple(DriftRow(label, dt, correct, d[0], d[1]) for (label, correct, dt), d in zip(variants, drifts)),
                      np.linalg.norm(elbow - elbow[0], axis=-1).max(), np.abs(elbow[:, 2] - elbow[0, 2]).max(),
                      np.abs(trajectory[-1] - trajectory[0]).max(), drifts, trajectory, elbow)


def print_self_motion(s: SelfMotion) -> None:
    print(f"\n== 2. Self-motion: the joints move, the tool does not (Panda from 'ready', {SELF_SPEED} rad/s along "
          f"the null space for {s.seconds:g} s) ==")
    print(f"  {'resolved-rate variant':44s} {'pos drift (m)':>14s} {'rot drift (rad)':>16s}")
    for v in s.variants:
        print(f"  {v.label:44s} {v.pos:14.2e} {v.rot:16.2e}")
    print(f"  the elbow moved up to {s.elbow_swing:.3f} m from its start (its height by {s.elbow_rise:.4f} m); joint "
          f"travel {s.joint_travel:.3f} rad max.")
    print("  Open loop, each Euler tick leaves a second-order error that accumulates; the correction J^+ e/dt removes it")
    print("  every tick, so only one tick's second-order error remains.")


def plot_self_motion(s: SelfMotion) -> None:
    t = np.arange(len(s.trajectory)) * DT
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    turned = s.trajectory - s.trajectory[0]  # from ready: the angles themselves span too much to show the change
    for i in range(turned.shape[1]):
        a1.plot(t, turned[:, i], label=f"joint{i + 1}")
    a1.set_ylabel("joint turned from ready (rad)")
    a1.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes: no line hidden
    a1.set_title(f"Panda self-motion: tool pose fixed (drift {s.drift[-1, 0]:.1e} m, {s.drift[-1, 1]:.1e} rad)")
    moved = 1000 * (s.elbow - s.elbow[0])  # mm, world axes
    a2.plot(t, np.linalg.norm(moved, axis=1), color="0.75", lw=5, label="distance from start")  # under the parts
    for k, axis in enumerate("xyz"):
        a2.plot(t, moved[:, k], lw=1.5, label=f"{axis} (world)")
    a2.set_xlabel("time (s)")
    a2.set_ylabel("elbow moved from start (mm)")
    a2.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, "self_motion.png")


@dataclass(frozen=True)
class PlanarFamily:
    """The planar 3R with its tip held at the tip of ``PLANAR_Q0``: its link lengths (m, from the model), the start
    ``q0`` (rad), the tip (m), its largest drift (m) and the range of the last link's absolute angle (rad) over the
    whole family ``q`` (joint vectors, once round, unsaved)."""

    links: np.ndarray  # (3,) m
    q0: np.ndarray  # (3,) rad
    tip: np.ndarray  # (2,)
    drift: float
    last_link_range: float
    q: np.ndarray = unsaved()  # (k, 3) rad


PLANAR_DT = 2e-2  # s, at 1 rad/s along the null space


def planar_family() -> PlanarFamily:
    """The planar 3R's self-motion from ``PLANAR_Q0``, tip held, until it is back where it started: the family of
    arms on one tip point is a closed loop, and this walks all of it."""
    planar3r = robots.load("planar3r")
    walk = self_motion(planar3r, PLANAR_Q0, "position", 1.0, PLANAR_DT, 1000, True)
    gap = np.linalg.norm(np.angle(np.exp(1j * (walk - walk[0]))), axis=1)  # rad, each joint taken mod 2 pi
    away = int(np.argmax(gap > 0.5))
    fam = walk[: away + int(np.argmax(gap[away:] < 2 * PLANAR_DT)) + 1]  # up to the first return
    p0 = tool_pose(planar3r, PLANAR_Q0)[:3, 3]
    joints = np.vstack([fk(planar3r, PLANAR_Q0).anchors, p0])  # each joint, then the tip
    return PlanarFamily(np.linalg.norm(np.diff(joints, axis=0), axis=1), PLANAR_Q0, p0[:2],
                        drift(planar3r, fam, tool_pose(planar3r, PLANAR_Q0))[0], np.ptp(fam.sum(axis=1)), fam)


def plot_planar(family: PlanarFamily) -> None:
    planar3r, fam = robots.load("planar3r"), family.q
    p0 = family.tip
    fig, ax = plt.subplots(figsize=(6.6, 6))
    phi = fam.sum(axis=1)  # rad, the last link's absolute angle: where along the family an arm is
    colour = matplotlib.cm.ScalarMappable(plt.Normalize(phi.min(), phi.max()), "viridis")
    for q, a in zip(fam[:: len(fam) // 30], phi[:: len(fam) // 30]):
        pts = np.vstack([[0, 0, 0], fk(planar3r, q).anchors[1:], tool_pose(planar3r, q)[:3, 3]])
        ax.plot(pts[:, 0], pts[:, 1], "-o", ms=3, lw=1.2, alpha=0.8, color=colour.to_rgba(a))
    fig.colorbar(colour, ax=ax, shrink=0.8, label="last link's angle (rad)")
    ax.plot(*p0[:2], "k*", ms=14, label="tip target (fixed)")
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("planar 3R self-motion:\none tip position, the whole 1-D family of arms")
    ax.legend()
    _save(fig, "planar3r_self_motion.png")
    print(f"  planar 3R, tip held at ({p0[0]:.3f}, {p0[1]:.3f}) m, walked once round its family: tip drift "
          f"{family.drift:.1e} m,\n  while the last link's absolute angle ranges over {family.last_link_range:.2f} rad "
          "(planar3r_self_motion.png)")


# ---- 3. choosing on purpose ------------------------------------------------------------------------


@dataclass(frozen=True)
class ChoiceRow:
    """Plain IK or one refinement: success, median limit margin, median manipulability, median |q - q_pref| (rad),
    and the fraction of solved targets whose objective went down (None for plain IK)."""

    label: str
    success: float
    margin: float
    manip: float
    posture: float
    lowered: float | None


@dataclass(frozen=True)
class Choice:
    """Plain IK and four null-space refinements of it on the same ``n_targets`` targets."""

    robot: str
    task: str
    block: str  # manipulability block
    char_length: float  # m, the rotation rows' scale in the "full" block
    softmin_tau: float  # the soft-minimum objective's temperature (fractions of a range)
    n_targets: int
    rows: tuple[ChoiceRow, ...]  # plain IK, then each refinement
    manip_tight_joint: str  # the joint most often nearest its stop in the manipulability-refined solutions
    manip_tight_share: float  # the share of those solutions in which it is
    roll_offset_mm: float  # the tool point's distance from the last joint's axis (at mid-range; any pose)
    roll_tight_share: float  # the share of plain IK's solutions whose joint nearest its stop is the last one
    pref_margin: float  # the preferred posture's own limit margin (its nearest stop, as a share of that range)
    own_better: bool  # each refinement beats plain IK on its own measure (margin, manipulability, posture distance)
    paired: Paired  # the posture refinement's margin against the joint-limit one's, target by target
    softmin_paired: Paired  # the soft-minimum refinement's margin against the joint-limit one's, target by target
    softmin_best: bool  # the soft-minimum refinement has the largest median margin of all rows
    q_pref: np.ndarray = unsaved()  # (n,) the preferred posture
    targets: np.ndarray = unsaved()  # (k, 4, 4) tool poses (only the translation is asked for "position")
    labels: tuple[str, ...] = unsaved()  # "plain IK", then "+ <objective name>"
    solutions: np.ndarray = unsaved()  # (labels, k, n)
    converged: np.ndarray = unsaved()  # (labels, k)
    cost_lowered: np.ndarray = unsaved()  # (labels - 1,) fraction of solved targets whose objective went down
    measures: np.ndarray = unsaved()  # (labels, 4) the rows' success, margin, manip and posture


@dataclass(frozen=True)
class Paired:
    """The posture refinement's limit margin against the joint-limit refinement's on the targets both solve:
    ``diffs`` (posture minus limits, sorted), the share of targets where posture's is larger, the share where the two
    are equal (both refinements often leave a joint at its stop), the median difference and a distribution-free 95 % interval for it (order statistics ``diffs[k - 1]``, ``diffs[n - k]``: the sign
    test's)."""

    diffs: tuple[float, ...]
    share_ahead: float
    tied: float
    median: float
    low: float
    high: float


def paired_margins(posture: np.ndarray, limits: np.ndarray) -> Paired:
    """Paired comparison of two ``(k,)`` margin arrays over the same targets (see :class:`Paired`)."""
    d = np.sort(posture - limits)
    n = len(d)
    # the largest k with P(Binomial(n, 1/2) <= k - 1) <= 2.5 %: [d_(k), d_(n+1-k)] covers the median at >= 95 %
    k = max(j for j in range(1, n // 2 + 1) if sum(math.comb(n, i) for i in range(j)) / 2**n <= 0.025)
    lo, hi = float(d[k - 1]), float(d[n - k])
    return Paired(tuple(map(float, d)), float(np.mean(d > 0)), float(np.mean(d == 0)), float(np.median(d)), lo, hi)


def softmin_cost(chain, tau: float = SOFTMIN_TAU) -> ns.Objective:
    """Minus a soft minimum of the gaps to the stops: ``H = tau log sum_j exp(-g_j / tau)`` over the ``2n`` gaps
    ``g = ((q - l) / (u - l), (u - q) / (u - l))`` (fractions of each range), within ``tau log 2n`` above minus
    the smallest gap, the limit margin; gradient ``(w_upper - w_lower) / (u - l)``, ``w = softmax(-g / tau)``."""
    span = chain.upper - chain.lower

    def scaled(q):
        g = -np.concatenate([(q - chain.lower) / span, (chain.upper - q) / span], axis=-1) / tau
        return g, g.max(axis=-1, keepdims=True)

    def value(q):
        g, top = scaled(q)
        return tau * (top[..., 0] + np.log(np.exp(g - top).sum(axis=-1)))

    def gradient(q):
        g, top = scaled(q)
        w = np.exp(g - top)
        w /= w.sum(axis=-1, keepdims=True)
        return (w[..., chain.n:] - w[..., :chain.n]) / span

    return ns.Objective("soft minimum of the gaps", value, gradient)


def choose_on_purpose(robot: str, n_targets: int = 40) -> Choice:
    """Random targets (FK of uniform in-limit poses, seed 0) for ``"panda"`` (pose) or ``"so101"`` (position)."""
    chain = robots.load(robot)
    task, block = ("pose", "full") if robot == "panda" else ("position", "position")
    q_pref = PANDA_READY if robot == "panda" else 0.5 * (chain.lower + chain.upper)
    T = tool_pose(chain, chain.random_q(np.random.default_rng(SEED_TARGETS), n_targets))
    targets = T if task == "pose" else T[:, :3, 3]
    base = solve_ik_batch(chain, targets, task=task, rng=np.random.default_rng(SEED_IK))
    labels, sols, conv, lowered = ["plain IK"], [base.q], [base.converged], []
    for obj in (ns.joint_limit_cost(chain), ns.manipulability_cost(chain, block, CHAR_LENGTH), ns.posture_cost(chain, q_pref),
                softmin_cost(chain)):
        res = solve_ik_batch(chain, targets, task=task, prefer=ns.Prefer(obj), rng=np.random.default_rng(SEED_IK))
        labels.append(f"+ {obj.name}")
        sols.append(res.q)
        conv.append(res.converged)
        lowered.append(np.mean((res.cost < obj.value(base.q))[res.converged]))
    sols, conv, lowered = np.array(sols), np.array(conv), np.array(lowered)
    m = choice_measures(chain, block, q_pref, sols, conv)
    rows = tuple(ChoiceRow(label, *m[i], lowered[i - 1] if i else None) for i, label in enumerate(labels))
    span = chain.upper - chain.lower
    nearest = np.argmin(np.minimum(sols - chain.lower, chain.upper - sols) / span, axis=2)  # (labels, k)
    tight = nearest[2][conv[2]]
    joint = int(np.bincount(tight, minlength=chain.n).argmax())
    axes, anchors, p = fk(chain, 0.5 * (chain.lower + chain.upper))
    arm = p - anchors[-1]
    offset = 1000 * float(np.linalg.norm(arm - (arm @ axes[-1]) * axes[-1]))
    pref_margin = float(ns.limit_margin(chain, q_pref))
    own = bool(m[1, 1] > m[0, 1] and m[2, 2] > m[0, 2] and m[3, 3] < m[0, 3])
    both = conv[1] & conv[3]
    paired = paired_margins(ns.limit_margin(chain, sols[3][both]), ns.limit_margin(chain, sols[1][both]))
    both = conv[1] & conv[4]
    soft = paired_margins(ns.limit_margin(chain, sols[4][both]), ns.limit_margin(chain, sols[1][both]))
    return Choice(robot, task, block, CHAR_LENGTH, SOFTMIN_TAU, len(T), rows, chain.joint_names[joint], float(np.mean(tight == joint)),
                  offset, float(np.mean(nearest[0][conv[0]] == chain.n - 1)), pref_margin, own, paired, soft, bool(m[4, 1] > m[:4, 1].max()), q_pref, T, tuple(labels), sols, conv, lowered, m)


def choice_measures(chain, block: str, q_pref: np.ndarray, solutions: np.ndarray, converged: np.ndarray) -> np.ndarray:
    """(labels, 4): success, median limit margin, median manipulability (``block``), median |q - q_pref| per
    variant of ``solutions: (labels, k, n)``."""
    return np.array([[conv.mean(), np.median(ns.limit_margin(chain, qs)),
                      np.median(ns.manipulability(chain, qs, block, CHAR_LENGTH)),
                      np.median(np.linalg.norm(qs - q_pref, axis=-1))] for qs, conv in zip(solutions, converged)])


def print_choice(c: Choice) -> None:
    m = c.measures
    print(f"\n  {c.robot} ({c.task}, {c.n_targets} targets; manipulability of the '{c.block}' block)")
    print(f"  {'solutions':22s} {'success':>8s} {'med margin':>10s} {'med manip':>10s} {'med |q-q_pref|':>14s} "
          f"{'cost lowered':>12s}")
    for i, label in enumerate(c.labels):
        low = f"{c.cost_lowered[i - 1]:12.1%}" if i else f"{'':12s}"
        print(f"  {label:22s} {m[i, 0]:8.1%} {m[i, 1]:10.3f} {m[i, 2]:10.3g} {m[i, 3]:14.3f} {low}")
    for name, d in (("posture", c.paired), ("soft minimum", c.softmin_paired)):
        print(f"  {name} vs limits, target by target: {name}'s margin larger on {d.share_ahead:.1%}, equal on {d.tied:.1%}; median "
              f"difference {d.median:+.4f}, 95 % interval [{d.low:+.4f}, {d.high:+.4f}]")


# ---- 4. task priority ------------------------------------------------------------------------------


def _priority_run(panda, q_start, z_des, lam2, swapped, rate=ns.priority_rate):
    """One resolved-rate run of the two-level priority -> (elbow heights, largest single-joint speeds max_i |qdot_i|,
    final q, 2-norms of the secondary term, the tool's distance (m) from where it is held), each but q per tick; a
    run whose joints pass ``DIVERGED`` rad is stopped there (its heights end at the last tick it ran). ``rate``
    computes the priority formula (the library's by default)."""
    T0 = tool_pose(panda, q_start)
    k_tool = K_TOOL_SECONDARY if swapped else 1.0 / PRIORITY_DT
    q, zs, speeds, secondary, tool = q_start.copy(), [], [], [], []
    for _ in range(round(PRIORITY_T / PRIORITY_DT)):
        e, J1, tool_off, _ = residual(panda, q, T0, "pose")
        x, Jx = ns.point_jacobian(panda, q, ELBOW)
        J2, v2, v1 = Jx[2:], np.array([K_ELBOW * (z_des - x[2])]), k_tool * e
        (Ja, va), (Jb, vb) = ((J2, v2), (J1, v1)) if swapped else ((J1, v1), (J2, v2))
        qdot = rate(Ja, va, Jb, vb, lam2=lam2)
        q = q + PRIORITY_DT * qdot
        zs.append(x[2])
        speeds.append(np.abs(qdot).max())
        secondary.append(np.linalg.norm(qdot - ns.pinv(Ja) @ va))
        tool.append(tool_off)
        if not np.all(np.isfinite(q)) or np.abs(q).max() > DIVERGED:
            break
    return np.array(zs), np.array(speeds), q, np.array(secondary), np.array(tool)


def priority_rate_normal(J1, v1, J2, v2, *, lam2=0.0):
    """The two-level priority rate with its secondary inverse by the uncut normal equations ``A^T (A A^T)^-1``,
    ``A = J2 N1`` (``lam2 = 0`` only), and NumPy's ``pinv`` for the primary: the same formula rounded differently."""
    J1p = np.linalg.pinv(J1)
    N1 = np.eye(J1.shape[1]) - J1p @ J1
    A = J2 @ N1
    return J1p @ v1 + N1 @ A.T @ np.linalg.solve(A @ A.T, v2 - J2 @ J1p @ v1)


def swung_start() -> np.ndarray:
    """The Panda's 'ready' tool pose with the elbow swung out and down: 1 s of corrected self-motion at 1 rad/s."""
    return self_motion(robots.load("panda"), PANDA_READY, "pose", SELF_SPEED, SWING_DT, round(SWING_T / SWING_DT),
                       True)[-1]


@dataclass(frozen=True)
class PriorityRow:
    """One case: the elbow height (m) at the last tick it ran, the largest single-joint speed max_i |qdot_i| over the
    run (rad/s), tool position (m) and rotation (rad) error, how long it ran (s: the full time, or less where its
    joints diverged) and whether it was
    stopped early for that."""

    label: str
    z: float
    peak: float
    pos: float
    rot: float
    seconds: float
    stopped: bool


@dataclass(frozen=True)
class Priority:
    """The priority runs' settings (time step and length in s, damping lam2, its gain bound 1/(2 lam2) (None at
    lam2 = 0: unbounded), gains in 1/s, the joint angle at which a run counts as diverged (rad)), the elbow heights (m) at the start, at 'ready' (the top of the self-motion) and asked for in the
    compatible and conflicting cases, the damped secondary's rate bound at the start (rad/s; None: unbounded), and
    one row per
    case; the runs themselves (unsaved)."""

    dt: float
    seconds: float
    lam2: float
    gain_bound: float | None
    k_elbow: float
    k_tool_secondary: float
    diverged: float
    z_start: float
    start_seconds: float  # s of self-motion at SELF_SPEED from 'ready' that reach the start
    z_top: float
    z_compatible: float
    z_conflict: float
    secondary_bound: float | None
    secondary_peak: float  # rad/s, the damped conflict's largest secondary term, 2-norm
    tool_left_mm: float  # a tool farther than this from where it is held has left the held pose ...
    undamped_tool_left_s: float | None  # ... which the undamped conflict's does at this time (None: never)
    rows: tuple[PriorityRow, ...]
    q_start: np.ndarray = unsaved()  # (7,) same tool pose as 'ready', elbow swung out and down
    labels: tuple[str, ...] = unsaved()
    heights: tuple[np.ndarray, ...] = unsaved()  # elbow z (m) per tick, per case
    tool_off: tuple[np.ndarray, ...] = unsaved()  # the tool's distance (m) from where it is held, per tick, per case
    peak_speed: np.ndarray = unsaved()  # (cases,) rad/s
    q_final: np.ndarray = unsaved()  # (cases, 7)


def priority(q_start: np.ndarray) -> Priority:
    """Primary = hold the tool pose at ``q_start``, secondary = elbow height; compatible, conflicting, swapped."""
    panda = robots.load("panda")
    z0, z_top = fk(panda, q_start).anchors[ELBOW, 2], fk(panda, PANDA_READY).anchors[ELBOW, 2]
    cases = ((f"compatible: elbow to {z0 + 0.02:.3f} m, undamped", z0 + 0.02, 0.0, False),
             (f"conflict: elbow to {z_top + 0.03:.3f} m, undamped", z_top + 0.03, 0.0, False),
             (f"conflict: elbow to {z_top + 0.03:.3f} m, damped lam2 = {LAM2}", z_top + 0.03, LAM2, False),
             (f"conflict, swapped: elbow first, tool gain {K_TOOL_SECONDARY:.0f}/s", z_top + 0.03, LAM2, True))
    runs = [_priority_run(panda, q_start, z, lam2, swapped) for _, z, lam2, swapped in cases]
    secondary_peak = float(runs[2][3].max())
    labels, heights, tool_off = tuple(c[0] for c in cases), tuple(r[0] for r in runs), tuple(r[4] for r in runs)
    left = np.flatnonzero(tool_off[1] > TOOL_LEFT)  # ticks at which the undamped conflict's tool is off
    peak, q_final = np.array([r[1].max() for r in runs]), np.array([r[2] for r in runs])
    T0 = tool_pose(panda, q_start)
    rows = np.array([[zs[-1], pk, *(drift(panda, q[None], T0) if np.all(np.isfinite(q)) else (np.inf, np.inf)),
                      len(zs) * PRIORITY_DT] for zs, pk, q in zip(heights, peak, q_final)])
    ticks, bound = round(PRIORITY_T / PRIORITY_DT), gain_bound(LAM2)
    return Priority(PRIORITY_DT, PRIORITY_T, LAM2, bound, K_ELBOW, K_TOOL_SECONDARY, DIVERGED, z0, SWING_T, z_top, z0 + 0.02,
                    z_top + 0.03, None if bound is None else K_ELBOW * (z_top + 0.03 - z0) * bound,  # rad/s, at start
                    secondary_peak, 1000 * TOOL_LEFT, float(left[0] * PRIORITY_DT) if left.size else None,
                    tuple(PriorityRow(label, *r, len(zs) < ticks) for label, r, zs in zip(labels, rows, heights)),
                    q_start, labels, heights, tool_off, peak, q_final)


@dataclass(frozen=True)
class SpreadRow:
    """One rerun of the undamped conflict: the largest single-joint speed (rad/s), whether it diverged, the tool's
    position error (m; inf where the joints are no longer finite) and the elbow's height (m) at its last tick."""

    label: str
    peak: float
    stopped: bool
    pos: float
    z: float


@dataclass(frozen=True)
class ConflictSpread:
    """The undamped conflict rerun with changes the size of round-off: the formula rounded differently (normal
    equations) and the start moved by ``nudge`` rad in random directions. What all reruns share and what they do
    not: the range of their peaks (rad/s), how many diverged, and, among the others, the largest tool error (m) and
    the range of the elbow's final height (m; NaN where every run diverged)."""

    nudge: float
    runs: int
    peak_min: float
    peak_max: float
    diverged: int
    held: int  # the runs that did not diverge
    held_pos: float
    held_z_min: float
    held_z_max: float
    rows: tuple[SpreadRow, ...]


NUDGE = 1e-9  # rad: a change of the start far below anything a sensor or the model could resolve


def conflict_spread(q_start: np.ndarray, nudges: int = 4) -> ConflictSpread:
    """The undamped conflict of :func:`priority`, rerun: by the normal equations, and from ``nudges`` starts moved by
    ``NUDGE`` rad (generator seeded 1, 2, ...)."""
    panda = robots.load("panda")
    z_des = fk(panda, PANDA_READY).anchors[ELBOW, 2] + 0.03
    starts = [("normal equations", q_start, priority_rate_normal)] + [
        (f"start moved by {NUDGE:g} rad ({k})", q_start + NUDGE * np.random.default_rng(k).standard_normal(7),
         ns.priority_rate) for k in range(1, nudges + 1)]
    T0, rows = tool_pose(panda, q_start), []
    for label, q0, rate in starts:
        zs, speeds, q, *_ = _priority_run(panda, q0, z_des, 0.0, False, rate)
        pos = drift(panda, q[None], T0)[0] if np.all(np.isfinite(q)) else np.inf
        rows.append(SpreadRow(label, float(speeds.max()), len(zs) < round(PRIORITY_T / PRIORITY_DT), float(pos),
                              float(zs[-1])))
    held = [r for r in rows if not r.stopped]
    peaks = [r.peak for r in rows]
    return ConflictSpread(NUDGE, len(rows), min(peaks), max(peaks), len(rows) - len(held), len(held),
                          max((r.pos for r in held), default=np.nan), min((r.z for r in held), default=np.nan),
                          max((r.z for r in held), default=np.nan), tuple(rows))


@dataclass(frozen=True)
class LeadingProjector:
    """The damped conflict's secondary term with and without the leading ``N1``: the largest leak into the primary
    task, ``|J1 qdot_2| / |qdot_2|``, over the run."""

    with_n1: float
    without_n1: float


def leading_projector(q_start: np.ndarray) -> LeadingProjector:
    """Replays the damped conflict (the library's rate) and measures, every tick, what the leading ``N1`` of
    ``N1 (J2 N1)^#_lam2 r`` removes: in exact arithmetic nothing, since that inverse's range already lies in N1's."""
    panda, leaks = robots.load("panda"), []

    def rate(J1, v1, J2, v2, *, lam2):
        J1p, N1 = ns.pinv(J1), ns.projector(J1)
        bare = ns.pinv(J2 @ N1, lam=lam2) @ (v2 - J2 @ J1p @ v1)
        leaks.append([np.linalg.norm(J1 @ x) / np.linalg.norm(x) for x in (N1 @ bare, bare)])
        return ns.priority_rate(J1, v1, J2, v2, lam2=lam2)

    _priority_run(panda, q_start, fk(panda, PANDA_READY).anchors[ELBOW, 2] + 0.03, LAM2, False, rate)
    return LeadingProjector(*np.max(leaks, axis=0))


def gain_bound(lam2: float) -> float | None:
    """The largest gain sigma / (sigma^2 + lam2^2) of a damped inverse over sigma >= 0: 1 / (2 lam2); None at
    lam2 = 0, where the gain 1 / sigma has no bound."""
    return 1 / (2 * lam2) if lam2 > 0 else None


def print_priority(p: Priority) -> None:
    print(f"\n== 4. Task priority: primary = hold the tool pose, secondary = elbow height (dt = {PRIORITY_DT} s, "
          f"{PRIORITY_T} s) ==")
    print(f"  {'case':52s} {'last elbow z':>12s} {'max_i|qdot_i|':>13s} {'tool pos err':>12s} {'tool rot err':>12s} "
          f"{'ran (s)':>8s}")
    for r in p.rows:
        print(f"  {r.label:52s} {r.z:12.4f} {r.peak:13.3g} {r.pos:12.1e} {r.rot:12.1e} {r.seconds:8.3f}")
    print(f"  a run is stopped where a joint passes {p.diverged:g} rad (diverged). Damping gain bound 1/(2 lam2) = "
          + (f"{p.gain_bound:g}" if p.gain_bound is not None else "none (lam2 = 0: unbounded)"))
    print("  Conflict: the elbow rises to the highest point of its self-motion and stops; J2 N1 loses rank (an")
    print("  algorithmic singularity) and the undamped secondary demands |residual| / sigma joint speed. Damping")
    print("  bounds that gain by 1/(2 lam2). Swapped, the elbow wins and the tool gives way: priority is an order.")


def print_spread(s: ConflictSpread, lead: LeadingProjector) -> None:
    print(f"  the undamped conflict again, changed only by round-off ({s.runs} reruns):")
    for r in s.rows:
        print(f"    {r.label:40s} peak {r.peak:9.3g} rad/s, " + (
            "diverged" if r.stopped else f"ran its time, tool {r.pos:.1e} m, elbow at {r.z:.4f} m"))
    print(f"  peaks {s.peak_min:.3g} to {s.peak_max:.3g} rad/s in every rerun; {s.diverged} of {s.runs} diverged: "
          "an unbounded gain is certain, divergence is chance.")
    print(f"  damped conflict, leak |J1 qdot_2| / |qdot_2| of the secondary term: {lead.with_n1:.1e} with the leading "
          f"N1,\n  {lead.without_n1:.1e} without it (N1 is redundant in exact arithmetic, a guard against round-off)")


def plot_priority(p: Priority, spread: ConflictSpread) -> None:
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 8), height_ratios=(3, 2))  # a time axis over bars by case
    # the top panel shows the range that matters: the runs that held, the targets and the ceiling; a diverged run's
    # dive leaves it, marked by an arrow
    held = np.concatenate([zs for zs, row in zip(p.heights, p.rows) if not row.stopped])
    levels = (p.z_compatible, p.z_top, p.z_conflict)
    lo, hi = min(held.min(), *levels), max(held.max(), *levels)
    pad = 0.12 * (hi - lo)
    a1.set_ylim(lo - pad, hi + pad)
    a1.axhline(p.z_compatible, color="C0", ls="--", lw=1, label=f"compatible target, {p.z_compatible:.3f} m")
    a1.axhline(p.z_conflict, color="k", ls="--", lw=1, label=f"conflicting target, {p.z_conflict:.3f} m")
    a1.axhline(p.z_top, color="0.5", ls=(0, (1, 1.5)), lw=1.5,
               label=f"ceiling with the tool held (height at ready), {p.z_top:.3f} m")
    # the table's case names: the targets are the dashed lines' legend entries
    names = ("compatible", "conflict, undamped", f"conflict, damped (λ₂ = {p.lam2:g})", "swapped (elbow first)")
    for i, (name, zs, row) in enumerate(zip(names, p.heights, p.rows)):
        t, colour, end = np.arange(len(zs)) * PRIORITY_DT, f"C{i}", len(zs)
        if i == 1 and p.undamped_tool_left_s is not None:
            # drawn only while its tool is held: after that it is no longer the task asked for
            end = round(p.undamped_tool_left_s / PRIORITY_DT)
            a1.axvline(p.undamped_tool_left_s, color="C1", ls=":", lw=1.2)
            a1.text(p.undamped_tool_left_s, hi + 0.9 * pad, f" undamped: tool > {p.tool_left_mm:g} mm off"
                    f" from {p.undamped_tool_left_s:.3f} s"
                    + (f"; diverges at {row.seconds:.2f} s" if row.stopped else ""),
                    color="C1", fontsize=9, va="top")
        # the undamped conflict on top, thin and solid: it shares the damped one's path until the ceiling, and
        # the swapped one's early on
        a1.plot(t[:end], zs[:end], label=name, color=colour,
                lw=1.5 if i == 1 else 3 if i == 2 else 2, zorder=4 if i == 1 else 3)
        below = np.flatnonzero(zs[:end] < lo - pad)
        if row.stopped and below.size:  # diverged off the scale: a triangle on the axis where it leaves, and why
            a1.plot(t[below[0]], lo - pad, "v", color=colour, ms=11, clip_on=False, zorder=5)
            a1.annotate(f"off scale: dives to {zs.min():.2f} m, then stopped at {row.seconds:.2f} s\n"
                        f"(a joint passed {p.diverged:g} rad)", xy=(t[below[0]], lo - pad),
                        xytext=(t[below[0]] + 0.1, lo - 0.45 * pad), fontsize=9, color=colour, va="center",
                        arrowprops=dict(arrowstyle="->", color=colour, shrinkB=6))
    a1.set_xlabel("time (s)")
    a1.set_ylabel("elbow height (m)")
    a1.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2)  # below: no curve hidden
    a2.bar(range(len(p.labels)), p.peak_speed, color=[f"C{i}" for i in range(len(p.labels))])
    offsets = np.linspace(-0.3, 0.3, spread.runs)  # side by side: reruns with near-equal peaks stay apart
    a2.plot(1 + offsets, [r.peak for r in spread.rows], "_", color="k", ms=10, mew=1.5, ls="none",
            label="undamped conflict rerun, changed only by round-off")
    a2.legend(fontsize=9, loc="upper right")  # above the damped and swapped bars, clear of the orange one
    a2.set_yscale("log")
    a2.set_ylabel("largest single-joint speed\nmax$_i$ |$\\dot q_i$| (rad/s)")
    a2.set_xticks(range(len(names)), [textwrap.fill(name, 18) for name in names], fontsize=9)
    _save(fig, "priority.png")


# ---- 5. the elbow and a post: redundancy keeps the arm clear ------------------------------------------


@dataclass(frozen=True)
class ElbowPost:
    """The self-motion into a post without a thought for it (``free``) and with ``avoid=``: the settings, and the
    numbers the page quotes (lengths in mm, joint3 in rad, the posture cost in rad^2; steps count from 1: step k
    takes q[k - 1] to q[k]); the walks themselves (unsaved)."""

    margin: float  # m
    post: tuple  # (radius, half-length, centre) of the vertical capsule (m)
    post_link: str  # the arm body whose geom goes deepest into the post on the free walk
    post_link_radius_mm: float  # that geom's capsule radius: the overlap peaks at the sum of the radii
    free_deepest_step: int  # the step that ends deepest (q index)
    free_other_links: tuple[str, ...]  # other bodies that are, at some overlapping step, the deepest one
    step: float  # rad, the largest joint change per step of the posture objective
    pref: float  # rad, where the posture objective wants joint3
    distmax: float  # m, the world resolves distances up to this; a damper acts on pairs closer than it
    margin_mm: float
    post_radius_mm: float
    radii_sum_mm: float  # the link's capsule radius plus the post's: the deepest a capsule pair can overlap
    steps: int
    joint3_start: float
    joint3_pref: float
    free_joint3_end: float
    avoid_joint3_end: float
    free_depth_mm: float  # how deep the free walk goes into the post ...
    free_end_depth_mm: float  # ... and where it ends
    avoid_closest_mm: float  # the avoid= walk's closest approach to the post
    free_tool_drift_mm: float
    avoid_tool_drift_mm: float
    free_cost_end: float
    avoid_cost_end: float
    cost_start: float
    elbow_free_mm: float  # the elbow's largest distance from its start on each walk
    elbow_avoid_mm: float
    elbow_short_mm: float  # how far from the free walk's end the avoid= walk's elbow stops
    gain: float  # the velocity damper's gain
    influence_mm: float  # the damper acts on pairs closer than this (distmax)
    damper_step: int  # the first step the damper changes
    rest_mm: float  # an elbow moving less than this per step has come to rest ...
    rest_step: int  # ... from this step on (steps + 1: never)
    free: ns.SelfMotionResult = unsaved()  # the self-motion with no obstacle in mind
    avoid: ns.SelfMotionResult = unsaved()  # the same with avoid=world
    free_post: np.ndarray = unsaved()  # (N+1,) distance from the arm to the post along the free walk (m)
    avoid_post: np.ndarray = unsaved()  # (N+1,) the same along the collision-aware walk
    elbow_free: np.ndarray = unsaved()  # (N+1, 3) the elbow (link4 origin) along each walk
    elbow_avoid: np.ndarray = unsaved()


POST = (0.03, 0.25, (-0.05, 0.26, 0.55))  # radius, half-length, centre (m): a vertical post in the elbow's path
POST_JOINT3 = 1.2  # rad: where the posture objective pulls joint3, which sweeps the elbow into the post
AT_REST = 1e-5  # m per step: an elbow moving less than this has come to rest


def elbow_post(steps: int = 120, step: float = 0.02, margin: float = 0.01) -> ElbowPost:
    """The Panda holds its tool at the ready pose while a posture objective (joint3 towards 1.2 rad) sweeps the elbow
    along the self-motion into a post; then the same with ``avoid=`` (Maciejewski and Klein 1985: the distance as a
    task in the null space, here as a velocity damper). The world holds every pair: the post against the arm, and
    the arm against itself."""
    from physai import collision

    panda = robots.load("panda")
    radius, half, centre = POST
    world = collision.collision_world(
        collision.scene("panda", [collision.Obstacle("post", "capsule", (radius, half), centre)]), panda,
        margin=margin, self_margin=margin)
    pref = PANDA_READY.copy()
    pref[2] = POST_JOINT3
    objective = ns.posture_cost(panda, pref, weights=[0, 0, 1, 0, 0, 0, 0])
    free = ns.self_motion(panda, PANDA_READY, objective, steps=steps, step=step)
    avoid = ns.self_motion(panda, PANDA_READY, objective, steps=steps, step=step, avoid=world)
    on_post = np.array([("post" in pair) for pair in world.pair_names])
    d_free, d_avoid = (world.distances(run.q)[:, on_post] for run in (free, avoid))  # (N+1, the post's pairs)
    deepest = world.pairs[on_post][np.argmin(d_free.min(axis=0))]  # the post and one arm geom
    arm_geom = deepest[deepest != world.model.geom("post").id][0]
    link = world.model.geom_bodyid[arm_geom]
    nearest = world.pairs[on_post][np.argmin(d_free, axis=1)]  # (N+1, 2) per step: the post and its nearest geom
    bodies = {world.model.body(world.model.geom_bodyid[g]).name for pair, d in zip(nearest, d_free.min(axis=1))
              if d < 0 for g in pair if g != world.model.geom("post").id}
    elbow_free, elbow_avoid = (fk(panda, run.q).anchors[:, ELBOW] for run in (free, avoid))
    free_post, avoid_post = d_free.min(axis=1), d_avoid.min(axis=1)

    def travel(elbow):
        return 1000 * float(np.linalg.norm(elbow - elbow[0], axis=1).max())

    apart = np.any(avoid.q != free.q, axis=1)  # bitwise: the walks are the same computation until a damper acts
    rest = np.linalg.norm(np.diff(elbow_avoid, axis=0), axis=1) < AT_REST  # (N,) per step
    return ElbowPost(
        margin, POST, world.model.body(link).name, 1000 * float(world.model.geom_size[arm_geom, 0]),
        int(np.argmin(free_post)), tuple(sorted(bodies - {world.model.body(link).name})), step, POST_JOINT3,
        world.distmax, 1000 * margin, 1000 * POST[0], 1000 * float(world.model.geom_size[arm_geom, 0] + POST[0]),
        len(avoid.scale), float(free.q[0, 2]), POST_JOINT3, float(free.q[-1, 2]), float(avoid.q[-1, 2]),
        -1000 * float(free_post.min()), -1000 * float(free_post[-1]), 1000 * float(avoid_post.min()),
        1000 * float(free.pose_drift.max()), 1000 * float(avoid.pose_drift.max()), float(free.cost[-1]),
        float(avoid.cost[-1]), float(free.cost[0]), travel(elbow_free), travel(elbow_avoid),
        1000 * float(np.linalg.norm(elbow_avoid[-1] - elbow_free[-1])), DAMPER_GAIN, 1000 * world.distmax,
        int(np.argmax(apart)), 1000 * AT_REST, int(np.argmax(rest)) + 1 if rest.any() else len(rest) + 1,
        free, avoid, free_post, avoid_post, elbow_free, elbow_avoid)


def print_elbow_post(e: ElbowPost) -> None:
    print(f"\n== 5. The elbow and a post: the tool holds the ready pose, the self-motion sweeps the elbow "
          f"(margin {e.margin} m) ==")
    for label, run, post in (("no obstacle in mind", e.free, e.free_post), ("avoid=world", e.avoid, e.avoid_post)):
        print(f"  {label:20s}: closest to the post {post.min() * 1000:7.1f} mm, tool drift "
              f"{run.pose_drift.max() * 1000:.3f} mm, posture cost {run.cost[0]:.3f} -> {run.cost[-1]:.3f}, "
              f"joint3 {run.q[0, 2]:.3f} -> {run.q[-1, 2]:.3f} rad")
    print(f"  without avoid= {e.post_link} goes {e.free_depth_mm:.0f} mm into the post; with it the damper first "
          f"acts at step {e.damper_step}, the elbow is at rest (< {e.rest_mm:g} mm per step) from step "
          f"{e.rest_step}, {e.elbow_short_mm:.0f} mm short of where it went without; the post's pairs at least "
          f"{e.avoid_closest_mm:.3f} mm apart (margin {e.margin_mm:g} mm)")


def plot_elbow_post(e: ElbowPost) -> None:
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    a1.axhspan(1000 * e.free_post.min() - 10, 0, color="0.9", label="overlap")
    a1.axhline(1000 * e.margin, color="k", ls=":", lw=1, label="margin")
    a1.plot(1000 * e.free_post, color="tab:red", label="no obstacle in mind")
    a1.plot(1000 * e.avoid_post, color="tab:green", label="avoid=world")
    a1.set_ylabel(f"arm to post (mm, capped at {1000 * e.distmax:.0f})")
    a1.set_title("Panda self-motion, tool held: the elbow swept towards a post")
    a1.legend(fontsize=10, loc="lower left")  # over the grey band's start, clear of both curves
    for elbow, colour in ((e.elbow_free, "tab:red"), (e.elbow_avoid, "tab:green")):
        a2.plot(np.arange(1, len(elbow)), 1000 * np.linalg.norm(np.diff(elbow, axis=0), axis=1), color=colour)
    a2.set_ylabel("elbow motion per step (mm)")
    a2.set_xlabel("step")
    _save(fig, "elbow_post.png")


# ---- the lesson ------------------------------------------------------------------------------------


def main(full: bool = False) -> dict:
    print(f"Lesson 12: redundancy and the null space. Targets seed {SEED_TARGETS}, IK seed {SEED_IK}\n")
    dims = null_dimensions()
    print_dimensions(dims)
    motion = panda_self_motion(SELF_T if full else SELF_T / 4)
    print_self_motion(motion)
    plot_self_motion(motion)
    planar = planar_family()
    plot_planar(planar)
    print("\n== 3. Choosing on purpose: plain IK vs null-space refinement (margin = distance to the nearest limit "
          "as a fraction of the range) ==")
    choices = [choose_on_purpose(robot, 1000 if full else 40) for robot in ("panda", "so101")]
    for c in choices:
        print_choice(c)
    prio = priority(swung_start())
    print_priority(prio)
    spread, lead = conflict_spread(prio.q_start), leading_projector(prio.q_start)
    print_spread(spread, lead)
    plot_priority(prio, spread)
    post = elbow_post()
    print_elbow_post(post)
    plot_elbow_post(post)
    swing, rise, travel = motion.elbow_swing, motion.elbow_rise, motion.joint_travel
    left = prio.undamped_tool_left_s
    figures = [
        Figure("self_motion.png",
               "During self-motion the Panda's joints turn and its elbow moves several centimetres, mostly "
               "sideways, while the tool pose stays put.",
               "Two stacked plots against time for the Panda's self-motion, legends to the right of each. Top: how "
               "far each of the seven joints has turned from ready, straight lines fanning out from zero, up to "
               f"{travel:.2f} rad. Bottom: how far the elbow has moved from its start, in "
               f"millimetres, along the world x, y and z axes and as a distance, which grows to {1000 * swing:.0f} mm; "
               f"the vertical part stays within {1000 * rise:.0f} mm. The title reports a tool drift of a few times "
               "ten to the minus eight."),
        Figure("planar3r_self_motion.png",
               "A planar 3R holding one tip point: the whole one-parameter family of arms, a closed loop, coloured "
               "by the last link's angle. Each colour appears twice, the first two links bent one way and the other.",
               "Overlaid drawings of a planar three-link arm in about thirty configurations, all with their tips "
               "on the same starred point, once round its whole family, each arm coloured from dark purple to yellow "
               "by its last link's angle, with a colour bar beside the plot: the elbow and wrist sweep through arcs "
               "while the tip stays fixed. Arms of the same colour come in pairs, mirror images about the line from "
               "the base to their shared wrist; the darkest and the brightest arms have their first two links in a "
               "straight line."),
        Figure("priority.png",
               "Elbow height under task priority (top) and each case's largest joint speed (bottom, log scale). "
               "Dashed: the targets; dotted: the ceiling with the tool held"
               + ("; the undamped run is drawn until its tool leaves the held pose." if left is not None else "."),
               "Top: elbow height against time for the four priority cases, the axis spanning only the heights that "
               f"matter, {prio.z_start:.3f} to {prio.z_conflict:.3f} m, with two dashed horizontal lines for the "
               "targets and a dotted one for the ceiling. The compatible case creeps up to its dashed target, the "
               "damped conflict flattens on the dotted ceiling, the swapped case climbs past the ceiling towards the "
               "higher target. The undamped conflict, drawn thin and solid on top of the others, rises to the ceiling"
               + (f", where an orange dotted vertical line at {left:.3f} s marks its tool leaving the held pose by more "
                  f"than {prio.tool_left_mm:g} mm; the curve ends there, and a label gives the time the run diverges "
                  f"({prio.rows[1].seconds:.2f} s), its tool long gone." if left is not None else
                  ", then spikes up and down and leaves the bottom of the axis at a triangle, labelled with how far it "
                  "dives and when the run was stopped.")
               + " The legend sits under the panel. Bottom: a bar chart on a log scale of the peak "
               "single-joint speed per case, with the "
               "undamped conflict several orders of magnitude above the others; black dashes side by side on its "
               "bar, one per rerun changed only by round-off, mark "
               f"peaks between {spread.peak_min:.0e} and {spread.peak_max:.0e} rad/s."),
        Figure("elbow_post.png",
               "Arm-to-post distance and elbow motion per step, without and with avoid=: with it the elbow "
               "slows as the gap closes and comes to rest.",
               "Two stacked plots against the step number. Top: distance from the arm to the post. Both walks start "
               "at the capped distance and fall together; the free walk plunges through zero deep into the shaded "
               "overlap band, rises part way back with a few kinks and levels off inside it, while the avoid= walk "
               "bends over and settles on the dotted margin "
               "line. Bottom: how far the elbow moves per step; the free walk keeps moving for most of the run, the "
               "avoid= walk decays to zero soon after the damper acts."),
    ]
    return save_results(HERE, "experiment.py", {"dims": dims.rows, "home_null_vector": dims.home_null_vector,
                                                "self_motion": motion, "planar": planar,
                                                "choice": {c.robot: c for c in choices}, "priority": prio,
                                                "spread": spread, "leading_n1": lead,
                                                "collision": post}, figures=figures)


if __name__ == "__main__":
    run_script(main, __file__, full_run())
