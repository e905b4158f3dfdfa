"""Lesson 11, Inverse Jacobian Methods, Experiment and Break it: "solve the hard direction by iterating the easy
one, exactly like gradient descent."

Steps (each returns its numbers; call them from a Python prompt with small sizes):
1. ``gradient_check``: the Jacobian-transpose step is the gradient of the squared error (central differences).
2. ``convergence``: every method from the same starts on the Panda: who converges, how fast.
3. ``success``: the default solver (``lm``, random restarts) on random reachable targets per robot and task,
   and targets no arm here can reach.
4. ``five_dof_pose``: what a 5-DoF SO-101 does with a 6-D pose it cannot reach.
5. ``teleop``: a 50 Hz target path solved warm-started from the previous answer.
6. ``through_table`` (Break it): plain IK answers go through the table; the same targets with ``avoid=``.

Singularities and conditioning (the SVD, pinv vs damped least squares) are lesson 10's.

Run: uv run python experiments/11-inverse-kinematics/experiment.py [--full]
Writes experiment_output.txt, results.json, convergence.png and through_table.png beside this file.
Deterministic (seeds ``TARGET_SEED``, ``RESTART_SEED`` and ``TABLE_SEED``). ``--full`` (or PHYSAI_FULL=1) solves
1,000 targets per robot and task instead of 200.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from physai import kinematics, robots  # noqa: E402
from physai import transforms as tf  # noqa: E402
from physai.ik import (  # noqa: E402
    DAMPING,
    LAMBDA_MAX,
    METHODS,
    SIGMA_HEALTHY,
    TOL_ORIENTATION,
    TOL_POSITION,
    IKBatchResult,
    Solver,
    Task,
    ik_problem,
    solve,
    solve_ik,
    solve_ik_batch,
)
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

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
SEED = 0
TARGET_SEED, RESTART_SEED = 1, 2  # the success table's targets; every solve's restart draws
CASES = (("so101", "position"), ("so101", "position+axis"), ("wxai", "pose"), ("panda", "pose"))
FAR = np.array([1.5, 0.4, 0.5])  # m, beyond every arm here
GRADIENT_EPS = 1e-5  # rad, the central-difference step of the gradient check
Q_FIVE_DOF = np.array([0.3, -0.4, 0.6, 0.2, 0.5])  # rad, the reachable SO-101 pose Step 4 turns
FIVE_DOF_TURN = 0.6  # rad about the tool y axis (x is the wrist roll axis): a 6-D pose the SO-101 cannot reach


@dataclass(frozen=True)
class Solved:
    """What this lesson reads from a batch of IK results: success counts only inside the joint limits."""

    q: np.ndarray  # (k, n)
    ok: np.ndarray  # (k,) converged and inside the joint limits
    iterations: np.ndarray  # (k,)
    restarts: np.ndarray  # (k,)


def solved(chain, res: IKBatchResult) -> Solved:
    inside = np.all((res.q >= chain.lower) & (res.q <= chain.upper), axis=1)
    return Solved(res.q, res.converged & inside, res.iterations, res.restarts)


# ---- 1. the transpose step is gradient descent ----------------------------------------------------


@dataclass(frozen=True)
class GradientCheck:
    q: np.ndarray  # (5,) rad
    eps: float  # rad, the central-difference step
    transpose_step: np.ndarray  # (5,) J^T e, e = p_target - p(q)
    minus_gradient: np.ndarray  # (5,) -d/dq (|e|^2 / 2) by central differences, step eps
    max_difference: float  # their largest difference


def gradient_check(seed: int = SEED) -> GradientCheck:
    """At a random SO-101 pose and target: J^T e against central differences of |e|^2 / 2."""
    chain = robots.load("so101")
    q, q_target = chain.random_q(np.random.default_rng(seed), 2)
    p_target = kinematics.fk(chain, q_target).p

    def half_sq(x):
        return np.atleast_1d(0.5 * np.sum((p_target - kinematics.fk(chain, x).p) ** 2))

    grad = kinematics.fd_jacobian(half_sq, q, eps=GRADIENT_EPS)[0]
    e = p_target - kinematics.fk(chain, q).p
    step = kinematics.jacobian(chain, q)[:3].T @ e
    return GradientCheck(q, GRADIENT_EPS, step, -grad, float(np.abs(step + grad).max()))


def print_gradient(g: GradientCheck) -> None:
    print("== 1. The Jacobian-transpose step is gradient descent on |e|^2 / 2 (SO-101, position) ==")
    print(f"  J^T e                         = {fmt_row(g.transpose_step, 9, 6)}")
    print(f"  -grad |e|^2/2 (central, 1e-5) = {fmt_row(g.minus_gradient, 9, 6)}")
    print(f"  largest difference {g.max_difference:.1e}")


# ---- 2. every method from the same starts ---------------------------------------------------------


@dataclass(frozen=True)
class MethodScore:
    """One method over the targets: the fraction converged inside the limits, the targets reached, the median
    iterations over those (None: none reached) and the most iterations any target took."""

    converged: float
    reached: int
    reached_median: float | None
    most: int


@dataclass(frozen=True)
class PoseErrorExample:
    """The pose residual of one target at its start: ``[p_target - p; w]`` with ``w = log(R_target R^T)``, the
    rotation vector (axis times angle) in world axes."""

    position: np.ndarray  # (3,) m
    rotation: np.ndarray  # (3,) rad
    position_norm: float  # m
    angle: float  # rad, |rotation|


@dataclass(frozen=True)
class Convergence:
    """Every method on ``n`` Panda pose targets. Iterations are the steps taken for a target summed over its one
    attempt and, if that fails, the polish from the best point found; each stops after ``max_iterations`` steps, so
    no target takes more than ``ceiling``. ``lever`` (m) folds the two errors into the figure's one number."""

    n: int  # targets
    max_iterations: int  # per attempt and per polish, as passed to Solver(iterations=...)
    ceiling: int  # the most iterations a target can take here: one attempt and one polish
    lever: float  # m per rad, tol_position / tol_orientation
    methods: dict[str, MethodScore]  # method name -> its score
    example: PoseErrorExample  # the first target's pose residual at its start
    # method -> the figure's last value, m: once the median target has stopped, the median of the final errors
    plateau: dict[str, float]
    # method -> the first iteration from which the figure's curve stays at its plateau (ceiling: still moving)
    flat_from: dict[str, int]
    perturbation: float  # rad: each start is its target's pose plus uniform(-perturbation, perturbation) per joint
    # adaptive's answers whose smallest singular value (6 x 7 Jacobian) is below SIGMA_HEALTHY: its damping still on
    adaptive_damped: int
    damping: dict[str, float]  # "dls": its fixed lambda, "sigma_healthy" and "lambda_max": adaptive's ramp
    names: tuple[str, ...] = unsaved()  # the methods, in METHODS' order
    converged: np.ndarray = unsaved()  # (methods,) fraction
    iterations: np.ndarray = unsaved()  # (methods, k) per target
    curves: np.ndarray = unsaved()  # (methods, ceiling + 1) median of max(|dp|, lever |w|) after each iteration
    targets: np.ndarray = unsaved()  # (k, 4, 4) tool poses
    starts: np.ndarray = unsaved()  # (k, 7) the start of each target's attempt
    solutions: np.ndarray = unsaved()  # (methods, k, 7) the q each method returned
    ok: np.ndarray = unsaved()  # (methods, k) converged inside the limits


PERTURBATION = 0.4  # rad, the largest per-joint offset of Step 2's starts from their targets' poses
LEVER = TOL_POSITION / TOL_ORIENTATION  # m: a radian at this lever moves a point as far as the position tolerance


def _median_curve(trace: list, n_targets: int, ceiling: int) -> np.ndarray:
    """The median over the targets of max(|dp|, LEVER |w|) after each iteration 0..ceiling; a target that has
    stopped (converged or given up) keeps its last value."""
    curve = np.full((ceiling + 1, n_targets), np.nan)
    for rows, its, perr, oerr in trace:
        curve[its, rows] = np.maximum(perr, LEVER * oerr)
    for i in range(1, len(curve)):
        curve[i] = np.where(np.isnan(curve[i]), curve[i - 1], curve[i])
    return np.nanmedian(curve, axis=1)


def convergence(n_targets: int = 20, max_iterations: int = 100, seed: int = SEED) -> Convergence:
    """Every IK method on the Panda's full pose from the same perturbed starts, no restarts, at most
    ``max_iterations`` steps an attempt and as many again for the polish."""
    chain = robots.load("panda")
    rng = np.random.default_rng(seed)
    q_true = chain.random_q(rng, n_targets, inset=0.2)
    q0 = np.clip(q_true + rng.uniform(-PERTURBATION, PERTURBATION, q_true.shape), chain.lower, chain.upper)
    T = kinematics.tool_pose(chain, q_true)
    ceiling = 2 * max_iterations
    runs, curves = [], []
    for method in METHODS:
        trace = []
        solver = Solver(method=method, restarts=0, iterations=max_iterations)
        runs.append(solved(chain, solve(ik_problem(chain, T, q0), solver, trace=trace)))
        curves.append(_median_curve(trace, n_targets, ceiling))
    converged = np.array([s.ok.mean() for s in runs])
    scores = {m: MethodScore(ok, int(s.ok.sum()), float(np.median(s.iterations[s.ok])) if s.ok.any() else None,
                             int(s.iterations.max())) for m, ok, s in zip(METHODS, converged, runs)}
    e = tf.pose_error(kinematics.tool_pose(chain, q0[0]), T[0])
    example = PoseErrorExample(e[:3], e[3:], float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:])))
    curves = np.array(curves)
    moving = curves != curves[:, -1:]  # (methods, ceiling + 1): not yet at the curve's last value
    flat_from = {m: int(np.flatnonzero(row)[-1]) + 1 if row.any() else 0 for m, row in zip(METHODS, moving)}
    plateau = {m: float(curve[-1]) for m, curve in zip(METHODS, curves)}
    sigma_min = np.linalg.svd(kinematics.jacobian(chain, runs[METHODS.index("adaptive")].q), compute_uv=False)[:, -1]
    damping = {"dls": DAMPING, "sigma_healthy": SIGMA_HEALTHY, "lambda_max": LAMBDA_MAX}
    return Convergence(n_targets, max_iterations, ceiling, LEVER, scores, example, plateau, flat_from, PERTURBATION,
                       int(np.sum(sigma_min < SIGMA_HEALTHY)), damping, METHODS,
                       converged, np.array([s.iterations for s in runs]), curves, T, q0, np.array([s.q for s in runs]),
                       np.array([s.ok for s in runs]))


def print_convergence(c: Convergence) -> None:
    print(f"\n== 2. Every method from the same starts (Panda, full pose, {c.n} targets, no restarts) ==")
    print(f"iterations: steps per target, its attempt (at most {c.max_iterations}) and, if that fails, the polish "
          f"from its best point (at most {c.max_iterations} more): at most {c.ceiling}")
    print(f"{'method':10s} {'reached':>9s} {'median it, reached':>18s} {'most it':>8s}")
    for m in c.names:
        s = c.methods[m]
        median = "-" if s.reached_median is None else f"{s.reached_median:.3g}"
        print(f"{m:10s} {s.reached:4d} of {c.n:<2d} {median:>18s} {s.most:8d}")
    print("the figure: median over the targets of max(|dp|, lever |w|), a stopped target keeping its final value")
    for m in c.names:
        when = "still moving at the end" if c.flat_from[m] >= c.ceiling else f"flat from iteration {c.flat_from[m]}"
        print(f"  {m:10s} {when}, at {c.plateau[m]:.1e} m (median final error)")
    print(f"adaptive: {c.adaptive_damped} of {c.n} answers have sigma_min below {c.damping['sigma_healthy']}, "
          f"so its damping is still on there")
    x = c.example
    print(f"target 0 from its start: p_target - p = {fmt_row(x.position, 9, 4)} m, "
          f"w = log(R_target R^T) = {fmt_row(x.rotation, 9, 4)} rad (angle {x.angle:.4f})")


@plt.rc_context({"font.size": 12})  # and larger text, for a phone's width
def plot_convergence(c: Convergence) -> None:
    fig, ax = plt.subplots(figsize=(5.2, 4.4))  # narrow: the text stays legible at a phone's width
    # pinv and lm nearly coincide: dashes and a thinner line on top let both show
    styles = {"pinv": dict(ls="--", lw=2.6), "lm": dict(ls="-", lw=1.2, zorder=3)}
    for m, curve in zip(c.names, c.curves):
        ax.semilogy(curve, label=m, **styles.get(m, {}))
    ax.axhline(TOL_POSITION, color="k", ls=":", lw=1, label="success")
    ax.set_xlim(0, c.ceiling)
    ax.set_xlabel(f"iterations (attempt, then polish; at most {c.ceiling})")
    ax.set_ylabel(f"median of max(|Δp|, {c.lever:g} m · |w|)  (m)")
    ax.set_title("Panda IK from the same starts")
    ax.legend(fontsize=10, ncol=2, loc="upper right")
    fig.tight_layout()
    save_figure(fig, HERE / "convergence.png", dpi=110)
    plt.close(fig)


# ---- 3. success on random targets ------------------------------------------------------------------


@dataclass(frozen=True)
class Success:
    robot: str
    task: str
    rate: float  # converged inside the limits
    median_iterations: float
    p95_iterations: float
    max_restarts: int
    far_reason: str  # what a target beyond reach returns
    far_unmet: str  # the parts of the task it leaves unmet ("position and orientation")
    met: int  # targets converged inside the limits
    every: bool  # every target met (the page says "all")
    far_unmet_names: tuple[str, ...] = unsaved()  # the same, as solve_ik names them
    targets: np.ndarray = unsaved()  # (k, 4, 4)
    solutions: np.ndarray = unsaved()  # (k, n)
    ok: np.ndarray = unsaved()  # (k,)
    far_q: np.ndarray = unsaved()  # (n,) the closest point found for the unreachable target


@dataclass(frozen=True)
class SuccessTable:
    """The default solver on ``n`` random reachable targets per robot and task (``rows``, one per CASES), with the
    success tolerances (m, rad) and the unreachable target ``far`` (m)."""

    n: int
    far: np.ndarray
    tol_position: float
    tol_orientation: float
    rows: tuple[Success, ...]


def success(robot: str, task: str, n_targets: int = 200) -> Success:
    """The default solver on ``n_targets`` FK images of uniform in-limit poses (``TARGET_SEED``; restarts
    ``RESTART_SEED``)."""
    chain = robots.load(robot)
    T = kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(TARGET_SEED), n_targets))
    s = solved(chain, solve_ik_batch(chain, T, task=task, rng=np.random.default_rng(RESTART_SEED)))
    far = solve_ik(chain, tf.translation(FAR), task=task, rng=np.random.default_rng(RESTART_SEED))
    return Success(robot, task, float(s.ok.mean()), float(np.median(s.iterations)),
                   float(np.percentile(s.iterations, 95)), int(s.restarts.max()), far.reason, " and ".join(far.unmet),
                   int(s.ok.sum()), bool(s.ok.all()), far.unmet, T, s.q, s.ok, far.q)


def success_table(n_targets: int = 200) -> SuccessTable:
    """:func:`success` for each robot and task of CASES."""
    return SuccessTable(n_targets, FAR, TOL_POSITION, TOL_ORIENTATION,
                        tuple(success(robot, task, n_targets) for robot, task in CASES))


def print_success(table: SuccessTable) -> None:
    rows = table.rows
    print(f"\n== 3. Default solve_ik (lm, random restarts) on {table.n} random reachable targets per robot/task ==")
    print("success = |dp| < 1e-4 m, angle < 1e-3 rad, q inside limits; and a target at (1.5, 0.4, 0.5) m")
    print("iterations: steps per target summed over its attempts and, if all fail, the polish (as in step 2)")
    print(f"{'robot':6s} {'task':14s} {'success':>8s} {'it med':>6s} {'it p95':>6s} {'restarts max':>12s}  unreachable")
    for r in rows:
        print(f"{r.robot:6s} {r.task:14s} {r.rate:8.1%} {r.median_iterations:6.3g} {r.p95_iterations:6.3g} "
              f"{r.max_restarts:12d}  {r.far_reason!r}, unmet {r.far_unmet_names}")


# ---- 4. a 6-D pose for a 5-DoF arm -----------------------------------------------------------------


@dataclass(frozen=True)
class FiveDof:
    turn: float  # rad about the tool y axis, away from a reachable pose
    position_error: dict  # weighting -> m
    orientation_error: dict  # weighting -> rad
    position_mm: list[float]  # position_error's values in mm ...
    angle_deg: list[float]  # ... and orientation_error's in degrees, in the same order
    axis_converged: bool  # asking only position + tool z axis
    axis_errors: tuple[float, float]  # (m, rad)
    axis_position_mm: float  # axis_errors[0] in mm ...
    axis_angle_deg: float  # ... and axis_errors[1] in degrees, as the weighted rows
    roll_cos: dict  # tool axis ("x", "y") -> its cosine with the wrist roll axis at the reachable pose
    target: np.ndarray = unsaved()  # (4, 4)
    q_axis: np.ndarray = unsaved()  # (5,) the position + axis solution
    q_weighted: dict = unsaved()  # weighting -> (5,) that weighting's pose answer


def five_dof_pose() -> FiveDof:
    """A reachable SO-101 pose turned 0.6 rad about the tool y axis: no 5-DoF posture reaches it."""
    chain = robots.load("so101")
    T_reach = kinematics.tool_pose(chain, Q_FIVE_DOF)
    roll = kinematics.jacobian(chain, Q_FIVE_DOF)[3:, -1]  # the last joint's axis, world frame
    roll_cos = {"x": float(T_reach[:3, 0] @ roll), "y": float(T_reach[:3, 1] @ roll)}
    T_target = T_reach @ tf.make_transform(tf.rotation_about_axis(np.array([0, 1.0, 0]), FIVE_DOF_TURN), np.zeros(3))
    perr, oerr, qw = {}, {}, {}
    for label, w in (("m and rad alike", None), ("position first", [1, 1, 1, 1e-6, 1e-6, 1e-6]),
                     ("orientation first", [1e-6, 1e-6, 1e-6, 1, 1, 1])):
        r = solve_ik(chain, T_target, task=Task("pose", w), rng=np.random.default_rng(RESTART_SEED))
        perr[label], oerr[label], qw[label] = r.position_error, r.orientation_error, r.q
    r = solve_ik(chain, T_target, task="position+axis", rng=np.random.default_rng(RESTART_SEED))
    return FiveDof(FIVE_DOF_TURN, perr, oerr, [1000 * v for v in perr.values()],
                   [np.degrees(v) for v in oerr.values()], r.converged, (r.position_error, r.orientation_error),
                   1000 * r.position_error, np.degrees(r.orientation_error), roll_cos, T_target, r.q, qw)


def print_five_dof(f: FiveDof) -> None:
    print(f"\n== 4. A 6-D pose the 5-DoF SO-101 cannot reach (a reachable pose turned {FIVE_DOF_TURN:g} rad "
          "about tool y) ==")
    for label in f.position_error:
        print(f"  weights {label:16s}: |dp| {f.position_error[label] * 1000:7.2f} mm, "
              f"angle {np.degrees(f.orientation_error[label]):5.1f} deg")
    print(f"  position + tool z axis only: converged {f.axis_converged}, |dp| {f.axis_errors[0]:.1e} m, "
          f"axis angle {f.axis_errors[1]:.1e} rad (what a 5-DoF arm can do)")


# ---- 5. teleoperation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Teleop:
    n: int  # targets
    unconverged: int
    largest_jump: float  # rad, the largest joint change between consecutive solutions
    path_step: float  # rad, the generating path's own largest joint change per tick
    q_path: np.ndarray = unsaved()  # (k, 5) the joint path that generated the targets
    q_solved: np.ndarray = unsaved()  # (k, 5) warm-started solutions


def teleop(seconds: float = 2.0, dt: float = 0.02) -> Teleop:
    """Targets from a smooth SO-101 joint path at 1/dt Hz (position + tool axis), each solve started at the last."""
    chain = robots.load("so101")
    t = np.arange(0.0, seconds, dt)
    q_path = np.array([0.4 * np.sin(0.5 * np.pi * t), -0.3 + 0.3 * np.sin(np.pi * t), 0.7 + 0.3 * np.cos(np.pi * t),
                       0.4 * np.sin(np.pi * t), 0.3 * np.cos(0.5 * np.pi * t)]).T
    targets = kinematics.tool_pose(chain, q_path)
    q_prev = solve_ik(chain, targets[0], task="position+axis", rng=np.random.default_rng(RESTART_SEED)).q
    sols, fails = [q_prev], 0
    for T in targets[1:]:
        r = solve_ik(chain, T, q_prev, task="position+axis", solver=Solver(restarts=0))
        fails += not r.converged
        sols.append(q_prev := r.q)
    q_solved = np.array(sols)
    return Teleop(len(q_path), fails, float(np.abs(np.diff(q_solved, axis=0)).max()),
                  float(np.abs(np.diff(q_path, axis=0)).max()), q_path, q_solved)


def print_teleop(t: Teleop) -> None:
    print(f"\n== 5. Teleoperation: {t.n} targets at 50 Hz, each solve warm-started, no restarts ==")
    print(f"  {t.unconverged} unconverged; largest joint jump between consecutive solutions {t.largest_jump:.4f} rad "
          f"(the generating path's own largest step {t.path_step:.4f} rad): one branch")


# ---- 6. Break it: answers through the table --------------------------------------------------------


@dataclass(frozen=True)
class ThroughTable:
    """Plain IK and ``avoid=`` on the same targets above a table: the counts and distances (mm) the page quotes
    (``plain_*``: converged plain answers; a pair closer than ``margin`` collides, one below 0 overlaps), and the
    per-target arrays (unsaved)."""

    targets: int  # how many
    seed: int  # TABLE_SEED
    low_mm: float  # targets no higher than this above the table top
    margin_mm: float
    plain_converged: int
    plain_colliding: int  # converged, some pair within the margin
    plain_clear: int  # converged, every pair keeps the margin
    plain_near_table: int  # converged, within the margin of the table
    plain_near_self: int  # converged, two of the arm's own links within the margin
    plain_penetrating: int  # converged, some pair overlapping
    plain_deepest_mm: float  # the deepest overlap ...
    plain_deepest_self: bool  # ... is between two of the arm's own links
    plain_deepest_table_mm: float  # the deepest overlap with the table
    avoid_converged: int
    avoid_colliding: int
    avoid_clear: int
    avoid_closest_mm: float  # the converged avoid= answers' smallest pair distance
    avoid_changed: int  # avoid= answers that differ from the plain ones
    distmax_mm: float  # distances beyond this are reported as this
    top_mm: float  # the largest smallest-pair distance of any answer
    shoulder_gap_mm: float  # the shoulder's smallest distance to the table at the plain answers ...
    shoulder_spread_mm: float  # ... and how much it varies
    plain_all: bool  # every plain answer converged (the page says "all")
    avoid_all: bool  # every avoid= answer converged
    margin: float = unsaved()  # m
    points: np.ndarray = unsaved()  # (k, 3) tool positions of clear SO-101 postures close above the table
    plain_q: np.ndarray = unsaved()  # (k, 5) plain solve_ik_batch answers
    plain_ok: np.ndarray = unsaved()  # (k,) converged
    plain_clearance: np.ndarray = unsaved()  # (k,) smallest pair distance at each plain answer (m; < 0: overlap)
    avoid_q: np.ndarray = unsaved()  # (k, 5) the same targets with avoid=world
    avoid_ok: np.ndarray = unsaved()  # (k,) converged
    avoid_clearance: np.ndarray = unsaved()  # (k,)
    plain_table: np.ndarray = unsaved()  # (k,) smallest distance from the arm to the table at each plain answer (m)
    plain_self: np.ndarray = unsaved()  # (k,) smallest distance between two of the arm's own links there (m)
    plain_shoulder: np.ndarray = unsaved()  # (k,) the shoulder's distance to the table there (m)
    distmax: float = unsaved()  # m, distances beyond this are reported as this


TABLE = (0.5, 0.5, 0.02), (0.0, 0.0, -0.02)  # half-sizes and centre (m): the SO-101 stands on its top, z = 0
LOW = 0.06  # m: targets no higher than this above the table top
TABLE_SEED = 3  # the postures whose tool positions are the table's targets


def through_table(n_targets: int = 40, margin: float = 0.01) -> ThroughTable:
    """SO-101 position targets a few cm above a table, from postures that keep ``margin`` (``TABLE_SEED``; restarts
    ``RESTART_SEED``): plain IK, then the same targets with ``avoid=`` a :func:`physai.collision.collision_world`."""
    from physai import collision

    chain = robots.load("so101")
    world = collision.collision_world(collision.scene("so101", [collision.Obstacle("table", "box", *TABLE)]), chain,
                                      margin=margin, self_margin=margin)
    q = chain.random_q(np.random.default_rng(TABLE_SEED), 40 * n_targets)
    p = kinematics.tool_pose(chain, q)[:, :3, 3]
    low = (p[:, 2] < LOW) & world.clear(q)  # close above the table, and a clear answer exists
    targets = p[low][:n_targets]
    plain = solve_ik_batch(chain, targets, task="position", rng=np.random.default_rng(RESTART_SEED))
    avoid = solve_ik_batch(chain, targets, task="position", rng=np.random.default_rng(RESTART_SEED), avoid=world)
    d_plain = world.distances(plain.q)  # (k, pairs)
    on_table = np.array(["table" in pair for pair in world.pair_names])
    shoulder = on_table & np.array([any(x.startswith("shoulder#") for x in pair) for pair in world.pair_names])
    plain_clear, avoid_clear = d_plain.min(axis=1), world.distances(avoid.q).min(axis=1)
    plain_table, plain_self = d_plain[:, on_table].min(axis=1), d_plain[:, ~on_table].min(axis=1)
    plain_shoulder = d_plain[:, shoulder].min(axis=1)
    conv, aconv = plain.converged, avoid.converged
    bad = conv & (plain_clear < margin)
    return ThroughTable(
        len(targets), TABLE_SEED, 1000 * LOW, 1000 * margin, int(conv.sum()), int(bad.sum()), int((conv & ~bad).sum()),
        int((conv & (plain_table < margin)).sum()), int((conv & (plain_self < margin)).sum()),
        int((conv & (plain_clear < 0)).sum()), float(-1000 * plain_clear.min()),
        bool(plain_self.min() < plain_table.min()), float(-1000 * plain_table.min()), int(aconv.sum()),
        int((aconv & (avoid_clear < margin)).sum()), int((aconv & (avoid_clear >= margin)).sum()),
        float(1000 * avoid_clear[aconv].min()), int(np.any(avoid.q != plain.q, axis=1).sum()), 1000 * world.distmax,
        float(1000 * max(plain_clear.max(), avoid_clear.max())), float(1000 * plain_shoulder.min()),
        float(1000 * np.ptp(plain_shoulder)), bool(conv.all()), bool(aconv.all()), margin, targets, plain.q, conv, plain_clear, avoid.q, aconv, avoid_clear,
        plain_table, plain_self, plain_shoulder, world.distmax)


def print_through_table(t: ThroughTable) -> None:
    k = t.targets
    print(f"\n== 6. Break it: {k} SO-101 targets 0-{LOW * 100:.0f} cm above a table (clear postures exist, seed "
          f"{t.seed}), margin {t.margin} m ==")
    print(f"  plain solve_ik_batch : {t.plain_converged}/{k} converged, {t.plain_colliding} of them with the "
          f"arm within the margin ({t.plain_near_table} of the table, {t.plain_near_self} of its own links; "
          f"{t.plain_penetrating} overlapping, the deepest by {t.plain_deepest_mm:.1f} mm, "
          f"{'between two of its own links' if t.plain_deepest_self else 'with the table'}; the deepest into the "
          f"table {t.plain_deepest_table_mm:.1f} mm)")
    print(f"  with avoid=world     : {t.avoid_converged}/{k} converged, {t.avoid_clear} of them clear; "
          f"closest converged answer {t.avoid_closest_mm:.1f} mm from anything; "
          f"{t.avoid_changed} answers replaced, the other {k - t.avoid_changed} returned unchanged")


@plt.rc_context({"font.size": 12})  # and larger text, for a phone's width
def plot_through_table(t: ThroughTable) -> None:
    order = np.argsort(t.plain_clearance)
    x = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(5.2, 4.2))  # narrow: the text stays legible at a phone's width
    ax.axhline(1000 * t.margin, color="k", ls=":", lw=1, label="margin")
    ax.plot(x, 1000 * t.plain_clearance[order], "x", color="tab:red", label="plain IK")
    ax.plot(x, 1000 * t.avoid_clearance[order], "o", mfc="none", color="tab:green", label="avoid=world")
    bottom, top = ax.get_ylim()  # the overlap band runs from 0 down to the axes' bottom, wherever that lands
    ax.axhspan(bottom, 0, color="0.9", zorder=0, label="overlap")
    ax.set_ylim(bottom, top)
    ax.set_xlabel("target (sorted by the plain answer's clearance)")
    capped = max(t.plain_clearance.max(), t.avoid_clearance.max()) >= t.distmax  # the world measures up to distmax
    ax.set_ylabel("smallest pair distance (mm" + (f", capped at {1000 * t.distmax:.0f})" if capped else ")"))
    ax.set_title("Clearance of each IK answer")
    ax.legend(loc="lower right", fontsize=10)
    fig.tight_layout()
    save_figure(fig, HERE / "through_table.png", dpi=110)
    plt.close(fig)


# ---- the lesson ------------------------------------------------------------------------------------


def main(full: bool = False) -> dict:
    n_targets = 1000 if full else 200
    print(f"Lesson 11: inverse Jacobian methods. Seed {SEED}; targets seed {TARGET_SEED}, restarts seed "
          f"{RESTART_SEED}\n")
    grad = gradient_check()
    print_gradient(grad)
    conv = convergence(max_iterations=300 if full else 100)
    print_convergence(conv)
    plot_convergence(conv)
    succ = success_table(n_targets)
    print_success(succ)
    five, tele = five_dof_pose(), teleop(4.0 if full else 2.0)
    print_five_dof(five)
    print_teleop(tele)
    figures = [
        Figure("convergence.png",
               f"Every method from the same starts: the median over {conv.n} Panda targets of max(|Δp|, L |w|), "
               "the lever L the ratio of the tolerances, after each iteration (a stopped target keeps its last "
               "value). Below the dotted line a target has succeeded.",
               "Median pose error against iterations, log scale, for five IK methods on the Panda from the same "
               "starts. The pinv, dls, adaptive and lm curves fall below the dotted success line within a few "
               "iterations and stay flat; the transpose curve falls quickly at first and then creeps down slowly, "
               "still well above the line at the end of the axis."),
    ]
    table = through_table()
    print_through_table(table)
    plot_through_table(table)
    figures += [
        Figure("through_table.png",
               f"Each answer's smallest distance to the table or between the arm's own links, "
               f"plain IK against avoid=: {table.plain_colliding} plain answers below the margin line; "
               f"{table.avoid_colliding or 'no'} avoid= answers below it.",
               "Scatter plot over the table targets, sorted by the plain answer's clearance. Plain IK answers "
               "(crosses) start below zero, inside the shaded overlap band, and rise past the dotted margin line; "
               "the avoid= answers (circles) for the same targets, against the same line. Where the plain answer was "
               "already clear, the two markers coincide."),
    ]
    return save_results(HERE, "experiment.py", {"gradient": grad, "convergence": conv, "success": succ,
                                                "five_dof": five, "teleop": tele, "collision": table},
                        figures=figures)


if __name__ == "__main__":
    run_script(main, __file__, full_run())
