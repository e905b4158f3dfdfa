"""Lesson 11, Inverse Jacobian Methods: inverse kinematics by iterating the Jacobian.

Run: uv run python experiments/11-inverse-kinematics/experiment.py   (writes experiment_output.txt and
PNG figures beside this file). Every number is measured in this run; seeds are printed.
Set PHYSAI_IK_TARGETS to change the number of random targets per robot/task (default 1000).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from rich.progress import track  # noqa: E402

from physai import kinematics, robots  # noqa: E402
from physai import transforms as tf  # noqa: E402
from physai.ik import DEFAULT_RESTARTS, METHODS, solve_ik, solve_ik_batch  # noqa: E402
from physai.lesson import fmt_row, transcript  # noqa: E402
from physai.singularity import damped_solve  # noqa: E402

HERE = Path(__file__).resolve().parent
N_TARGETS = int(os.environ.get("PHYSAI_IK_TARGETS", "1000"))
N_TIMED = 30  # single solve_ik calls timed per robot/task (the batch covers all targets)
SEED = 0
CASES = [  # label, loader, task
    ("SO-101", lambda: robots.load("so101"), "position"),
    ("SO-101", lambda: robots.load("so101"), "position+axis"),
    ("WidowX AI", lambda: robots.load("wxai"), "pose"),
    ("Panda", lambda: robots.load("panda"), "pose"),
]


def two_link_example() -> None:
    print("== 1. The seed's 2-DoF worked example, recomputed (L1 = 0.5 m, L2 = 0.3 m, q = [0, pi/2]) ==")
    L1, L2, q1, q2 = 0.5, 0.3, 0.0, np.pi / 2
    tip = np.array([L1 * np.cos(q1) + L2 * np.cos(q1 + q2), L1 * np.sin(q1) + L2 * np.sin(q1 + q2)])
    J = np.array([[-L1 * np.sin(q1) - L2 * np.sin(q1 + q2), -L2 * np.sin(q1 + q2)],
                  [L1 * np.cos(q1) + L2 * np.cos(q1 + q2), L2 * np.cos(q1 + q2)]])
    S = np.linalg.svd(J, compute_uv=False)
    v = np.array([0.0, 0.1])
    qdot = np.linalg.solve(J, v)
    qdot_damped = damped_solve(J, v, 0.1)
    J_seed = np.array([[-0.3, -0.3], [0.8, 0.0]])
    rows = [
        ("tip position (m)", "'fully extended vertically'", f"({tip[0]:.3f}, {tip[1]:.3f}): link 1 along x, link 2 straight up -> bent 90 deg, NOT extended"),
        ("J row 1", "[-0.3, -0.3]", fmt_row(J[0], 6, 3)),
        ("J row 2", "[0.8, 0]", fmt_row(J[1], 6, 3) + "  (seed used L1+L2 = 0.8; cos(q1+q2) = 0 leaves L1 = 0.5)"),
        ("eig(J J^T)", "0.7225, 0.1025", fmt_row(S**2, 6, 4) + f"  (even the seed's own J gives {fmt_row(np.linalg.svd(J_seed, compute_uv=False)**2, 6, 4)})"),
        ("sigma_1, sigma_2 (m/rad)", "0.85, 0.32", fmt_row(S, 6, 4)),
        ("kappa", "2.66", f"{S[0] / S[1]:.3f}"),
        ("qdot = J^-1 [0, 0.1] (rad/s)", "[0.125, -0.333]", fmt_row(qdot, 6, 3) + f"  (the seed's own J gives {fmt_row(np.linalg.solve(J_seed, v), 6, 3)})"),
        ("damped qdot, lambda = 0.1", "'slightly reduced'", fmt_row(qdot_damped, 6, 3) + f"  (|qdot| {np.linalg.norm(qdot_damped):.3f} vs {np.linalg.norm(qdot):.3f}; tip speed achieved {np.linalg.norm(J @ qdot_damped):.4f} m/s of 0.1)"),
    ]
    for name, seed, ours in rows:
        flag = "" if seed.startswith("'slightly") else "  <- DISAGREES"
        print(f"  {name:30s} seed: {seed:30s} measured: {ours}{flag if name not in ('J row 1',) else ''}")
    print(f"  Verdict: the seed's Jacobian row 2, its eigenvalues (inconsistent even with its own J: |det| "
          f"{abs(np.linalg.det(J_seed)):.2f} but 0.85 x 0.32 = {0.85 * 0.32:.3f}), its joint rates (the seed's own")
    print(f"  J gives {fmt_row(np.linalg.solve(J_seed, v), 6, 3)}, not [0.125, -0.333]) and the")
    print("  'fully extended' description are wrong; the configuration is well conditioned either way.")


def singularity_approach(q_sing: np.ndarray) -> None:
    print("\n== 3. Approaching that singularity: pinv joint speeds explode, DLS stays bounded ==")
    chain = robots.load("so101")
    lam, v_speed = 0.05, 0.05
    elbow = q_sing[2] + np.linspace(-0.03, 0.03, 3001)  # refine the grid's minimum along elbow_flex
    qs = np.repeat(q_sing[None], len(elbow), 0)
    qs[:, 2] = elbow
    q_sing = qs[np.argmin(np.linalg.svd(kinematics.jacobian(chain, qs)[:, :3], compute_uv=False)[:, -1])]
    print(f"q = the map's minimum with elbow_flex offset by d; tool speed {v_speed} m/s along the weakest direction u_min;")
    print(f"DLS lambda = {lam} m/rad, so |qdot| <= |v| / (2 lambda) = {v_speed / (2 * lam):.2f} rad/s whatever the pose")
    print(f"{'d (rad)':>8s} {'sigma_min':>10s} {'|qdot| pinv':>12s} {'|qdot| DLS':>11s} {'DLS tool speed':>15s}")
    for d in (0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0):
        q = q_sing + np.array([0.0, 0.0, d, 0.0, 0.0])
        Jp = kinematics.jacobian(chain, q)[:3]
        U, S, _ = np.linalg.svd(Jp)
        v = v_speed * U[:, -1]
        qd_dls = damped_solve(Jp, v, lam)
        print(f"{d:8.3f} {S[-1]:10.6f} {np.linalg.norm(damped_solve(Jp, v, 0.0)):12.2f} {np.linalg.norm(qd_dls):11.3f} "
              f"{np.linalg.norm(Jp @ qd_dls):12.4f} m/s")
    print("pinv asks |v|/sigma_min (past the 6.28 rad/s servo limit as sigma_min -> 0); DLS trades the weak")
    print("direction's speed for bounded joint rates.")


def aligned_wrist(chain) -> float:
    """wrist_flex that puts the tool point on the line of the lower arm (farthest from the elbow axis)."""
    w = np.linspace(chain.lower[3], chain.upper[3], 4001)
    q = np.zeros((len(w), 5))
    q[:, 3] = w
    f = kinematics.fk(chain, q)
    return float(w[np.argmax(np.linalg.norm(f.p - f.anchors[:, 2], axis=-1))])


def singularity_map() -> np.ndarray:
    print("\n== 2. SO-101 singularity map: sigma_min of the position block over (shoulder_lift, elbow_flex) ==")
    chain = robots.load("so101")
    lift = np.linspace(chain.lower[1], chain.upper[1], 121)
    elbow = np.linspace(chain.lower[2], chain.upper[2], 121)
    L, E = np.meshgrid(lift, elbow, indexing="ij")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, (wrist, title) in zip(axes, [(0.0, "wrist_flex = 0"), (None, "wrist_flex aligned with lower arm")]):
        q = np.zeros(L.shape + (5,))
        q[..., 1], q[..., 2] = L, E
        q[..., 3] = aligned_wrist(chain) if wrist is None else wrist
        J = kinematics.jacobian(chain, q)[..., :3, :]
        smin = np.linalg.svd(J, compute_uv=False)[..., -1]
        im = ax.pcolormesh(E, L, smin, shading="auto", cmap="viridis")
        fig.colorbar(im, ax=ax, label="sigma_min (m/rad)")
        ax.set_xlabel("elbow_flex (rad)")
        ax.set_ylabel("shoulder_lift (rad)")
        ax.set_title(title)
        i, j = np.unravel_index(np.argmin(smin), smin.shape)
        ax.plot(E[i, j], L[i, j], "r+", ms=12)
        print(f"{title:36s}: sigma_min range {smin.min():.5f} .. {smin.max():.4f} m/rad; minimum at lift {L[i, j]:+.3f}, elbow {E[i, j]:+.3f}")
        _name_singularity(chain, q[i, j])
    fig.tight_layout()
    fig.savefig(HERE / "singularity_map.png", dpi=110)
    plt.close(fig)
    print("figure: singularity_map.png")
    return q[i, j]


def _name_singularity(chain, q) -> None:
    f = kinematics.fk(chain, q)
    pan_axis, pan_anchor = f.axes[0], f.anchors[0]
    off = f.p - pan_anchor
    radial = np.linalg.norm(off - (off @ pan_axis) * pan_axis)
    seg = [f.anchors[2] - f.anchors[1], f.anchors[3] - f.anchors[2], f.p - f.anchors[3]]
    angles = [np.degrees(np.arccos(np.clip(seg[k] @ seg[k + 1] / np.linalg.norm(seg[k]) / np.linalg.norm(seg[k + 1]), -1, 1)))
              for k in range(2)]
    print(f"    there: tool point {radial * 1000:.1f} mm from the shoulder_pan axis; bend upper->lower arm "
          f"{angles[0]:.1f} deg, lower arm->wrist-tool {angles[1]:.1f} deg")
    kind = []
    if min(angles[0], 180 - angles[0]) < 10 and min(angles[1], 180 - angles[1]) < 10:
        kind.append("pitch chain collinear (stretched or folded): the radial direction is lost")
    if radial < 0.01:
        kind.append("tool point on the shoulder_pan axis: pan no longer moves it")
    print("    named: " + ("; ".join(kind) if kind else "near-singular but not at a textbook singularity (joint limits cut it off)"))


def convergence_curves() -> None:
    print("\n== 4. Convergence of every method from the same starts (Panda, full pose, 20 targets, no restarts) ==")
    chain = CASES[3][1]()
    rng = np.random.default_rng(SEED)
    q_true = chain.random_q(rng, 20, margin=0.2)
    q0 = np.clip(q_true + rng.uniform(-0.4, 0.4, q_true.shape), chain.lower, chain.upper)
    T = kinematics.tool_pose(chain, q_true)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    print(f"{'method':10s} {'converged':>9s} {'median it':>9s} {'max it':>7s}")
    for method in METHODS:
        trace = []
        res = solve_ik_batch(chain, T, q0, method=method, restarts=0, max_iterations=300, trace=trace)
        curve = np.full((max(its.max() for _, its, _, _ in trace) + 1, len(T)), np.nan)
        for rows, its, perr, oerr in trace:
            curve[its, rows] = np.hypot(perr, 0.3 * oerr)  # pose error with the 0.3 m characteristic length
        # a converged target stays converged: carry its last error forward for the median curve
        filled = _forward_fill(curve)
        ax.semilogy(np.nanmedian(filled, axis=1)[:301], label=method)
        its = [r.iterations for r in res]
        print(f"{method:10s} {np.mean([r.converged for r in res]) * 100:8.0f}% {np.median(its):9.0f} {max(its):7d}")
    ax.axhline(1e-4, color="k", ls=":", lw=1)
    ax.set_xlabel("iteration")
    ax.set_ylabel("median |dp| (+) 0.3 m x |dtheta|  (m)")
    ax.set_title("Panda IK from the same 20 starts")
    ax.legend()
    fig.tight_layout()
    fig.savefig(HERE / "convergence.png", dpi=110)
    plt.close(fig)
    print("figure: convergence.png (transpose: gradient descent, linear and slow; pinv/LM: quadratic near the solution)")


def _forward_fill(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    for i in range(1, len(out)):
        out[i] = np.where(np.isnan(out[i]), out[i - 1], out[i])
    return out


def success_table() -> None:
    print(f"\n== 5. Default solve_ik (method 'lm', <= {DEFAULT_RESTARTS} restarts) on {N_TARGETS} random reachable targets per robot/task ==")
    if N_TARGETS < 1000:
        print(f"   (PHYSAI_IK_TARGETS={N_TARGETS}: fewer than the lesson's 1,000 targets)")
    print("targets = FK of uniform in-limit q (seed 1); success = |dp| < 1e-4 m, angle < 1e-3 rad, q inside limits;")
    print(f"iterations over the batched solve of all targets; time = single solve_ik calls on the first {N_TIMED} targets")
    hdr = f"{'robot':10s} {'task':14s} {'success':>8s} {'it med':>6s} {'it p95':>6s} {'restarts max':>12s} {'ms med':>7s} {'ms p95':>7s} {'batch s':>7s}"
    print(hdr)
    for label, load, task in CASES:
        chain = load()
        q = chain.random_q(np.random.default_rng(1), N_TARGETS)
        T = kinematics.tool_pose(chain, q)
        t0 = time.perf_counter()
        res = solve_ik_batch(chain, T, task=task, rng=np.random.default_rng(2))
        batch_s = time.perf_counter() - t0
        ok = np.array([r.converged and np.all((r.q >= chain.lower) & (r.q <= chain.upper)) for r in res])
        its = np.array([r.iterations for r in res])
        times = []
        for Ti in T[:N_TIMED]:
            t0 = time.perf_counter()
            solve_ik(chain, Ti, task=task)
            times.append((time.perf_counter() - t0) * 1e3)
        print(f"{label:10s} {task:14s} {ok.mean() * 100:7.1f}% {np.median(its):6.0f} {np.percentile(its, 95):6.0f} "
              f"{max(r.restarts for r in res):12d} {np.median(times):7.3f} {np.percentile(times, 95):7.3f} {batch_s:7.1f}")
    print("\nUnreachable targets (never an exception; converged=False, closest point found, 'unmet' says what is missed):")
    for label, load, task in CASES:
        chain = load()
        far = tf.translation(np.array([1.5, 0.4, 0.5]))  # beyond every arm here
        t0 = time.perf_counter()
        r = solve_ik(chain, far, task=task)
        print(f"  {label:10s} {task:14s} reason={r.reason!r:28s} |dp| {r.position_error:.3f} m, angle {r.orientation_error:.3f} rad, "
              f"unmet={r.unmet}, {r.iterations} iterations, {time.perf_counter() - t0:.2f} s")


def lerobot_asks() -> None:
    print("\n== 6. What SO-101 users ask ==")
    chain = robots.load("so101")
    q = np.array([0.3, -0.4, 0.6, 0.2, 0.5])
    T_reach = kinematics.tool_pose(chain, q)
    T_target = T_reach @ tf.make_transform(tf.rotation_about_axis(np.array([1.0, 0, 0]), 0.6), np.zeros(3))
    print("A 6-D pose the 5-DoF arm cannot reach (a reachable pose turned 0.6 rad about the tool x):")
    for w, label in [(None, "weights = 1 (m and rad alike)"), ([1, 1, 1, 1e-6, 1e-6, 1e-6], "weights = position first")]:
        r = solve_ik(chain, T_target, task="pose", weights=w)
        print(f"  {label:30s}: converged={r.converged}, reason={r.reason!r}, |dp| {r.position_error * 1000:.2f} mm, "
              f"angle {np.degrees(r.orientation_error):.1f} deg, unmet={r.unmet}")
    r = solve_ik(chain, T_target, task="position+axis")
    print(f"  asking only position + tool z axis: converged={r.converged}, |dp| {r.position_error:.1e} m, "
          f"axis angle {r.orientation_error:.1e} rad  (what a 5-DoF arm can do)")
    h = r.health(chain)
    print(f"  health at that solution (full, 0.3 m): sigma_min {h.sigma_min:.3f} (5 joints cannot span 6 rows), "
          f"position block sigma_min {r.health(chain, 'position').sigma_min:.4f} m/rad")

    print("\nTeleoperation: a 50 Hz target path, each solve warm-started from the previous solution (restarts=0):")
    t = np.arange(0, 4.0, 0.02)
    q_path = np.array([0.4 * np.sin(0.5 * np.pi * t), -0.3 + 0.3 * np.sin(np.pi * t), 0.7 + 0.3 * np.cos(np.pi * t),
                       0.4 * np.sin(np.pi * t), 0.3 * np.cos(0.5 * np.pi * t)]).T
    targets = kinematics.tool_pose(chain, q_path)
    q_prev = solve_ik(chain, targets[0], task="position+axis").q
    sols, fails = [q_prev], 0
    for Ti in track(targets[1:], description="tracking", transient=True):
        r = solve_ik(chain, Ti, q_prev, task="position+axis", restarts=0)
        fails += not r.converged
        sols.append(r.q)
        q_prev = r.q
    sols = np.array(sols)
    jump = np.abs(np.diff(sols, axis=0)).max()
    print(f"  {len(targets)} targets (position + tool axis), {fails} unconverged; largest joint jump between "
          f"consecutive solutions {jump:.4f} rad (the generating joint path's own largest step: "
          f"{np.abs(np.diff(q_path, axis=0)).max():.4f} rad) -> one branch, no flips")


def main() -> None:
    print(f"Lesson 11: inverse Jacobian methods. seed {SEED}; targets seed 1, restart seed 2")
    two_link_example()
    singularity_approach(singularity_map())
    convergence_curves()
    lerobot_asks()
    success_table()


if __name__ == "__main__":
    t0 = time.perf_counter()
    with transcript(HERE / "experiment_output.txt"):
        main()
        print(f"\n(total {time.perf_counter() - t0:.1f} s)")
