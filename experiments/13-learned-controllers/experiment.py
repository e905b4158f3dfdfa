"""Lesson 13, Learned Controllers and the Gap to Reality, Experiment and Break it: "When you learn the inverse map
with a network instead of solving it, you inherit every failure mode from earlier tracks."

Steps (each returns its numbers; call them from a Python prompt with small sizes):
1. ``train_nets``: small JAX MLPs for the planar 2R and the SO-101, with a joint-regression loss (needs labels)
   and an FK-consistency loss (needs only targets). Trained models are cached beside this file.
2. ``multimodality``: two elbows, one average (planar 2R, closed-form solutions as the reference).
3. ``extrapolation``: targets outside the training half-plane, network vs damped least squares.
4. ``near_singularity``: the stretched-arm singularity, where the exact inverse has an infinite slope.
5. ``joint_limits``: which networks command joints outside the SO-101's limits.
6. ``hybrid``: a network's guess, a few solver iterations and a check of the tool's miss against the tolerance; a
   target that fails the check goes to the full solver (restarts). Over several seeds of training and targets.
7. ``gap``: the commanded joints on MuJoCo's SO-101 with its position servos, with and without gravity.

Run: uv run python experiments/13-learned-controllers/experiment.py [--full]
Writes experiment_output.txt, claims.json and PNG figures beside this file, trained models under models/.
The default setting trains each network for a few seconds on CPU (once; later runs load the cache); --full
(or PHYSAI_FULL=1) trains longer and larger and settles 1,000 targets in MuJoCo. Every table names its setting.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from physai import Solver, Task, robots, solve_ik_batch  # noqa: E402
from physai.kinematics import jacobian  # noqa: E402
from physai.learned import (  # noqa: E402
    init_model,
    limit_violation,
    load,
    position_error,
    predict,
    sample_dataset,
    save,
    train,
)
from physai.example_robots import PLANAR2R_LINKS  # noqa: E402
from physai.course.lesson import (  # noqa: E402
    Claim,
    Figure,
    full_run,
    out_dir,
    publish_claims,
    run_script,
    save_figure,
    save_results,
    unsaved,
    verdict,
)

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
LESSON = "13"
SEEDS = {"train data": 0, "test targets": 1, "init": 2, "minibatches": 3, "probe targets": 4}
SETTINGS = {
    "tour": {"n_train": 20_000, "steps": 2000, "hidden": (64, 64), "lr": 1e-2, "n_test": 300, "n_probe": 600,
             "n_band": 100, "n_sim": 20, "n_seeds": 5},
    "full": {"n_train": 200_000, "steps": 30_000, "hidden": (128, 128), "lr": 3e-3, "n_test": 1000, "n_probe": 2000,
             "n_band": 400, "n_sim": 1000, "n_seeds": 10},
}
SEED_STRIDE = 10  # replica r of the hybrid's measurement uses every seed of SEEDS plus r * SEED_STRIDE
L1, L2 = PLANAR2R_LINKS
TASK = Task("position")  # the tool point; success and the hybrid's check: within TASK.tol_position (m)
SOLVER = Solver()  # the library's solver: Levenberg-Marquardt, restarts from random joints when an attempt fails
HYBRID = Solver(restarts=0, iterations=5)  # the hybrid's short refinement from the network's guess
TIMING_REPEATS = 3  # the time per target is the fastest of this many runs
START_2R = (0.0, 1.0)  # rad, the 2R solver's start: bent and healthy (q2 = 0 would start on the singularity)
SETTLE_S = 2.0
NETS_2R = {"joint regression": ("joint", "bounded"), "FK-consistency": ("fk", "bounded")}
NETS_SO101 = {"joint regression": ("joint", "linear"), "FK-consistency": ("fk", "linear"),
              "FK-consistency, bounded": ("fk", "bounded")}
BANDS = ((0.5, 0.7), (0.7, 0.77), (0.77, 0.79), (0.79, 0.798), (0.798, 0.8))  # m, toward r = L1 + L2
SECTORS = ((0, 90), (90, 120), (120, 150), (150, 180))  # deg, |polar angle|; training covers 0-90


def right_half_plane(x):
    """The 2R training workspace: targets with x >= 0 (polar angle within +-90 deg)."""
    return x[:, 0] >= 0.0


def two_r_solutions(x):
    """Closed-form elbow-up (q2 > 0) and elbow-down solutions of the 2R arm: ``x: (N, 3)`` -> two ``(N, 2)``."""
    r2 = x[:, 0] ** 2 + x[:, 1] ** 2
    c2 = np.clip((r2 - L1**2 - L2**2) / (2 * L1 * L2), -1.0, 1.0)
    sols = []
    for q2 in (np.arccos(c2), -np.arccos(c2)):
        q1 = np.arctan2(x[:, 1], x[:, 0]) - np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))
        sols.append(np.stack([q1, q2], axis=-1))
    return sols


def _save(fig, name: str) -> None:
    fig.tight_layout()
    save_figure(fig, HERE / name, dpi=110)
    plt.close(fig)


# ---- 1. training (cached) --------------------------------------------------------------------------


def dataset(robot: str, n: int, seed: int):
    """FK samples of uniform in-limit joints (the 2R restricted to the right half-plane)."""
    chain = robots.load(robot)
    region = right_half_plane if robot == "planar2r" else None
    return sample_dataset(chain, n, np.random.default_rng(seed), region=region, seed=seed)


def train_nets(robot: str, settings: dict, cache: Path | None = HERE / "models", seeds: dict = SEEDS,
               labels: tuple[str, ...] | None = None) -> dict:
    """``{label: InverseModel}`` for ``robot`` ("planar2r" or "so101"), every network of its kind or those of
    ``labels``; a model already trained with the same settings and ``seeds`` is loaded from ``cache`` (``None``:
    always train)."""
    chain = robots.load(robot)
    specs = NETS_2R if robot == "planar2r" else NETS_SO101
    key = json.dumps([robot, {k: settings[k] for k in ("n_train", "steps", "hidden", "lr")}, seeds])
    tag = hashlib.sha256(key.encode()).hexdigest()[:12]
    data, nets = None, {}
    for label, (loss, head) in specs.items():
        if labels is not None and label not in labels:
            continue
        path = None if cache is None else cache / f"{robot}_{label.replace(' ', '_').replace(',', '')}_{tag}.npz"
        if path is not None and path.exists():
            nets[label] = load(path)
            continue
        data = dataset(robot, settings["n_train"], seeds["train data"]) if data is None else data
        model = init_model(chain, data.x, np.random.default_rng(seeds["init"]), hidden=settings["hidden"], head=head)
        nets[label] = train(model, chain, data, loss=loss, steps=settings["steps"], learning_rate=settings["lr"],
                            seed=seeds["minibatches"]).model
        if path is not None:
            path.parent.mkdir(exist_ok=True)
            save(nets[label], path)
    return nets


# ---- 2. multimodality ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Guesses:
    """Joint vectors several inverse maps give for the same targets ``x``, and the page's numbers: one row per map
    (:class:`ModeRow` on the 2R, :class:`SO101Row` on the SO-101)."""

    rows: tuple  # one per label of q
    x: np.ndarray = unsaved()  # (k, 3) m, targets
    q: dict = unsaved()  # label -> (k, n) rad


@dataclass(frozen=True)
class ModeRow:
    """One inverse map on the 2R: median error (mm), median |q2| (rad), elbow-up fraction, median distance (rad)
    to the nearer exact answer."""

    label: str
    median_mm: float
    q2: float
    up: float
    nearest: float


def multimodality(nets: dict, n_targets: int = 1000) -> Guesses:
    """The 2R networks, the mean training pose and the exact elbow-up answer on test targets (seed 1)."""
    test = dataset("planar2r", n_targets, SEEDS["test targets"])
    train_mean = dataset("planar2r", 2000, SEEDS["train data"]).q.mean(axis=0)
    q = {"mean pose": np.broadcast_to(train_mean, test.q.shape)} | {k: predict(n, test.x) for k, n in nets.items()}
    g = Guesses((), test.x, q | {"exact (elbow up)": two_r_solutions(test.x)[0]})
    return replace(g, rows=tuple(ModeRow(k, v[0] * 1e3, *v[1:]) for k, v in multimodality_rows(g).items()))


def multimodality_rows(g: Guesses) -> dict:
    """label -> (median error m, median |q2| rad, elbow-up fraction, median distance to the nearer exact answer)."""
    chain = robots.load("planar2r")
    up, down = two_r_solutions(g.x)
    return {k: (np.median(position_error(chain, q, g.x)), np.median(np.abs(q[:, 1])), np.mean(q[:, 1] > 0),
                np.median(np.minimum(np.linalg.norm(q - up, axis=1), np.linalg.norm(q - down, axis=1))))
            for k, q in g.q.items()}


def print_multimodality(g: Guesses, setting: str) -> None:
    print(f"\n== 2. Multimodality: two elbows, one average (planar 2R, {len(g.x)} test targets) [{setting}] ==")
    print(f"{'model':<24s}{'median mm':>10s}{'median |q2|':>13s}{'elbow-up %':>12s}{'dist. to nearest (rad)':>24s}")
    for r in g.rows:
        print(f"{r.label:<24s}{r.median_mm:10.1f}{r.q2:13.3f}{100 * r.up:12.1f}{r.nearest:24.3f}")
    print("Regression onto both elbows learns their mean: q2 shrinks toward 0 (a straighter arm) and the tip lands")
    print("beyond the target. FK-consistency needs no labels and picks an elbow itself.")


def multimodality_claims(g: Guesses) -> list[Claim]:
    q2 = {r.label: r.q2 for r in g.rows}
    reg, exact = q2["joint regression"], q2["exact (elbow up)"]
    return [Claim(LESSON, "a regressor on a multimodal inverse averages the modes", "averaging two elbows",
                  f"median |q2| {reg:.2f} rad vs exact {exact:.2f} rad", verdict(reg < 0.5 * exact),
                  "the regression's elbow bend below half of the exact answers'")]


# ---- 3. extrapolation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SectorRow:
    """One method's median error (mm) in each sector of SECTORS."""

    label: str
    medians_mm: np.ndarray


@dataclass(frozen=True)
class Extrapolation:
    sectors: list[list[float]]  # deg, |polar angle| ranges (SECTORS)
    fk_out_over_in: float  # the FK-consistency network's median error in the last sector over the first
    rows: tuple[SectorRow, ...]
    phi: np.ndarray = unsaved()  # (k,) rad, polar angle of each target
    x: np.ndarray = unsaved()  # (k, 3) m, targets
    q: dict = unsaved()  # label -> (k, 2) rad, each method's answer

    @property
    def errors(self) -> dict:
        """label -> (k,) m, the tool point's miss."""
        return {k: position_error(robots.load("planar2r"), q, self.x) for k, q in self.q.items()}


def extrapolation(nets: dict, n_targets: int = 2000) -> Extrapolation:
    """Targets all around the 2R (r in [0.25, 0.75] m, seed 4): the networks vs the solver from ``START_2R``."""
    chain = robots.load("planar2r")
    rng = np.random.default_rng(SEEDS["probe targets"])
    r, phi = rng.uniform(0.25, 0.75, n_targets), rng.uniform(-np.pi, np.pi, n_targets)
    x = np.stack([r * np.cos(phi), r * np.sin(phi), np.zeros_like(r)], axis=1)
    q = {k: predict(n, x) for k, n in nets.items()} | {"solver": solve_ik_batch(chain, x, START_2R, task=TASK).q}
    med = sector_medians(phi, {k: position_error(chain, v, x) for k, v in q.items()})
    fk = med["FK-consistency"]
    return Extrapolation([list(s) for s in SECTORS], fk[-1] / fk[0],
                         tuple(SectorRow(k, v * 1e3) for k, v in med.items()), phi, x, q)


def sector_medians(phi: np.ndarray, errors: dict) -> dict:
    """label -> median error (m) per sector of |polar angle| (``SECTORS``), from each target's ``phi`` (rad) and
    ``errors`` (label -> (k,) m)."""
    ang = np.degrees(np.abs(phi))
    return {k: np.array([np.median(v[(ang >= lo) & (ang < hi)]) for lo, hi in SECTORS]) for k, v in errors.items()}


def print_extrapolation(e: Extrapolation, setting: str) -> None:
    print(f"\n== 3. Extrapolation: targets outside the training half-plane ({len(e.phi)} targets) [{setting}] ==")
    print(f"{'|polar angle| (deg)':<22s}" + "".join(f"{k + ' mm':>26s}" for k in e.errors))
    for i, (lo, hi) in enumerate(SECTORS):
        tag = " (trained)" if hi <= 90 else ""
        print(f"{f'{lo}-{hi}{tag}':<22s}" + "".join(f"{r.medians_mm[i]:26.1f}" for r in e.rows))
    tol = TASK.tol_position
    print(f"(medians) The networks never saw a target beyond 90 deg; the solver needs no training data and is within "
          f"{tol * 1e3:g} mm on {np.mean(e.errors['solver'] <= tol):.0%} of the targets (largest miss "
          f"{e.errors['solver'].max() * 1e3:.2g} mm).")


def extrapolation_claims(e: Extrapolation) -> list[Claim]:
    med = sector_medians(e.phi, e.errors)
    fk_net, solver = med["FK-consistency"], e.errors["solver"]
    tol = TASK.tol_position
    return [Claim(LESSON, "a network fails outside its training distribution", "fails out of distribution",
                  f"FK-consistency {fk_net[0] * 1e3:.1f} mm inside, {fk_net[-1] * 1e3:.0f} mm at 150-180 deg; "
                  f"solver at most {solver.max() * 1e3:.2g} mm",
                  verdict(fk_net[-1] > 10 * fk_net[0] and solver.max() <= tol),
                  f"10 x the in-distribution error behind the arm, while the solver is within {tol * 1e3:g} mm on "
                  "every target")]


# ---- 4. near the singularity -----------------------------------------------------------------------


@dataclass(frozen=True)
class BandRow:
    """One radial band's median errors (mm): regression, FK-consistency, the solver; and the solver's largest."""

    regression: float
    fk: float
    solver: float
    solver_max: float


@dataclass(frozen=True)
class NearSingularity:
    bands: list[list[float]]  # m, the radial bands (BANDS)
    sigma_min: np.ndarray  # (bands,) m/rad, median at the exact elbow-up answer
    rows: tuple[BandRow, ...]
    errors: np.ndarray = unsaved()  # (bands, 4) the rows in m


def near_singularity(nets: dict, n_per_band: int = 400) -> NearSingularity:
    """Targets in radial bands toward r = L1 + L2 (polar angle within +-80 deg, seed 4 after step 3's draws)."""
    chain = robots.load("planar2r")
    rng = np.random.default_rng(SEEDS["probe targets"] + 1)
    smin, rows = [], []
    for lo, hi in BANDS:
        r, phi = rng.uniform(lo, hi, n_per_band), rng.uniform(-np.radians(80), np.radians(80), n_per_band)
        x = np.stack([r * np.cos(phi), r * np.sin(phi), np.zeros(n_per_band)], axis=1)
        smin.append(np.median(np.linalg.svd(jacobian(chain, two_r_solutions(x)[0])[:, :2], compute_uv=False)[:, -1]))
        solver = position_error(chain, solve_ik_batch(chain, x, START_2R, task=TASK).q, x)
        rows.append([np.median(position_error(chain, predict(nets["joint regression"], x), x)),
                     np.median(position_error(chain, predict(nets["FK-consistency"], x), x)), np.median(solver),
                     solver.max()])
    errors = np.array(rows)
    return NearSingularity([list(b) for b in BANDS], np.array(smin), tuple(BandRow(*r * 1e3) for r in errors), errors)


def print_near_singularity(s: NearSingularity, setting: str) -> None:
    print(f"\n== 4. Near the stretched-arm singularity (r -> {L1 + L2} m) [{setting}] ==")
    print(f"{'r band (m)':<16s}{'sigma_min J':>12s}{'regression':>12s}{'FK-consist.':>12s}"
          f"{'solver':>12s}{'solver max':>12s}   (median mm, and the solver's largest)")
    for (lo, hi), smin, row in zip(BANDS, s.sigma_min, s.errors):
        print(f"{f'{lo}-{hi}':<16s}{smin:12.4f}" + "".join(f"{v * 1e3:12.2g}" for v in row))
    print("The exact inverse q2 = acos(...) has an infinite slope at r = L1 + L2; a smooth network cannot follow it.")


def singularity_claims(s: NearSingularity) -> list[Claim]:
    first, last = s.errors[0, 1], s.errors[-1, 1]
    return [Claim(LESSON, "a network inherits the singularity: its error grows where the inverse is steep",
                  "worse near the singularity", f"FK-consistency {first * 1e3:.1f} -> {last * 1e3:.1f} mm "
                  f"as sigma_min {s.sigma_min[0]:.3f} -> {s.sigma_min[-1]:.3f} m/rad", verdict(last > first),
                  "median error in the last band above the first band's")]


# ---- 5. joint limits, 6. the hybrid ----------------------------------------------------------------

HYBRID_LABEL = "hybrid (checked)"


@dataclass(frozen=True)
class SO101Row:
    """One controller on the SO-101: median and 95th percentile error (mm), the fraction within the tolerance and the
    fraction with a joint outside its limits."""

    label: str
    median_mm: float
    p95_mm: float
    within_tol: float
    outside: float


def checked_hybrid(chain, net, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hybrid on targets ``x: (k, 3)`` m: the network's guess, ``HYBRID``'s few iterations from it, then the
    check ``|f(q) - x| <= TASK.tol_position``; a target that fails it is solved again by ``SOLVER`` from scratch.
    -> joints ``(k, n)`` rad and which targets passed the check without the fallback ``(k,)``."""
    refined = solve_ik_batch(chain, x, predict(net, x), task=TASK, solver=HYBRID)
    passed = position_error(chain, refined.q, x) <= TASK.tol_position
    q = refined.q.copy()
    if not passed.all():
        q[~passed] = solve_ik_batch(chain, x[~passed], task=TASK, solver=SOLVER).q
    return q, passed


def so101_guesses(nets: dict, n_targets: int = 1000, seeds: dict = SEEDS) -> Guesses:
    """The SO-101 networks, the checked hybrid (bounded network) and the solver alone from the middle of the limits."""
    chain = robots.load("so101")
    x = dataset("so101", n_targets, seeds["test targets"]).x
    q = {k: predict(n, x) for k, n in nets.items()}
    q[HYBRID_LABEL] = checked_hybrid(chain, nets["FK-consistency, bounded"], x)[0]
    q["solver"] = solve_ik_batch(chain, x, task=TASK, solver=SOLVER).q
    g = Guesses((), x, q)
    return replace(g, rows=tuple(SO101Row(k, v[0] * 1e3, v[1] * 1e3, v[2], v[3]) for k, v in so101_rows(g).items()))


def so101_rows(g: Guesses) -> dict:
    """label -> (median error m, 95th percentile m, fraction within the tolerance, fraction with a joint outside its
    limits)."""
    chain = robots.load("so101")
    rows = {}
    for k, q in g.q.items():
        err = position_error(chain, q, g.x)
        rows[k] = (np.median(err), np.percentile(err, 95), np.mean(err <= TASK.tol_position),
                   limit_violation(chain, q).any(axis=1).mean())
    return rows


def print_so101(g: Guesses, setting: str) -> None:
    print(f"\n== 5. SO-101 position targets ({len(g.x)} test targets): errors and joint limits [{setting}] ==")
    tol = f"<= {TASK.tol_position * 1e3:g} mm %"
    print(f"{'method':<32s}{'median mm':>10s}{'p95 mm':>10s}{tol:>14s}{'outside limits %':>18s}")
    for r in g.rows:
        print(f"{r.label:<32s}{r.median_mm:10.2g}{r.p95_mm:10.2g}{100 * r.within_tol:14.0f}{100 * r.outside:18.0f}")
    print("Regression averages joint vectors inside a box, so it stays inside; FK-consistency has no reason to;")
    print("the bounded head (q = mid + half * tanh) stays inside by construction. The solver clips into the limits.")


@dataclass(frozen=True)
class SeedRow:
    """The checked hybrid for one seed of training and targets: the fraction that passed the check without the
    fallback, the hybrid's and the solver's fraction within the tolerance, the network's median miss (mm)."""

    seed: int
    passed: float
    hybrid_success: float
    solver_success: float
    network_mm: float


@dataclass(frozen=True)
class Hybrid:
    """The checked hybrid over ``len(rows)`` seeds (``rows``; ``passed``: mean, min, max of their pass fraction),
    and, for the first seed, the time per target (us, fastest of ``TIMING_REPEATS``) of the hybrid and of the solver
    alone, and their median solver iterations."""

    rows: tuple[SeedRow, ...]
    passed: tuple[float, float, float]
    network_mm: tuple[float, float, float]
    us_hybrid: float
    us_solver: float
    iterations_hybrid: float  # median over the targets that passed, HYBRID's iterations
    iterations_solver: float  # median over all targets, every attempt counted
    fallback: float  # mean fraction of targets that failed the check: 1 - passed[0]
    speedup: float  # us_solver / us_hybrid
    faster: bool  # speedup > 1


def spread(values) -> tuple[float, float, float]:
    """(mean, min, max) of ``values``."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.min()), float(v.max())


def seed_replica(r: int) -> dict:
    """Replica ``r``'s seeds: every seed of SEEDS plus ``r * SEED_STRIDE`` (replica 0 is the lesson's own)."""
    return {k: v + r * SEED_STRIDE for k, v in SEEDS.items()}


def best_time(fn) -> float:
    """The fastest of ``TIMING_REPEATS`` calls of ``fn()`` (s), after one call that compiles what it needs."""
    fn()
    times = []
    for _ in range(TIMING_REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def hybrid(settings: dict, n_targets: int, n_seeds: int, cache: Path | None = HERE / "models") -> Hybrid:
    """The checked hybrid with the bounded FK-consistency network on ``n_targets`` SO-101 targets, for ``n_seeds``
    seed replicas (each trains its own network on its own data and draws its own targets)."""
    chain = robots.load("so101")
    label = "FK-consistency, bounded"
    rows, timing = [], None
    for r in range(n_seeds):
        seeds = seed_replica(r)
        net = train_nets("so101", settings, cache, seeds, (label,))[label]
        x = dataset("so101", n_targets, seeds["test targets"]).x
        q, passed = checked_hybrid(chain, net, x)
        alone = solve_ik_batch(chain, x, task=TASK, solver=SOLVER)
        rows.append(SeedRow(r, passed.mean(), np.mean(position_error(chain, q, x) <= TASK.tol_position),
                            np.mean(alone.position_error <= TASK.tol_position),
                            np.median(position_error(chain, predict(net, x), x)) * 1e3))
        if timing is None:
            refined = solve_ik_batch(chain, x, predict(net, x), task=TASK, solver=HYBRID)
            timing = (best_time(lambda: checked_hybrid(chain, net, x)) / n_targets * 1e6,
                      best_time(lambda: solve_ik_batch(chain, x, task=TASK, solver=SOLVER)) / n_targets * 1e6,
                      float(np.median(refined.iterations[passed])), float(np.median(alone.iterations)))
    passed = spread([w.passed for w in rows])
    return Hybrid(tuple(rows), passed, spread([w.network_mm for w in rows]), *timing, 1.0 - passed[0],
                  timing[1] / timing[0], timing[1] > timing[0])


def print_hybrid(h: Hybrid, n_targets: int, setting: str) -> None:
    tol = TASK.tol_position * 1e3
    print(f"\n== 6. The checked hybrid: bounded FK-consistency guess + up to {HYBRID.iterations} solver iterations, "
          f"checked against {tol:g} mm, else the full solver; {len(h.rows)} seeds x {n_targets} targets [{setting}] ==")
    print(f"{'seed':>4s}{'passed check %':>16s}{'hybrid ok %':>13s}{'solver ok %':>13s}{'network median mm':>19s}")
    for w in h.rows:
        print(f"{w.seed:4d}{100 * w.passed:16.1f}{100 * w.hybrid_success:13.1f}{100 * w.solver_success:13.1f}"
              f"{w.network_mm:19.1f}")
    m, lo, hi = h.passed
    print(f"passed the check without the fallback: mean {100 * m:.0f} %, min {100 * lo:.0f} %, max {100 * hi:.0f} %")
    print(f"seed 0: {h.us_hybrid:.0f} us per target for the hybrid (network, refinement, check, fallback) vs "
          f"{h.us_solver:.0f} us for the solver alone (fastest of {TIMING_REPEATS}; this machine, this run); median "
          f"iterations {h.iterations_hybrid:.0f} from the guess (targets that passed) vs {h.iterations_solver:.0f}")


def limits_hybrid_claims(g: Guesses, hyb: Hybrid) -> list[Claim]:
    chain = robots.load("so101")
    out = {k: limit_violation(chain, g.q[k]).any(axis=1).mean() for k in ("FK-consistency", "FK-consistency, bounded")}
    ok_h, ok_s = [w.hybrid_success for w in hyb.rows], [w.solver_success for w in hyb.rows]
    return [
        Claim(LESSON, "a network ignores joint limits it was not built to respect", "commands outside the limits",
              f"unbounded FK-consistency {out['FK-consistency']:.0%}, bounded {out['FK-consistency, bounded']:.0%}",
              verdict(out["FK-consistency"] > 0 and out["FK-consistency, bounded"] == 0),
              "share of targets with a joint outside its limit"),
        Claim(LESSON, "the checked hybrid is as reliable as the solver", "hybrid as reliable as the solver",
              f"within tolerance: hybrid {min(ok_h):.0%}-{max(ok_h):.0%}, solver {min(ok_s):.0%}-{max(ok_s):.0%} over "
              f"{len(hyb.rows)} seeds", verdict(all(a >= b for a, b in zip(ok_h, ok_s))),
              "on every seed the hybrid's fraction within tolerance is at least the solver's"),
    ]


# ---- 7. the gap to reality -------------------------------------------------------------------------


def settle(m, chain, q_cmd, gravity: bool) -> np.ndarray:
    """Command ``q_cmd`` to the position servos from the home pose, simulate ``SETTLE_S`` s -> the tool point."""
    m.opt.gravity[:] = (0.0, 0.0, -9.81) if gravity else (0.0, 0.0, 0.0)
    d = mujoco.MjData(m)
    d.ctrl[[m.actuator(j).id for j in chain.joint_names]] = q_cmd  # MuJoCo clamps to ctrlrange, as the servo does
    for _ in range(round(SETTLE_S / m.opt.timestep)):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    return d.site_xpos[m.site(chain.tool_name).id].copy()


@dataclass(frozen=True)
class GapRow:
    """One controller's median miss (mm): kinematic, and settled in MuJoCo with and without gravity."""

    label: str
    kinematic_mm: float
    gravity_mm: float
    no_gravity_mm: float


@dataclass(frozen=True)
class Gap:
    """Per controller (``rows``, medians) and per target (m, unsaved): FK of the commanded joints, and the settled
    MuJoCo tool point's miss."""

    rows: tuple[GapRow, ...]
    kinematic: dict = unsaved()  # label -> (k,)
    gravity: dict = unsaved()  # label -> (k,)
    no_gravity: dict = unsaved()  # label -> (k,)


def gap(g: Guesses, labels: tuple[str, ...], n_sim: int = 20) -> Gap:
    """The first ``n_sim`` targets of ``g`` on MuJoCo's SO-101 (self-contact off: its stand-in gripper meshes
    overlap the lower arm at home, so the gap measured is servos + gravity)."""
    chain, m = robots.load("so101"), robots.mujoco_model("so101")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    x = g.x[:n_sim]
    kin = {k: position_error(chain, g.q[k][:n_sim], x) for k in labels}
    miss = {grav: {k: np.array([np.linalg.norm(settle(m, chain, q, grav) - xi) for q, xi in zip(g.q[k][:n_sim], x)])
                   for k in labels} for grav in (True, False)}
    rows = tuple(GapRow(k, np.median(kin[k]) * 1e3, np.median(miss[True][k]) * 1e3, np.median(miss[False][k]) * 1e3)
                 for k in kin)
    return Gap(rows, kin, miss[True], miss[False])


def print_gap(gp: Gap, setting: str) -> None:
    print(f"\n== 7. The gap to reality: MuJoCo SO-101 position servos, {len(next(iter(gp.kinematic.values())))} "
          f"targets, settle {SETTLE_S} s from home [{setting}] ==")
    print(f"{'controller':<32s}{'kinematic mm':>14s}{'sim, gravity mm':>17s}{'sim, no gravity mm':>20s}")
    for r in gp.rows:
        print(f"{r.label:<32s}{r.kinematic_mm:14.3f}{r.gravity_mm:17.3f}{r.no_gravity_mm:20.3f}")
    print("(medians) A kinematically exact answer stops being exact on the arm: the servo must be displaced to make")
    print("the torque that holds the arm against gravity (plus a friction dead band).")


def gap_claims(gp: Gap) -> list[Claim]:
    kin, grav = np.median(gp.kinematic["solver"]), np.median(gp.gravity["solver"])
    return [Claim(LESSON, "the gap to reality: an exact answer misses on the simulated arm", "misses in simulation",
                  f"solver {kin * 1e3:.4f} mm kinematic, {grav * 1e3:.2f} mm settled with gravity",
                  verdict(grav > 10 * kin and grav > 1e-4), "settled miss above 10 x the kinematic one and 0.1 mm")]


# ---- figures ---------------------------------------------------------------------------------------


def plot_2r(g: Guesses, e: Extrapolation) -> None:
    chain = robots.load("planar2r")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    err = position_error(chain, g.q["FK-consistency"], g.x)
    sc = a1.scatter(g.x[:, 0], g.x[:, 1], c=np.log10(err * 1e3 + 1e-3), s=6, cmap="viridis")
    fig.colorbar(sc, ax=a1, label="log10 FK-consistency error (mm)")
    a1.set_aspect("equal")
    a1.set(xlabel="target x (m)", ylabel="target y (m)")
    a1.set_title("inside the training half-plane")
    for k, v in e.errors.items():
        a2.semilogy(np.degrees(np.abs(e.phi)), v * 1e3 + 1e-6, ".", ms=2, label=k)
    a2.axvline(90, color="k", lw=0.8)
    a2.axhline(TASK.tol_position * 1e3, color="C2", ls="--", lw=0.8, label="the solver's tolerance")
    a2.set_xlabel("|polar angle| (deg); trained up to 90")
    a2.set_ylabel("error (mm)")
    a2.legend(fontsize=7)
    fig.suptitle("Planar 2R: a learned inverse inside and outside its data")
    _save(fig, "multimodality_2r.png")


def plot_so101(g: Guesses, gp: Gap) -> None:
    chain = robots.load("so101")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for k, q in g.q.items():
        e = np.sort(position_error(chain, q, g.x))
        a1.plot(e * 1e3 + 1e-6, np.linspace(0, 1, len(e)), label=k)
    a1.set_xscale("log")
    a1.set_xlabel("position error (mm)")
    a1.set_ylabel("fraction of targets")
    a1.legend(fontsize=7)
    colour = {k: f"C{i}" for i, k in enumerate(g.q)}  # one colour per method in both panels
    for k in gp.kinematic:
        a2.loglog(gp.kinematic[k] * 1e3 + 1e-4, gp.gravity[k] * 1e3, ".", label=k, color=colour.get(k))
    a2.plot([1e-4, 1e3], [1e-4, 1e3], "k:", lw=0.8, label="miss = kinematic error")
    a2.legend(fontsize=7)
    a2.set_xlabel("kinematic error (mm)")
    a2.set_ylabel("MuJoCo miss after settling (mm)")
    fig.suptitle("SO-101: error CDF and the gap to reality")
    _save(fig, "so101_learned.png")


# ---- the lesson ------------------------------------------------------------------------------------


def main(full: bool = False) -> list[Claim]:
    """The learned controllers against the solver and MuJoCo, printed; their claims (returned), numbers and figures
    saved. ``full``: the ``"full"`` setting (larger training and test sets), else ``"tour"``."""
    setting = "full" if full else "tour"
    s = SETTINGS[setting]
    print(f"Lesson 13: learned controllers and the gap to reality. Setting: {setting} (n_train {s['n_train']}, "
          f"{s['steps']} Adam steps, hidden {s['hidden']}, lr {s['lr']}; {s['n_test']} test targets, {s['n_sim']} in "
          f"MuJoCo). Seeds: {SEEDS}")
    nets_2r, nets_so101 = train_nets("planar2r", s), train_nets("so101", s)
    mm, ex = multimodality(nets_2r, s["n_test"]), extrapolation(nets_2r, s["n_probe"])
    print_multimodality(mm, setting)
    print_extrapolation(ex, setting)
    ns_ = near_singularity(nets_2r, s["n_band"])
    print_near_singularity(ns_, setting)
    plot_2r(mm, ex)
    g = so101_guesses(nets_so101, s["n_test"])
    print_so101(g, setting)
    h = hybrid(s, s["n_test"], s["n_seeds"])
    print_hybrid(h, s["n_test"], setting)
    gp = gap(g, ("FK-consistency", "FK-consistency, bounded", HYBRID_LABEL, "solver"), s["n_sim"])
    print_gap(gp, setting)
    plot_so101(g, gp)
    claims = (multimodality_claims(mm) + extrapolation_claims(ex) + singularity_claims(ns_)
              + limits_hybrid_claims(g, h) + gap_claims(gp))
    solver_ok = np.mean(ex.errors["solver"] <= TASK.tol_position)
    below = "every" if solver_ok == 1 else f"{solver_ok:.0%} of the"
    figures = [
        Figure("multimodality_2r.png",
               f"On the planar 2R, the FK-consistency network misses by millimetres to "
               "centimetres inside its training half-plane (left); beyond the 90 degrees of polar angle it was trained on, "
               f"both networks' errors climb, while the solver lands within its tolerance (dashed) on {below} "
               f"target{'s' if solver_ok < 1 else ''} (right).",
               "Left: test targets in the right half-plane coloured by the FK-consistency network's error on a log "
               "scale; the error is smallest in the middle of the annulus and larger near its inner and outer edges. "
               "Right: every method's error against the target's polar angle, log scale, with a vertical line at 90 "
               "degrees and a dashed line at the solver's tolerance; both networks' errors climb beyond the vertical "
               f"line, while the solver's points lie below the dashed line on {below} target"
               f"{'s' if solver_ok < 1 else ''}."),
        Figure("so101_learned.png",
               "On the SO-101, the error distribution of each method, and each answer's "
               "kinematic error against its miss after settling in MuJoCo.",
               "Left: cumulative distributions of the SO-101 position error on a log axis, one curve per method; the "
               "checked hybrid and the solver end below their tolerance on every target they solve, the "
               "networks stay in the millimetre to centimetre range. Right: for a few targets, the MuJoCo miss after "
               "settling against the kinematic error, on log axes; the solver's and the hybrid's answers sit far above "
               "the diagonal (gravity sag), the "
               "unbounded network's points too (its commands are clamped at the limits), the bounded network's lie "
               "on it."),
    ]
    save_results(HERE, "experiment.py", {
        "setting": setting, "settings": SETTINGS[setting], "seeds": SEEDS, "links": [L1, L2], "reach": L1 + L2,
        "tol_mm": TASK.tol_position * 1e3, "hybrid_iterations": HYBRID.iterations, "restarts": SOLVER.restarts,
        "solver_2r_within_tol": solver_ok, "solver_2r_max_mm": ex.errors["solver"].max() * 1e3,
        "settle_s": SETTLE_S, "multimodality": mm.rows, "extrapolation": ex, "singularity": ns_, "so101": g.rows,
        "hybrid": h, "gap": gp.rows}, figures=figures)  # tool errors in mm, as the transcript prints them
    return publish_claims(HERE, claims, "experiment.py")


if __name__ == "__main__":
    run_script(main, __file__, full_run())
