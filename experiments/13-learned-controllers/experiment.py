"""Lesson 13, Learned Controllers and the Gap to Reality: learn the inverse map with a network, and measure
every way it fails.

Run: uv run python experiments/13-learned-controllers/experiment.py [--full]
Writes experiment_output.txt and figures (PNG) beside this file. The default "tour" setting trains
each network for a few seconds on CPU; --full trains longer and larger. Every table names the
setting that produced it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from rich.progress import Progress  # noqa: E402

from physai import robots  # noqa: E402
from physai.kinematics import fk, jacobian  # noqa: E402
from physai.learned import (  # noqa: E402
    dls_refine, init_model, limit_violation, position_error, predict, sample_dataset, train,
)
from physai.lesson import transcript  # noqa: E402
from physai.seed_robots import PLANAR2R_LINKS  # noqa: E402

HERE = Path(__file__).parent
SEEDS = {"train data": 0, "test targets": 1, "init": 2, "minibatches": 3, "probe targets": 4}
SETTINGS = {
    "tour": {"n_train": 20_000, "steps": 2000, "hidden": (64, 64), "lr": 1e-2, "n_sim": 100},
    "full": {"n_train": 200_000, "steps": 30_000, "hidden": (128, 128), "lr": 3e-3, "n_sim": 1000},
}
L1, L2 = PLANAR2R_LINKS
DLS_ITERATIONS, DLS_DAMPING = 100, 0.01
SUCCESS_M = 1e-3
SETTLE_S = 2.0


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


def fit(progress, label, chain, data, loss, setting, head="linear"):
    s = SETTINGS[setting]
    model = init_model(chain, data.x, np.random.default_rng(SEEDS["init"]), hidden=s["hidden"], head=head)
    task = progress.add_task(f"train {label}", total=s["steps"])
    t0 = time.perf_counter()
    result = train(model, chain, data, loss=loss, steps=s["steps"], learning_rate=s["lr"],
                   seed=SEEDS["minibatches"], progress=lambda k: progress.update(task, completed=k))
    return result.model, time.perf_counter() - t0


def best_time(fn, repeats=3):
    """Best wall time of ``repeats`` calls (s) and the last result: batched timing, warm caches."""
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def stats(err):
    return np.median(err) * 1e3, np.percentile(err, 95) * 1e3, 100 * np.mean(err <= SUCCESS_M)


def save_figure(fig, ax, name, xlabel, ylabel, title):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(HERE / name, dpi=110)
    plt.close(fig)


def draw_arm(ax, q, **kw):
    p1 = L1 * np.array([np.cos(q[0]), np.sin(q[0])])
    p2 = p1 + L2 * np.array([np.cos(q[0] + q[1]), np.sin(q[0] + q[1])])
    ax.plot([0, p1[0], p2[0]], [0, p1[1], p2[1]], marker="o", ms=3, **kw)


# ---- part A: the planar 2R ---------------------------------------------------------------------


def part_2r(progress, setting):
    s = SETTINGS[setting]
    chain = robots.load("planar2r")
    data = sample_dataset(chain, s["n_train"], np.random.default_rng(SEEDS["train data"]), region=right_half_plane,
                          seed=SEEDS["train data"])
    test = sample_dataset(chain, 1000, np.random.default_rng(SEEDS["test targets"]), region=right_half_plane,
                          seed=SEEDS["test targets"])
    # Bounded heads: the FK loss is 2 pi-periodic in q, so an unbounded 2R network drifts to angles many
    # turns away (equally good for FK, useless as servo commands); SO-101 below shows that failure.
    net_joint, t_joint = fit(progress, "2R joint-regression", chain, data, "joint", setting, "bounded")
    net_fk, t_fk = fit(progress, "2R FK-consistency", chain, data, "fk", setting, "bounded")
    print(f"\nPlanar 2R (L1 = {L1} m, L2 = {L2} m, robots.load('planar2r'), joints unlimited), training workspace "
          f"x >= 0, bounded output heads, {len(data)} samples (seed {SEEDS['train data']}); training took {t_joint:.1f} s "
          f"(joint loss) and {t_fk:.1f} s (FK loss) [{setting}]")

    print(f"\n== A1. Multimodality: two elbows, one average (1000 test targets, seed {SEEDS['test targets']}) "
          f"[{setting}] ==")
    up, down = two_r_solutions(test.x)
    assert max(position_error(chain, up, test.x).max(), position_error(chain, down, test.x).max()) < 1e-9
    mean_pose = np.broadcast_to(data.q.mean(axis=0), test.q.shape)
    print(f"{'model':<24s}{'median mm':>10s}{'p95 mm':>10s}{'median |q2|':>13s}{'elbow-up %':>12s}"
          f"{'dist. to nearest solution (rad)':>33s}")
    for name, q in [("mean pose", mean_pose), ("joint regression", predict(net_joint, test.x)),
                    ("FK-consistency", predict(net_fk, test.x)), ("exact (closed form)", test.q)]:
        err = position_error(chain, q, test.x)
        dist = np.minimum(np.linalg.norm(q - up, axis=1), np.linalg.norm(q - down, axis=1))
        print(f"{name:<24s}{np.median(err) * 1e3:10.1f}{np.percentile(err, 95) * 1e3:10.1f}"
              f"{np.median(np.abs(q[:, 1])):13.3f}{100 * np.mean(q[:, 1] > 0):12.1f}{np.median(dist):33.3f}")
    q_fk_test = predict(net_fk, test.x)
    up_share = 100 * np.mean(q_fk_test[:, 1] > 0)
    print("Regression onto both elbows learns their mean: q2 shrinks towards 0 (a straighter arm) and the tip "
          f"lands beyond the target. FK-consistency needs no labels and picks an elbow itself: elbow-up for "
          f"{up_share:.0f} % of the targets in this run. On the half-plane one elbow works everywhere; where a "
          "network mixes them it must cross a seam, and its error there is large.")

    examples = np.array([[0.45, 0.25, 0.0], [0.3, -0.35, 0.0], [0.6, 0.1, 0.0]])
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.3))
    q_reg, q_fk = predict(net_joint, examples), predict(net_fk, examples)
    e_reg, e_fk = position_error(chain, q_reg, examples), position_error(chain, q_fk, examples)
    for i, ax in enumerate(axes[:2]):
        u, d = two_r_solutions(examples[i : i + 1])
        draw_arm(ax, u[0], color="0.6", label="elbow up (exact)")
        draw_arm(ax, d[0], color="0.6", ls="--", label="elbow down (exact)")
        draw_arm(ax, q_reg[i], color="C3", label=f"joint regression ({e_reg[i] * 1e3:.0f} mm)")
        draw_arm(ax, q_fk[i], color="C2", label=f"FK-consistency ({e_fk[i] * 1e3:.0f} mm)")
        ax.plot(*examples[i, :2], "k*", ms=12, label="target")
        ax.set_aspect("equal")
        ax.set_xlim(-0.2, 0.85)
        ax.set_ylim(-0.6, 0.6)
        ax.legend(fontsize=7, loc="best")
        ax.set_title(f"target ({examples[i, 0]}, {examples[i, 1]}) m")
    err_fk = position_error(chain, predict(net_fk, test.x), test.x)
    sc = axes[2].scatter(test.x[:, 0], test.x[:, 1], c=np.log10(err_fk * 1e3 + 1e-3), s=6, cmap="viridis")
    fig.colorbar(sc, ax=axes[2], label="log10 FK-consistency error (mm)")
    axes[2].set_aspect("equal")
    axes[2].set_title("FK-consistency error over the workspace")
    fig.suptitle(f"Lesson 13: multimodality on the planar 2R [{setting}]")
    fig.tight_layout()
    fig.savefig(HERE / "multimodality_2r.png", dpi=110)
    plt.close(fig)
    print("Examples (figure multimodality_2r.png):")
    for i in range(len(examples)):
        print(f"  target {examples[i, :2]} m: regression q = {np.round(q_reg[i], 3)} misses by "
              f"{e_reg[i] * 1e3:.1f} mm; FK-consistency q = {np.round(q_fk[i], 3)} misses by {e_fk[i] * 1e3:.1f} mm")

    rng = np.random.default_rng(SEEDS["probe targets"])
    q0_2r = np.array([0.0, 1.0])  # a bent, healthy fixed seed for DLS (q2 = 0 would start on the singularity)
    print(f"\n== A2. Extrapolation: targets outside the training workspace (2000 targets, seed "
          f"{SEEDS['probe targets']}, r in [0.25, 0.75] m) [{setting}] ==")
    r = rng.uniform(0.25, 0.75, 2000)
    phi = rng.uniform(-np.pi, np.pi, 2000)
    probe = np.stack([r * np.cos(phi), r * np.sin(phi), np.zeros_like(r)], axis=1)
    dls = dls_refine(chain, probe, np.broadcast_to(q0_2r, (len(probe), 2)), DLS_ITERATIONS, damping=DLS_DAMPING)
    errs = {"joint regression": position_error(chain, predict(net_joint, probe), probe),
            "FK-consistency": position_error(chain, predict(net_fk, probe), probe),
            f"DLS x{DLS_ITERATIONS}": dls.position_error}
    print(f"{'|polar angle| (deg)':<22s}" + "".join(f"{k + ' mm':>22s}" for k in errs) + f"{'n':>6s}")
    ang = np.degrees(np.abs(phi))
    for lo, hi in [(0, 90), (90, 120), (120, 150), (150, 180)]:
        sel = (ang >= lo) & (ang < hi)
        tag = " (inside)" if hi <= 90 else ""
        print(f"{f'{lo}-{hi}{tag}':<22s}" + "".join(f"{np.median(e[sel]) * 1e3:22.1f}" for e in errs.values())
              + f"{sel.sum():6d}")
    print("(median errors) The network has never seen a target beyond 90 deg; DLS needs no training data.")

    print(f"\n== A3. Near the stretched-arm singularity (r -> {L1 + L2} m; 400 targets per band, polar angle "
          f"within +-80 deg) [{setting}] ==")
    bands = [(0.5, 0.7), (0.7, 0.77), (0.77, 0.79), (0.79, 0.798), (0.798, 0.8)]
    print(f"{'r band (m)':<16s}{'sigma_min J':>12s}{'regression':>12s}{'FK-consist.':>12s}"
          f"{f'DLS x{DLS_ITERATIONS}':>12s}{'FK + 3 DLS':>12s}   (median mm)")
    rows = []
    for lo, hi in bands:
        rb = rng.uniform(lo, hi, 400)
        pb = rng.uniform(-np.radians(80), np.radians(80), 400)
        xb = np.stack([rb * np.cos(pb), rb * np.sin(pb), np.zeros(400)], axis=1)
        u, _ = two_r_solutions(xb)
        smin = np.median(np.linalg.svd(jacobian(chain, u)[:, :2, :], compute_uv=False)[:, -1])
        q_fk_b = predict(net_fk, xb)
        e = [position_error(chain, predict(net_joint, xb), xb), position_error(chain, q_fk_b, xb),
             dls_refine(chain, xb, np.broadcast_to(q0_2r, (400, 2)), DLS_ITERATIONS, damping=DLS_DAMPING).position_error,
             dls_refine(chain, xb, q_fk_b, 3, damping=DLS_DAMPING).position_error]
        rows.append([np.median(v) * 1e3 for v in e])
        print(f"{f'{lo}-{hi}':<16s}{smin:12.4f}" + "".join(f"{v:12.2f}" for v in rows[-1]))
    rows = np.array(rows)
    print(f"sigma_min of the position Jacobian at the exact elbow-up solution (m/rad). The exact inverse "
          f"q2 = acos(...) has an infinite slope at r = L1 + L2: the FK-consistency network's median error goes "
          f"{rows[0, 1]:.1f} -> {rows[-1, 1]:.1f} mm from the first band to the last. DLS with {DLS_ITERATIONS} "
          f"iterations converges in every band (worst band median {rows[:, 2].max():.2f} mm); with 3 iterations the "
          f"slow-down shows ({rows[0, 3]:.2f} -> {rows[-1, 3]:.2f} mm): near the singularity each damped step "
          "moves less. Regression's error shrinks at the edge only because the two elbows merge there.")
    return chain


# ---- part B: SO-101, position-only targets ------------------------------------------------------


def part_so101(progress, setting):
    s = SETTINGS[setting]
    chain = robots.load("so101")
    data = sample_dataset(chain, s["n_train"], np.random.default_rng(SEEDS["train data"]), seed=SEEDS["train data"])
    test = sample_dataset(chain, 1000, np.random.default_rng(SEEDS["test targets"]), seed=SEEDS["test targets"])
    x = test.x
    nets = {}
    for label, loss, head in [("joint regression", "joint", "linear"), ("FK-consistency", "fk", "linear"),
                              ("FK-consistency, bounded", "fk", "bounded")]:
        nets[label], secs = fit(progress, f"SO-101 {label}", chain, data, loss, setting, head)
        print(f"SO-101 ({chain.source}) {label}: trained {secs:.1f} s (wall clock)")
    print(f"SO-101 position-only targets: {len(data)} training samples (seed {SEEDS['train data']}), 1000 test "
          f"targets = FK of joints drawn inside the limits (seed {SEEDS['test targets']}) [{setting}]")

    print(f"\n== B1. Joint limits: predictions outside them (1000 test targets) [{setting}] ==")
    print(f"{'model':<28s}{'any joint %':>12s}" + "".join(f"{j[:12]:>14s}" for j in chain.joint_names))
    for label, net in nets.items():
        viol = limit_violation(chain, predict(net, x))
        print(f"{label:<28s}{100 * viol.any(axis=1).mean():12.1f}" + "".join(f"{100 * v:14.1f}" for v in viol.mean(0)))
    print("Regression averages joint vectors that are inside a box, so it stays inside; FK-consistency has no "
          "reason to; the bounded head (q = mid + half * tanh) keeps every prediction inside by construction.")

    q_mid = (chain.lower + chain.upper) / 2
    seeds = np.broadcast_to(q_mid, (len(x), chain.n))
    mean_pose = np.broadcast_to(data.q.mean(axis=0), (len(x), chain.n))
    print(f"\n== B2. The honest table: the same 1000 targets, batched, time per target [{setting}] ==")
    print(f"DLS: damping {DLS_DAMPING} m, joint clipping, fixed seed q = middle of the limits "
          f"{np.round(q_mid, 3)}; success = error <= {SUCCESS_M * 1e3:.0f} mm")
    print(f"{'method':<40s}{'median mm':>10s}{'p95 mm':>10s}{'success %':>11s}{'us/target':>11s}")
    guesses, times = {}, {}
    rows = [("mean pose", lambda: mean_pose)]
    rows += [(f"network: {k}", (lambda n=n: predict(n, x))) for k, n in nets.items()]
    for label, fn in rows:
        secs, q = best_time(fn)
        guesses[label], times[label] = q, secs
        print(f"{label:<40s}" + "{:10.2f}{:10.2f}{:11.1f}".format(*stats(position_error(chain, q, x)))
              + f"{1e6 * secs / len(x):11.1f}")
    secs, dls = best_time(lambda: dls_refine(chain, x, seeds, DLS_ITERATIONS, damping=DLS_DAMPING, tol=1e-6), 1)
    print(f"{f'DLS x{DLS_ITERATIONS} from fixed seed':<40s}" + "{:10.2f}{:10.2f}{:11.1f}".format(
        *stats(dls.position_error)) + f"{1e6 * secs / len(x):11.1f}")

    print(f"\n== B3. The hybrid: network guess + k DLS iterations vs k DLS iterations from the fixed seed "
          f"[{setting}] ==")
    base = "network: FK-consistency, bounded"
    print(f"guess = {base}; time includes the network")
    print(f"{'k':>3s}{'hybrid median mm':>18s}{'success %':>11s}{'us/target':>11s}{'DLS median mm':>15s}"
          f"{'success %':>11s}{'us/target':>11s}")
    hybrid3 = None
    for k in range(0, 6):
        th, hy = best_time(lambda: dls_refine(chain, x, predict(nets[base.split(': ')[1]], x), k, damping=DLS_DAMPING))
        td, dk = best_time(lambda: dls_refine(chain, x, seeds, k, damping=DLS_DAMPING))
        assert np.all(hy.position_error <= hy.initial_error)
        if k == 3:
            hybrid3 = hy.q
        print(f"{k:3d}{np.median(hy.position_error) * 1e3:18.3f}{stats(hy.position_error)[2]:11.1f}"
              f"{1e6 * th / len(x):11.1f}{np.median(dk.position_error) * 1e3:15.3f}{stats(dk.position_error)[2]:11.1f}"
              f"{1e6 * td / len(x):11.1f}")
    print("The hybrid keeps its best iterate, so it is never worse than its own guess (checked on every target).")

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for label, q in guesses.items():
        e = np.sort(position_error(chain, q, x))
        ax.plot(e * 1e3, np.linspace(0, 1, len(e)), label=label)
    ax.plot(np.sort(position_error(chain, hybrid3, x)) * 1e3, np.linspace(0, 1, len(x)), label="hybrid (k = 3)")
    ax.plot(np.sort(dls.position_error) * 1e3, np.linspace(0, 1, len(x)), "k--", label=f"DLS x{DLS_ITERATIONS}")
    ax.set_xscale("log")
    ax.axvline(SUCCESS_M * 1e3, color="0.7", lw=0.8)
    save_figure(fig, ax, "honest_table_so101.png", "position error (mm)", "fraction of the 1000 targets",
                f"SO-101 position IK: error CDF [{setting}]")
    return chain, {"network (FK, bounded)": guesses[base], "network (FK, linear)": guesses["network: FK-consistency"],
                   "hybrid k=3": hybrid3, f"DLS x{DLS_ITERATIONS}": dls.q}, x


def settle(m, chain, q_cmd, gravity: bool):
    """Command ``q_cmd`` to the position servos from the home pose, simulate ``SETTLE_S`` s, return the tip."""
    m.opt.gravity[:] = (0.0, 0.0, -9.81) if gravity else (0.0, 0.0, 0.0)
    d = mujoco.MjData(m)
    act = [m.actuator(j).id for j in chain.joint_names]  # each arm joint has a same-named servo
    d.ctrl[act] = q_cmd  # MuJoCo clamps ctrl to the servo's ctrlrange, as the real servo clamps its goal
    for _ in range(int(round(SETTLE_S / m.opt.timestep))):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    sid = m.site(chain.tool_name).id
    return d.site_xpos[sid].copy(), np.abs(d.qvel).max()


def part_gap(progress, setting, chain, controllers, x):
    n = SETTINGS[setting]["n_sim"]
    m = robots.mujoco_model("so101")
    # The bundled SO-101's stand-in gripper meshes overlap the lower arm at home (physai/models/so101): their
    # contacts are not the real robot's, so self-contact is off and the gap measured is servos + gravity.
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    print(f"\n== B4. The gap to reality: MuJoCo SO-101 position servos (kp {m.actuator_gainprm[0, 0]:.1f} N m/rad, "
          f"force limit {m.actuator_forcerange[0, 1]} N m, joint friction loss {m.dof_frictionloss[0]} N m), "
          f"{n} of the targets, settle {SETTLE_S} s from home [{setting}] ==")
    print(f"{'controller':<24s}{'kinematic mm':>14s}{'sim, gravity mm':>17s}{'sim, no gravity':>17s}"
          f"{'sag mm':>9s}{'<=1 mm kin/sim %':>18s}{'<=0.1 mm kin/sim %':>20s}")
    task = progress.add_task("MuJoCo settle", total=2 * n * len(controllers))
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    max_qvel = 0.0
    for label, q in controllers.items():
        kin = position_error(chain, q[:n], x[:n])
        sims = {}
        for grav in (True, False):
            tips = []
            for i in range(n):
                tip, v = settle(m, chain, q[i], grav)
                tips.append(tip)
                max_qvel = max(max_qvel, v)
                progress.advance(task)
            sims[grav] = np.array(tips)
        sim_err = np.linalg.norm(sims[True] - x[:n], axis=1)
        nog_err = np.linalg.norm(sims[False] - x[:n], axis=1)
        sag = np.linalg.norm(sims[True] - fk(chain, np.clip(q[:n], chain.lower, chain.upper)).p, axis=1)
        print(f"{label:<24s}{np.median(kin) * 1e3:14.3f}{np.median(sim_err) * 1e3:17.3f}{np.median(nog_err) * 1e3:17.3f}"
              f"{np.median(sag) * 1e3:9.3f}{f'{stats(kin)[2]:.0f} / {stats(sim_err)[2]:.0f}':>18s}"
              f"{f'{100 * np.mean(kin <= 1e-4):.0f} / {100 * np.mean(sim_err <= 1e-4):.0f}':>20s}")
        ax.loglog(kin * 1e3 + 1e-4, sim_err * 1e3, ".", label=label)
    print(f"(medians; sag = settled tip vs FK of the commanded joints; largest |qvel| at the end "
          f"{max_qvel:.1e} rad/s). Commands outside a servo's ctrlrange are clamped by MuJoCo (as by the servo), which is why the "
          "unbounded head's few-cm kinematic error becomes a much larger miss on the arm. A kinematically exact "
          "solution stops being exact on the arm: the servo must "
          "be displaced to produce the torque that holds the arm against gravity (plus a friction dead band). "
          "That gap is what matters once the controller's own error is below it.")
    lim = [1e-4, 1e3]
    ax.plot(lim, lim, "k:", lw=0.8)
    save_figure(fig, ax, "gap_to_reality_so101.png", "kinematic error (mm)", "MuJoCo tip error after settling (mm)",
                f"The gap to reality, SO-101 [{setting}]")


def main(setting: str) -> None:
    s = SETTINGS[setting]
    print(f"Lesson 13: learned controllers and the gap to reality. Setting: {setting} "
          f"(n_train {s['n_train']}, {s['steps']} Adam steps, hidden {s['hidden']}, lr {s['lr']}, "
          f"{s['n_sim']} MuJoCo targets). Seeds: {SEEDS}")
    with Progress(transient=True) as progress:
        part_2r(progress, setting)
        chain, controllers, x = part_so101(progress, setting)
        part_gap(progress, setting, chain, controllers, x)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="train longer and larger (minutes, not seconds)")
    args = parser.parse_args()
    with transcript(HERE / "experiment_output.txt"):
        main("full" if args.full else "tour")
