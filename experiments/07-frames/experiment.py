"""Lesson 07, Experiment: 100,000 compositions (a million with --full). How far do rotation matrices and
quaternions drift, does re-orthonormalisation help, and what does each composition cost?

Run: uv run python experiments/07-frames/experiment.py [--full]
(writes experiment_output.txt and experiment_drift.png; --full or PHYSAI_FULL=1 composes a million steps, not 100,000)
"""

import time
from dataclasses import dataclass
from decimal import Decimal, getcontext

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import patheffects  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from physai import transforms as tf  # noqa: E402
from physai.errors import InputError  # noqa: E402
from physai.course.lesson import (  # noqa: E402
    Claim,
    Figure,
    full_run,
    out_dir,
    run_script,
    save_figure,
    save_results,
    write_claims,
)

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
N_STEPS, N_STEPS_FULL = 100_000, 1_000_000  # sequential compositions; --full: a million
FIX_EVERY = 1000  # re-orthonormalise / re-normalise every this many steps
RECORD_EVERY = FIX_EVERY  # the shape errors are recorded at each fix, just before it
STEP_ROTVEC = np.array([0.1, 0.2, -0.3])  # one step: 0.374 rad about a fixed axis
N_BATCH = 200_000  # pairs composed at once for the cost table
SEED = 0
CHECKPOINTS = (1_000, 10_000, 100_000)  # where the repeated and the varying steps' shape errors are compared
N_CHAINS = 16  # independent products of varying steps; their shape errors are averaged (RMS)
SIGMA = 0.2  # rad: each varying step's rotation vector is drawn from N(0, SIGMA^2 I)
TICK_HZ = 1000  # a typical control loop's rate: the compositions to physai's tolerance, in hours of such a loop
# the page's names for the four ways, in the table and the figure's legend
LABELS = {"R raw": "matrix, raw", "R fixed": f"matrix, orthonormalize /{FIX_EVERY}", "q raw": "quaternion, raw",
          "q fixed": f"quaternion, normalize /{FIX_EVERY}"}


def shape_error(R) -> float:
    """``|R R^T - I|`` (largest entry) of ``R: (3, 3)``: how far it is from being a rotation at all."""
    return float(np.abs(R @ R.T - np.eye(3)).max())


def angle_between(R_a, R_b) -> float:
    """Rotation angle (rad) of R_a^T R_b, after projecting both (the drifted one may be slightly off SO(3))."""
    return float(np.linalg.norm(tf.so3_log(tf.orthonormalize(R_a).T @ tf.orthonormalize(R_b))))


@dataclass(frozen=True)
class Drift:
    """``n`` compositions: the final matrices ``Rs`` (raw, re-orthonormalised) and quaternions ``qs`` (raw,
    re-normalised), the shape error every RECORD_EVERY steps, just before the fix (``trace``), and the two references ``R_pow`` (binary
    powering of the float step) and ``R_exact`` (the exact rotation)."""

    n: int
    Rs: np.ndarray
    qs: np.ndarray
    trace: dict[str, list[float]]
    R_pow: np.ndarray
    R_exact: np.ndarray


def drift(n_steps=N_STEPS) -> Drift:
    """Compose the same step ``n_steps`` times as a matrix and as a quaternion, raw and re-normalised every
    FIX_EVERY steps; the shape error every RECORD_EVERY steps (just before the fix), and two references for the final rotation."""
    dR = tf.so3_exp(STEP_ROTVEC)
    dq = tf.matrix_to_quat(dR)
    # q -> q * dq is linear in q; its 4x4 matrix (columns e_i * dq) lets one numpy call do each step
    Q_step = tf.quat_multiply(np.eye(4), dq).T
    Rs = np.stack([np.eye(3)] * 2)  # [raw, re-orthonormalised]
    qs = np.stack([np.array([1.0, 0, 0, 0])] * 2)  # [raw, re-normalised]
    trace = {k: [] for k in ("R raw", "R fixed", "q raw", "q fixed")}
    for k in range(1, n_steps + 1):
        Rs = Rs @ dR
        qs = qs @ Q_step.T
        if k % RECORD_EVERY == 0:  # sampled just before a fix: the worst the fixed ones get, not the round-off after
            for i, lab in enumerate(("raw", "fixed")):
                trace[f"R {lab}"].append(shape_error(Rs[i]))
                trace[f"q {lab}"].append(abs(np.linalg.norm(qs[i]) - 1.0))
        if k % FIX_EVERY == 0:
            Rs[1] = tf.orthonormalize(Rs[1])
            qs[1] = qs[1] / np.linalg.norm(qs[1])
    # references: the same float step composed by binary powering (20 products) ...
    R_pow = np.linalg.matrix_power(dR, n_steps)
    # ... and the exact rotation by N * |step| (mod 2 pi), which also sees the step's own rounding
    R_exact = drift_reference(n_steps)
    return Drift(n_steps, Rs, qs, trace, R_pow, R_exact)


@dataclass(frozen=True)
class Float32Drift:
    """Break it: after ``n`` raw float32 compositions, the shape errors ``|R R^T - I|`` and ``||q| - 1|``, and each
    one's angle (rad) from the exact rotation."""

    n: int
    R_ortho: float
    q_norm: float
    R_angle: float
    q_angle: float
    # the float32 matrix re-orthonormalised every FIX_EVERY steps: its shape error right after the last fix, just
    # before it (FIX_EVERY float32 products after the previous one), and its angle (rad) from the exact rotation
    fixed_ortho: float
    fixed_before: float
    fixed_angle: float
    eps32: float  # float32's machine epsilon
    cast_ortho: float  # the exact step rotation, only rounded to float32: its shape error (computed in float64)
    cast_refused: bool  # whether physai's float64 check (ROTATION_TOL) refuses that freshly rounded rotation


def _refuses(R) -> bool:
    """Whether physai refuses ``R`` as a rotation (its shape error above tf.ROTATION_TOL)."""
    try:
        tf.matrix_to_quat(R)
    except InputError:
        return True
    return False


def drift_float32(n_steps=N_STEPS) -> Float32Drift:
    """Break it: the same raw compositions in float32 (as on many GPUs), raw and re-orthonormalised every FIX_EVERY
    steps; the shape and angle errors at the end, and the fixed one's shape error just before the last fix."""
    dR = tf.so3_exp(STEP_ROTVEC).astype(np.float32)
    Q_step = tf.quat_multiply(np.eye(4), tf.matrix_to_quat(tf.so3_exp(STEP_ROTVEC))).astype(np.float32)
    R, q = np.eye(3, dtype=np.float32), np.array([1, 0, 0, 0], dtype=np.float32)
    R_fixed, fixed_before = R.copy(), 0.0
    for k in range(1, n_steps + 1):
        R = R @ dR
        q = q @ Q_step
        R_fixed = R_fixed @ dR
        if k % FIX_EVERY == 0:  # projected in float64, stored back in float32 (its own rounding)
            F64 = R_fixed.astype(float)
            fixed_before = float(np.abs(F64 @ F64.T - np.eye(3)).max())
            R_fixed = tf.orthonormalize(R_fixed.astype(float)).astype(np.float32)
    R64, q64, F64, D64 = R.astype(float), q.astype(float), R_fixed.astype(float), dR.astype(float)
    exact = drift_reference(n_steps)
    return Float32Drift(n_steps, float(np.abs(R64 @ R64.T - np.eye(3)).max()), float(abs(np.linalg.norm(q64) - 1.0)),
                        angle_between(R64, exact), angle_between(tf.quat_to_matrix(q64), exact),
                        float(np.abs(F64 @ F64.T - np.eye(3)).max()), fixed_before, angle_between(F64, exact),
                        float(np.finfo(np.float32).eps), float(np.abs(D64 @ D64.T - np.eye(3)).max()), _refuses(dR))


@dataclass(frozen=True)
class Growth:
    """Shape error ``|R R^T - I|`` of a raw matrix product after each of ``n`` compositions: ``repeated`` (one float
    step composed again and again) and ``varying`` (RMS over N_CHAINS products of steps drawn anew each time, rotation
    vectors ~ N(0, SIGMA^2 I)); ``slope``: each one's growth exponent, the log-log slope from the first to the last."""

    n: tuple[int, ...]
    repeated: tuple[float, ...]
    varying: tuple[float, ...]
    slope: dict[str, float]


def shape_errors(R_steps, checkpoints) -> np.ndarray:
    """Compose ``R_steps: (N, C, 3, 3)`` (step k of C chains) left to right; the RMS over the chains of
    ``|R R^T - I|`` after each checkpoint's number of steps -> ``(len(checkpoints),)``."""
    R = np.broadcast_to(np.eye(3), R_steps.shape[1:]).copy()
    out = []
    for k, dR in enumerate(R_steps, start=1):
        R = R @ dR
        if k in checkpoints:
            out.append(np.sqrt(np.mean(np.abs(R @ np.swapaxes(R, -1, -2) - np.eye(3)).max(axis=(-2, -1)) ** 2)))
    return np.array(out)


def growth(checkpoints=CHECKPOINTS, n_chains=N_CHAINS) -> Growth:
    """The same shape error for one repeated step and for varying steps (a seeded generator), at each checkpoint."""
    n = max(checkpoints)
    rng = np.random.default_rng(SEED)
    varying = shape_errors(tf.so3_exp(SIGMA * rng.normal(size=(n, n_chains, 3))), checkpoints)
    repeated = shape_errors(np.broadcast_to(tf.so3_exp(STEP_ROTVEC), (n, 1, 3, 3)), checkpoints)
    span = np.log(checkpoints[-1] / checkpoints[0])
    slope = {k: float(np.log(e[-1] / e[0]) / span) for k, e in (("repeated", repeated), ("varying", varying))}
    return Growth(tuple(checkpoints), tuple(map(float, repeated)), tuple(map(float, varying)), slope)


def other_step_drift(n_steps) -> float:
    """Shape error ``|R R^T - I|`` of the raw product of ``n_steps`` copies of the same step built another way
    (SciPy's matrix of STEP_ROTVEC, which rounds differently from ``tf.so3_exp``'s)."""
    dR, R = Rotation.from_rotvec(STEP_ROTVEC).as_matrix(), np.eye(3)
    for _ in range(n_steps):
        R = R @ dR
    return shape_error(R)


def drift_reference(n_steps) -> np.ndarray:
    """The exact rotation by ``n_steps * |step|`` (mod 2 pi, in 40-digit decimals) about the step's axis."""
    theta = np.linalg.norm(STEP_ROTVEC)
    getcontext().prec = 40
    two_pi = 2 * Decimal("3.141592653589793238462643383279502884197")
    angle = float((Decimal(float(theta)) * n_steps) % two_pi)
    return tf.so3_exp(STEP_ROTVEC / theta * angle)


def best_time(f, repeats=3) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass(frozen=True)
class Cost:
    """Nanoseconds per pair (best of 3) over ``n`` pairs, by operation (``ns``: matrix, quat, convert), the largest
    difference between the two products, and the quaternion product's time over the matrix product's."""

    n: int
    ns: dict[str, float]
    agree: float
    quat_over_matrix: float


def cost_step(n_batch=N_BATCH) -> Cost:
    """Time (best of 3) to compose ``n_batch`` random pairs as matrices, as quaternions, and to convert."""
    rng = np.random.default_rng(SEED)
    qa, qb = (tf.quat_normalize(rng.normal(size=(n_batch, 4))) for _ in range(2))
    Ra, Rb = tf.quat_to_matrix(qa), tf.quat_to_matrix(qb)
    seconds = {"matrix": best_time(lambda: np.matmul(Ra, Rb)), "quat": best_time(lambda: tf.quat_multiply(qa, qb)),
               "convert": best_time(lambda: tf.quat_to_matrix(qa))}
    ns = {k: t / n_batch * 1e9 for k, t in seconds.items()}
    return Cost(n_batch, ns, float(np.abs(tf.quat_to_matrix(tf.quat_multiply(qa, qb)) - Ra @ Rb).max()),
                ns["quat"] / ns["matrix"])


@dataclass(frozen=True)
class ToTolerance:
    """When the raw matrix's shape error, growing in proportion to the compositions at the measured rate, reaches
    physai's tolerance ``tol``: after ``n`` compositions, ``hours`` of a control loop at ``hz`` Hz."""

    tol: float
    n: float
    hz: float
    hours: float


def to_tolerance(shape, n_steps, tol=tf.ROTATION_TOL, hz=TICK_HZ) -> ToTolerance:
    """Extrapolate a shape error ``shape`` after ``n_steps`` compositions linearly (the repeated step's growth
    exponent is 1) to the number of compositions at which it reaches ``tol``, and that many ticks at ``hz`` in hours."""
    n = tol / shape * n_steps
    return ToTolerance(tol, n, hz, n / hz / 3600)


@dataclass(frozen=True)
class DriftRow:
    """One representation after the compositions: its shape error at the end (for a fixed one, right after the last
    fix) and just before the last fix (the raw ones, not ``fixed``: the same), and its angle (rad) to dR^N by
    powering and to the exact rotation."""

    label: str
    fixed: bool
    shape: float
    before: float
    vs_pow: float
    vs_exact: float


def drift_rows(r: Drift) -> list[DriftRow]:
    """Per representation: the shape error at the end and just before the last fix (``n`` a multiple of FIX_EVERY:
    the last recorded one), and the angle (rad) to dR^N by powering and to the exact rotation."""
    norm = [abs(np.linalg.norm(q) - 1.0) for q in r.qs]
    rows = [("R raw", r.Rs[0], shape_error(r.Rs[0])), ("R fixed", r.Rs[1], shape_error(r.Rs[1])),
            ("q raw", tf.quat_to_matrix(r.qs[0]), norm[0]), ("q fixed", tf.quat_to_matrix(r.qs[1]), norm[1])]
    return [DriftRow(LABELS[key], key.endswith("fixed"), float(shape), r.trace[key][-1] if key.endswith("fixed")
                     else float(shape),
                     angle_between(R, r.R_pow), angle_between(R, r.R_exact)) for key, R, shape in rows]


def print_growth(g: Growth) -> None:
    print("\n== Shape error |R R^T - I| of a raw matrix product: one step repeated, or varying steps ==")
    print(f"{'compositions':>12s} {'repeated step':>14s} {f'varying (RMS of {N_CHAINS})':>20s}")
    for n, a, b in zip(g.n, g.repeated, g.varying):
        print(f"{n:12,d} {a:14.1e} {b:20.1e}")
    print(f"growth exponent (log-log slope): repeated {g.slope['repeated']:.2f}, varying {g.slope['varying']:.2f}"
          " (1: in proportion, 0.5: a random walk)")


def print_drift(r, rows, f32, tols, other) -> None:
    print(f"\n== Drift after {r.n:,} compositions ==")
    print(f"{'representation':32s} {'|R R^T - I| or ||q|-1|':>24s} {'just before last fix':>21s} "
          f"{'angle vs dR^N (pow)':>20s} {'angle vs exact':>16s}")
    for row in rows:
        print(f"{row.label:32s} {row.shape:24.1e} {row.before:21.1e} {row.vs_pow:20.1e} {row.vs_exact:16.1e}")
    print(f"binary powering dR^N vs exact rotation by N|w| mod 2pi: {angle_between(r.R_pow, r.R_exact):.1e} rad")
    ours, scipys = tols
    lo, hi = sorted(tols, key=lambda t: t.n)
    print(f"this one step repeated: the raw matrix's shape error, growing at this rate, reaches physai's tolerance "
          f"{ours.tol:.0e} after {ours.n:.2g} compositions ({ours.hours:.2g} h of a {ours.hz:.0f} Hz loop); SciPy's "
          f"matrix of the same step, rounding differently, after {scipys.n:.2g} ({scipys.hours:.2g} h): "
          f"{lo.n:.2g} to {hi.n:.2g} compositions, depending on how the one step rounds (varying steps, growing "
          "like sqrt(N), take far longer)")
    print(f"the same step built by SciPy's Rotation.from_rotvec, composed {r.n:,} times raw: |R R^T - I| {other:.1e}, "
          f"{other / rows[0].shape:.1f} times ours")
    print("Reading: re-orthonormalisation keeps the matrix a rotation (shape error back to ~1e-16) but cannot undo\n"
          "the accumulated angle error; that comes from rounding in each product and in the step itself.\n"
          "A quaternion stays a rotation whatever its norm once normalised for use (quat_to_matrix does it).")
    print(f"\n-- Break it: the same {f32.n:,} raw compositions in float32 --")
    print(f"matrix:     |R R^T - I| {f32.R_ortho:.1e}, angle vs exact {f32.R_angle:.1e} rad")
    print(f"quaternion: ||q| - 1|   {f32.q_norm:.1e}, angle vs exact {f32.q_angle:.1e} rad")
    print(f"matrix re-orthonormalised every {FIX_EVERY}: |R R^T - I| {f32.fixed_ortho:.1e} right after the last fix, "
          f"{f32.fixed_before:.1e} just before it, angle vs exact "
          f"{f32.fixed_angle:.1e} rad (float32's own round-off: {f32.eps32:.1e})")
    print(f"the exact step rotation, only rounded to float32: |R R^T - I| {f32.cast_ortho:.1e}; physai's float64 "
          f"tolerance {tf.ROTATION_TOL:.0e} " + ("refuses it" if f32.cast_refused else "accepts it"))


def print_cost(r: Cost) -> None:
    print(f"\n== Cost of composing {r.n:,} random pairs at once (best of 3, this machine) ==")
    print(f"{'operation':36s} {'flops/pair':>11s} {'ns/pair':>9s}")
    print(f"{'matrix product R_a @ R_b':36s} {'27 mul+18 add':>11s} {r.ns['matrix']:9.1f}")
    print(f"{'quaternion product q_a * q_b':36s} {'16 mul+12 add':>11s} {r.ns['quat']:9.1f}")
    print(f"{'quaternion -> matrix':36s} {'':>11s} {r.ns['convert']:9.1f}")
    print(f"both give the same rotation: max |R(q_a q_b) - R_a R_b| = {r.agree:.1e}")
    print("Fewer flops do not guarantee less time in NumPy: the matrix product runs in one compiled call, the\n"
          "quaternion product in several array expressions; the counts matter in compiled code (C, JAX, numba).")


def plot_drift(r, g: Growth, path) -> None:
    """The shape errors against the compositions, log-log, in type large enough to read on a phone (the legend below
    the axes, where it hides no data)."""
    fig, ax = plt.subplots(figsize=(4.6, 4.8), layout="constrained")
    steps = np.arange(1, len(r.trace["R raw"]) + 1) * RECORD_EVERY
    floor = 1e-17  # where an error of exactly 0 is drawn on the log axis
    # the raw runs as lines; the fixed ones as points, each the error just before a fix (right after one it is
    # round-off or exactly 0, which says nothing about the drift between fixes)
    for key, style in zip(r.trace, ("C0-", "C0.", "C1-", "C1.")):
        label = LABELS[key] + (", just before each fix" if key.endswith("fixed") else "")
        ax.loglog(steps, np.maximum(r.trace[key], floor), style, label=label, ms=4, lw=2)
    # drawn last and outlined in white, so the cross at 10^5 shows over the blue dots it sits among
    ax.loglog(g.n, g.varying, "C2x", ms=10, mew=2.5, zorder=5, label="matrix, raw, varying steps",
              path_effects=[patheffects.withStroke(linewidth=4.5, foreground="white")])
    if min(min(t) for t in r.trace.values()) == 0.0:
        ax.axhline(floor, color="0.6", lw=0.8, label="exactly 0 (drawn at 1e-17)")
    ax.set_xlabel("compositions", fontsize=13)
    ax.set_ylabel("|R R^T - I|  or  ||q| - 1|", fontsize=13)
    ax.set_title("Shape error of long products", fontsize=13)
    ax.tick_params(labelsize=12)
    fig.legend(fontsize=11, loc="outside lower center", frameon=False)
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def main(full: bool = False) -> list[Claim]:
    """The drift and cost experiment, printed; its numbers and figure saved. No source claim here (``[]``): the
    lesson's one is in build.py. ``full``: a million compositions, not 100,000."""
    n_steps = N_STEPS_FULL if full else N_STEPS
    print(f"random seed {SEED}; step rotation vector {STEP_ROTVEC} ({np.linalg.norm(STEP_ROTVEC):.4f} rad); "
          f"{n_steps:,} sequential compositions; fix every {FIX_EVERY} steps")
    drift_record, cost, f32, grown = drift(n_steps), cost_step(), drift_float32(n_steps), growth()
    rows = drift_rows(drift_record)
    other = other_step_drift(n_steps)
    # where the repeated step reaches the tolerance depends on how that one step rounds: physai's and SciPy's rounding
    tols = (to_tolerance(rows[0].shape, drift_record.n), to_tolerance(other, drift_record.n))
    spread = sorted(tols, key=lambda t: t.n)
    print_drift(drift_record, rows, f32, tols, other)
    print_growth(grown)
    print_cost(cost)
    write_claims(HERE, [], "experiment.py")  # no source numbers here: the lesson's one source claim is in build.py
    plot_drift(drift_record, grown, HERE / "experiment_drift.png")
    figures = [
        Figure("experiment_drift.png",
               "One step composed again and again: the raw shape error grows in proportion to the compositions; "
               f"with varying steps, far more slowly; fixed every {FIX_EVERY} steps, it never gets past what "
               f"{FIX_EVERY} steps add (each point is the error just before a fix).",
               "Log-log plot of shape error against the number of compositions: the raw matrix and raw quaternion "
               "errors of one repeated step climb along straight lines, in proportion to the number of compositions; "
               "green crosses for a raw matrix composed of varying random steps lie far lower and climb more slowly; "
               f"the matrix orthonormalised and the quaternion normalised every {FIX_EVERY} steps, drawn as points "
               f"sampled just before each fix, stay flat at the level the raw ones reach after {FIX_EVERY} "
               "compositions."),
    ]
    save_results(HERE, "experiment.py", {
        "n_steps": drift_record.n, "fix_every": FIX_EVERY, "step_angle": float(np.linalg.norm(STEP_ROTVEC)),
        "rows": rows, "to_tol": tols[0],
        "to_tol_range": {"million": [t.n / 1e6 for t in spread], "hours": [t.hours for t in spread]},
        "float32": f32,
        "other_shape": other, "other_ratio": other / rows[0].shape,
        "growth": grown, "sigma": SIGMA, "n_chains": N_CHAINS, "cost": cost,
        # the two matrices' angle errors equal to the two digits the page prints (a page condition cannot round)
        "same_angle": f"{rows[0].vs_exact:.1e}" == f"{rows[1].vs_exact:.1e}"}, figures=figures)
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
