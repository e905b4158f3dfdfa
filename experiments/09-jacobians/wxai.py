"""Lesson 09, WidowX AI variant: the Jacobian's jobs on a 6-DoF arm: velocity bound, tau = J^T F for the 1.5 kg
payload against the 27 N m limit, resolved-rate descent at 50 Hz vs 5 Hz, force from joint torques
(F_hat = pinv(J^T) tau) with joint friction, and a guarded descent onto a table in MuJoCo.

The arm is Trossen's WidowX AI follower model (physai's bundled Trossen wxai_follower.xml, tool site ee_site,
6 arm joints, position servos with kp 200/100/50 and frictionloss 0.1 N m per joint). The source lesson's
singularity part (the weak direction near full extension, damping) is lesson 10's.

Run: uv run python experiments/09-jacobians/wxai.py [--full]
Writes wxai_output.txt, claims.json, wxai_descent.png, wxai_payload_map.png and wxai_guarded_descent.png beside
this file. --full (or PHYSAI_FULL=1) runs the finer payload map, both force-estimation presses and the
frictionless and 0.5 N m friction cases beside the model's 0.1 N m.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import LogLocator  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import least_squares, minimize  # noqa: E402

from physai import control, robots, statics  # noqa: E402
from physai.kinematics import fk, jacobian, tool_pose  # noqa: E402
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
WXAI = robots.model_path("wxai")
G0 = 9.80665  # m/s^2, MuJoCo's default gravity
SEED = 0
LESSON, SCRIPT = "09", "wxai.py"

N_VELOCITY_POSES = 2000
DESCENT = np.array([0.0, 0.0, -0.05])  # the source's 5 cm/s descent
DESCENT_S = 2.0
TICKS = {"50 Hz (1 mm steps)": 0.02, "5 Hz (10 mm steps)": 0.2}
REPEATABILITY = 1e-3  # m, the source's "~1 mm repeatability"
PAYLOAD_KG = 1.5  # the source's payload

def model_friction() -> float:
    """The bundled model's frictionloss (N m), one value shared by every arm joint."""
    m, chain = mujoco.MjModel.from_xml_path(str(WXAI)), robots.load("wxai")
    (friction,) = set(m.dof_frictionloss[list(chain.dof_adr)].tolist())
    return friction


FRICTION = model_friction()  # N m per joint
STALE_S = 0.1  # s, the source's stale command
# The source lesson's statements, as it prints them (the claims table compares them with this run's numbers).
SOURCE_TEXT = {"bound": "0.77", "reach": "0.769 m", "payload_torque": "11.3 N m", "band": "+/-20-30 %",
             "repeatability": "~1 mm", "bow": "beyond ~1 mm repeatability"}
TABLE = {"center": (0.5, 0.0), "half_size": (0.15, 0.3, 0.02), "top_z": 0.05}  # m
THRESHOLD = 2.0  # N, the guarded descent's estimated vertical force
GUARD_WINDOW_MS = (-30, 50)  # the figure's window around first contact
FRICTIONS, FRICTIONS_FULL = (FRICTION,), (0.0, FRICTION, 0.5)  # N m per joint
PRESS_X, PRESS_X_FULL = (0.40,), (0.40, 0.56)  # m, tool x of the force-estimation presses
MAP_GRID, MAP_GRID_FULL = (21, 16), (41, 31)  # shoulder x elbow samples of the payload map
GUARD_HZ = (50, 100, 500)
FIGSIZE, FIG_DPI = (5.0, 3.9), 200  # in, dpi: narrow enough that the text stays legible at a phone's width
FIG_RC = {"font.size": 11, "legend.fontsize": 10}  # pt: at a phone's width a 5 in figure shows at ~0.85 scale


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


def press_profile(T0, depth, speed):
    """Down ``depth`` m at ``speed`` m/s, then back up: a triangle reference for a quasi-static press."""
    t_turn = depth / speed

    def T_ref(t):
        T = T0.copy()
        T[2, 3] -= speed * (t if t < t_turn else 2 * t_turn - t)
        return T
    return T_ref, 2 * t_turn


def first_contact(sim):
    t, f_z = true_force_trace(sim)
    return t[np.argmax(f_z != 0)] if f_z.any() else np.inf

# ---- steps: each returns its numbers ---------------------------------------------------------------


@dataclass(frozen=True)
class Velocity:
    """Linear Jacobian entries over ``n_poses`` random poses: the largest entry (m/s per rad/s), its joint and pose
    ``entry_q`` (rad), its column's lever and the tool's distance from the shoulder there (m); the largest lever,
    its joint and the tool's distance from the shoulder at its pose; the farthest tool from the shoulder; the
    shoulder anchor's distance from the base axis; the largest entry's excess over its lever (``slack`` <= 0);
    the base column (``sweep_speed``) with the tool ``radius`` m from the base axis, and the error (mm) of a command
    STALE_S stale at that speed."""

    n_poses: int
    max_entry: float
    entry_joint: str
    entry_q: np.ndarray
    entry_lever: float
    entry_shoulder: float
    max_lever: float
    lever_joint: str
    lever_shoulder: float
    max_shoulder: float
    shoulder_offset: float
    slack: float
    sweep_speed: float
    radius: float
    stale_mm: float


def velocity_step(chain, n_poses=N_VELOCITY_POSES) -> Velocity:
    """Linear Jacobian entries over random in-limit poses, and what bounds them.

    Column j's linear part is ``a_j x (p - o_j)``, so each of its entries is at most the column's length, the lever:
    the distance from joint j's axis to the tool point (m). Returns the largest entry, its joint and pose, the largest
    lever (and its joint), the tool's distance from the shoulder (joint_1) anchor (at that pose and the farthest), the
    shoulder anchor's distance from the base (joint_0) axis, and the base column with the tool 0.3 m from the base axis.
    """
    qs = chain.random_q(np.random.default_rng(SEED), n_poses)
    J, f = jacobian(chain, qs), fk(chain, qs)
    entries = np.abs(J[:, :3])  # (N, 3, n)
    levers = np.linalg.norm(J[:, :3], axis=1)  # (N, n)
    k, _, j = np.unravel_index(np.argmax(entries), entries.shape)
    kl, jl = np.unravel_index(np.argmax(levers), levers.shape)
    shoulder = np.linalg.norm(f.p - f.anchors[:, 1], axis=-1)  # (N,)
    offset = np.linalg.norm(np.cross(f.axes[:, 0], f.anchors[:, 1] - f.anchors[:, 0]), axis=-1)  # (N,), constant
    q03 = solve_pose(chain, 0.30, 0.25, 0.9)
    sweep_speed = float(np.linalg.norm(jacobian(chain, q03)[:3, 0]))
    return Velocity(n_poses, float(entries.max()), chain.joint_names[j], qs[k], float(levers[k, j]),
                    float(shoulder[k]), float(levers.max()), chain.joint_names[jl], float(shoulder[kl]),
                    float(shoulder.max()), float(offset.max()),
                    float((entries - levers[:, None, :]).max()),  # <= 0: no entry exceeds its column's lever
                    sweep_speed, float(np.hypot(*tool_pose(chain, q03)[:2, 3])), sweep_speed * STALE_S * 1e3)


@dataclass(frozen=True)
class LeverPose:
    """The longest horizontal lever at pose ``q`` (rad): the lever (m) and the tool's height error ``dz`` (m); the
    shoulder torque (N m, MuJoCo's sign: what the servo applies) for PAYLOAD_KG (``tau_payload``) and for the links'
    own weight (``tau_links``), and the magnitudes of both and of their sum (the shoulder holds the load up,
    whatever the sign convention); the payload limit (kg) and the joint that sets it."""

    q: np.ndarray
    lever: float
    dz: float
    tau_payload: float
    tau_links: float
    payload: float
    links: float
    total: float
    kg: float
    joint: str


@dataclass(frozen=True)
class Statics:
    """The payload's ``weight`` (N), the shoulder servo's limit (N m), the share of it the longest lever within the
    joint limits needs, and the longest lever ``straight`` (limits ignored) and ``within`` the limits."""

    weight: float
    shoulder_limit: float
    share: float
    straight: LeverPose
    within: LeverPose


def statics_step(m, chain) -> Statics:
    """The longest horizontal lever (limits ignored, and within them) and what PAYLOAD_KG costs the shoulder there."""
    limits = statics.actuator_force_limits(m, chain)
    weight = PAYLOAD_KG * G0

    def lever_pose(limited):
        q, lever, dz = horizontal_lever(chain, m, limited)
        pl = statics.payload_limit(m, chain, q, limits=limits)
        payload = float(weight * pl.per_newton[1])  # torque the servo adds to hold the payload (downward tip force)
        links = float(pl.gravity[1])
        return LeverPose(q, float(lever), float(dz), payload, links, abs(payload), abs(links), abs(payload + links),
                         float(pl.force / G0), pl.joint_name)

    within = lever_pose(True)
    return Statics(weight, float(limits[1]), within.total / float(limits[1]), lever_pose(False), within)


@dataclass(frozen=True)
class Bin:
    """Poses whose tool lies ``lo`` to ``hi`` m from the base axis (``range``, as the page prints it): their count,
    the median and smallest payload limit (kg), and the joint whose servo gives out first at the smallest."""

    range: str
    n: int
    median: float
    min: float
    min_joint: str
    lo: float = unsaved()
    hi: float = unsaved()  # inf for the last bin, which JSON cannot hold


@dataclass(frozen=True)
class PayloadMap:
    """The payload limit over shoulder x elbow: ``n`` poses in ``bins`` of reach, how many poses each joint's servo
    limits (``limited_by``: joint name -> count), and the colour range (kg) of the figure; each pose's tool ``pts``
    (distance from the base axis, height; m) and limit ``kg``."""

    n: int
    bins: tuple[Bin, ...]
    limited_by: dict[str, int]
    colour_kg: tuple[float, float]
    upper_quartile_kg: float  # the colour scale's top is this, rounded up to the half kilogram
    pts: np.ndarray = unsaved()
    kg: np.ndarray = unsaved()
    joints: np.ndarray = unsaved()  # (n,) str, each pose's first joint to saturate


def payload_map_step(m, chain, grid=MAP_GRID) -> PayloadMap:
    """Payload limit (kg, downward at the tool) over shoulder x elbow, wrist straight, tool above the base."""
    limits = statics.actuator_force_limits(m, chain)
    d = mujoco.MjData(m)
    pts, kg, joints = [], [], []
    for a in np.linspace(chain.lower[1], chain.upper[1], grid[0]):
        for b in np.linspace(chain.lower[2], chain.upper[2], grid[1]):
            q = np.array([0.0, a, b, 0.0, 0.0, 0.0])
            p = tool_pose(chain, q)[:3, 3]
            if p[2] >= 0:
                pts.append([np.hypot(p[0], p[1]), p[2]])
                limit = statics.payload_limit(m, chain, q, limits=limits, d=d)
                kg.append(limit.force / G0)
                joints.append(limit.joint_name)
    pts, kg, joints = np.array(pts), np.array(kg), np.array(joints)
    edges = (0.0, 0.3, 0.45, 0.6, 0.7, np.inf)
    bins = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        s = (pts[:, 0] >= lo) & (pts[:, 0] < hi)
        label = f"{lo:.2f} .. {hi:.2f} m" if np.isfinite(hi) else f"beyond {lo:.2f} m"
        bins.append(Bin(label, int(s.sum()), float(np.median(kg[s])), float(kg[s].min()),
                        str(joints[s][np.argmin(kg[s])]), lo, hi))
    # Colours from the lightest pose to the upper quartile: the poses above it (arm folded up over the base, up to
    # several times that) would otherwise squeeze the whole fall with reach into one end of the scale.
    quartile = float(np.percentile(kg, 75))
    colour = (float(np.floor(2 * kg.min()) / 2), float(np.ceil(2 * quartile) / 2))
    limited_by = {name: int(np.sum(joints == name)) for name in chain.joint_names if np.any(joints == name)}
    return PayloadMap(len(kg), tuple(bins), limited_by, colour, quartile, pts, kg, joints)


@dataclass(frozen=True)
class DescentRow:
    """One start and tick: the smallest sigma_min of the 6x6 Jacobian on the way, and the largest deviation (um) from
    the straight line kinematic with per-tick feedback, open loop and in MuJoCo; the runs themselves (unsaved)."""

    start: str
    tick: str
    sigma_min: float
    feedback_um: float
    open_um: float
    sim_um: float
    feedback: control.LineResult = unsaved()
    open: control.LineResult = unsaved()
    sim: control.SimResult = unsaved()
    sim_dev: np.ndarray = unsaved()  # (T,) m, the MuJoCo path's distance from the line


@dataclass(frozen=True)
class Descent:
    """The descent from each of ``starts`` at each of TICKS; the servos' lag kv/kp (s) of joints 0-3 (``lag``) and
    of the wrist's joint_4 and joint_5 (``lag_wrist``); per start the 5 Hz deviation
    over the 50 Hz one (kinematic, feedback: ``ratios``), and at the edge that ratio, the 50 Hz deviation (um) and
    the 5 Hz deviations with feedback and open loop (mm)."""

    starts: tuple[str, ...]
    rows: tuple[DescentRow, ...]
    lag: float
    lag_wrist: float
    ratios: tuple[float, ...]
    edge_ratio: float
    edge_fast_um: float
    edge_slow_mm: float
    edge_open_mm: float

    def row(self, start: str, tick: str) -> DescentRow:
        return next(r for r in self.rows if r.start == start and r.tick == tick)


def descent_step(chain) -> Descent:
    """A 5 cm/s descent at 50 Hz and 5 Hz from mid-workspace and the edge: kinematic (with and without per-tick
    feedback) and in MuJoCo through the position servos; deviations from the straight line (m)."""
    starts = {"mid-workspace (0.40, 0, 0.30)": solve_pose(chain, 0.40, 0.30, 0.9),
              "workspace edge (0.66, 0, 0.25)": solve_pose(chain, 0.66, 0.25, 0.45)}
    mt = control.table_scene(WXAI, **TABLE)
    rows = []
    for name, q0 in starts.items():
        for tick, dt in TICKS.items():
            fb = control.follow_line(chain, q0, DESCENT, DESCENT_S, dt)
            ol = control.follow_line(chain, q0, DESCENT, DESCENT_S, dt, feedback=0.0)
            T0 = tool_pose(chain, q0)
            sim = control.closed_loop(mt, chain, q0, control.tracking_twist(control.line_reference(T0, DESCENT), dt),
                                      dt, DESCENT_S)
            dev = control.line_deviation(sim.sim_p, T0[:3, 3], DESCENT)
            rows.append(DescentRow(name, tick, float(fb.run.health.sigma_min.min()), fb.max_deviation * 1e6,
                                   ol.max_deviation * 1e6, float(dev.max()) * 1e6, fb, ol, sim, dev))
    lag = mt.actuator_biasprm[:, 2] / mt.actuator_biasprm[:, 1]  # position servo: bias = -kp q - kv qdot
    fast, slow = rows[::2], rows[1::2]  # 50 Hz, 5 Hz at each start
    ratios = tuple(s.feedback_um / f.feedback_um for f, s in zip(fast, slow))
    return Descent(tuple(starts), tuple(rows), float(lag[0]), float(lag[4]), ratios, ratios[-1],
                   fast[-1].feedback_um,
                   slow[-1].feedback_um / 1e3, slow[-1].open_um / 1e3)


@dataclass(frozen=True)
class Press:
    """One press at tool x (m): on the ticks with true F_z > THRESHOLD, the true force (N) and the estimate's error
    (N) and relative error."""

    x: float
    true: np.ndarray
    err: np.ndarray
    rel: np.ndarray


@dataclass(frozen=True)
class ForceCase:
    """The presses at one joint ``friction`` (N m): the 90th percentile of |relative error| (``band``), the 5th and
    95th percentiles of the error (N) and the largest true force (N) over them."""

    friction: float
    band: float
    err_p5: float
    err_p95: float
    true_max: float
    presses: tuple[Press, ...] = unsaved()


@dataclass(frozen=True)
class Force:
    """The force estimate's error at each joint friction of ``cases``."""

    cases: tuple[ForceCase, ...]

    def at(self, friction: float) -> ForceCase:
        return next(c for c in self.cases if c.friction == friction)


def force_step(chain, frictions=FRICTIONS, press_x=PRESS_X) -> Force:
    """F_hat = pinv(J^T)(g(q) - tau_servo) vs the true contact force while pressing on the table, per joint
    friction: relative errors on ticks with true F_z > THRESHOLD, and their 90th percentile of |rel|."""
    cases = []
    for fr in frictions:
        m = control.table_scene(WXAI, **TABLE)
        m.dof_frictionloss[list(chain.dof_adr)] = fr
        presses = []
        for x in press_x:
            q0 = solve_pose(chain, x, TABLE["top_z"] + 0.005, 1.2)
            T_ref, duration = press_profile(tool_pose(chain, q0), 0.025, 0.01)
            sim = control.closed_loop(m, chain, q0, control.tracking_twist(T_ref, 0.02), 0.02, duration,
                                      probe=[m.geom("table").id])
            on = sim.force_true[:, 2] > THRESHOLD
            err = sim.wrench_hat[on, 2] - sim.force_true[on, 2]
            presses.append(Press(x, sim.force_true[on, 2], err, err / sim.force_true[on, 2]))
        err = np.concatenate([p.err for p in presses])
        cases.append(ForceCase(fr, float(np.percentile(np.abs(np.concatenate([p.rel for p in presses])), 90)),
                               float(np.percentile(err, 5)), float(np.percentile(err, 95)),
                               float(np.concatenate([p.true for p in presses]).max()), tuple(presses)))
    return Force(tuple(cases))


@dataclass(frozen=True)
class GuardRow:
    """The guarded descent at ``hz``: control cycles from first contact to the stop (-1: no stop) and their time
    (ms), the estimated and true vertical force at the stop (N), the true force's peak (N) and the largest
    estimate before contact (N); the first contact's time (s) and the run (unsaved)."""

    hz: int
    cycles: int
    stop_ms: float
    hat: float
    true: float
    peak: float
    pre: float
    t_on: float = unsaved()
    sim: control.SimResult = unsaved()


@dataclass(frozen=True)
class Guard:
    """One guarded descent per control rate, and how far apart their true peaks lie (a fraction of the largest)."""

    rows: tuple[GuardRow, ...]
    peak_spread: float  # how far the highest peak of the true force lies above the lowest, as a fraction of it

    def at(self, hz: int) -> GuardRow:
        return next(r for r in self.rows if r.hz == hz)


def guard_step(chain, rates=GUARD_HZ) -> Guard:
    """Guarded descent at each control rate: cycles from first contact to the stop, forces at the stop."""
    m = control.table_scene(WXAI, **TABLE)
    q0 = solve_pose(chain, 0.45, TABLE["top_z"] + 0.03, 1.2)
    T0 = tool_pose(chain, q0)
    rows = []
    for hz in rates:
        dt = 1.0 / hz
        sim = control.closed_loop(m, chain, q0, control.tracking_twist(control.line_reference(T0, DESCENT, ramp=0.2),
                                                                       dt), dt, 1.5, guard=lambda w: w[2] > THRESHOLD,
                                  hold=0.3, probe=[m.geom("table").id])
        t_on, k = first_contact(sim), sim.stop_tick
        rows.append(GuardRow(hz, int(np.sum((sim.t >= t_on) & (np.arange(len(sim.t)) <= k))) if k >= 0 else -1,
                             float((sim.t[k] - t_on) * 1e3), float(sim.wrench_hat[k, 2]), float(sim.force_true[k, 2]),
                             float(sim.sim_force[:, 2].max()), float(np.abs(sim.wrench_hat[sim.t < t_on, 2]).max()),
                             t_on, sim))
    peaks = [r.peak for r in rows]
    return Guard(tuple(rows), max(peaks) / min(peaks) - 1.0)


# ---- printers ------------------------------------------------------------------------------------


def print_velocity(r: Velocity) -> None:
    print(f"== Velocity: each linear entry is bounded by its axis-to-tool distance ({r.n_poses} poses) ==")
    print(f"largest linear entry |J_ij| (m/s per rad/s): {r.max_entry:.3f}, in {r.entry_joint}'s column, whose "
          f"lever there is {r.entry_lever:.3f} m")
    print(f"largest lever |a_j x (p - o_j)|: {r.max_lever:.3f} m ({r.lever_joint}); no entry exceeds its "
          f"column's lever (largest excess {r.slack:.1e} m)")
    print(f"tool from the shoulder (joint_1) anchor: at most {r.max_shoulder:.3f} m; {r.lever_shoulder:.3f} m at "
          f"the longest lever's pose; the shoulder anchor is {r.shoulder_offset:.3f} m from the base axis")
    print(f"tool {r.radius:.3f} m from the base axis: joint-0 column |a x (p - o)| = {r.sweep_speed:.3f} m/s "
          "per rad/s\n")


def print_statics(r: Statics) -> None:
    print(f"== Statics: the {PAYLOAD_KG:g} kg payload at full extension ==")
    s, w = r.straight, r.within
    print(f"reach from the shoulder axis, arm straight and horizontal (limits ignored): {s.lever:.4f} m "
          f"(height error {s.dz:.1e} m)")
    print(f"within the joint limits the longest horizontal lever is {w.lever:.4f} m at q = {np.round(w.q, 4)}")
    print(f"{PAYLOAD_KG:g} kg x g = {r.weight:.2f} N")
    print(f"{'pose':26s} {'lever (m)':>9s} {'-J^T F (servo)':>14s} {'links g(q)':>10s} {'total':>8s} {'limit':>6s} "
          f"{'payload limit (kg)':>18s} {'limiting joint':>14s}")
    for label, row in (("straight (limits ignored)", s), ("longest within limits", w)):
        print(f"{label:26s} {row.lever:9.4f} {row.tau_payload:14.2f} {row.tau_links:10.2f} "
              f"{row.tau_payload + row.tau_links:8.2f} {r.shoulder_limit:6.0f} {row.kg:18.2f} {row.joint:>14s}")
    print(f"(the servo's torques, MuJoCo's sign: its share of the payload, -J^T F, is {r.weight:.2f} N x the "
          "horizontal lever;\n the links' own gravity, MuJoCo's bias forces, is the larger share)\n")


def print_payload_map(r: PayloadMap) -> None:
    print(f"== Payload limit over the workspace ({r.n} poses, wrist straight) ==")
    print(f"{'tool distance from base axis (m)':34s} {'poses':>5s} {'median (kg)':>11s} {'min (kg)':>8s} "
          "first joint out at the min")
    for b in r.bins:
        print(f"{f'{b.lo:.2f} .. {b.hi:.2f}':34s} {b.n:5d} {b.median:11.2f} {b.min:8.2f} {b.min_joint}")
    print("poses per first joint out: " + ", ".join(f"{k} {v}" for k, v in r.limited_by.items()))
    print()


def print_descent(r: Descent) -> None:
    print(f"== 5 cm/s descent holding orientation, {DESCENT_S:.0f} s (10 cm): deviation from the straight line ==")
    print("kinematic = joint rates held over each tick (feedback: each tick aims at the next waypoint; open loop: "
          "none);\nMuJoCo = the same command streamed to the position servos, tool path every 2 ms")
    print(f"{'start':31s} {'tick':20s} {'sig_min 6x6':>11s} {'kinematic':>10s} {'open loop':>10s} {'MuJoCo':>10s}")
    for row in r.rows:
        print(f"{row.start:31s} {row.tick:20s} {row.sigma_min:11.4f} {row.feedback_um:8.1f}um {row.open_um:8.1f}um "
              f"{row.sim_um:8.1f}um")
    print(f"In MuJoCo the servo lag (kv/kp = {r.lag:.3f} s, wrist joints 4-5 {r.lag_wrist:.3f} s) bends the path more than the linearization does.\n")


def print_force(r: Force) -> None:
    print("== Force from joint torques: F_hat = pinv(J^T) (g(q) - tau_servo) while pressing on the table ==")
    print("50 Hz ticks; the tool starts 5 mm above the table, presses 20 mm of command past it at 10 mm/s and comes "
          f"back; ticks with true F_z > {THRESHOLD:g} N")
    print(f"{'frictionloss':>12s} {'x (m)':>6s} {'F_true range (N)':>17s} {'abs err p5..p95 (N)':>20s} "
          f"{'rel err p5..p95':>16s} {'|rel| p90':>9s}")
    for case in r.cases:
        for press in case.presses:
            err, rel = press.err, press.rel
            print(f"{case.friction:10.2f}Nm {press.x:6.2f} {press.true.min():7.1f} .. {press.true.max():5.1f} "
                  f"{np.percentile(err, 5):9.2f} .. {np.percentile(err, 95):5.2f} {np.percentile(rel, 5):7.1%} .. "
                  f"{np.percentile(rel, 95):6.1%} {case.band:9.1%}")
    print("The error is the joint friction (any torque up to frictionloss, either sign) plus servo dynamics: an "
          "absolute torque,\nso the relative error is largest near 2 N and shrinks as the force grows.\n")


def print_guard(r: Guard) -> None:
    print(f"== Guarded descent: 5 cm/s down until F_hat_z > {THRESHOLD:g} N, table top at z = {TABLE['top_z']} m ==")
    print("start 3 cm above the table, speed ramped up over 0.2 s; stop = servos told to stay where the arm is")
    print(f"{'control rate':>12s} {'cycles':>7s} {'(ms)':>6s} {'F_hat at stop':>13s} {'F_true at stop':>14s} "
          f"{'peak F_true':>11s} {'pre-contact |F_hat_z| max':>25s}")
    for row in r.rows:
        print(f"{row.hz:9d} Hz {row.cycles:7d} {row.stop_ms:6.1f} {row.hat:11.2f} N {row.true:12.2f} N "
              f"{row.peak:9.2f} N {row.pre:23.2f} N")
    print("The peak is set by the arm's momentum at 5 cm/s and the contact stiffness, not the detection delay.\n")


# ---- claims: the source's statements against this run's numbers ------------------------------------


def row(claim, source, measured, ok, why) -> Claim:
    return Claim(LESSON, claim, source, measured, verdict(bool(ok)), why, SCRIPT)


def _source_number(key: str) -> float:
    """The number that leads the source's statement ``SOURCE_TEXT[key]`` ("0.769 m" -> 0.769)."""
    return float(SOURCE_TEXT[key].split()[0])


def statics_claims(vel: Velocity, st: Statics, pmap: PayloadMap) -> list[Claim]:
    s, w = st.straight, st.within
    near, far = pmap.bins[0].median, pmap.bins[-1].median
    return [
        row(f"no linear Jacobian entry exceeds {SOURCE_TEXT['bound']}", f"<= {SOURCE_TEXT['bound']} m/s per rad/s",
            f"max {vel.max_entry:.3f}", vel.max_entry <= _source_number("bound"),
            f"largest |J_ij|, rows 0-2, over {vel.n_poses} random poses"),
        row("tool 0.3 m from the base axis: joint-0 column 0.3", "0.3 m/s", f"{vel.sweep_speed:.3f} m/s",
            abs(vel.sweep_speed - 0.3) <= 0.05, "within the printed 0.05"),
        row(f"a command {STALE_S * 1e3:.0f} ms stale during that sweep is a 30 mm error", "30 mm",
            f"{vel.stale_mm:.1f} mm", abs(vel.stale_mm - 30) <= 0.5,
            f"{STALE_S:g} s at the joint-0 column's speed; printed to the millimetre"),
        row("full horizontal reach", SOURCE_TEXT["reach"], f"{s.lever:.3f} m",
            abs(s.lever - _source_number("reach")) <= 5e-4,
            "shoulder axis to tool, arm straight (limits ignored); printed 3 decimals"),
        row(f"{PAYLOAD_KG:g} kg payload weight", "14.7 N", f"{st.weight:.2f} N",
            abs(st.weight - 14.7) <= 0.05, f"{PAYLOAD_KG:g} kg x {G0} m/s^2; printed 1 decimal"),
        row("payload torque at full extension", SOURCE_TEXT["payload_torque"], f"{s.payload:.2f} N m",
            abs(s.payload - _source_number("payload_torque")) <= 0.05,
            "J^T F shoulder entry, straight arm; printed 1 decimal"),
        row("payload + links press toward the 27 N m limit", "toward 27 N m",
            f"{w.total:.2f} N m ({w.total / 27:.0%})", 0.5 < w.total / 27 < 1.0,
            "within the joint limits: between 50 % and 100 % of 27 N m"),
        row("payload ratings collapse at extension", "collapse", f"median {far:.2f} kg beyond 0.7 m vs {near:.2f} kg "
            "within 0.3 m", far < 2 / 3 * near, "beyond 0.7 m below 2/3 of the near-base limit"),
    ]


def motion_claims(desc: Descent, force: Force, guard: Guard) -> list[Claim]:
    edge = desc.starts[1]
    fast, slow = (desc.row(edge, tick).feedback.max_deviation for tick in TICKS)
    slow_open = desc.row(edge, list(TICKS)[1]).open.max_deviation
    band, cycles = force.at(FRICTION).band, guard.at(50).cycles
    return [
        row("1 mm steps (50 Hz): deviation of micrometres", "micrometres", f"{fast * 1e6:.1f} um", 1e-7 < fast < 1e-5,
            "between 0.1 and 10 um, at the workspace edge"),
        row("linearization error second order in the step", "10x step -> 100x", f"{slow / fast:.0f}x",
            70 < slow / fast < 130, "ratio of the 5 Hz to the 50 Hz deviation within 70-130"),
        row("10 mm steps (5 Hz) visibly bow near the edge", SOURCE_TEXT["bow"],
            f"{slow * 1e3:.2f} mm (feedback), {slow_open * 1e3:.2f} mm (open loop)", slow > REPEATABILITY,
            "with per-tick feedback the bow stays below 1 mm; only open loop exceeds it"),
        row("force from joint torques is crude", SOURCE_TEXT["band"], f"{band:.0%} (90th percentile of |rel|)",
            0.15 <= band <= 0.35, f"model's {FRICTION:g} N m friction; 15-35 % counts as 20-30 %"),
        row("detects a few N of table contact within a couple of cycles", "a couple of cycles",
            f"{cycles} cycle(s) at 50 Hz", 1 <= cycles <= 2, "1 or 2 control cycles from first contact to the stop"),
    ]


# ---- figures -------------------------------------------------------------------------------------


@matplotlib.rc_context(FIG_RC)
def plot_payload_map(r: PayloadMap, path) -> None:
    fig, ax = plt.subplots(figsize=FIGSIZE)
    lo, hi = r.colour_kg
    for (name, count), marker in zip(r.limited_by.items(), ("^", "o", "s", "D", "v", "P")):
        s = r.joints == name
        sc = ax.scatter(r.pts[s, 0], r.pts[s, 1], c=r.kg[s], cmap="viridis", vmin=lo, vmax=hi, s=16, marker=marker)
        # grey in the legend: the marker names the joint, the colour is read on the colour bar
        ax.scatter([], [], c="grey", s=16, marker=marker, label=f"{name} gives out first ({count})")
    fig.legend(loc="lower center", ncol=2)
    fig.colorbar(sc, extend="max", label=f"payload limit (kg), top: {hi:g} and above")
    ax.set(xlabel="tool distance from the base axis (m)", ylabel="tool height (m)", aspect="equal",
           title="WidowX AI payload limit, wrist straight")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save_figure(fig, path, dpi=FIG_DPI)
    plt.close(fig)


def tick_peaks(t, depth, deviation, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Per control tick of ``dt`` s, from samples at times ``t: (M,)`` s: the depth reached by the tick's end and the
    largest ``deviation`` within the tick -> ``(depth, deviation)``, each ``(ticks,)``. A path sampled inside a tick
    swings towards the line and away from it again; on a log axis each near-touch draws a spike down to the noise,
    so the figure shows each tick's worst distance, the quantity the text compares."""
    t = np.asarray(t)
    tick = np.floor(t / dt + 1e-9).astype(int)
    inside = tick < round(t[-1] / dt)  # the last sample, at the run's end, opens no tick of its own
    starts = np.flatnonzero(np.r_[True, np.diff(tick[inside]) > 0])
    return np.maximum.reduceat(depth[inside], starts), np.maximum.reduceat(deviation[inside], starts)


@matplotlib.rc_context(FIG_RC)
def plot_descent(r: Descent, path) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(FIGSIZE[0], 1.45 * FIGSIZE[1]), sharex=True, sharey=True)
    for ax, name in zip(axes, r.starts):
        for (tick, dt), color in zip(TICKS.items(), ("C0", "C3")):
            row_, rate = r.row(name, tick), tick.split(" (")[0]  # the rate alone keeps two legend columns legible
            fb, sim = row_.feedback, row_.sim
            z0 = fb.run.p[0, 2]
            t_fb = np.linspace(0.0, fb.run.t[-1], len(fb.path))  # the path's samples, evenly spaced in each tick
            ax.plot(*tick_peaks(t_fb, z0 - fb.path[:, 2], fb.deviation * 1e6, dt)[::-1], color=color, marker=".",
                    label=f"kinematic, {rate}")
            ax.plot(*tick_peaks(sim.sim_t - sim.t[0], z0 - sim.sim_p[:, 2], row_.sim_dev * 1e6, dt)[::-1],
                    color=color, ls=":", marker=".", label=f"MuJoCo servos, {rate}")
        ax.set(xscale="log", ylabel="descent (m)", title=name)
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))  # every decade labelled
    axes[-1].set_xlabel("worst distance from the line in a tick (µm)")
    # widen the shared axis down past the decade below the smallest distance, so that decade carries a label
    lo, hi = axes[-1].get_xlim()
    axes[-1].set_xlim(0.8 * 10.0 ** np.floor(np.log10(lo)), hi)
    axes[0].invert_yaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2)
    fig.suptitle("Resolved-rate descent at 5 cm/s")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    save_figure(fig, path, dpi=FIG_DPI)
    plt.close(fig)


def true_force_trace(sim: control.SimResult) -> tuple[np.ndarray, np.ndarray]:
    """The true vertical contact force, each value at the instant of the state it belongs to -> ``(t, F_z)``, each
    ``(S + N,)``, s and N, in time order. ``mj_step`` computes a step's contacts before it integrates, so the force
    logged at a step's end belongs to the step's start. A contact force also depends on the servo command: at each
    tick the trace holds two values, first the one the tick read (``force_true``, under the old command), then the
    next step's (under the new one); at the stop the command drops and the force with it."""
    t = np.r_[sim.t, sim.t[0], sim.sim_t[:-1]]
    f = np.r_[sim.force_true[:, 2], sim.sim_force[:, 2]]
    order = np.argsort(t, kind="stable")  # at a tick's time the tick's own reading comes first
    return t[order], f[order]


@matplotlib.rc_context(FIG_RC)
def plot_guard(r: Guard, path) -> None:
    fig, ax = plt.subplots(figsize=(FIGSIZE[0], 1.3 * FIGSIZE[1]))  # taller: the legend goes below the axes
    for row_, color in zip(r.rows, ("C0", "C1", "C2")):
        sim, t_on, hz = row_.sim, row_.t_on, row_.hz
        t_true, f_true = true_force_trace(sim)
        ax.plot((t_true - t_on) * 1e3, f_true, color=color, lw=0.9, alpha=0.45, zorder=2,
                label=f"true F_z, {hz} Hz")
        # the estimates on top of the true-force spikes, one marker per control tick, held until the next
        ax.plot((sim.t - t_on) * 1e3, sim.wrench_hat[:, 2], color=color, ls="--", lw=1.6, marker=".", ms=5,
                drawstyle="steps-post", zorder=3, label=f"F_hat_z, {hz} Hz")
    ax.axhline(THRESHOLD, color="k", lw=0.8, zorder=4, label=f"threshold {THRESHOLD:g} N")
    # the 20 ms after contact decide the stop; the rest of the run is in the table
    ax.set(xlim=GUARD_WINDOW_MS, xlabel="time from first contact (ms)", ylabel="vertical force on the tool (N)",
           title="Guarded descent onto a table")
    fig.legend(loc="lower center", ncol=2)  # below: inside, it would cover the force's decay after contact
    fig.tight_layout(rect=(0, 0.22, 1, 1))
    save_figure(fig, path, dpi=FIG_DPI)
    plt.close(fig)


def main(full: bool = False) -> list[Claim]:
    """The WidowX AI's statics and force-estimation experiments, printed; their claims (returned), numbers and
    figures saved. ``full``: the finer payload map, more frictions and both presses (the ``*_FULL`` sizes)."""
    m = mujoco.MjModel.from_xml_path(str(WXAI))
    chain = robots.load("wxai")
    print(f"MuJoCo {mujoco.__version__}; {chain.name}: joints {', '.join(chain.joint_names)}, tool {chain.tool_name}; "
          f"servo limits {statics.actuator_force_limits(m, chain)} N m; {'full' if full else 'default'} sizes\n")
    grid, frictions, press_x = (MAP_GRID_FULL, FRICTIONS_FULL, PRESS_X_FULL) if full else (MAP_GRID, FRICTIONS, PRESS_X)
    vel, st, pmap = velocity_step(chain), statics_step(m, chain), payload_map_step(m, chain, grid)
    desc, force, guard = descent_step(chain), force_step(chain, frictions, press_x), guard_step(chain)
    for printer, record in ((print_velocity, vel), (print_statics, st), (print_payload_map, pmap),
                            (print_descent, desc), (print_force, force), (print_guard, guard)):
        printer(record)
    claims = statics_claims(vel, st, pmap) + motion_claims(desc, force, guard)
    publish_claims(HERE, claims, SCRIPT)
    strays = f"{min(desc.ratios):.0f} to {max(desc.ratios):.0f} times farther"
    peaks = f"the highest {100 * guard.peak_spread:.0f} % above the lowest"  # the table has each, traced
    figures = [
        Figure("wxai_payload_map.png",
               "The payload limit falls as the tool reaches out from the base: the colour scale stops at the upper "
               "quartile (rounded up to the half kilogram) so the fall with reach shows. Circles: joint_3, the wrist, "
               "gives out first; triangles: joint_1, the shoulder.",
               "Scatter of WidowX AI tool positions, distance from the base axis against height, coloured by payload "
               "limit in kilograms on a scale that stops at the upper quartile (the poses folded up over the base, "
               "stronger still, share its top colour): the poses near and above the base are light, and the colour "
               "darkens as the tool reaches out, with the darkest points at full reach. Circles mark the poses where "
               "the wrist servo joint_3 gives out first, most of them, darkest on an arc at mid heights; triangles "
               "mark the shoulder servo joint_1, along the outer edge and over the base."),
        Figure("wxai_descent.png",
               f"At 5 Hz the kinematic path strays {strays} from the commanded line than at 50 Hz; in MuJoCo the "
               "servos' lag dominates both; the dotted 50 Hz curves zig-zag over the first few centimetres because the "
               "servos start from rest. Each point is one control tick's worst distance from the line; the open-loop "
               "runs are in the table only.",
               "Two panels, mid-workspace and workspace edge: for each control tick, one point at the depth "
               "reached by its end and the largest distance from the commanded straight line within it, on a log "
               "axis; solid lines for the kinematic path with per-tick feedback, dotted for MuJoCo's servos, blue "
               "at 50 Hz and red at 5 Hz; the dotted 50 Hz curves swing over the first few centimetres, where the "
               f"servos start from rest. The 5 Hz kinematic curves sit {strays} from the line than the 50 Hz ones; "
               "each MuJoCo curve lies farther from the line than the kinematic curve at its rate: servo lag "
               "dominates."),
        Figure("wxai_guarded_descent.png",
               f"The {GUARD_WINDOW_MS[1] - GUARD_WINDOW_MS[0]} ms around first contact: the force estimate (dashed, one dot per "
               "control tick, held until the next) passes the threshold "
               f"{', '.join(f'on tick {g.cycles} after contact at {g.hz} Hz' for g in guard.rows)}, and the arm stops at its last dot; "
               "before contact it sits off the true force (faint solid) by the joints' friction. At the stop the true "
               "force drops straight down as the servos are told to hold; the table's true force at the stop is the "
               "top of that drop, the instant the stopping tick read. Of the true force's "
               f"peaks at the different rates, {peaks}.",
               f"True and estimated vertical contact force from {-GUARD_WINDOW_MS[0]} ms before to {GUARD_WINDOW_MS[1]} ms "
               f"after first contact, at {', '.join(str(hz) for hz in GUARD_HZ)} Hz control: the true force jumps to about {max(g.peak for g in guard.rows):.0f} N at contact and "
               "decays; each dashed estimate, "
               f"drawn over it, rises from near zero through the {THRESHOLD:g} N threshold and ends at the stop, where the "
               "true force drops as the servos are told to hold, "
               f"the 500 Hz one first; of the true force's peaks at the different rates, {peaks}."),
    ]
    for plot, record, figure in zip((plot_payload_map, plot_descent, plot_guard), (pmap, desc, guard), figures):
        plot(record, HERE / figure.name)
    # The page reads the model's friction case and the guard's rows; the other frictions (--full) are printed only.
    save_results(HERE, SCRIPT, {"velocity": vel, "payload_kg": PAYLOAD_KG, "repeatability_mm": REPEATABILITY * 1e3,
                                "statics": st, "payload_map": pmap, "descent": desc, "force": force.at(FRICTION),
                                "threshold": THRESHOLD, "guard": guard.rows, "colour_kg": pmap.colour_kg},
                 figures=figures)
    return claims


if __name__ == "__main__":
    run_script(main, __file__, full_run())
