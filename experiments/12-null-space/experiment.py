"""Lesson 12, Redundancy and the Null Space: "With more joints than task dimensions there are infinitely many
answers. Choose among them on purpose."

1. Self-motion: the Panda (7 joints, 6-D pose task) swings its elbow through the null space while the tool
   pose stays fixed; resolved-rate with and without correction, tool drift printed. Same for a planar 3R
   (3 joints, 2-D position task), drawn.
2. Choosing on purpose: 1,000 random targets each for the Panda (pose) and the SO-101 (position only, 5
   joints for 3 task dimensions), plain IK versus IK refined in the null space for joint-limit avoidance,
   manipulability and a preferred posture.
3. Task priority: keep the tool pose (primary) and raise the elbow (secondary); the conflicting case and
   the algorithmic singularity, undamped versus damped; the priorities swapped.
4. The cost of the projection.

Run: uv run python experiments/12-null-space/experiment.py
Writes experiment_output.txt, self_motion.png, planar3r_self_motion.png and priority.png beside this file.
Deterministic (seeds below); timings depend on the machine.
"""

from __future__ import annotations

import platform
import time
import timeit
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402

from physai import nullspace as ns  # noqa: E402
from physai import robots  # noqa: E402
from physai.transforms import pose_error  # noqa: E402
from physai.ik import solve_ik_batch, task_residual  # noqa: E402
from physai.kinematics import fk, jacobian, tool_pose, tool_pose_and_jacobian  # noqa: E402
from physai.lesson import transcript  # noqa: E402

HERE = Path(__file__).resolve().parent
PANDA_XML = robots.model_path("panda")
PANDA_HOME = np.array([0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853])  # keyframe "home"
# libfranka's "ready" pose: shoulder bent (joint2 != 0), so joints 1 and 3 are not coaxial as at home
PANDA_READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
SEED_TARGETS, SEED_IK = 0, 1
N_TARGETS = 1000
PLANAR_Q0 = np.array([0.2, 0.9, 0.8])
NEAR = 0.05  # "near a limit": within 5 % of the joint's range
DT = 1e-3  # s, a 1 kHz resolved-rate loop
SELF_SPEED = 1.0  # rad/s, joint-space speed along the null space
SELF_T = 1.0  # s
ELBOW = 3  # the Panda's joint4 anchor (body link4 origin) is "the elbow"
PRIORITY_T = 1.5  # s
PRIORITY_DT = 5e-3  # s
K_ELBOW = 4.0  # 1/s, secondary task gain
LAM2 = 0.02  # m/rad, damping of the secondary task
K_TOOL_SECONDARY = 10.0  # 1/s, the tool pose gain when it is demoted to the secondary task


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

    ``correct=False`` drops the ``e / dt`` term (open-loop Euler), so the tool drifts by the second-order error of each tick.
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


def section_self_motion(panda, planar3r):
    print("\n== 1. Self-motion: the joints move, the tool does not ==")
    for chain, rows, task, q in ((panda, 6, "pose", PANDA_READY), (panda, 3, "position", PANDA_READY),
                                 (planar3r, 2, "2-D position", PLANAR_Q0)):
        J = jacobian(chain, q)[:rows]
        rank = np.linalg.matrix_rank(J)
        print(f"  {chain.name:9s} {task:13s}: n = {chain.n}, task rank {rank}, null space dimension {chain.n - rank}")
    n_home = ns.null_basis(jacobian(panda, PANDA_HOME))[:, 0]
    print(f"  At the keyframe 'home' (joint2 = 0) the null vector is {np.round(n_home, 3)}: joints 1 and 3 are")
    print("  coaxial and counter-rotate, a self-motion that moves nothing, not even the elbow. Start from 'ready'.")
    steps = int(round(SELF_T / DT))
    T0 = tool_pose(panda, PANDA_READY)
    print(f"\n  Panda from libfranka's 'ready' pose, null-space speed {SELF_SPEED} rad/s for {SELF_T} s at dt = {DT} s "
          f"({steps} ticks); drift = max over every tick of the tool's change from its start pose")
    print(f"  {'resolved-rate variant':44s} {'pos drift (m)':>14s} {'rot drift (rad)':>16s}")
    runs = {}
    for label, correct, dt in (("open loop (no correction), dt = 1e-3", False, DT),
                               ("with correction J^+ e/dt, dt = 1e-2", True, 1e-2),
                               ("with correction J^+ e/dt, dt = 1e-3", True, DT)):
        traj = self_motion(panda, PANDA_READY, "pose", SELF_SPEED, dt, int(round(SELF_T / dt)), correct)
        runs[label] = (traj, dt)
        dp, dr = drift(panda, traj, T0)
        print(f"  {label:44s} {dp:14.2e} {dr:16.2e}")
    traj, _ = runs["with correction J^+ e/dt, dt = 1e-3"]
    dp, dr = drift(panda, traj, T0)
    ok = dp < 1e-6 and dr < 1e-5
    print(f"  acceptance (corrected, dt = 1e-3): {dp:.1e} m < 1e-6 m and {dr:.1e} rad < 1e-5 rad: {'met' if ok else 'NOT met'}")
    elbow = fk(panda, traj).anchors[:, ELBOW]
    swing = np.linalg.norm(elbow - elbow[0], axis=-1).max()
    print(f"  the elbow moved up to {swing:.3f} m (height {elbow[0, 2]:.3f} -> {elbow[:, 2].min():.3f}..{elbow[:, 2].max():.3f} m); "
          f"joint travel {np.abs(traj[-1] - traj[0]).max():.3f} rad max; smallest limit margin {ns.limit_margin(panda, traj).min():.3f}")
    print("  Open loop, each Euler tick leaves a second-order error ~ |dq|^2 that accumulates; the correction")
    print("  J^+ e/dt removes it every tick, so only one tick's second-order error remains.")

    t = np.arange(len(traj)) * DT
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, name in enumerate(panda.joint_names):
        a1.plot(t, traj[:, i], label=name)
    a1.set_ylabel("joint position (rad)")
    a1.legend(ncol=4, fontsize=8)
    a1.set_title(f"Panda self-motion: tool pose fixed (drift {dp:.1e} m, {dr:.1e} rad)")
    a2.plot(t, elbow[:, 2], label="elbow height (m)")
    a2.set_xlabel("time (s)")
    a2.set_ylabel("elbow height (m)")
    fig.tight_layout()
    fig.savefig(HERE / "self_motion.png", dpi=110)
    plt.close(fig)

    # planar 3R: draw the family of arms with the tip on one point
    q0 = PLANAR_Q0
    p0 = tool_pose(planar3r, q0)[:3, 3]
    qs = []
    for sign in (1.0, -1.0):
        tr = self_motion(planar3r, q0, "position", sign * 1.0, 2e-2, 125, True)
        qs.append(tr if sign > 0 else tr[::-1])
    fam = np.concatenate(qs)
    dp3, _ = drift(planar3r, fam, tool_pose(planar3r, q0))
    print(f"\n  planar 3R, tip held at ({p0[0]:.3f}, {p0[1]:.3f}) m: 2 x 2.5 s of self-motion at 1 rad/s, dt = 2e-2 s, "
          f"corrected; tip drift {dp3:.1e} m; "
          f"last link's absolute angle ranges over {np.ptp(fam.sum(axis=1)):.2f} rad")
    fig, ax = plt.subplots(figsize=(6, 6))
    for q in fam[:: len(fam) // 24]:
        pts = np.vstack([[0, 0, 0], fk(planar3r, q).anchors[1:], tool_pose(planar3r, q)[:3, 3]])
        ax.plot(pts[:, 0], pts[:, 1], "-o", ms=3, lw=1, alpha=0.6)
    ax.plot(*p0[:2], "k*", ms=14, label="tip target (fixed)")
    ax.set_aspect("equal")
    ax.set_title("planar 3R self-motion: one tip position, a 1-D family of arms")
    ax.legend()
    fig.savefig(HERE / "planar3r_self_motion.png", dpi=110)
    plt.close(fig)
    return traj[-1]


def section_benchmark(panda, so101, progress):
    print(f"\n== 2. Choosing on purpose: {N_TARGETS} random targets per robot ==")
    print(f"  targets: tool poses at uniform random joint vectors inside the limits (seed {SEED_TARGETS}); IK: physai.ik "
          f"solve_ik_batch, method 'lm', rng seed {SEED_IK}; tolerances 1e-4 m, 1e-3 rad")
    print(f"  margin = smallest distance to a joint limit as a fraction of that joint's range (0.5 = centred); "
          f"near = margin < {NEAR}")
    so101_pref = 0.5 * (so101.lower + so101.upper)
    cases = (
        (panda, "pose", "full", PANDA_HOME, "keyframe home"),
        (so101, "position", "position", so101_pref, "middle of the limits"),
    )
    task_id = progress.add_task("benchmark", total=2 * 4)
    for chain, task, block, q_pref, pref_name in cases:
        rng = np.random.default_rng(SEED_TARGETS)
        T = tool_pose(chain, chain.random_q(rng, N_TARGETS))
        targets = T if task == "pose" else T[:, :3, 3]
        t0 = time.perf_counter()
        base = solve_ik_batch(chain, targets, task=task, rng=np.random.default_rng(SEED_IK))
        t_ik = time.perf_counter() - t0
        progress.advance(task_id)
        print(f"\n  {chain.name} ({task}, manipulability of the '{block}' block, preferred posture = {pref_name}); "
              f"plain IK {t_ik:.1f} s")
        head = (f"  {'solutions':22s} {'success':>8s} {'med margin':>10s} {'near limit':>10s} {'med manip':>10s} "
                f"{'med |q-q_pref|':>14s} {'med pos err':>11s} {'max pos err':>11s} {'max rot err':>11s} {'time s':>7s}")
        print(head)

        def row(label, qs, conv, perr, oerr, seconds):
            print(f"  {label:22s} {np.mean(conv):8.1%} {np.median(ns.limit_margin(chain, qs)):10.3f} "
                  f"{np.mean(ns.limit_margin(chain, qs) < NEAR):10.1%} {np.median(ns.manipulability(chain, qs, block)):10.3g} "
                  f"{np.median(np.linalg.norm(qs - q_pref, axis=-1)):14.3f} {np.median(perr):11.1e} {np.max(perr):11.1e} "
                  f"{np.max(oerr):11.1e} {seconds:7.1f}")

        row("plain IK", np.stack([r.q for r in base]), [r.converged for r in base],
            [r.position_error for r in base], [r.orientation_error for r in base], t_ik)
        for obj in (ns.joint_limit_cost(chain), ns.manipulability_cost(chain, block), ns.posture_cost(chain, q_pref)):
            t0 = time.perf_counter()
            res = ns.refine_in_nullspace(chain, targets, base, objective=obj, task=task)
            dt = time.perf_counter() - t0
            progress.advance(task_id)
            row(f"+ {obj.name}", np.stack([r.q for r in res]), [r.converged for r in res],
                [r.position_error for r in res], [r.orientation_error for r in res], dt)
            its = np.array([r.iterations for r in res])
            lowered = np.mean([r.cost_final < r.cost_initial for r in res if r.converged])
            print(f"  {'':22s} cost lowered on {lowered:.1%} of the solved targets, median {np.median(its):.0f} "
                  f"iterations, {sum(r.reason == 'iteration limit' for r in res)} hit the iteration limit")
        success = np.mean([r.converged for r in base])
        print(f"  primary success {success:.1%} before and after every refinement (a step is accepted only if the "
              f"primary stays within tolerance): {'>= 99.9 % met' if success >= 0.999 else 'BELOW 99.9 %'}")
    print("\n  Each objective improves its own measure; they pull in different directions (manipulability")
    print("  is often largest near joint limits), so 'choose on purpose' means choosing the objective.")


def section_priority(panda, q_start):
    print("\n== 3. Task priority: primary = hold the tool pose, secondary = elbow height ==")
    T0 = tool_pose(panda, q_start)
    z0 = fk(panda, q_start).anchors[ELBOW, 2]
    z_top = fk(panda, PANDA_READY).anchors[ELBOW, 2]
    steps = int(round(PRIORITY_T / PRIORITY_DT))

    def run(z_des, lam2, swapped=False):
        k_tool = K_TOOL_SECONDARY if swapped else 1.0 / PRIORITY_DT
        q, zs, speeds = q_start.copy(), [], []
        for _ in range(steps):
            e, J1, _, _ = residual(panda, q, T0, "pose")
            x, Jx = ns.point_jacobian(panda, q, ELBOW)
            J2, v2 = Jx[2:], np.array([K_ELBOW * (z_des - x[2])])
            v1 = k_tool * e
            qdot = ns.priority_rate(J2, v2, J1, v1, lam2=lam2) if swapped else ns.priority_rate(J1, v1, J2, v2, lam2=lam2)
            q = q + PRIORITY_DT * qdot
            zs.append(x[2])
            speeds.append(np.abs(qdot).max())
            if not np.all(np.isfinite(q)) or np.abs(q).max() > 1e3:
                break
        dp, dr = drift(panda, q[None], T0)
        return np.array(zs), np.array(speeds), dp, dr, q

    print("  'ready' is the elbow's highest point on its self-motion (q1 = q3 = q5 = 0 keeps the arm in one vertical")
    print(f"  plane; elbow at {z_top:.3f} m), so start where section 1 ended: same tool pose, elbow swung out and down.")
    print(f"  start: elbow at {z0:.3f} m; gain {K_ELBOW}/s, primary correction e/dt, dt = {PRIORITY_DT} s, "
          f"{PRIORITY_T} s; damping lam2 = {LAM2} m/rad")
    print(f"  {'case':52s} {'final elbow z':>13s} {'peak |qdot|':>12s} {'tool pos err':>12s} {'tool rot err':>12s}")
    cases = (
        (f"compatible: elbow to {z0 + 0.02:.3f} m, undamped", z0 + 0.02, 0.0, False),
        (f"conflict: elbow to {z_top + 0.03:.3f} m, undamped", z_top + 0.03, 0.0, False),
        (f"conflict: elbow to {z_top + 0.03:.3f} m, damped lam2 = {LAM2}", z_top + 0.03, LAM2, False),
        (f"conflict, swapped: elbow first, tool gain {K_TOOL_SECONDARY:.0f}/s, damped", z_top + 0.03, LAM2, True),
    )
    traces = {}
    for label, z_des, lam2, swapped in cases:
        zs, sp, dp, dr, q = run(z_des, lam2, swapped)
        traces[label] = (zs, sp)
        print(f"  {label:52s} {zs[-1]:13.4f} {sp.max():12.3g} {dp:12.1e} {dr:12.1e}")
        if len(zs) < steps:
            print(f"  {'':52s} (stopped at t = {len(zs) * PRIORITY_DT:.3f} s: the joints diverged, |q| > 1e3 rad)")
    print("  Compatible: both tasks are met. Conflict: the elbow rises to the highest point of the self-motion")
    print("  and stops there; J2 N1 loses rank (an algorithmic singularity: J1 and J2 are each fine) and the")
    print("  undamped secondary demands |residual| / sigma joint speed; with finite ticks those huge steps lose the")
    print("  tool as well (first order no longer holds). Damping bounds that gain by 1/(2 lam2): the elbow stops")
    print("  at its highest reachable point and the tool stays put.")
    print("  Swapped, the elbow wins and the tool gives way: priority is an order, not a weight. (Demoted, the tool")
    print("  gets a finite gain: a stiff e/dt on a task that cannot be met would demand tens of rad/s.)")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for label, (zs, sp) in traces.items():
        t = np.arange(len(zs)) * PRIORITY_DT
        a1.plot(t, zs, label=label)
        a2.semilogy(t, sp, label=label)
    a1.set_ylabel("elbow height (m)")
    a1.legend(fontsize=7)
    a2.set_ylabel("max |qdot| (rad/s)")
    a2.set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(HERE / "priority.png", dpi=110)
    plt.close(fig)


def section_cost(panda):
    print("\n== 4. The cost of the projection (this machine, this run) ==")
    rng = np.random.default_rng(2)
    q = panda.random_q(rng)
    J = jacobian(panda, q)
    v, qdot0 = rng.normal(size=6), rng.normal(size=7)
    J2 = ns.point_jacobian(panda, q, ELBOW)[1][2:]
    Jb = jacobian(panda, panda.random_q(rng, 1000))
    vb = rng.normal(size=(1000, 6))
    qb = rng.normal(size=(1000, 7))

    def best(f, number):
        return min(timeit.repeat(f, number=number, repeat=7)) / number * 1e6

    rows = (
        ("J^+ v (pinv, one 6x7)", lambda: ns.redundant_rate(J, v), 50, 1),
        ("J^+ v + N qdot0 (one 6x7)", lambda: ns.redundant_rate(J, v, qdot0), 50, 1),
        ("two-level priority (6 + 1 rows)", lambda: ns.priority_rate(J, v, J2, np.ones(1), lam2=LAM2), 50, 1),
        ("J^+ v, batch of 1000", lambda: ns.redundant_rate(Jb, vb), 1, 1000),
        ("J^+ v + N qdot0, batch of 1000", lambda: ns.redundant_rate(Jb, vb, qb), 1, 1000),
        ("FK + Jacobian, batch of 1000", lambda: tool_pose_and_jacobian(panda, panda.q_ref + qb * 0.1), 1, 1000),
    )
    print(f"  {'operation':36s} {'us per call':>12s} {'us per arm':>11s}")
    for label, f, number, per in rows:
        us = best(f, number)
        print(f"  {label:36s} {us:12.1f} {us / per:11.2f}")
    print("  J^+ and N = I - J^+ J come from one SVD, so the projection adds an n x n product: small next to the")
    print("  SVD itself and to the FK + Jacobian evaluation every tick needs anyway. Single calls are dominated")
    print("  by Python overhead; batched, the per-arm cost is what a vectorised controller pays.")


def main():
    panda = robots.load("panda")
    so101 = robots.load("so101")
    planar3r = robots.load("planar3r")
    print("Lesson 12: redundancy and the null space")
    print(f"python {platform.python_version()}, numpy {np.__version__}; robots: {panda.source}, so101 ({so101.source}), "
          f"planar3r ({planar3r.source})")
    t_start = time.perf_counter()
    with Progress(console=Console(stderr=True), transient=True) as progress:
        q_swung = section_self_motion(panda, planar3r)
        section_benchmark(panda, so101, progress)
    section_priority(panda, q_swung)
    section_cost(panda)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    with transcript(HERE / "experiment_output.txt"):
        main()
