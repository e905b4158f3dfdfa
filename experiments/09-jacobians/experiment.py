"""Lesson 09, Experiment and Break it: the Jacobian as a velocity map, the finite-difference step
sweep, tau = J^T F held by the SO-101's servos in MuJoCo, and the payload limit.

Each step returns its numbers (call it from a Python prompt); the printers format them; every number the source
lesson prints is a row of the claims table at the end (source, measured, verdict, why).

Run: uv run python experiments/09-jacobians/experiment.py [--full]
Writes experiment_output.txt, claims.json, fd_step_sweep.png and fd_step_sweep_float32.png beside this file.
Deterministic (random seed 0).
--full (or PHYSAI_FULL=1) runs the float32 sweep of the Hard exercise over all 50 poses instead of 10.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import mujoco
import numpy as np
from scipy.optimize import minimize

from physai import mj, robots, statics
from physai.kinematics import fk, jacobian, tool_pose
from physai.course.lesson import (
    Claim,
    Figure,
    factor_claim,
    fmt_row,
    full_run,
    number_claim,
    out_dir,
    publish_claims,
    run_script,
    save_figure,
    save_results,
    verdict,
)

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
SEED = 0
N_POSES = 50
N_POSES_F32 = 10  # the float32 exercise: its minima need few poses (--full: all N_POSES)
DT = 1e-6  # s, Step 1's look-ahead
EPS_GRID = 10.0 ** (-np.arange(2, 29) / 2)  # 1e-1 .. 1e-14 in half decades
TABLE_EPS = (1e-1, 1e-3, 1e-5, 1e-7, 1e-8, 1e-10, 1e-12, 1e-14)
COLUMNS = ("forward Jp", "forward Jr", "central Jp", "central Jr")
Q_STEP3 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
JOG_TICKS, JOG_STEP = 30, 0.001  # Going further: a 3 cm jog along x, 1 mm a tick
FORCES = (np.array([0.0, 0.0, -2.0]), np.array([2.0, 0.0, 0.0]), np.array([0.0, 1.5, 0.0]), np.array([1.0, -1.0, 1.0]))
HOLD_S, BREAK_S = 20.0, 5.0
POSES = {
    "folded": np.array([0.0, -1.5, 1.5, 0.5, 0.0]),
    "mid": np.array([0.0, -0.6, 0.9, 0.4, 0.0]),
    "stretched": np.array([0.0, 1.3, -1.3, 0.0, 0.0]),
}
FRACTIONS = (0.0, 0.5, 0.9, 1.1, 1.5)
DOWN = np.array([0.0, 0.0, -1.0])

# The source lesson's printed figures (MuJoCo 3.17.0, Apple M5), as it writes them.
SOURCE_STEP1 = {"linear": "7.9e-07", "angular": "3.8e-07", "speed": "0.306"}
SOURCE_SWEEP = {  # eps: forward Jp, forward Jr, central Jp, central Jr
    1e-1: ("1.2e-02", "4.8e-15", "4.2e-04", "2.6e-15"),
    1e-3: ("1.2e-04", "4.5e-13", "4.2e-08", "2.5e-13"),
    1e-5: ("1.2e-06", "4.7e-11", "5.6e-12", "2.3e-11"),
    1e-7: ("1.2e-08", "4.5e-09", "4.7e-10", "2.3e-09"),
    1e-8: ("9.8e-09", "4.4e-08", "4.9e-09", "2.3e-08"),
    1e-10: ("9.5e-07", "4.4e-06", "4.3e-07", "2.2e-06"),
    1e-12: ("8.9e-05", "4.6e-04", "4.7e-05", "2.4e-04"),
    1e-14: ("8.3e-03", "4.5e-02", "4.5e-03", "2.6e-02"),
}
SOURCE_BEST = {"forward": "1e-8", "central": "1e-5"}
SOURCE_TAU = (  # J^T F (N m) at the settled pose, and max |J^T F - servo|
    (("0.0000", "0.4383", "0.5191", "0.2584", "0.0042"), "4.2e-14"),
    (("0.0052", "-0.0395", "-0.2569", "-0.1872", "-0.0036"), "7.1e-14"),
    (("-0.3745", "-0.0000", "-0.0001", "-0.0001", "0.0175"), "7.2e-14"),
    (("0.2523", "-0.2390", "-0.3882", "-0.2229", "-0.0156"), "1.6e-13"),
)
SOURCE_QDOT = "8.5e-15"
SOURCE_PAYLOAD = {  # lever (m), gravity lift, gravity elbow (N m), max extra load (N), limiting joint
    "folded": ("0.172", "-0.059", "-0.469", "8.81", "elbow_flex"),
    "mid": ("0.220", "-0.281", "-0.443", "9.61", "elbow_flex"),
    "stretched": ("0.411", "-0.909", "-0.483", "4.95", "shoulder_lift"),
}
SOURCE_FALL = {0.0: ("0.00", "0.5", "-0.909"), 0.5: ("2.48", "1.2", "-1.925"), 0.9: ("4.46", "1.8", "-2.737"),
             1.1: ("5.45", "147.4", "-2.940"), 1.5: ("7.43", "179.7", "-2.940")}  # N, mm, N m
PAN_SWEEP = 9  # pan angles, limit to limit, at which the Medium exercise's best pose is re-evaluated
SOURCE_MEDIUM = "0.410"  # N m of lift torque per N down at the stretched pose
ROUNDOFF = 10.0  # round-off sized numbers agree when within this factor (their digits follow operation order, CPU)
TORQUE_TOL, FORCE_TOL = 2e-3, 0.1  # the camera-mount stand-in moves gravity torques and payloads by up to these
STANDIN = ("physai's bundled SO-101 model has a simple box standing in for the camera-mount mesh "
           f"(physai/models/so101/so101.xml): its mass centre moves gravity torques by up to {TORQUE_TOL:.0e} N m.")


def site_state(m, chain, q, d, dtype=np.float64):
    """MuJoCo's tool site at ``q``: :func:`pose_state` of ``site_xpos``/``site_xmat``."""
    return pose_state(mj.site_pose(m, chain, q, d), dtype)


def pose_state(T, dtype=np.float64):
    """Position ``(3,)`` and ``(w, x, y, z)`` quaternion ``(4,)`` of a pose ``T`` (4x4), rounded through ``dtype``."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, T[:3, :3].ravel())
    return T[:3, 3].astype(dtype).astype(float), quat.astype(dtype).astype(float)


def site_delta(a, b) -> np.ndarray:
    """Motion from site state ``b`` to ``a``: ``[dp; dtheta]`` (6,), both in world axes.

    ``mju_subQuat`` returns the rotation vector in ``b``'s axes; rotating it by ``R_b`` makes it world.
    """
    (p_a, quat_a), (p_b, quat_b) = a, b
    v, R = np.zeros(3), np.zeros(9)
    mujoco.mju_subQuat(v, quat_a, quat_b)
    mujoco.mju_quat2Mat(R, quat_b)
    return np.concatenate([p_a - p_b, R.reshape(3, 3) @ v])


def velocity_map(m, chain, poses, qdots, dt=DT):
    """Step 1: max relative error of ``J qdot`` against the site's motion over ``dt`` (linear, angular), and
    the median site speed with every joint at ``1/sqrt(n)`` rad/s."""
    d = mujoco.MjData(m)
    err_lin, err_ang, speeds = [], [], []
    for q, qdot in zip(poses, qdots):
        J = mj.site_jacobian(m, chain, q, d)
        moved = site_delta(site_state(m, chain, q + dt * qdot, d), site_state(m, chain, q, d)) / dt
        predicted = J @ qdot
        err_lin.append(np.linalg.norm(moved[:3] - predicted[:3]) / np.linalg.norm(predicted[:3]))
        err_ang.append(np.linalg.norm(moved[3:] - predicted[3:]) / np.linalg.norm(predicted[3:]))
        speeds.append(np.linalg.norm(J[:3] @ np.full(chain.n, 1 / np.sqrt(chain.n))))
    return max(err_lin), max(err_ang), float(np.median(speeds))


def fd_errors(m, chain, q, eps_grid, dtype=np.float64, state=None):
    """Largest entry error of forward/central difference ``Jp``, ``Jr`` against ``mj_jacSite`` at ``q``.

    -> ``(len(eps_grid), 4)`` in :data:`COLUMNS` order. ``state(q)`` gives the site state (default:
    MuJoCo's, rounded through ``dtype``).
    """
    d = mujoco.MjData(m)
    state = state or (lambda x: site_state(m, chain, x, d, dtype))
    J = mj.site_jacobian(m, chain, q, d)
    x0 = state(q)
    out = np.empty((len(eps_grid), 4))
    for k, eps in enumerate(eps_grid):
        fwd, cen = np.empty((6, chain.n)), np.empty((6, chain.n))
        for i in range(chain.n):
            step = eps * np.eye(chain.n)[i]
            xp, xm = state(q + step), state(q - step)
            fwd[:, i] = site_delta(xp, x0) / eps
            cen[:, i] = site_delta(xp, xm) / (2 * eps)
        ef, ec = np.abs(fwd - J), np.abs(cen - J)
        out[k] = ef[:3].max(), ef[3:].max(), ec[:3].max(), ec[3:].max()
    return out


def sweep(m, chain, poses, eps_grid=EPS_GRID, dtype=np.float64, state=None):
    """Median over ``poses`` of :func:`fd_errors` -> ``(len(eps_grid), 4)``."""
    return np.median([fd_errors(m, chain, q, eps_grid, dtype, state) for q in poses], axis=0)


def best_steps(eps_grid, med):
    """Step with the smallest median position error: ``{"forward": eps, "central": eps}``."""
    return {"forward": float(eps_grid[np.argmin(med[:, 0])]), "central": float(eps_grid[np.argmin(med[:, 2])])}


def without_standin_contacts(m):
    """Switch off the contacts of the gripper's group-4 collision meshes (stand-in boxes here)."""
    group4 = m.geom_group == 4
    m.geom_contype[group4] = 0
    m.geom_conaffinity[group4] = 0
    return m


def so101_sim(gravity=True, frictionloss=True, standin_contacts=False):
    """A fresh SO-101 ``MjModel`` for simulation, gravity and joint friction loss optionally off."""
    m = robots.mujoco_model("so101")
    if not gravity:
        m.opt.gravity[:] = 0.0
    if not frictionloss:
        m.dof_frictionloss[:] = 0.0
    return m if standin_contacts else without_standin_contacts(m)


def hold(m, chain, q, force, seconds):
    """Servos commanded to ``q``, a constant ``force`` (N, world) at the tool site, ``seconds`` simulated.

    Starts at rest at ``q``; returns the final ``MjData``, recomputed (``mj_forward``) at the final state.
    """
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    d.ctrl[list(statics.joint_actuators(m, chain))] = q
    for _ in range(round(seconds / m.opt.timestep)):
        statics.push_at_site(m, d, chain.tool_name, force)
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    return d


def servo_check(m, chain, q, force, seconds=HOLD_S):
    """Step 3 row: ``J^T F`` at the settled pose, servo torque (sign flipped), max |qdot|, contacts."""
    d = hold(m, chain, q, force, seconds)
    settled = d.qpos[list(chain.qpos_adr)].copy()
    tau = statics.joint_torques(mj.site_jacobian(m, chain, settled), np.r_[force, 0.0, 0.0, 0.0])
    servo = -d.actuator_force[list(statics.joint_actuators(m, chain))]
    return tau, servo, float(np.abs(d.qvel).max()), d.ncon


def fall(m, chain, q, force_down, seconds=BREAK_S):
    """Break it row: tip drop (m) below the commanded site and the lift servo torque after ``seconds``."""
    d = hold(m, chain, q, force_down * DOWN, seconds)
    p_cmd = mj.site_pose(m, chain, q)[:3, 3]
    lift = statics.joint_actuators(m, chain)[chain.joint_index("shoulder_lift")]
    return float(p_cmd[2] - d.site_xpos[mj.site_id(m, chain.tool_name)][2]), float(d.actuator_force[lift])


# ---- steps: each returns its numbers ---------------------------------------------------------------


@dataclass(frozen=True)
class Velocity:
    """Step 1 over the ``poses`` (n, 5) rad: the largest relative error of ``J qdot`` against the site's motion,
    linear and angular, and the median site speed (m/s) for unit joint velocities."""

    poses: np.ndarray
    linear: float
    angular: float
    speed: float


def velocity_step(m, chain, n_poses=N_POSES) -> Velocity:
    """Step 1: ``J qdot`` vs the site's motion over DT at ``n_poses`` random poses and unit joint velocities."""
    rng = np.random.default_rng(SEED)
    poses = chain.random_q(rng, n_poses)
    qdots = rng.normal(size=poses.shape)
    qdots /= np.linalg.norm(qdots, axis=1, keepdims=True)
    return Velocity(poses, *(float(x) for x in velocity_map(m, chain, poses, qdots)))


def table_rows(med, eps_grid=EPS_GRID):
    """The rows of a sweep at the source table's steps -> ``(len(TABLE_EPS), 4)``."""
    return med[[int(np.argmin(np.abs(np.log10(eps_grid / x)))) for x in TABLE_EPS]]


@dataclass(frozen=True)
class SweepRow:
    """One row of the table: the step (rad) and the median largest error of each column (COLUMNS)."""

    eps: float
    fwd_p: float
    fwd_r: float
    cen_p: float
    cen_r: float


def sweep_rows(table) -> tuple[SweepRow, ...]:
    return tuple(SweepRow(eps, *(float(x) for x in row)) for eps, row in zip(TABLE_EPS, table))


@dataclass(frozen=True)
class Probe:
    """Two round-off cells of a sweep: central Jp at 1e-5 and forward Jp at 1e-14."""

    cen_1e5: float
    fwd_1e14: float


@dataclass(frozen=True)
class Sweep:
    """Step 2: the sweep's medians on EPS_GRID (``med``) and at the table's steps (``table``, and as ``rows``), the
    best steps among the rows and on the grid, sqrt and cbrt of eps_mach, and two round-off cells through
    MuJoCo's FK and physai's NumPy FK."""

    med: np.ndarray
    table: np.ndarray
    rows: tuple[SweepRow, ...]
    best: dict[str, float]
    grid_best: dict[str, float]
    sqrt_eps: float
    cbrt_eps: float
    mujoco_fk: Probe
    numpy_fk: Probe


def sweep_step(m, chain, poses) -> Sweep:
    """Step 2: the float64 sweep against mj_jacSite, its rows at the table's steps and the best steps there;
    and the same sweep through physai's NumPy FK at two steps (same maths, another operation order)."""
    med = sweep(m, chain, poses)
    table = table_rows(med)
    probe = np.array([1e-5, 1e-14])
    numpy_fk = sweep(m, chain, poses, probe, state=lambda x: pose_state(tool_pose(chain, x)))
    mujoco_fk = table[[TABLE_EPS.index(1e-5), TABLE_EPS.index(1e-14)]]
    eps64 = np.finfo(np.float64).eps
    return Sweep(med, table, sweep_rows(table), best_steps(np.array(TABLE_EPS), table), best_steps(EPS_GRID, med),
                 float(np.sqrt(eps64)), float(np.cbrt(eps64)), Probe(float(mujoco_fk[0, 2]), float(mujoco_fk[1, 0])),
                 Probe(float(numpy_fk[0, 2]), float(numpy_fk[1, 0])))


@dataclass(frozen=True)
class ServoRow:
    """One force ``force`` (N) held: J^T F and the servos' torques (N m, sign flipped), their largest difference,
    the largest joint speed left (rad/s) and the contacts."""

    force: np.ndarray
    tau: np.ndarray
    servo: np.ndarray
    diff: float
    qdot: float
    ncon: int


@dataclass(frozen=True)
class Servo:
    """Step 3: each force held for ``seconds``; the largest difference and joint speed over the forces; the
    stand-in contacts' count and the torque they cost; the lift's settled and commanded torque for the first; the
    size of the lift's gravity torque at Q_STEP3 (N m, MuJoCo's qfrc_bias: what the servo supplies on top, gravity
    on), and the lift servo's torque against the first force alone and, gravity on, in all (N m, signed)."""

    seconds: float
    rows: tuple[ServoRow, ...]
    max_diff: float
    qdot: float
    standin_ncon: int
    standin_miss: float
    lift_settled: float
    lift_commanded: float
    lift_shift: float
    weight_lift: float
    push_lift: float
    hold_lift: float


def servo_step(chain, forces=FORCES, seconds=HOLD_S) -> Servo:
    """Step 3: each force held by the servos (gravity, friction loss, stand-in contacts off), and the first force
    again with the stand-in contacts on."""
    m = so101_sim(gravity=False, frictionloss=False)
    rows = tuple(ServoRow(F, tau, servo, float(np.abs(tau - servo).max()), float(qdot), int(ncon))
                 for F, (tau, servo, qdot, ncon) in zip(forces, (servo_check(m, chain, Q_STEP3, F, seconds)
                                                                for F in forces)))
    raw = servo_check(so101_sim(gravity=False, frictionloss=False, standin_contacts=True), chain, Q_STEP3, forces[0],
                      seconds)
    lift = chain.joint_index("shoulder_lift")
    settled, commanded = float(rows[0].tau[lift]), float((jacobian(chain, Q_STEP3)[:3].T @ forces[0])[lift])
    gravity = float(statics.gravity_torques(so101_sim(), chain, Q_STEP3)[lift])
    return Servo(seconds, rows, max(r.diff for r in rows), max(r.qdot for r in rows), int(raw[3]),
                 float(np.abs(raw[0] - raw[1]).max()), settled, commanded, commanded - settled, abs(gravity),
                 -commanded, gravity - commanded)


@dataclass(frozen=True)
class PayloadPose:
    """Break it at one pose ``q`` (rad): the lift lever (m), gravity torques at lift and elbow (N m), the max extra
    tip load (N) and the joint that limits it, and the torque per newton down (N m/N) at lift, elbow and that joint,
    and its gravity torque (N m); the smallest singular value of ``J_p`` (m/rad) and its left singular vector, the
    tool direction the joints barely move (world axes, its largest entry positive)."""

    name: str
    q: np.ndarray
    lever: float
    lift: float
    elbow: float
    force: float
    joint: str
    lift_per_n: float
    elbow_per_n: float
    limit_per_n: float
    limit_gravity: float
    sigma_min: float
    lost: np.ndarray


@dataclass(frozen=True)
class Payload:
    """Break it: the servos' torque limits (N m), the first one, and one row per pose of POSES."""

    limits: np.ndarray
    limit: float
    poses: tuple[PayloadPose, ...]

    def pose(self, name: str) -> PayloadPose:
        return next(p for p in self.poses if p.name == name)


def payload_step(chain) -> Payload:
    """Break it: per pose the lift lever, gravity torques at lift and elbow, the max extra tip load, the joint, and
    the torque per newton down at lift, elbow and the limiting joint (N m/N: each joint's horizontal lever)."""
    m = so101_sim()
    limits = statics.actuator_force_limits(m, chain)
    lift, elbow = chain.joint_index("shoulder_lift"), chain.joint_index("elbow_flex")
    out = []
    for name, q in POSES.items():
        res = statics.payload_limit(m, chain, q, limits, DOWN)
        Jp = mj.site_jacobian(m, chain, q)[:3]
        U, sigma, _ = np.linalg.svd(Jp)
        lost = U[:, -1] * np.sign(U[np.argmax(np.abs(U[:, -1])), -1])
        out.append(PayloadPose(name, q, float(np.linalg.norm(Jp[:, lift])), float(res.gravity[lift]),
                               float(res.gravity[elbow]), float(res.force), res.joint_name,
                               abs(float(res.per_newton[lift])), abs(float(res.per_newton[elbow])),
                               abs(float(res.per_newton[res.joint])), abs(float(res.gravity[res.joint])),
                               float(sigma[-1]), lost))
    return Payload(limits, float(limits[0]), tuple(out))


@dataclass(frozen=True)
class FallRow:
    """The stretched pose pushed down by ``fraction`` of its limit: the force (N), the tip drop (m, and mm) and the
    lift servo's torque (N m)."""

    fraction: float
    force: float
    drop: float
    drop_mm: float
    lift: float


@dataclass(frozen=True)
class Fall:
    """Break it: one row per fraction of the limit, each simulated for ``seconds``."""

    seconds: float
    rows: tuple[FallRow, ...]

    def at(self, fraction: float) -> FallRow:
        return next(r for r in self.rows if r.fraction == fraction)


@dataclass(frozen=True)
class Jog:
    """Going further: the LeRobot-style jog, ``ticks`` of ``step`` (m) along base x, position only, each answer
    sent to an ideal servo (the joints become the command): the tool's final distance from the last goal and its
    largest distance from the commanded line (um), and the gripper joint before and after (degrees)."""

    ticks: int
    step: float
    final_um: float
    deviation_um: float
    gripper: tuple[float, float]


def jog_step(q=Q_STEP3, ticks=JOG_TICKS, step=JOG_STEP) -> Jog:
    """Going further: the page's jog with physai's LeRobot-compatible class on the bundled SO-101 model."""
    from physai.lerobot import RobotKinematics

    kin = RobotKinematics(str(robots.model_path("so101")), "gripperframe")
    q_deg = np.r_[np.rad2deg(q), 20.0]  # the gripper half open; the jog must carry it through
    T_goal = kin.forward_kinematics(q_deg)
    p0, deviation = T_goal[:3, 3].copy(), []
    for _ in range(ticks):
        T_goal[0, 3] += step
        q_deg = kin.inverse_kinematics(q_deg, T_goal, orientation_weight=0.0)
        off = kin.forward_kinematics(q_deg)[:3, 3] - p0
        deviation.append(np.hypot(off[1], off[2]))  # distance from the line through p0 along x
    error = float(np.linalg.norm(kin.forward_kinematics(q_deg)[:3, 3] - T_goal[:3, 3]))
    return Jog(ticks, step, 1e6 * error, 1e6 * float(max(deviation)), (20.0, float(q_deg[-1])))


def fall_step(chain, limit, fractions=FRACTIONS) -> Fall:
    """Break it: the stretched pose pushed down by fractions of its payload ``limit``: tip drop (m), lift torque."""
    m = so101_sim()
    rows = {frac: fall(m, chain, POSES["stretched"], frac * limit) for frac in fractions}
    return Fall(BREAK_S, tuple(FallRow(frac, frac * limit, drop, 1000 * drop, tau)
                               for frac, (drop, tau) in rows.items()))


@dataclass(frozen=True)
class Easy:
    """Exercise Easy at Q_STEP3: the pan axis (world), its column's vertical entry, the pan torque (N m) for the
    downward push, the tool's offset ``r`` (m) from the pan anchor, and the pan torques for the x and y pushes."""

    axis: np.ndarray
    Jz: float
    tau_pan: float
    r: np.ndarray
    tau_x: float
    tau_y: float
    force_x: float
    force_y: float


def easy_step(m, chain) -> Easy:
    """Exercise Easy, at Q_STEP3: the pan axis, the tool's offset ``r`` (m, world) from the pan anchor, and the pan
    torque (N m) for Build it's downward, x and y pushes (FORCES[0], [1], [2]). A horizontal force F loads the
    vertical pan axis with (r x F)_z = r_x F_y - r_y F_x."""
    J, f = mj.site_jacobian(m, chain, Q_STEP3), fk(chain, Q_STEP3)
    pan = [float(statics.joint_torques(J, np.r_[F, 0.0, 0.0, 0.0])[0]) for F in FORCES[:3]]
    return Easy(f.axes[0], float(J[2, 0]), pan[0], f.p - f.anchors[0], pan[1], pan[2], float(FORCES[1][0]),
                float(FORCES[2][1]))


@dataclass(frozen=True)
class Lever:
    """One pose ``q`` (rad): the lift torque per newton down (N m/N), the lift axis's distance to the tip (m), the
    tip's offset ``r`` (m) from the lift anchor, and which way it reaches (``"forwards"``: +x, the way the arm faces
    at pan 0; else ``"backwards"``)."""

    q: np.ndarray
    per_newton: float
    distance: float
    r: np.ndarray
    reach: str


@dataclass(frozen=True)
class Medium:
    """Exercise Medium: the pose with the most lift torque per newton down (found with the pan at 0), the stretched
    pose, and ``pan_spread``: how far the best value moves (N m/N) when the pan alone sweeps its whole range (the
    optimum is a family of poses, one per pan angle)."""

    best: Lever
    stretched: Lever
    pan_spread: float


def medium_step(m, chain, n_grid=11, n_polish=10) -> Medium:
    """Exercise Medium: the pose with the most lift torque per newton down, and the stretched pose's value. Lift
    torque per newton down = |(a_lift x (p - o))_z|, the horizontal lever. The search: a grid of ``n_grid`` values
    per joint (pan at 0), then L-BFGS-B within the limits from each of the ``n_polish`` best grid points: the
    function has several local maxima (reaching forwards or backwards), and one polish can stop at the lesser."""
    lift = chain.joint_index("shoulder_lift")
    free = [chain.joint_index(n) for n in ("shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")]

    def full(x):
        q = np.zeros(x.shape[:-1] + (chain.n,))
        q[..., free] = x
        return q

    per_newton = lambda x: np.abs(jacobian(chain, full(x))[..., 2, lift])
    bounds = [(chain.lower[i], chain.upper[i]) for i in free]
    grid = np.stack(np.meshgrid(*[np.linspace(lo, hi, n_grid) for lo, hi in bounds], indexing="ij"),
                    -1).reshape(-1, len(free))
    starts = grid[np.argsort(per_newton(grid))[::-1][:n_polish]]
    opt = min((minimize(lambda x: -per_newton(x), x0, method="L-BFGS-B", bounds=bounds,
                        options={"ftol": 1e-15, "gtol": 1e-12}) for x0 in starts), key=lambda r: r.fun)

    def lever(q):
        J, f = mj.site_jacobian(m, chain, q), fk(chain, q)
        r = f.p - f.anchors[lift]
        return Lever(q, abs(float(J[2, lift])), float(np.linalg.norm(J[:3, lift])), r,
                     "forwards" if r[0] > 0 else "backwards")

    best = lever(full(opt.x))
    pan = chain.joint_index("shoulder_pan")
    swept = [lever(np.where(np.arange(chain.n) == pan, a, best.q)).per_newton
             for a in np.linspace(chain.lower[pan], chain.upper[pan], PAN_SWEEP)]
    return Medium(best, lever(POSES["stretched"]), float(np.ptp(swept)))


@dataclass(frozen=True)
class Hard:
    """Exercise Hard: the float32 sweep over ``n_poses`` poses (``med`` on EPS_GRID, ``rows`` at the table's
    steps), its best steps and float64's, and eps_32 with its square and cube roots."""

    med: np.ndarray
    rows: tuple[SweepRow, ...]
    best: dict[str, float]
    best64: dict[str, float]
    eps32: float
    sqrt_eps32: float
    cbrt_eps32: float
    n_poses: int


def hard_step(m, chain, poses, med64) -> Hard:
    """Exercise Hard: the sweep with site states rounded to float32 before differencing."""
    med32 = sweep(m, chain, poses, dtype=np.float32)
    eps32 = np.finfo(np.float32).eps  # its roots in float32, as a float32 run would take them
    return Hard(med32, sweep_rows(table_rows(med32)), best_steps(EPS_GRID, med32), best_steps(EPS_GRID, med64),
                float(eps32), float(np.sqrt(eps32)), float(np.cbrt(eps32)), len(poses))


# ---- printers ------------------------------------------------------------------------------------


def e(x) -> str:
    return f"{x:.1e}"


def vec(v) -> str:
    return ", ".join(fmt_row([x], 0, 4).strip() for x in v)


def print_velocity(r) -> None:
    print(f"\n== Step 1. Velocity map: J qdot vs the site's motion over {DT:.0e} s ({len(r.poses)} poses, "
          f"random seed {SEED}) ==")
    print(f"max relative error: linear {e(r.linear)}, angular {e(r.angular)}")
    print(f"median site speed with every joint at 1/sqrt(5) rad/s (|qdot| = 1): {r.speed:.3f} m/s")


def print_table(table) -> None:
    print(f"{'eps (rad)':>9s} " + " ".join(f"{c:>12s}" for c in COLUMNS))
    for eps, row in zip(TABLE_EPS, table):
        print(f"{eps:9.0e} " + " ".join(f"{e(x):>12s}" for x in row))


def print_sweep(r) -> None:
    print(f"\n== Step 2. Finite-difference step sweep: median over {N_POSES} poses of the largest entry error "
          "against mj_jacSite ==")
    print("(orientation differences through mju_subQuat, rotated into the world frame)")
    print_table(r.table)
    print(f"best step among the table's rows: forward {r.best['forward']:.0e}, central {r.best['central']:.0e}; "
          f"on the half-decade grid of the figure: forward {r.grid_best['forward']:.1e}, "
          f"central {r.grid_best['central']:.1e}")
    print(f"sqrt(eps_mach) = {e(r.sqrt_eps)}, cbrt(eps_mach) = {e(r.cbrt_eps)}")
    print("Round-off error is eps_mach x (how the rounding errors of FK's ~100 operations add up) / eps; that sum\n"
          f"depends on the operation order and the CPU (here MuJoCo {mujoco.__version__} on {platform.machine()}).\n"
          "The same sweep through physai's NumPy FK "
          "(identical maths, other operation order) moves the round-off cells:")
    print(f"   central Jp at 1e-5: MuJoCo FK {e(r.mujoco_fk.cen_1e5)}, NumPy FK {e(r.numpy_fk.cen_1e5)}")
    print(f"   forward Jp at 1e-14: MuJoCo FK {e(r.mujoco_fk.fwd_1e14)}, NumPy FK {e(r.numpy_fk.fwd_1e14)}")


def print_servo(r) -> None:
    print(f"\n== Step 3. tau = J^T F held by the servos: gravity and frictionloss off, {HOLD_S:.0f} s simulated, "
          f"q = ({', '.join(f'{x:g}' for x in Q_STEP3)}) ==")
    print(f"{'F at site (N)':>15s} | {'J^T F (N m), joints 1-5':42s} | {'servo torque (N m), sign flipped':42s} | "
          "max diff")
    for row in r.rows:
        label = "(" + ", ".join(f"{x:g}" for x in row.force) + ")"
        print(f"{label:>15s} | {vec(row.tau):42s} | {vec(row.servo):42s} | {e(row.diff)}")
    print(f"max |qdot| after {HOLD_S:.0f} s per force: {', '.join(e(row.qdot) for row in r.rows)} rad/s; "
          f"contacts: {[row.ncon for row in r.rows]}")
    print("Note: the contacts of the gripper's group-4 collision meshes are switched off. In physai's bundled SO-101 "
          f"they are stand-in boxes that overlap the lower arm; with them on, {r.standin_ncon} contacts push back "
          f"and the servo torques miss J^T F by {r.standin_miss:.2f} N m for F = (0, 0, -2) N.")


def print_payload(r) -> None:
    print("\n== Break it. Payload limit: tau = g(q) - f J_p^T(-z) within the servos' limits (gravity on) ==")
    print(f"servo limits from so101.xml forcerange: {', '.join(f'{x:.2f}' for x in r.limits)} N m")
    print(f"{'pose (rad)':34s} | lift axis -> tip (m) | gravity torque lift / elbow (N m) | per N down lift / elbow "
          "(N m/N) | max extra tip load | limiting joint")
    for p in r.poses:
        label = f"{p.name} ({', '.join(f'{x:g}' for x in p.q)})"
        print(f"{label:34s} | {p.lever:20.3f} | {p.lift:15.3f} / {p.elbow:.3f}{'':11s} | "
              f"{p.lift_per_n:13.3f} / {p.elbow_per_n:.3f}{'':9s} | {p.force:16.2f} N | {p.joint}")
    print("A pose's limit is set by its first joint to saturate: (limit - |gravity torque|) / (torque per N down) at "
          "that joint.")
    print(STANDIN)


def print_fall(r) -> None:
    print(f"\nStretched pose simulated for {BREAK_S:.0f} s with a downward tip force (servos commanded to the pose):")
    print(f"{'tip force (N)':>13s} | x limit | tip drop after {BREAK_S:.0f} s | lift servo torque")
    for row in r.rows:
        print(f"{row.force:13.2f} | {row.fraction:7.1f} | {row.drop_mm:15.1f} mm | {row.lift:13.3f} N m")


def print_exercises(easy, medium, hard) -> None:
    print("\n== Exercises, computed ==")
    print(f"Easy. The pan axis in the world is {vec(easy.axis)} (vertical), so its column's vertical entry "
          f"(a x (p - o))_z = {easy.Jz:.1e} and tau_pan = {easy.tau_pan:.1e} N m for F = (0, 0, -2) N:\n"
          "   a vertical force has no moment about a vertical axis.")
    print(f"   The tool sits r = ({vec(easy.r)}) m from the pan anchor, so a push of {easy.force_x:g} N along x "
          f"loads the pan with {easy.tau_x:.4f} N m\n   (r_y F_x) and {easy.force_y:g} N along y with "
          f"{easy.tau_y:.4f} N m (r_x F_y).")
    print("Medium. Lift torque per newton down = |(a_lift x (p - o))_z| = the horizontal lever from the lift axis to "
          "the tip;\n   at most the full distance |a x (p - o)|. Searching the joint ranges (grid + L-BFGS-B):")
    for label, row in (("best", medium.best), ("stretched", medium.stretched)):
        print(f"   {label} q = ({', '.join(f'{x:.3f}' for x in row.q)}): {row.per_newton:.4f} N m/N "
              f"(mj_jacSite), distance {row.distance:.4f} m; tip {row.r[0]:+.3f} m along x, "
              f"{row.r[2]:+.3f} m up from the lift axis")
    print(f"   the best pose with the pan alone swept over its range ({PAN_SWEEP} angles): the value moves by "
          f"{medium.pan_spread:.1e} N m/N, so every pan angle is optimal")
    print(f"Hard. The sweep with positions and quaternions rounded to float32 (eps_32 = {e(hard.eps32)}):")
    print_table(table_rows(hard.med))
    print(f"   best steps (half-decade grid): forward {hard.best['forward']:.1e} (float64 "
          f"{hard.best64['forward']:.1e}), central {hard.best['central']:.1e} (float64 "
          f"{hard.best64['central']:.1e}); sqrt(eps_32) = {e(hard.sqrt_eps32)}, cbrt(eps_32) = {e(hard.cbrt_eps32)}.")
    print("   Round-off grows to eps_32 |x| / eps, so the V's bottom moves right, to ~sqrt(eps_32) forward and "
          "~cbrt(eps_32) central.")


# ---- claims: the source's numbers against this run's ----------------------------------------------

LESSON, SCRIPT = "09", "experiment.py"


def claim(name, source, measured, *, tol=None, unit="", why=None) -> Claim:
    return number_claim(LESSON, name, source, measured, script=SCRIPT, tol=tol, unit=unit, why=why)


def roundoff(name, source, measured, *, unit="") -> Claim:
    return factor_claim(LESSON, name, source, measured, script=SCRIPT, factor=ROUNDOFF, unit=unit,
                        why=f"round-off: within {ROUNDOFF:g}x either way (its digits follow operation order and CPU)")


def at_roundoff(name, source, measured, bound, unit) -> Claim:
    """A number the source prints whose size, not digits, is the claim: it is round-off, at most ``bound``."""
    return Claim(LESSON, name, f"{source} {unit}", f"{e(measured)} {unit}", verdict(abs(measured) <= bound),
                 f"round-off sized: <= {bound:.0e} {unit}", SCRIPT)


def velocity_claims(r) -> list[Claim]:
    return [claim("Step 1: max relative error of J qdot, linear", SOURCE_STEP1["linear"], r.linear),
            claim("Step 1: max relative error of J qdot, angular", SOURCE_STEP1["angular"], r.angular),
            claim("Step 1: median site speed at |qdot| = 1", SOURCE_STEP1["speed"], r.speed, unit="m/s")]


def sweep_claims(r) -> list[Claim]:
    """Position cells right of the V's minimum are truncation (printed precision); at or left of it round-off."""
    out = []
    for scheme, j in (("forward", 0), ("central", 2)):
        best = float(SOURCE_BEST[scheme])
        for k, eps in enumerate(TABLE_EPS):
            name, source, x = f"Step 2: {scheme} Jp error at eps = {eps:.0e}", SOURCE_SWEEP[eps][j], r.table[k, j]
            out.append(claim(name, source, x) if eps > best else roundoff(name, source, x))
        out.append(Claim(LESSON, f"Step 2: best {scheme} step", SOURCE_BEST[scheme], f"{r.best[scheme]:.0e}",
                         verdict(r.best[scheme] == best), "the table row with the smallest Jp error", SCRIPT))
    out += [roundoff(f"Step 2: {s} Jr error at eps = 1e-01 (no truncation)", SOURCE_SWEEP[1e-1][j], r.table[0, j])
            for s, j in (("forward", 1), ("central", 3))]
    return out


def servo_claims(r) -> list[Claim]:
    out = []
    for row, (source_tau, source_diff) in zip(r.rows, SOURCE_TAU):
        F, tau = row.force, row.tau
        label = "(" + ", ".join(f"{x:g}" for x in F) + ") N"
        off = np.abs(tau - np.array(source_tau, dtype=float)).max()
        out.append(Claim(LESSON, f"Step 3: J^T F at the settled pose, F = {label}", ", ".join(source_tau) + " N m",
                         vec(tau) + " N m", verdict(off <= 0.5e-4 + 1e-12), "every entry to the printed 4 decimals",
                         SCRIPT))
        out.append(at_roundoff(f"Step 3: max |J^T F - servo torque|, F = {label}", source_diff,
                               row.diff, 1e-12, "N m"))
    out.append(at_roundoff("Step 3: max |qdot| after 20 s", SOURCE_QDOT, r.qdot, 1e-12, "rad/s"))
    return out


def payload_claims(r) -> list[Claim]:
    out, why = [], f"within {TORQUE_TOL:.0e} N m / {FORCE_TOL} N: the camera-mount stand-in moves them"
    for p in r.poses:
        name = p.name
        lever, lift, elbow, force, joint = SOURCE_PAYLOAD[name]
        out += [claim(f"Break it, {name}: lift axis -> tip", lever, p.lever, unit="m"),
                claim(f"Break it, {name}: gravity torque, lift", lift, p.lift, tol=TORQUE_TOL + 0.5e-3,
                      unit="N m", why=why),
                claim(f"Break it, {name}: gravity torque, elbow", elbow, p.elbow, tol=TORQUE_TOL + 0.5e-3,
                      unit="N m", why=why),
                claim(f"Break it, {name}: max extra tip load", force, p.force, tol=FORCE_TOL, unit="N", why=why),
                Claim(LESSON, f"Break it, {name}: limiting joint", joint, p.joint, verdict(p.joint == joint),
                      "the same joint saturates first", SCRIPT)]
    return out


def fall_claims(r) -> list[Claim]:
    out = []
    for row in r.rows:
        frac = row.fraction
        _, drop, lift = SOURCE_FALL[frac]
        out += [claim(f"Break it, stretched x{frac:g} limit: tip drop after {BREAK_S:g} s", drop, row.drop_mm,
                      unit="mm"),
                claim(f"Break it, stretched x{frac:g} limit: lift servo torque", lift, row.lift,
                      tol=TORQUE_TOL + 0.5e-3, unit="N m", why=f"within {TORQUE_TOL:.0e} N m (camera-mount stand-in)")]
    return out


def exercise_claims(easy, medium, hard) -> list[Claim]:
    eps32 = np.finfo(np.float32).eps
    near = {s: abs(np.log10(hard.best[s] / ref)) <= 1 for s, ref in (("forward", np.sqrt(eps32)),
                                                                        ("central", np.cbrt(eps32)))}
    return [at_roundoff("Easy: pan torque for F = (0, 0, -2) N is exactly 0.0000", "0.0000", easy.tau_pan, 1e-12,
                        "N m"),
            claim("Medium: lift torque per newton down, stretched pose", SOURCE_MEDIUM,
                  medium.stretched.per_newton, unit="N m/N"),
            Claim(LESSON, "Hard: float32 best steps near sqrt(eps_32), cbrt(eps_32)",
                  f"{np.sqrt(eps32):.1e}, {np.cbrt(eps32):.1e}",
                  f"{hard.best['forward']:.1e}, {hard.best['central']:.1e}",
                  verdict(all(near.values())), "each within a decade", SCRIPT)]


@matplotlib.rc_context({"font.size": 11})  # pt: legible at a phone's width, where the figure shows at ~0.95 scale
def plot_sweep(med, dtype, path, n_poses) -> dict:
    """One log-log panel of a sweep, the step growing to the right, the legend inside the axes; -> the layout a test
    reads: ``xlim`` (left, right) in rad and whether the legend's box lies inside the axes' box."""
    fig, ax = plt.subplots(figsize=(5.0, 4.4))  # narrow: the text stays legible at a phone's width
    eps_mach = np.finfo(dtype).eps
    for j, (name, style) in enumerate(zip(COLUMNS, ("o-", "s--", "^-", "v--"))):
        ax.loglog(EPS_GRID, np.maximum(med[:, j], 1e-17), style, ms=4, label=name)
    ax.axvline(np.sqrt(eps_mach), color="gray", ls=":", label=f"sqrt(eps) = {np.sqrt(eps_mach):.1e}")
    ax.axvline(np.cbrt(eps_mach), color="black", ls="-.", label=f"cbrt(eps) = {np.cbrt(eps_mach):.1e}")
    ax.set_xlim(EPS_GRID.min() / 2, EPS_GRID.max() * 2)  # increasing: small steps (round-off) on the left
    ax.set_title(f"SO-101, {np.dtype(dtype).name}: median over {n_poses} poses")
    ax.set_xlabel("step eps (rad), larger to the right")
    ax.set_ylabel("largest entry error vs mj_jacSite\n(m/rad; rad/rad for Jr)")
    ax.grid(True, which="major", alpha=0.3)
    legend = ax.legend(fontsize=9.5, loc="lower left", framealpha=0.9)
    fig.tight_layout()
    fig.canvas.draw()
    box, frame = legend.get_window_extent(), ax.get_window_extent()
    inside = bool(box.x0 >= frame.x0 and box.y0 >= frame.y0 and box.x1 <= frame.x1 and box.y1 <= frame.y1)
    save_figure(fig, path, dpi=200)
    plt.close(fig)
    return {"xlim": [float(x) for x in ax.get_xlim()], "legend_inside": inside}


def main(full: bool = False) -> list[Claim]:
    """The velocity, finite-difference, servo and payload experiments, printed; their claims (returned), numbers
    and figures saved. ``full``: the float32 sweep over all N_POSES poses, not N_POSES_F32."""
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; tool site {chain.tool_name!r}; MuJoCo {mujoco.__version__}, NumPy "
          f"{np.__version__}, {platform.machine()}; random seed {SEED}")
    velocity = velocity_step(m, chain)
    sweep64 = sweep_step(m, chain, velocity.poses)
    servo = servo_step(chain)
    payload = payload_step(chain)
    falls = fall_step(chain, payload.pose("stretched").force)
    easy, medium = easy_step(m, chain), medium_step(m, chain)
    jog = jog_step()
    print(f"\n== Going further. LeRobot-style jog, {jog.ticks} x {jog.step * 1e3:g} mm along x, ideal servo: final "
          f"error {jog.final_um:.1f} um, largest distance from the line {jog.deviation_um:.1f} um ==")
    hard = hard_step(m, chain, velocity.poses[:N_POSES if full else N_POSES_F32], sweep64.med)
    for printer, record in ((print_velocity, velocity), (print_sweep, sweep64), (print_servo, servo),
                            (print_payload, payload), (print_fall, falls)):
        printer(record)
    print_exercises(easy, medium, hard)
    claims = (velocity_claims(velocity) + sweep_claims(sweep64) + servo_claims(servo) + payload_claims(payload)
              + fall_claims(falls) + exercise_claims(easy, medium, hard))
    publish_claims(HERE, claims, SCRIPT)
    axes = {"float64": plot_sweep(sweep64.med, np.float64, HERE / "fd_step_sweep.png", N_POSES),
            "float32": plot_sweep(hard.med, np.float32, HERE / "fd_step_sweep_float32.png", hard.n_poses)}
    figures = [
        Figure("fd_step_sweep.png",
               "In float64 the position columns' finite-difference error is V-shaped in the "
               "step: round-off grows to the left of each minimum, truncation to the right, and the minima sit near "
               "sqrt(eps) for forward and cbrt(eps) for central differences; the rotation columns, free of truncation, "
               "only improve as the step grows.",
               "Log-log plot of finite-difference Jacobian error against step size, the step growing from left to "
               "right. The position columns trace a V: to the left of each minimum the error falls as the step grows "
               "(round-off), to the right it rises (truncation); forward differences are best near the square root "
               "of machine epsilon, central differences near its cube root. The rotation columns fall all the way to "
               "the largest step."),
        Figure("fd_step_sweep_float32.png",
               "With positions rounded to float32 the same V shapes sit at much larger "
               "steps, near the float32 sqrt(eps) and cbrt(eps).",
               f"Log-log plot of the finite-difference sweep repeated over {hard.n_poses} poses with positions "
               "rounded to float32, the step growing "
               "from left to right: the V shapes of the position columns now bottom out near the float32 square and "
               "cube roots of machine epsilon, and at the smallest steps the error flattens at the size of the "
               "entries themselves."),
    ]
    save_results(HERE, SCRIPT, {"mujoco": mujoco.__version__, "n_poses": N_POSES, "dt": DT, "velocity": velocity,
                                "sweep": sweep64, "servo": servo, "payload": payload, "fall": falls, "easy": easy,
                                "medium": medium, "hard": hard, "jog": jog, "figures": axes}, figures=figures)
    return claims


if __name__ == "__main__":
    run_script(main, __file__, full_run())
