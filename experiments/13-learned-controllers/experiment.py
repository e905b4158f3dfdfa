"""Lesson 13, Learned Controllers and the Gap to Reality, Experiment and Break it: "When you learn the inverse map
with a network instead of solving it, you inherit every failure mode from earlier lessons."

Steps (each returns its numbers; call them from a Python prompt with small sizes):
1. ``train_nets``: small JAX MLPs for the planar 2R and the SO-101, with a joint-regression loss (needs labels)
   and an FK-consistency loss (needs only targets). Trained models are cached beside this file.
2. ``multimodality``: two elbows, one average (planar 2R, closed-form solutions as the reference).
3. ``extrapolation``: targets outside the training region, network vs damped least squares.
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
from physai.kinematics import fk, jacobian  # noqa: E402
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
TIMING_ROUNDS = 9  # the times per target are medians over this many interleaved rounds
START_2R = (0.0, 1.0)  # rad, the 2R solver's start: bent and healthy (q2 = 0 would start on the singularity)
SETTLE_S = 2.0
NETS_2R = {"joint regression": ("joint", "bounded"), "FK-consistency": ("fk", "bounded")}
NETS_SO101 = {"joint regression": ("joint", "linear"), "FK-consistency": ("fk", "linear"),
              "FK-consistency, bounded": ("fk", "bounded")}
R_AROUND = (0.25, 0.75)  # m, Break it's targets all around the arm: r uniform in this range
BANDS = ((0.5, 0.7), (0.7, 0.77), (0.77, 0.79), (0.79, 0.798), (0.798, 0.8))  # m, toward r = L1 + L2
TRAIN_ANGLE = 90  # deg: the 2R networks train on targets with |polar angle| up to this (90: the right half-plane)


def training_region(x):
    """The 2R training workspace: targets ``x: (N, 3)`` m with |polar angle| <= ``TRAIN_ANGLE`` -> ``(N,)`` bool."""
    return np.degrees(np.abs(np.arctan2(x[:, 1], x[:, 0]))) <= TRAIN_ANGLE


def sectors() -> tuple[tuple[float, float], ...]:
    """The |polar angle| sectors (deg) of the extrapolation test: the trained one, 0 to ``TRAIN_ANGLE``, then the
    untrained rest up to 180 in three equal parts."""
    edges = np.linspace(TRAIN_ANGLE, 180, 4)
    return ((0, TRAIN_ANGLE),) + tuple((float(a), float(b)) for a, b in zip(edges[:-1], edges[1:]))


def sector_labels() -> list[str]:
    """The sectors as the transcript names them, the trained one marked."""
    return [f"{lo:g}-{hi:g}" + (" (trained)" if i == 0 else "") for i, (lo, hi) in enumerate(sectors())]


def model_key(robot: str, settings: dict, seeds: dict) -> str:
    """The cache tag of ``robot``'s networks: a hash of everything that defines their training (the settings, the
    seeds and, for the 2R, the training region), so a changed region trains afresh and never reuses a file."""
    region = {"train_angle_deg": TRAIN_ANGLE} if robot == "planar2r" else None
    key = json.dumps([robot, {k: settings[k] for k in ("n_train", "steps", "hidden", "lr")}, seeds, region])
    return hashlib.sha256(key.encode()).hexdigest()[:12]


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
    """FK samples of uniform in-limit joints (the 2R restricted to ``training_region``)."""
    chain = robots.load(robot)
    region = training_region if robot == "planar2r" else None
    return sample_dataset(chain, n, np.random.default_rng(seed), region=region, seed=seed)


def train_nets(robot: str, settings: dict, cache: Path | None = HERE / "models", seeds: dict = SEEDS,
               labels: tuple[str, ...] | None = None) -> dict:
    """``{label: InverseModel}`` for ``robot`` ("planar2r" or "so101"), every network of its kind or those of
    ``labels``; a model already trained with the same settings and ``seeds`` is loaded from ``cache`` (``None``:
    always train)."""
    chain = robots.load(robot)
    specs = NETS_2R if robot == "planar2r" else NETS_SO101
    tag = model_key(robot, settings, seeds)
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
    """One method's median error (mm) in each sector of ``sectors()``."""

    label: str
    medians_mm: np.ndarray


@dataclass(frozen=True)
class Extrapolation:
    sectors: list[list[float]]  # deg, |polar angle| ranges (``sectors()``)
    labels: list[str]  # the sectors as the transcript names them
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
    """Targets all around the 2R (r uniform in ``R_AROUND``, seed 4): the networks vs the solver from ``START_2R``."""
    chain = robots.load("planar2r")
    rng = np.random.default_rng(SEEDS["probe targets"])
    r, phi = rng.uniform(*R_AROUND, n_targets), rng.uniform(-np.pi, np.pi, n_targets)
    x = np.stack([r * np.cos(phi), r * np.sin(phi), np.zeros_like(r)], axis=1)
    q = {k: predict(n, x) for k, n in nets.items()} | {"solver": solve_ik_batch(chain, x, START_2R, task=TASK).q}
    med = sector_medians(phi, {k: position_error(chain, v, x) for k, v in q.items()})
    fk = med["FK-consistency"]
    return Extrapolation([list(s) for s in sectors()], sector_labels(), fk[-1] / fk[0],
                         tuple(SectorRow(k, v * 1e3) for k, v in med.items()), phi, x, q)


def sector_medians(phi: np.ndarray, errors: dict) -> dict:
    """label -> median error (m) per sector of |polar angle| (``sectors()``), from each target's ``phi`` (rad) and
    ``errors`` (label -> (k,) m)."""
    ang = np.degrees(np.abs(phi))
    return {k: np.array([np.median(v[(ang >= lo) & (ang < hi)]) for lo, hi in sectors()]) for k, v in errors.items()}


def print_extrapolation(e: Extrapolation, setting: str) -> None:
    print(f"\n== 3. Extrapolation: targets outside the training region ({len(e.phi)} targets) [{setting}] ==")
    print(f"{'|polar angle| (deg)':<22s}" + "".join(f"{k + ' mm':>26s}" for k in e.errors))
    for i, label in enumerate(e.labels):
        print(f"{label:<22s}" + "".join(f"{r.medians_mm[i]:26.1f}" for r in e.rows))
    tol = TASK.tol_position
    print(f"(medians) The networks never saw a target beyond {e.sectors[0][1]:g} deg; the solver needs no training "
          f"data and is within "
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
    """One radial band, over the repetitions: the regression's and the FK-consistency network's median error (mm) as
    (mean, min, max) over repetitions; the straight arm's closed-form miss L1 + L2 - r (median over every
    repetition's targets pooled, mm); the solver's
    median and largest miss (mm) over every repetition's targets; the FK-consistency network's median distance (rad)
    from the nearer exact answer, (mean, min, max) over repetitions; and the constant-elbow bound (mm): the largest
    miss over the band's targets of one elbow angle for the whole band, the one that reaches the band's middle, with
    the shoulder pointed at each target."""

    regression: tuple[float, float, float]
    fk: tuple[float, float, float]
    straight: float
    solver: float
    solver_max: float
    fk_joint: tuple[float, float, float]
    constant_mm: float
    fk_radial: tuple[float, float, float]  # the FK network's radial share of its squared miss (``radial_split``)
    fk_short: tuple[float, float, float]  # the fraction of targets its tool falls short of, nearer the base
    fk_q2: tuple[float, float, float]  # rad, its median elbow bend |q2|


@dataclass(frozen=True)
class NearSingularity:
    bands: list[list[float]]  # m, the radial bands (BANDS)
    sigma_min: np.ndarray  # (bands,) m/rad, median at the exact elbow-up answer (all repetitions' targets pooled)
    rows: tuple[BandRow, ...]
    repetitions: int
    fk_rises: int  # repetitions whose FK-consistency median in the last band is above the first band's
    fk_monotone: int  # repetitions whose FK-consistency median rises from every band to the next
    joint_rises: int  # repetitions whose FK-consistency joint distance (rad) in the last band is above the first's
    q2_exact: np.ndarray  # (bands,) rad, the exact answers' median |q2| (all repetitions' targets pooled)
    solver_max: float  # mm, the solver's largest miss over every band's targets
    inner_overshoots: bool  # in the first band the FK network's median |q2| (mean over repetitions) is below the
    # exact one and its tool falls short of under half the targets: a straighter arm, reaching too far
    first_order_rad: np.ndarray  # (bands,) rad, the first-order joint error of the FK network's tool miss, dx / sigma_min
    q2_slope_net: np.ndarray  # (bands - 1,) rad/m, the fall of its median |q2| from band to band per metre of the
    # bands' middles
    q2_slope_exact: np.ndarray  # (bands - 1,) rad/m, the same for the exact |q2|
    reach_loss_mm: np.ndarray  # (bands,) mm, how much nearer the base the tool ends with the elbow at the network's
    # median |q2| (mean over repetitions) than at the exact one: the elbow's share of the miss, exactly
    reach_loss_linear_mm: np.ndarray  # (bands,) mm, the same to first order in the elbow (d|p|/dq2)
    errors: np.ndarray = unsaved()  # (repetitions, bands, 10): regression, FK, straight arm, solver median, largest
    # (m); the FK network's median distance to the nearer exact answer (rad); the constant-elbow bound (m); the FK
    # network's radial share, short fraction and median |q2| (rad, ``radial_split``)


def near_singularity(reps: list[dict], n_per_band: int = 400) -> NearSingularity:
    """Targets in radial bands toward r = L1 + L2 (polar angle within +-80 deg), for each repetition's networks
    ``reps[i]`` (label -> model) and its own targets (probe seed + 1 + i * SEED_STRIDE)."""
    chain = robots.load("planar2r")
    errors, radii, smin = [], [[] for _ in BANDS], [[] for _ in BANDS]
    for i, nets in enumerate(reps):
        rng = np.random.default_rng(seed_replica(i)["probe targets"] + 1)
        rows = []
        for b, (lo, hi) in enumerate(BANDS):
            r, phi = rng.uniform(lo, hi, n_per_band), rng.uniform(-np.radians(80), np.radians(80), n_per_band)
            x = np.stack([r * np.cos(phi), r * np.sin(phi), np.zeros(n_per_band)], axis=1)
            J = jacobian(chain, two_r_solutions(x)[0])[:, :2]
            radii[b].append(r)
            smin[b].append(np.linalg.svd(J, compute_uv=False)[:, -1])
            solver = position_error(chain, solve_ik_batch(chain, x, START_2R, task=TASK).q, x)
            q_fk, (up, down) = predict(nets["FK-consistency"], x), two_r_solutions(x)
            rows.append([np.median(position_error(chain, predict(nets["joint regression"], x), x)),
                         np.median(position_error(chain, q_fk, x)),
                         np.median(L1 + L2 - r), np.median(solver), solver.max(),
                         np.median(np.minimum(np.linalg.norm(q_fk - up, axis=1), np.linalg.norm(q_fk - down, axis=1))),
                         constant_elbow_miss(x, (lo + hi) / 2).max(), *radial_split(chain, q_fk, x)])
        errors.append(rows)
    e = np.array(errors)
    # the closed-form columns (sigma_min, the straight arm, the exact |q2|) pool every repetition's targets, one sample
    r_all = [np.concatenate(r) for r in radii]
    q2_exact = np.array([np.median(two_r_solutions(np.c_[r, np.zeros((len(r), 2))])[0][:, 1]) for r in r_all])
    rows = tuple(BandRow(spread(e[:, b, 0] * 1e3), spread(e[:, b, 1] * 1e3), np.median(L1 + L2 - r_all[b]) * 1e3,
                         np.median(e[:, b, 3]) * 1e3, e[:, b, 4].max() * 1e3, spread(e[:, b, 5]),
                         e[:, b, 6].max() * 1e3, *(spread(e[:, b, c]) for c in (7, 8, 9)))
                 for b in range(len(BANDS)))
    fk_miss = e[:, :, 1]
    monotone = int(np.sum(np.all(np.diff(fk_miss, axis=1) > 0, axis=1)))
    smin = np.array([np.median(np.concatenate(m)) for m in smin])
    mid = np.diff(np.mean(BANDS, axis=1))
    net_q2 = np.array([row.fk_q2[0] for row in rows])
    # the tool's distance from the base depends on the elbow alone: read it off FK at q1 = 0
    p_exact, p_net = (fk(chain, np.c_[np.zeros(len(q2)), q2]).p[:, :2] for q2 in (q2_exact, net_q2))
    reach_exact = np.linalg.norm(p_exact, axis=1)
    slope = np.einsum("bi,bi->b", p_exact / reach_exact[:, None],
                      jacobian(chain, np.c_[np.zeros(len(q2_exact)), q2_exact])[:, :2, 1])  # d|p|/dq2, m/rad
    return NearSingularity([list(b) for b in BANDS], smin, rows, len(e),
                           int(np.sum(fk_miss[:, -1] > fk_miss[:, 0])), monotone,
                           int(np.sum(e[:, -1, 5] > e[:, 0, 5])), q2_exact, e[:, :, 4].max() * 1e3,
                           bool(rows[0].fk_q2[0] < q2_exact[0] and rows[0].fk_short[0] < 0.5),
                           np.array([row.fk[0] for row in rows]) * 1e-3 / smin, -np.diff(net_q2) / mid,
                           -np.diff(q2_exact) / mid, (reach_exact - np.linalg.norm(p_net, axis=1)) * 1e3,
                           -slope * (net_q2 - q2_exact) * 1e3, e)


def radial_split(chain, q: np.ndarray, x: np.ndarray) -> tuple[float, float, float]:
    """Where the 2R's miss at joints ``q: (k, 2)`` rad for targets ``x: (k, 3)`` m points -> (the radial share of
    the squared miss: sum of (e . u)^2 over sum of |e|^2, with e the miss and u the unit vector from the base toward
    the target; the fraction of targets whose tool point lies nearer the base than the target, the arm too short;
    the median elbow bend |q2| (rad), which alone sets the tool's distance from the base)."""
    tip = fk(chain, q).p[:, :2]
    e, u = tip - x[:, :2], x[:, :2] / np.linalg.norm(x[:, :2], axis=1, keepdims=True)
    return (float(np.sum(np.sum(e * u, axis=1) ** 2) / np.sum(e**2)),
            float(np.mean(np.linalg.norm(tip, axis=1) < np.linalg.norm(x[:, :2], axis=1))),
            float(np.median(np.abs(q[:, 1]))))


def constant_elbow_miss(x: np.ndarray, r_mid: float) -> np.ndarray:
    """The 2R's miss (m) at targets ``x: (k, 3)`` m of one elbow angle for all, the elbow-up one that reaches
    ``r_mid`` m, with the shoulder pointed at each target -> ``(k,)``: what a map that ignores r within a band
    loses."""
    q = two_r_solutions(np.stack([np.full(len(x), r_mid), np.zeros(len(x)), np.zeros(len(x))], axis=1))[0]
    q[:, 0] += np.arctan2(x[:, 1], x[:, 0])
    return position_error(robots.load("planar2r"), q, x)


def print_near_singularity(s: NearSingularity, setting: str) -> None:
    print(f"\n== 4. Near the stretched-arm singularity (r -> {L1 + L2} m), {len(s.errors)} repetitions [{setting}] ==")
    print(f"{'r band (m)':<14s}{'sigma_min J':>12s}{'regression':>20s}{'FK-consistency':>20s}{'L1+L2-r':>9s}"
          f"{'solver':>9s}{'largest':>9s}{'FK rad':>22s}{'const. q2':>10s}"
          "   (median mm: mean [min, max] over repetitions)")
    for (lo, hi), smin, row in zip(BANDS, s.sigma_min, s.rows):
        cells = "".join(f"{f'{m:.0f} [{a:.0f}, {b:.0f}]':>20s}" for m, a, b in (row.regression, row.fk))
        joint = f"{row.fk_joint[0]:.3f} [{row.fk_joint[1]:.3f}, {row.fk_joint[2]:.3f}]"
        print(f"{f'{lo}-{hi}':<14s}{smin:12.4f}{cells}{row.straight:9.1f}{row.solver:9.1g}{row.solver_max:9.1g}"
              f"{joint:>22s}{row.constant_mm:10.1f}")
    print("FK-consistency's miss: the radial share of its square (along the reach direction), the targets its tool "
          "falls short of, its median |q2| against the exact one (rad); means over repetitions")
    for (lo, hi), q2, row in zip(BANDS, s.q2_exact, s.rows):
        print(f"  {f'{lo}-{hi}':<14s}radial {100 * row.fk_radial[0]:5.1f} %   short {100 * row.fk_short[0]:5.1f} %   "
              f"|q2| {row.fk_q2[0]:.3f} [{row.fk_q2[1]:.3f}, {row.fk_q2[2]:.3f}], exact {q2:.3f}")
    print(f"FK-consistency: last band above the first on {s.fk_rises} of {len(s.errors)} repetitions, rising band by "
          f"band on {s.fk_monotone}; its distance to the nearer exact answer (rad) larger in the last band than in "
          f"the first on {s.joint_rises}. const. q2: the largest miss of one elbow angle per band (mm).")
    print("dx / sigma_min (rad): " + ", ".join(f"{v:.3f}" for v in s.first_order_rad)
          + "; |q2| falls per m between band middles, network: " + ", ".join(f"{v:.1f}" for v in s.q2_slope_net)
          + "; exact: " + ", ".join(f"{v:.1f}" for v in s.q2_slope_exact))
    print("the elbow's share of the tool miss (mm), exact: " + ", ".join(f"{v:.1f}" for v in s.reach_loss_mm)
          + "; first order in the elbow: " + ", ".join(f"{v:.1f}" for v in s.reach_loss_linear_mm))


def singularity_claims(s: NearSingularity) -> list[Claim]:
    first, last = s.rows[0].fk[0], s.rows[-1].fk[0]
    n = len(s.errors)
    j_first, j_last = s.rows[0].fk_joint[0], s.rows[-1].fk_joint[0]
    return [Claim(LESSON, "a network inherits the singularity: its joints stray where the inverse is steep",
                  "worse near the singularity", f"FK-consistency {j_first:.3f} -> {j_last:.3f} rad from the nearer "
                  f"exact answer, tool miss {first:.1f} -> {last:.1f} mm (means over {n} repetitions) as sigma_min "
                  f"{s.sigma_min[0]:.3f} -> {s.sigma_min[-1]:.3f} m/rad; joints further off in the last band on "
                  f"{s.joint_rises} of {n}", verdict(s.joint_rises == n),
                  "median joint-space distance in the last band above the first band's on every repetition")]


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


def guess_and_check(chain, net, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hybrid's part before any fallback on targets ``x: (k, 3)`` m: the network's guess, ``HYBRID``'s few
    iterations from it and the check -> joints ``(k, n)`` rad and which targets passed ``(k,)``."""
    q = solve_ik_batch(chain, x, predict(net, x), task=TASK, solver=HYBRID).q
    return q, position_error(chain, q, x) <= TASK.tol_position


def checked_hybrid(chain, net, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hybrid on targets ``x: (k, 3)`` m: the network's guess, ``HYBRID``'s few iterations from it, then the
    check ``|f(q) - x| <= TASK.tol_position``; a target that fails it is solved again by ``SOLVER`` from scratch.
    -> joints ``(k, n)`` rad and which targets passed the check without the fallback ``(k,)``."""
    q, passed = guess_and_check(chain, net, x)
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


@dataclass(frozen=True)
class WrapRow:
    """One joint of a network's answers: the share of targets where it is outside its limits, the same once each
    angle is wrapped into (-pi, pi], and its median angle (rad)."""

    joint: str
    outside: float
    outside_wrapped: float
    median: float


@dataclass(frozen=True)
class Wrapped:
    """Where a network's joints leave the limits: one row per joint, most often outside first; and the share of
    targets with any joint outside, before and after the wrap (``any``)."""

    rows: tuple[WrapRow, ...]
    any: tuple[float, float]


def wrapped(chain, q: np.ndarray) -> Wrapped:
    """:class:`Wrapped` for joints ``q: (k, n)`` rad of ``chain``."""
    out, out_w = limit_violation(chain, q), limit_violation(chain, np.pi - np.mod(np.pi - q, 2 * np.pi))
    rows = [WrapRow(j, o, w, m) for j, o, w, m in zip(chain.joint_names, out.mean(axis=0), out_w.mean(axis=0),
                                                      np.median(q, axis=0))]
    return Wrapped(tuple(sorted(rows, key=lambda r: -r.outside)),
                   (float(out.any(axis=1).mean()), float(out_w.any(axis=1).mean())))


def print_wrapped(w: Wrapped, label: str) -> None:
    print(f"{label}, per joint: share of targets outside its limits, then once wrapped into (-pi, pi]; median angle")
    for r in w.rows:
        print(f"  {r.joint:<14s}{100 * r.outside:5.0f} %{100 * r.outside_wrapped:5.0f} %{r.median:8.2f} rad")
    print(f"  any joint: {100 * w.any[0]:.0f} % of the targets, {100 * w.any[1]:.0f} % once wrapped; MuJoCo clamps "
          "the command as given")


def print_so101(g: Guesses, setting: str) -> None:
    print(f"\n== 5. SO-101 position targets ({len(g.x)} test targets): errors and joint limits [{setting}] ==")
    tol = f"<= {TASK.tol_position * 1e3:g} mm %"
    print(f"{'method':<32s}{'median mm':>10s}{'p95 mm':>10s}{tol:>14s}{'outside limits %':>18s}")
    for r in g.rows:
        print(f"{r.label:<32s}{r.median_mm:10.2g}{r.p95_mm:10.2g}{100 * r.within_tol:14.0f}{100 * r.outside:18.0f}")
    print("Regression averages joint vectors inside a box, so it stays nearly inside (fitting error near a stop); FK-consistency has no reason to;")
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
    and, for the first seed, times per target (us, medians over ``TIMING_ROUNDS`` interleaved rounds): the hybrid,
    the solver alone, the solver alone on the targets that fell back, the hybrid's part before the fallback and the
    network's forward pass; and their median solver iterations."""

    rows: tuple[SeedRow, ...]
    passed: tuple[float, float, float]
    network_mm: tuple[float, float, float]
    us_hybrid: float
    us_solver: float
    us_fallback: float  # the solver from scratch, per target, on the targets that failed the check only
    speedup: float  # solver alone / hybrid, the ratio of the two median times (so it agrees with us_solver / us_hybrid)
    speedup_range: tuple[float, float]  # the ratio's smallest and largest over the rounds (they bracket speedup)
    iterations_hybrid: float  # median over the targets that passed, HYBRID's iterations
    iterations_solver: float  # median over all targets, every attempt counted
    iterations_fallback: float  # median over the targets that failed the check, the solver alone
    fallback: float  # mean fraction of targets that failed the check: 1 - passed[0]
    fallback_share_us: float  # per target, what repetition 0's fallbacks cost: its failed share times us_fallback
    break_even_us: float  # per target, what the network and refinement may cost to match the solver: us_solver - that
    us_guess: float  # per target, the network's guess, the refinement and the check, no fallback (t_h)
    us_forward_batch: float  # per target, one forward pass of the network over all the targets at once
    us_forward_one: float  # one forward pass for a single target
    predicted_speedup: float  # the cost model's solver alone / hybrid: us_solver / (us_guess + fallback_share_us)


def spread(values) -> tuple[float, float, float]:
    """(mean, min, max) of ``values``."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.min()), float(v.max())


def seed_replica(r: int) -> dict:
    """Replica ``r``'s seeds: every seed of SEEDS plus ``r * SEED_STRIDE`` (replica 0 is the lesson's own)."""
    return {k: v + r * SEED_STRIDE for k, v in SEEDS.items()}


def interleaved_times(fns: list, rounds: int) -> np.ndarray:
    """``(rounds, len(fns))`` s: each round calls every function of ``fns`` once, in turn (a round's order reversed
    every other round, so a drift of the machine's speed falls on all of them alike), after one call of each that
    compiles what it needs."""
    for fn in fns:
        fn()
    times = np.empty((rounds, len(fns)))
    for r in range(rounds):
        for i in (range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))):
            start = time.perf_counter()
            fns[i]()
            times[r, i] = time.perf_counter() - start
    return times


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
            hard = x[~passed] if (~passed).any() else x[:1]
            t = interleaved_times([lambda: checked_hybrid(chain, net, x),
                                   lambda: solve_ik_batch(chain, x, task=TASK, solver=SOLVER),
                                   lambda: solve_ik_batch(chain, hard, task=TASK, solver=SOLVER),
                                   lambda: guess_and_check(chain, net, x), lambda: predict(net, x),
                                   lambda: predict(net, x[:1])], TIMING_ROUNDS)
            ratio = t[:, 1] / t[:, 0]
            us = np.median(t, axis=0) * 1e6 / [n_targets, n_targets, len(hard), n_targets, n_targets, 1]
            timing = (*us[:3], float(us[1] / us[0]), (float(ratio.min()), float(ratio.max())),
                      float(np.median(refined.iterations[passed])), float(np.median(alone.iterations)),
                      float(np.median(alone.iterations[~passed])) if (~passed).any() else 0.0, *us[3:])
    passed = spread([w.passed for w in rows])
    *head, us_guess, us_batch, us_one = timing
    share = (1 - rows[0].passed) * head[2]  # head: us_hybrid, us_solver, us_fallback, ...
    return Hybrid(tuple(rows), passed, spread([w.network_mm for w in rows]), *head, 1.0 - passed[0], share,
                  head[1] - share, us_guess, us_batch, us_one, head[1] / (us_guess + share))


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
    lo, hi = h.speedup_range
    print(f"repetition 0, per target, medians over {TIMING_ROUNDS} interleaved rounds (this machine, this run): hybrid "
          f"(network, refinement, check, fallback) {h.us_hybrid:.0f} us, solver alone {h.us_solver:.0f} us; solver "
          f"alone / hybrid {h.speedup:.2f} (rounds {lo:.2f} to {hi:.2f})")
    print(f"the network's forward pass: {h.us_forward_one:.1f} us for one target, {h.us_forward_batch:.2f} us per "
          f"target in a batch of {n_targets}; guess, refinement and check {h.us_guess:.1f} us per target")
    print(f"the {100 * (1 - h.rows[0].passed):.0f} % that fall back cost the solver {h.us_fallback:.0f} us each "
          f"({h.iterations_fallback:.0f} iterations, median) against {h.us_solver:.0f} us ({h.iterations_solver:.0f}) "
          f"on all targets; median iterations from the guess {h.iterations_hybrid:.0f} (targets that passed)")


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
    """One controller's median miss (mm): kinematic, kinematic once its command is clamped to the actuators'
    ctrlrange and the joints' ranges (where MuJoCo's servos can take the arm), and settled in MuJoCo with and without
    gravity."""

    label: str
    kinematic_mm: float
    clamped_mm: float
    gravity_mm: float
    no_gravity_mm: float


@dataclass(frozen=True)
class Gap:
    """Per controller (``rows``, medians) and per target (m, unsaved): FK of the commanded joints, as given and
    clamped to ctrlrange and the joints' ranges, and the settled MuJoCo tool point's miss."""

    rows: tuple[GapRow, ...]
    kinematic: dict = unsaved()  # label -> (k,)
    clamped: dict = unsaved()  # label -> (k,)
    gravity: dict = unsaved()  # label -> (k,)
    no_gravity: dict = unsaved()  # label -> (k,)


def gap(g: Guesses, labels: tuple[str, ...], n_sim: int = 20) -> Gap:
    """The first ``n_sim`` targets of ``g`` on MuJoCo's SO-101 (self-contact off: its stand-in gripper meshes
    overlap the lower arm at home, so the gap measured is servos + gravity)."""
    chain, m = robots.load("so101"), robots.mujoco_model("so101")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    x = g.x[:n_sim]
    kin = {k: position_error(chain, g.q[k][:n_sim], x) for k in labels}
    # a servo clamps its command to ctrlrange, and the joint stops at its own range (narrower on the wrist roll)
    ctrl = m.actuator_ctrlrange[[m.actuator(j).id for j in chain.joint_names]]
    jnt = m.jnt_range[[m.joint(j).id for j in chain.joint_names]]
    lo, hi = np.maximum(ctrl[:, 0], jnt[:, 0]), np.minimum(ctrl[:, 1], jnt[:, 1])
    clamped = {k: position_error(chain, np.clip(g.q[k][:n_sim], lo, hi), x) for k in labels}
    miss = {grav: {k: np.array([np.linalg.norm(settle(m, chain, q, grav) - xi) for q, xi in zip(g.q[k][:n_sim], x)])
                   for k in labels} for grav in (True, False)}
    rows = tuple(GapRow(k, np.median(kin[k]) * 1e3, np.median(clamped[k]) * 1e3, np.median(miss[True][k]) * 1e3,
                        np.median(miss[False][k]) * 1e3) for k in kin)
    return Gap(rows, kin, clamped, miss[True], miss[False])


def print_gap(gp: Gap, setting: str) -> None:
    print(f"\n== 7. The gap to reality: MuJoCo SO-101 position servos, {len(next(iter(gp.kinematic.values())))} "
          f"targets, settle {SETTLE_S} s from home [{setting}] ==")
    print(f"{'controller':<32s}{'kinematic mm':>14s}{'clamped mm':>12s}{'sim, gravity mm':>17s}"
          f"{'sim, no gravity mm':>20s}")
    for r in gp.rows:
        print(f"{r.label:<32s}{r.kinematic_mm:14.3f}{r.clamped_mm:12.3f}{r.gravity_mm:17.3f}{r.no_gravity_mm:20.3f}")
    print("(medians; clamped: forward kinematics of the command clamped to ctrlrange and the joints' ranges)")
    print("A kinematically exact answer stops being exact on the arm: the servo must be displaced to make")
    print("the torque that holds the arm against gravity (plus a friction dead band).")


def gap_claims(gp: Gap) -> list[Claim]:
    kin, grav = np.median(gp.kinematic["solver"]), np.median(gp.gravity["solver"])
    return [Claim(LESSON, "the gap to reality: an exact answer misses on the simulated arm", "misses in simulation",
                  f"solver {kin * 1e3:.4f} mm kinematic, {grav * 1e3:.2f} mm settled with gravity",
                  verdict(grav > 10 * kin and grav > 1e-4), "settled miss above 10 x the kinematic one and 0.1 mm")]


# ---- figures ---------------------------------------------------------------------------------------


def plot_2r(g: Guesses, e: Extrapolation) -> None:
    chain = robots.load("planar2r")
    # panels stacked, so the text stays legible at a phone's width; the training region is a half annulus twice as
    # tall as wide, so its panel gets the taller row
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 10.5), height_ratios=(1.35, 1))
    err = position_error(chain, g.q["FK-consistency"], g.x)
    sc = a1.scatter(g.x[:, 0], g.x[:, 1], c=np.log10(err * 1e3 + 1e-3), s=6, cmap="viridis")
    fig.colorbar(sc, ax=a1, label="log10 FK-consistency error (mm)")
    a1.set_aspect("equal")
    a1.set(xlabel="target x (m)", ylabel="target y (m)")
    a1.set_title("FK-consistency inside the training region", pad=14)
    for k, v in e.errors.items():
        a2.semilogy(np.degrees(np.abs(e.phi)), v * 1e3 + 1e-6, ".", ms=3, label=k)
    a2.axvline(TRAIN_ANGLE, color="k", lw=0.8)
    a2.axhline(TASK.tol_position * 1e3, color="C2", ls="--", lw=0.8, label="the solver's tolerance")
    a2.set_xlabel(f"|polar angle| (deg); trained up to {TRAIN_ANGLE:g}")
    a2.set_ylabel("error (mm)")
    # above the axes: inside, any corner covers the solver's points or the networks'
    a2.legend(fontsize=9, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False, markerscale=3)
    fig.suptitle("Planar 2R: a learned inverse inside and outside its data", fontweight="bold", fontsize=13)
    _save(fig, "multimodality_2r.png")


def plot_so101(g: Guesses, gp: Gap) -> None:
    chain = robots.load("so101")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 9.6))  # stacked: legible on a phone
    for k, q in g.q.items():
        e = np.sort(position_error(chain, q, g.x))
        a1.plot(e * 1e3 + 1e-6, np.linspace(0, 1, len(e)), label=k)
    a1.set_xscale("log")
    a1.set_xlabel("position error (mm)")
    a1.set_ylabel("fraction of targets")
    a1.legend(fontsize=9)
    colour = {k: f"C{i}" for i, k in enumerate(g.q)}  # one colour per method in both panels
    for k in gp.kinematic:
        a2.loglog(gp.kinematic[k] * 1e3 + 1e-4, gp.gravity[k] * 1e3, ".", label=k, color=colour.get(k))
    a2.plot([1e-4, 1e3], [1e-4, 1e3], "k:", lw=0.8, label="miss = kinematic error")
    a2.legend(fontsize=9)
    a2.set_xlabel("kinematic error (mm)")
    a2.set_ylabel("MuJoCo miss, settled with gravity (mm)")
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
    reps_2r = [nets_2r] + [train_nets("planar2r", s, seeds=seed_replica(r)) for r in range(1, s["n_seeds"])]
    ns_ = near_singularity(reps_2r, s["n_band"])
    print_near_singularity(ns_, setting)
    plot_2r(mm, ex)
    g = so101_guesses(nets_so101, s["n_test"])
    print_so101(g, setting)
    wr = wrapped(robots.load("so101"), g.q["FK-consistency"])
    print_wrapped(wr, "FK-consistency (linear head)")
    h = hybrid(s, s["n_test"], s["n_seeds"])
    print_hybrid(h, s["n_test"], setting)
    gp = gap(g, ("FK-consistency", "FK-consistency, bounded", HYBRID_LABEL, "solver"), s["n_sim"])
    print_gap(gp, setting)
    plot_so101(g, gp)
    claims = (multimodality_claims(mm) + extrapolation_claims(ex) + singularity_claims(ns_)
              + limits_hybrid_claims(g, h) + gap_claims(gp))
    solver_ok = np.mean(ex.errors["solver"] <= TASK.tol_position)
    below = "every" if solver_ok == 1 else f"{solver_ok:.0%} of the"
    plural = "s" if solver_ok < 1 else ""
    below_diag = int(np.sum(gp.gravity["FK-consistency"] < gp.kinematic["FK-consistency"]))
    p95 = [w.p95_mm for w in g.rows if w.label not in (HYBRID_LABEL, "solver")]
    clamping = ("the unbounded network's points sit far above it (and, the table shows, as far with gravity off), "
                "because MuJoCo clamps its "
                "out-of-range commands to the joint limits: the clamped joints, through forward kinematics alone, "
                "already miss by about as much as the settled arm")
    helped = (f" Below the diagonal ({below_diag} of the unbounded network's points), clamping an out-of-range "
              "command happened to move the tool nearer the target." if below_diag else "")
    figures = [
        Figure("multimodality_2r.png",
               "On the planar 2R, the FK-consistency network misses by millimetres to centimetres inside its training "
               "region (top: Experiment Step 1's test targets), most at the inner edge, r near L1 - L2, where the arm "
               f"folds back (a singularity too), and near the region's border. Beyond the {TRAIN_ANGLE:g} degrees of "
               "polar angle it was trained on, both networks' errors climb, while the solver lands within its "
               f"tolerance (dashed) on {below} target{plural} (bottom: Break it's targets all around the arm).",
               "Top: Step 1's test targets in the training region coloured by the FK-consistency network's error on "
               "a log scale; the largest errors sit along the inner edge of the annulus and near the line x = 0, large "
               "ones also along the outer edge, and the smallest in between. Bottom: for Break "
               "it's targets all around the arm, every method's error against the target's polar angle, log scale, "
               f"with a vertical line at {TRAIN_ANGLE:g} degrees and a dashed line at the solver's tolerance; both "
               f"networks' errors climb beyond the vertical line, while the solver's points lie below the dashed "
               f"line on {below} target{plural}."),
        Figure("so101_learned.png",
               "On the SO-101, the error distribution of each method (top), and each answer's kinematic error against "
               "its miss after settling in MuJoCo with gravity on (bottom). The solver's and the hybrid's points sit above the diagonal "
               f"because the servos sag under gravity; {clamping} (see On the real robot).{helped}",
               "Top: cumulative distributions of the SO-101 position error on a log axis, one curve per method; the "
               "checked hybrid and the solver end below their tolerance on every target they solve, the "
               f"networks' curves lie far to their right, their 95th percentiles {min(p95):.0f} to {max(p95):.0f} mm. "
               "Bottom: for a few targets, the MuJoCo miss after "
               "settling with gravity on against the kinematic error, on log axes; the solver's and the hybrid's answers sit far above "
               f"the diagonal (gravity sag); {clamping}; the bounded network's points lie on it.{helped}"),
    ]
    save_results(HERE, "experiment.py", {
        "setting": setting, "settings": SETTINGS[setting], "seeds": SEEDS, "links": [L1, L2], "reach": L1 + L2,
        "tol_mm": TASK.tol_position * 1e3, "hybrid_iterations": HYBRID.iterations, "timing_rounds": TIMING_ROUNDS,
        "restarts": SOLVER.restarts, "joint_range_2r": robots.load("planar2r").sample_range,
        "solver_2r_within_tol": solver_ok, "solver_2r_max_mm": ex.errors["solver"].max() * 1e3,
        "settle_s": SETTLE_S, "r_around": list(R_AROUND), "multimodality": mm.rows,
        # how many times regression's median miss is below the mean pose's, and above FK-consistency's
        "regression_ratios": [mm.rows[0].median_mm / mm.rows[1].median_mm, mm.rows[1].median_mm / mm.rows[2].median_mm],
        "extrapolation": ex, "singularity": ns_, "so101": g.rows,
        "wrapped": wr,
        "hybrid": h, "gap": gp.rows}, figures=figures)  # tool errors in mm, as the transcript prints them
    return publish_claims(HERE, claims, "experiment.py")


if __name__ == "__main__":
    run_script(main, __file__, full_run())
