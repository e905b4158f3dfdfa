"""Lesson 13, differential control and statics on the WidowX AI: resolved-rate descent at 50 Hz vs 5 Hz,
the weak direction near full extension, the 1.5 kg payload against the 27 N m limit, force from joint
torques (F_hat = pinv(J^T) tau) with joint friction, and a guarded descent onto a table in MuJoCo.

Every claim of the WidowX AI lesson is printed beside the
figure measured here, with agree/disagree. The arm is Trossen's WidowX AI follower model
(physai's bundled Trossen wxai_follower.xml, tool site ee_site, 6 arm joints, position servos with
kp 200/100/50 and frictionloss 0.1 N m per joint); the lesson's illustrative chain is the built-in
``wxai_illustrative``.

Run: uv run python experiments/13-differential-control/experiment.py
Writes experiment_output.txt, descent_deviation.png, payload_map.png and guarded_descent.png beside this file.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from rich.progress import track  # noqa: E402
from scipy.optimize import least_squares, minimize  # noqa: E402

from physai import control, robots, singularity, statics  # noqa: E402
from physai.kinematics import jacobian, tool_pose  # noqa: E402
from physai.lesson import transcript  # noqa: E402

HERE = Path(__file__).resolve().parent
WXAI = robots.model_path("wxai")
G0 = 9.80665  # m/s^2, MuJoCo's default gravity
SEED = 0

DESCENT = np.array([0.0, 0.0, -0.05])  # the lesson's 5 cm/s descent
DESCENT_S = 2.0
TICKS = {"50 Hz (1 mm steps)": 0.02, "5 Hz (10 mm steps)": 0.2}
REPEATABILITY = 1e-3  # m, the lesson's "~1 mm repeatability"
TABLE = dict(center=(0.5, 0.0), half_size=(0.15, 0.3, 0.02), top_z=0.05)  # m
THRESHOLD = 2.0  # N, the guarded descent's estimated vertical force
JOINT_SPEED_LIMIT = 6.28  # rad/s
WEAK_SPEED = 0.05  # m/s along the weakest direction
FRICTIONS = (0.0, 0.1, 0.5)  # N m per joint; 0.1 is the model's frictionloss
PRESS_X = (0.40, 0.56)  # m, tool x of the force-estimation presses


def verdict(ok: bool) -> str:
    return "agree" if ok else "DISAGREE"


def solve_pose(chain, x, z, pitch):
    """Joint positions (base yaw 0, wrist yaw and roll 0) putting the tool point at ``(x, 0, z)`` with its
    approach axis pitched ``pitch`` rad below horizontal; the planar shoulder/elbow/wrist solve by least squares."""
    def residual(a):
        T = tool_pose(chain, np.r_[0.0, a, 0.0, 0.0])
        return [T[0, 3] - x, T[2, 3] - z, np.arctan2(-T[2, 0], T[0, 0]) - pitch]
    lo, hi = chain.lower[1:4], chain.upper[1:4]
    r = least_squares(residual, 0.5 * (lo + hi), bounds=(lo, hi), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    if np.max(np.abs(r.fun)) > 1e-9:
        raise RuntimeError(f"no pose within the limits reaches x={x}, z={z}, pitch={pitch}: residual {r.fun}")
    return np.r_[0.0, r.x, 0.0, 0.0]


def horizontal_lever(chain, m, limited: bool):
    """The pose with the longest horizontal lever from the shoulder (joint_1) axis to the tool point, tool at
    shoulder height; wrist yaw/roll at 0 -> ``(q, lever)``.

    Turning joint_1 swings the tool about that axis without changing its distance from it, so: grid the
    elbow and wrist pitch (joints 2, 3) for the largest distance, polish it, then turn joint_1 to horizontal.
    """
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    anchor = d.xanchor[m.joint("joint_1").id].copy()
    lo = chain.lower[2:4] if limited else np.full(2, -np.pi)
    hi = chain.upper[2:4] if limited else np.full(2, np.pi)
    q1 = 0.5 * (chain.lower[1] + chain.upper[1])

    def reach(a):  # a: (..., 2) -> distance (...) from the joint_1 axis in its x-z plane
        q = np.concatenate([np.zeros(a.shape[:-1] + (1,)), np.full(a.shape[:-1] + (1,), q1), a,
                            np.zeros(a.shape[:-1] + (2,))], axis=-1)
        r = tool_pose(chain, q)[..., :3, 3] - anchor
        return np.hypot(r[..., 0], r[..., 2])
    grid = np.stack(np.meshgrid(np.linspace(lo[0], hi[0], 181), np.linspace(lo[1], hi[1], 181)), axis=-1)
    a0 = grid.reshape(-1, 2)[np.argmax(reach(grid).ravel())]
    a = minimize(lambda a: -reach(a), a0, bounds=list(zip(lo, hi)), method="L-BFGS-B", options={"ftol": 1e-15}).x
    q = np.r_[0.0, q1, a, 0.0, 0.0]
    r = tool_pose(chain, q)[:3, 3] - anchor
    q[1] += np.arctan2(r[2], r[0])  # a turn about +y by theta maps (x, z) to (x cos + z sin, z cos - x sin)
    q[1] = (q[1] + np.pi) % (2 * np.pi) - np.pi if not limited else q[1]
    if limited and not (chain.lower[1] <= q[1] <= chain.upper[1]):
        raise RuntimeError(f"joint_1 = {q[1]} to make the lever horizontal is outside its limits")
    r = tool_pose(chain, q)[:3, 3] - anchor
    return q, r[0], r[2]


def reach_and_statics(m, chain):
    print("== Statics: the 1.5 kg payload at full extension ==")
    q_free, lever_free, dz_free = horizontal_lever(chain, m, limited=False)
    q_lim, lever_lim, dz_lim = horizontal_lever(chain, m, limited=True)
    print(f"reach from the shoulder axis, arm straight and horizontal (limits ignored): {lever_free:.4f} m "
          f"(height error {dz_free:.1e} m)")
    print(f"  lesson: 0.769 m reach -> measured {lever_free:.3f} m: {verdict(abs(lever_free - 0.769) < 5e-4)}")
    print(f"within the joint limits the longest horizontal lever is {lever_lim:.4f} m at q = {np.round(q_lim, 4)}:\n"
          f"  joint_2 (elbow) stops at {chain.upper[2]:.4f} rad = {np.degrees(chain.upper[2]):.0f} deg, short of a straight arm")
    f = 1.5 * G0
    print(f"  lesson: 1.5 kg x g = 14.7 N -> {f:.2f} N: {verdict(abs(f - 14.7) < 0.05)}")
    print(f"  lesson: 14.7 N x 0.769 m = 11.3 N m -> {f * 0.769:.2f} N m (arithmetic): {verdict(abs(f * 0.769 - 11.3) < 0.05)}")
    limits = statics.actuator_force_limits(m, chain)
    print(f"{'pose':26s} {'lever (m)':>9s} {'J^T F shoulder':>14s} {'links g(q)':>10s} {'total':>8s} {'limit':>6s} "
          f"{'payload limit (kg)':>18s} {'limiting joint':>14s}")
    rows = []
    for label, q in (("straight (limits ignored)", q_free), ("longest within limits", q_lim)):
        pl = statics.payload_limit(m, chain, q, limits=limits)
        payload = f * pl.per_newton  # torque the servos add to hold 1.5 kg (downward tip force)
        total = pl.gravity + payload
        rows.append((label, payload[1], pl.gravity[1], total[1]))
        lever = lever_free if label.startswith("straight") else lever_lim
        print(f"{label:26s} {lever:9.4f} {payload[1]:14.2f} {pl.gravity[1]:10.2f} {total[1]:8.2f} {limits[1]:6.0f} "
              f"{pl.force / G0:18.2f} {pl.joint_name:>14s}")
    print("  (J^T F shoulder equals 14.71 N x lever: the shoulder entry of J^T F is the horizontal moment arm)")
    label, payload1, grav1, total1 = rows[1]
    print(f"  lesson: payload 11.3 N m plus the links' weight presses toward 27 N m -> within limits payload "
          f"{abs(payload1):.2f} + links {abs(grav1):.2f} = {abs(total1):.2f} N m = {abs(total1) / 27:.0%} of 27 N m: "
          f"{verdict(0.5 < abs(total1) / 27 < 1.0)}")
    print(f"  (the links' own gravity, MuJoCo's mj_rne, is the larger share: {abs(grav1):.2f} N m vs the payload's {abs(payload1):.2f})\n")
    return q_lim, q_free


def payload_map(m, chain):
    """Payload limit (kg, downward at the tool) over shoulder x elbow, wrist straight -> payload_map.png."""
    q1 = np.linspace(chain.lower[1], chain.upper[1], 41)
    q2 = np.linspace(chain.lower[2], chain.upper[2], 31)
    limits = statics.actuator_force_limits(m, chain)
    d = mujoco.MjData(m)
    pts, kg = [], []
    for a in track(q1, description="payload map"):
        for b in q2:
            q = np.array([0.0, a, b, 0.0, 0.0, 0.0])
            p = tool_pose(chain, q)[:3, 3]
            if p[2] < 0:
                continue
            pts.append([np.hypot(p[0], p[1]), p[2]])
            kg.append(statics.payload_limit(m, chain, q, limits=limits, d=d).force / G0)
    pts, kg = np.array(pts), np.array(kg)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    sc = ax.scatter(pts[:, 0], pts[:, 1], c=np.clip(kg, 0, None), cmap="viridis", s=14)
    fig.colorbar(sc, label="payload limit (kg) before a servo passes its force limit")
    ax.set(xlabel="tool distance from the base axis (m)", ylabel="tool height (m)", aspect="equal",
           title="WidowX AI payload limit, wrist straight (27 / 7 N m servos)")
    fig.tight_layout()
    fig.savefig(HERE / "payload_map.png", dpi=110)
    plt.close(fig)
    print(f"== Payload limit over the workspace ({len(kg)} poses, wrist straight; payload_map.png) ==")
    edges = (0.0, 0.3, 0.45, 0.6, 0.7, np.inf)
    print(f"{'tool distance from base axis (m)':34s} {'poses':>5s} {'median (kg)':>11s} {'min (kg)':>8s}")
    med = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (pts[:, 0] >= lo) & (pts[:, 0] < hi)
        med.append(np.median(kg[sel]))
        print(f"{f'{lo:.2f} .. {hi:.2f}':34s} {sel.sum():5d} {med[-1]:11.2f} {kg[sel].min():8.2f}")
    print(f"  lesson: payload ratings collapse at extension -> median {med[-1]:.2f} kg beyond 0.7 m vs {med[0]:.2f} kg "
          f"within 0.3 m ({1 - med[-1] / med[0]:.0%} less), min {kg.min():.2f} kg, barely above the rated 1.5 kg: "
          f"{verdict(med[-1] < 2 / 3 * med[0])} (criterion: beyond 0.7 m below 2/3 of the near-base limit)\n")


def weak_direction(label, chain, q, settings):
    J = jacobian(chain, q)
    U, S, Vt = np.linalg.svd(J[:3])
    v = WEAK_SPEED * U[:, -1]
    qdot_exact = np.linalg.pinv(J[:3]) @ v
    dq, h = control.tick(J, np.r_[v, 0, 0, 0], 1.0, settings)  # dt = 1 s: dq is the joint rate
    clipped = np.clip(qdot_exact, -JOINT_SPEED_LIMIT, JOINT_SPEED_LIMIT)
    cos = lambda a, b: a @ b / (np.linalg.norm(a) * np.linalg.norm(b))  # noqa: E731
    print(f"{label:42s} {S[-1]:9.5f} {np.linalg.norm(qdot_exact):9.2f} {np.abs(qdot_exact).max():8.2f} "
          f"{np.abs(dq).max():11.3f} {h.lam:7.4f} "
          f"{h.vel_scale:6.3f} {(J[:3] @ dq) @ U[:, -1]:10.4f} {cos(J[:3] @ clipped, v):10.6f}")
    return S[-1], np.linalg.norm(qdot_exact), np.abs(qdot_exact).max(), np.abs(dq).max()


def weak_direction_table(m, chain, q_edge, q_straight):
    print("== A 5 cm/s request along the weakest direction near full extension ==")
    print("position block; exact = pinv; damped = control.tick (adaptive lambda, lambda_max 0.05, then uniform scaling "
          "to 6.28 rad/s); 'clip' = per-joint clipping of the exact rates to 6.28 rad/s")
    print(f"{'pose':42s} {'sigma_min':>9s} {'|qd|_2':>9s} {'max|qd_i|':>8s} {'damped max':>11s} {'lambda':>7s} {'scale':>6s} "
          f"{'v_weak m/s':>10s} {'clip cos':>10s}")
    settings = control.StepSettings(block="position")
    rows = [("Trossen, longest within limits", chain, q_edge)]
    # Past joint_2's limit (kinematics only): bend the elbow toward a straight arm until sigma_min < 0.005.
    # Past joint_2's limit (kinematics only): walk from there toward the straight arm until sigma_min < 0.005.
    for s in np.linspace(0.0, 1.0, 401):
        q = q_edge + s * (q_straight - q_edge)
        if singularity.health(jacobian(chain, q)).sigma_min < 0.0045:
            break
    rows.append((f"Trossen, elbow {q[2] - chain.upper[2]:+.3f} rad past limit", chain, q))
    ill = robots.load("wxai_illustrative")
    for eps in (0.05, 0.02):  # the illustrative arm is straight (tool beyond the elbow) at q2 = -atan2(0.30, 0.06)
        q_ill = np.array([0.0, 0.0, -np.arctan2(0.30, 0.06) + eps, 0.0, 0.0, 0.0])
        rows.append((f"wxai_illustrative, {eps} rad from straight", ill, q_ill))
    out = [weak_direction(lab, ch, qq, settings) for lab, ch, qq in rows]
    s_lim, qd_lim, qi_lim, _ = out[0]
    s_near, qd_near, qi_near, dmp_near = out[1]
    s_ill, qd_ill, qi_ill, dmp_ill = out[3]
    print(f"  lesson: near full extension sigma_min < 0.005 -> real arm within limits {s_lim:.4f} "
          f"({verdict(s_lim < 0.005)}: the 135 deg elbow limit keeps it away); past the limit {s_near:.4f} "
          f"({verdict(s_near < 0.005)})")
    print(f"  lesson: 5 cm/s along the weak direction demands > 10 rad/s (|qd| = 0.05 / sigma_min) -> within limits "
          f"{qd_lim:.2f} rad/s ({verdict(qd_lim > 10)}); past the limit {qd_near:.1f} ({verdict(qd_near > 10)}); "
          f"illustrative chain {qd_ill:.1f} ({verdict(qd_ill > 10)})")
    print(f"  lesson: past the 6.28 rad/s limit of the proximal joints -> largest single joint rate: within limits "
          f"{qi_lim:.2f} ({verdict(qi_lim > 6.28)}), past the limit {qi_near:.2f} ({verdict(qi_near > 6.28)}), "
          f"illustrative {qi_ill:.2f} ({verdict(qi_ill > 6.28)})")
    print(f"  lesson: lambda = 0.05 caps the gain at 1/(2 lambda) = 10, so <= 0.5 rad/s -> damped max "
          f"{max(dmp_near, dmp_ill):.3f} rad/s ({verdict(max(dmp_near, dmp_ill) <= 0.5 + 1e-12)}); the price: the weak "
          "direction moves at v_weak, not 0.05 m/s")
    print("  lesson: clipping distorts the direction, uniform scaling keeps it -> 'clip cos' < 1 where the exact rates "
          "exceed 6.28 (uniform scaling: cos = 1, see tests)\n")


def descent(m, chain):
    print(f"== 5 cm/s descent holding orientation, {DESCENT_S:.0f} s (10 cm): deviation from the straight line ==")
    print("kinematic = joint rates held over each tick (feedback 1: each tick aims at the next waypoint; "
          "open loop: feedback 0);\nMuJoCo = the same command streamed to the position servos, tool path every 2 ms")
    starts = {"mid-workspace (0.40, 0, 0.30)": solve_pose(chain, 0.40, 0.30, 0.9),
              "workspace edge (0.66, 0, 0.25)": solve_pose(chain, 0.66, 0.25, 0.45)}
    mt = control.table_scene(WXAI, **TABLE)
    print(f"{'start':31s} {'tick':20s} {'sig_min 6x6':>9s} {'kinematic':>10s} {'open loop':>10s} {'MuJoCo':>10s}")
    results = {}
    for name, q0 in starts.items():
        for tick_name, dt in TICKS.items():
            fb = control.follow_line(chain, q0, DESCENT, DESCENT_S, dt)
            ol = control.follow_line(chain, q0, DESCENT, DESCENT_S, dt, feedback=0.0)
            T0 = tool_pose(chain, q0)
            sim = control.closed_loop(mt, chain, q0, control.tracking_twist(control.line_reference(T0, DESCENT), dt),
                                      dt, DESCENT_S)
            dev_sim = control.line_deviation(sim.sim_p, T0[:3, 3], DESCENT)
            results[name, tick_name] = (fb, dev_sim, sim)
            print(f"{name:31s} {tick_name:20s} {fb.run.health.sigma_min.min():9.4f} {fb.max_deviation * 1e6:8.1f}um "
                  f"{ol.max_deviation * 1e6:8.1f}um {dev_sim.max() * 1e6:8.1f}um")
    edge = "workspace edge (0.66, 0, 0.25)"
    fast, slow = results[edge, "50 Hz (1 mm steps)"][0], results[edge, "5 Hz (10 mm steps)"][0]
    ratio = slow.max_deviation / fast.max_deviation
    print(f"  lesson: 1 mm steps -> micrometres -> {fast.max_deviation * 1e6:.1f} um: "
          f"{verdict(1e-7 < fast.max_deviation < 1e-5)}")
    print(f"  lesson: error second order in the step -> 10x step gives {ratio:.0f}x deviation: {verdict(70 < ratio < 130)}")
    print(f"  lesson: 10 mm steps visibly bow near the edge -> {slow.max_deviation * 1e3:.2f} mm with per-tick feedback, "
          f"below the ~1 mm repeatability: {verdict(slow.max_deviation > REPEATABILITY)};")
    ol_slow = control.follow_line(chain, starts[edge], DESCENT, DESCENT_S, 0.2, feedback=0.0)
    print(f"    open loop (the stale Jacobian's error never corrected) it accumulates to {ol_slow.max_deviation * 1e3:.2f} mm: "
          f"{verdict(ol_slow.max_deviation > REPEATABILITY)}")
    sim_fast = results[edge, "50 Hz (1 mm steps)"][1].max()
    lag = mt.actuator_biasprm[0, 2] / mt.actuator_biasprm[0, 1]  # position servo: bias = -kp q - kv qdot
    print(f"  In MuJoCo the servo lag (kv/kp = {lag:.3f} s) bends the 50 Hz path by {sim_fast * 1e3:.2f} mm, "
          f"{sim_fast / fast.max_deviation:.0f}x the linearization error.\n")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, name in zip(axes, starts):
        for (tick_name, _), color in zip(TICKS.items(), ("C0", "C3")):
            fb, dev_sim, sim = results[name, tick_name]
            z0 = fb.run.p[0, 2]
            ax.plot(fb.deviation * 1e6, z0 - fb.path[:, 2], color=color, label=f"kinematic, {tick_name}")
            ax.plot(dev_sim * 1e6, z0 - sim.sim_p[:, 2], color=color, ls=":", label=f"MuJoCo servos, {tick_name}")
        ax.set(xscale="log", xlabel="distance from the commanded line (um)", title=name)
        ax.set_xlim(1e-2, None)
    axes[0].set_ylabel("descent (m)")
    axes[0].invert_yaxis()
    axes[1].legend(fontsize=8)
    fig.suptitle("Resolved-rate descent at 5 cm/s: 50 Hz vs 5 Hz ticks")
    fig.tight_layout()
    fig.savefig(HERE / "descent_deviation.png", dpi=110)
    plt.close(fig)


def press_profile(T0, depth, speed):
    """Down ``depth`` m at ``speed`` m/s, then back up: a triangle reference for a quasi-static press."""
    t_turn = depth / speed

    def T_ref(t):
        T = T0.copy()
        T[2, 3] -= speed * (t if t < t_turn else 2 * t_turn - t)
        return T
    return T_ref, 2 * t_turn


def force_estimation(chain):
    print("== Force from joint torques: F_hat = pinv(J^T) (g(q) - tau_servo) while pressing on the table ==")
    print("50 Hz ticks; the tool starts 5 mm above the table, presses 20 mm of command past it at 10 mm/s and comes "
          "back; ticks with true F_z > 2 N")
    print(f"{'frictionloss':>12s} {'x (m)':>6s} {'F_true range (N)':>17s} {'abs err p5..p95 (N)':>20s} "
          f"{'rel err p5..p95':>16s} {'|rel| max':>9s}")
    bands = {}
    top = TABLE["top_z"]
    for fr in FRICTIONS:
        m = control.table_scene(WXAI, **TABLE)
        m.dof_frictionloss[list(chain.dof_adr)] = fr
        table = [m.geom("table").id]
        rel_all = []
        for x in PRESS_X:
            q0 = solve_pose(chain, x, top + 0.005, 1.2)
            T_ref, dur = press_profile(tool_pose(chain, q0), 0.025, 0.01)
            sim = control.closed_loop(m, chain, q0, control.tracking_twist(T_ref, 0.02), 0.02, dur, probe=table)
            on = sim.force_true[:, 2] > THRESHOLD
            err = sim.wrench_hat[on, 2] - sim.force_true[on, 2]
            rel = err / sim.force_true[on, 2]
            rel_all.append(rel)
            print(f"{fr:10.2f}Nm {x:6.2f} {sim.force_true[on, 2].min():7.1f} .. {sim.force_true[on, 2].max():5.1f} "
                  f"{np.percentile(err, 5):9.2f} .. {np.percentile(err, 95):5.2f} {np.percentile(rel, 5):7.1%} .. "
                  f"{np.percentile(rel, 95):6.1%} {np.abs(rel).max():9.1%}")
        bands[fr] = np.percentile(np.abs(np.concatenate(rel_all)), 90)
    print(f"  |relative error| 90th percentile, all poses: frictionless {bands[0.0]:.1%}, model's 0.1 N m "
          f"{bands[0.1]:.0%}, 0.5 N m {bands[0.5]:.0%}")
    print(f"  lesson: +/-20-30% -> {bands[0.1]:.0%} with the model's friction: {verdict(0.15 <= bands[0.1] <= 0.35)}. "
          "The error is the joint friction (any torque up to frictionloss, either sign,\n  so loading and unloading "
          "differ) plus servo dynamics; an absolute torque, so the relative error is largest near 2 N and shrinks as the\n"
          "  force grows. Frictionless, only dynamics remain; at 0.5 N m a 2 N contact is lost in the friction.\n")


def first_contact(sim):
    touching = np.linalg.norm(sim.sim_force, axis=1) > 0
    return sim.sim_t[np.argmax(touching)] if touching.any() else np.inf


def guarded_descent(chain):
    print(f"== Guarded descent: 5 cm/s down until F_hat_z > {THRESHOLD} N, table top at z = {TABLE['top_z']} m ==")
    print("start 3 cm above the table, speed ramped up over 0.2 s; stop = servos told to stay where the arm is; "
          "0.3 s more physics")
    m = control.table_scene(WXAI, **TABLE)
    table = [m.geom("table").id]
    q0 = solve_pose(chain, 0.45, TABLE["top_z"] + 0.03, 1.2)
    T0 = tool_pose(chain, q0)
    print(f"{'control rate':>12s} {'latency':>8s} {'(ms)':>6s} {'F_hat at stop':>13s} {'F_true at stop':>14s} "
          f"{'peak F_true':>11s} {'pre-contact |F_hat_z| max':>25s}")
    runs = {}
    for hz in (50, 100, 500):
        dt = 1.0 / hz
        sim = control.closed_loop(m, chain, q0, control.tracking_twist(control.line_reference(T0, DESCENT, ramp=0.2), dt),
                                  dt, 1.5, guard=lambda w: w[2] > THRESHOLD, hold=0.3, probe=table)
        t_on = first_contact(sim)
        k = sim.stop_tick
        cycles = int(np.sum((sim.t >= t_on) & (np.arange(len(sim.t)) <= k))) if k >= 0 else -1
        pre = sim.t < t_on
        runs[hz] = (sim, t_on, cycles)
        print(f"{hz:9d} Hz {cycles:8d} {(sim.t[k] - t_on) * 1e3:6.1f} {sim.wrench_hat[k, 2]:11.2f} N "
              f"{sim.force_true[k, 2]:12.2f} N {sim.sim_force[:, 2].max():9.2f} N {np.abs(sim.wrench_hat[pre, 2]).max():23.2f} N")
    sim50, t_on, cycles50 = runs[50]
    print(f"  lesson: detects a few newtons of table contact within a couple of control cycles -> {cycles50} cycle(s) "
          f"at 50 Hz: {verdict(1 <= cycles50 <= 2)}; peak true force {sim50.sim_force[:, 2].max():.1f} N")
    print("  The peak is set by the arm's momentum at 5 cm/s and the contact stiffness, not the detection delay: the\n"
          "  true force leads F_hat during the impact (inertia, not the servo, absorbs it first).\n")
    fig, ax = plt.subplots(figsize=(7, 4))
    for hz, color in zip(runs, ("C0", "C1", "C2")):
        sim, t_on, _ = runs[hz]
        ax.plot((sim.sim_t - t_on) * 1e3, sim.sim_force[:, 2], color=color, label=f"true F_z, {hz} Hz")
        ax.plot((sim.t - t_on) * 1e3, sim.wrench_hat[:, 2], color=color, ls="--", marker=".", label=f"F_hat_z, {hz} Hz")
    ax.axhline(THRESHOLD, color="k", lw=0.8)
    ax.set(xlim=(-100, 300), xlabel="time from first contact (ms)", ylabel="vertical force on the tool (N)",
           title="Guarded descent onto a table (WidowX AI in MuJoCo)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "guarded_descent.png", dpi=110)
    plt.close(fig)


def main():
    m = mujoco.MjModel.from_xml_path(str(WXAI))
    chain = robots.load("wxai")
    print(f"MuJoCo {mujoco.__version__}; {chain.name}: joints {', '.join(chain.joint_names)}, tool {chain.tool_name}; "
          f"servo limits {statics.actuator_force_limits(m, chain)} N m\n")
    q_edge, q_straight = reach_and_statics(m, chain)
    payload_map(m, chain)
    weak_direction_table(m, chain, q_edge, q_straight)
    descent(m, chain)
    force_estimation(chain)
    guarded_descent(chain)


if __name__ == "__main__":
    with transcript(HERE / "experiment_output.txt"):
        main()
