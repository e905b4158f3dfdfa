"""Resolved-rate motion control (Whitney 1969), force estimation from joint torques, and a MuJoCo loop.

Conventions:
- A twist is ``(6,)``: linear velocity of the tool point (m/s) then angular velocity (rad/s), world axes,
  the row order of :func:`physai.kinematics.jacobian`.
- A wrench is ``(6,)``: force (N) then moment about the tool point (N m), world axes, applied *to* the
  tool (as :mod:`physai.statics`); a table pushing the gripper up has ``F_z > 0``.
- Each control tick turns a twist into a joint step with :func:`physai.singularity.damped_step`
  (adaptive damping, then uniform velocity scaling), and logs that tick's health.

The controller's state is the *commanded* joint position ``q_cmd``: it integrates the joint steps, and
its forward kinematics closes the Cartesian loop. In MuJoCo the position servos then chase ``q_cmd``;
measured positions and servo torques are logged beside the command and feed the force estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from physai import transforms as tf
from physai._avoid_step import avoid_trusted
from physai._validate import count, finite_array, nonnegative, one_of, positive, real
from physai._world_check import checked_world
from physai.errors import InputError
from physai.kinematics import Chain, tool_pose, tool_pose_and_jacobian
from physai.mj import site_jacobian, site_pose
from physai.robots import mujoco_warnings
from physai.singularity import StepHealth, jacobian_block_trusted, damped_step_trusted, check_speed_limit, damped_step
from physai.statics import gravity_torques, joint_actuators

# twist_fn(k, t, q, T_world_tool) -> twist (6,): the command of tick k at time t for controller state q.
TwistFn = Callable[[int, float, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class StepSettings:
    """Arguments of :func:`physai.singularity.damped_step` for every tick (its defaults, but the whole twist).

    ``block="full"`` tracks the whole twist with angular rows scaled by ``char_length`` (m);
    ``"position"`` tracks only the linear velocity (``damped_step``'s own default).
    """

    block: str = "full"
    char_length: float = 0.3
    sigma_healthy: float = 0.03
    lambda_max: float = 0.05
    qdot_limit: float = 6.28  # rad/s; inf: no limit

    def __post_init__(self):
        one_of(self.block, "block", ("full", "position", "orientation"))
        positive(self.char_length, "char_length")
        nonnegative(self.sigma_healthy, "sigma_healthy")
        nonnegative(self.lambda_max, "lambda_max")
        positive(self.qdot_limit, "qdot_limit", inf_ok=True)

    def task(self, twist: np.ndarray) -> np.ndarray:
        """The part of a ``(6,)`` twist that ``block`` asks for."""
        return {"full": twist, "position": twist[:3], "orientation": twist[3:]}[self.block]

    def task_rows(self, J: np.ndarray, twist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The block of a checked ``J (6, n)`` and its part of ``twist (6,)``, angular rows scaled alike."""
        v = self.task(twist)
        if self.block == "full":
            v = np.concatenate([v[:3], self.char_length * v[3:]])
        return jacobian_block_trusted(J, self.block, self.char_length), v


@dataclass(frozen=True)
class HealthLog:
    """Per-tick health, one array ``(N,)`` per field of :class:`~physai.singularity.StepHealth`."""

    sigma_min: np.ndarray
    kappa: np.ndarray
    manipulability: np.ndarray
    lam: np.ndarray
    vel_scale: np.ndarray

    @classmethod
    def from_steps(cls, steps: Sequence[StepHealth]) -> HealthLog:
        return cls(**{f: np.array([getattr(s, f) for s in steps], dtype=float) for f in cls.__dataclass_fields__})


def tick(J, twist, dt: float, settings: StepSettings = StepSettings()) -> tuple[np.ndarray, StepHealth]:
    """One resolved-rate tick with the Jacobian ``J: (6, n)`` of the current pose, ``twist: (6,)`` held
    for ``dt`` (s) -> ``(dq (n,), health)``."""
    _check_settings(settings)
    return damped_step(J, settings.task(finite_array(twist, "twist", (6,))), positive(dt, "dt"),
                       sigma_healthy=settings.sigma_healthy, lambda_max=settings.lambda_max,
                       qdot_limit=settings.qdot_limit, block=settings.block, char_length=settings.char_length)


@dataclass(frozen=True)
class RateResult:
    """A kinematic resolved-rate run: ``N`` ticks of length ``dt``.

    ``t: (N+1,)`` tick instants (s); ``q: (N+1, n)`` joint positions at them; ``p: (N+1, 3)`` tool
    positions; ``twist: (N, 6)`` commands; ``health`` per tick; ``reason`` why it ended; ``clearance: (N+1,)``
    the smallest distance (m) over the pairs of the ``avoid`` world at each tick (None without one).
    """

    t: np.ndarray
    q: np.ndarray
    p: np.ndarray
    twist: np.ndarray
    health: HealthLog
    reason: str
    clearance: np.ndarray | None = None  # (N+1,) smallest pair distance (m) at each tick, with avoid=


def _check_settings(settings) -> None:
    if not isinstance(settings, StepSettings):
        raise InputError(f"settings: expected a StepSettings, got {type(settings).__name__} {settings!r}")


def _check_callable(f, name: str, optional: bool = False) -> None:
    if not (callable(f) or (optional and f is None)):
        raise InputError(f"{name}: expected a function, got {type(f).__name__} {f!r}")


def _ticks(duration: float, dt: float) -> int:
    """The number of ``dt`` ticks in ``duration`` (both s, > 0): at least one, at most ``count``'s bound."""
    n = round(positive(duration, "duration") / positive(dt, "dt"))
    if not 1 <= n <= 10**7:
        raise InputError(f"duration: expected 1 to 10**7 ticks of dt = {dt} s, got duration = {duration} s ({n} ticks)")
    return n


def resolved_rate(chain: Chain, q0, twist_fn: TwistFn, dt: float, n_ticks: int,
                  settings: StepSettings = StepSettings(), avoid=None) -> RateResult:
    """Integrate ``q <- q + dq`` for ``n_ticks`` ticks, ``dq`` from :func:`tick` of ``twist_fn(k, t, q, T)``.

    Joint rates are held for the whole tick (zero-order hold), as a robot streaming velocity commands does.
    ``avoid``: a :class:`physai.collision.CollisionWorld` of the chain; each step then passes
    :func:`physai.nullspace.avoidance_step` (a velocity damper per close pair, met in the task's null space, the
    step scaled down where it cannot be, sub-stepped where it is long), so the arm keeps the world's margin while
    the tool tracks what it can. The arguments are checked once; a tick checks only ``twist_fn``'s twist and takes
    one SVD of the Jacobian, shared by the damped step and the null-space projector.
    """
    q = chain.check_q(q0).copy()
    dt, n_ticks = positive(dt, "dt"), count(n_ticks, "n_ticks", minimum=1)
    _check_callable(twist_fn, "twist_fn")
    _check_settings(settings)
    world = checked_world(avoid, chain, q)
    qdot_limit = check_speed_limit(settings.qdot_limit, chain.n, "qdot_limit")
    qs, twists, steps = [q.copy()], [], []
    for k in range(n_ticks):
        T, J = tool_pose_and_jacobian(chain, q)
        twist = finite_array(twist_fn(k, k * dt, q, T), "twist", (6,))
        Jb, v = settings.task_rows(J, twist)
        dq, h, usv = damped_step_trusted(Jb, v, dt, settings.sigma_healthy, settings.lambda_max, qdot_limit)
        if world is not None:  # the block's null space: its SVD, the damped step's own
            dq, _ = avoid_trusted(world, q, Jb, usv, dq)
        q = q + dq
        qs.append(q.copy())
        twists.append(twist)
        steps.append(h)
    q_all = np.array(qs)
    clearance = None if world is None else world.evaluate_trusted(q_all, False)[0].min(axis=-1, initial=world.distmax)
    return RateResult(np.arange(len(qs)) * dt, q_all, tool_pose(chain, q_all)[:, :3, 3], np.array(twists),
                      HealthLog.from_steps(steps), "ticks done", clearance)


def line_reference(T0, velocity, ramp: float = 0.0) -> Callable[[float], np.ndarray]:
    """``T_ref(t)``: the pose ``T0 (4, 4)`` carried along the straight line through its position at
    ``velocity`` (m/s, world), orientation held.

    With ``ramp > 0`` (s) the speed rises linearly from 0 over the first ``ramp`` seconds (a step in
    velocity would jolt the servos, and the jolt's inertial torques look like a contact force).
    """
    T0 = finite_array(T0, "T0", (4, 4))
    v = finite_array(velocity, "velocity", (3,))
    ramp = nonnegative(ramp, "ramp")

    def T_ref(t: float) -> np.ndarray:
        s = t - 0.5 * ramp if t >= ramp else 0.5 * t * t / ramp  # distance travelled / speed
        T = T0.copy()
        T[:3, 3] += v * s
        return T

    return T_ref


def tracking_twist(T_ref: Callable[[float], np.ndarray], dt: float, feedback: float = 1.0) -> TwistFn:
    """The follower's command: feed-forward along ``T_ref(t)`` plus ``feedback`` times the pose error, per tick.

    ``twist_k = tf.pose_error(T_ref(t_k), T_ref(t_k + dt)) / dt + feedback * tf.pose_error(T, T_ref(t_k)) / dt``.
    ``feedback = 1`` aims every tick at the next waypoint (the error left over is that step's
    linearization error only); ``feedback = 0`` is open loop, and linearization errors accumulate.
    """
    _check_callable(T_ref, "T_ref")
    dt, feedback = positive(dt, "dt"), nonnegative(feedback, "feedback")

    def twist_fn(k: int, t: float, q: np.ndarray, T: np.ndarray) -> np.ndarray:
        return (tf.pose_error(T_ref(t), T_ref(t + dt)) + feedback * tf.pose_error(T, T_ref(t))) / dt

    return twist_fn


def line_deviation(p, p0, direction) -> np.ndarray:
    """Distance (m) of points ``p: (..., 3)`` from the line through ``p0`` along ``direction`` -> ``(...)``."""
    u = np.asarray(direction, dtype=float)
    u = u / np.linalg.norm(u)
    r = np.asarray(p, dtype=float) - np.asarray(p0, dtype=float)
    return np.linalg.norm(r - (r @ u)[..., None] * u, axis=-1)


@dataclass(frozen=True)
class LineResult:
    """A straight-line follow: the run, the tool path sampled between ticks, and its errors.

    ``path: (M, 3)`` tool positions at ``substeps`` points per tick (joints move linearly within a tick);
    ``deviation: (M,)`` their distance from the commanded line (m); ``tracking_error: (N+1,)`` the
    distance from the reference point at each tick instant (m).
    """

    run: RateResult
    path: np.ndarray
    deviation: np.ndarray
    tracking_error: np.ndarray

    @property
    def max_deviation(self) -> float:
        return float(self.deviation.max())


def follow_line(chain: Chain, q0, velocity, duration: float, dt: float, *, feedback: float = 1.0,
                substeps: int = 10, settings: StepSettings = StepSettings(), avoid=None) -> LineResult:
    """Move the tool from its pose at ``q0`` along ``velocity`` (m/s, world) for ``duration`` s, holding
    its orientation (with ``settings.block="full"``), one resolved-rate tick every ``dt`` s; ``avoid`` as
    :func:`resolved_rate` (the arm's redundancy keeps it clear while the tool follows the line)."""
    q0 = chain.check_q(q0)
    substeps = count(substeps, "substeps", minimum=1, maximum=10_000)
    n_ticks = _ticks(duration, dt)
    T0 = tool_pose(chain, q0)
    T_ref = line_reference(T0, velocity)
    run = resolved_rate(chain, q0, tracking_twist(T_ref, dt, feedback), dt, n_ticks, settings, avoid)
    s = np.arange(substeps) / substeps
    q_path = run.q[:-1, None, :] + s[:, None] * np.diff(run.q, axis=0)[:, None, :]
    path = np.vstack([tool_pose(chain, q_path.reshape(-1, chain.n))[:, :3, 3], run.p[-1:]])
    p_ref = T0[:3, 3] + run.t[:, None] * np.asarray(velocity, dtype=float)
    return LineResult(run, path, line_deviation(path, T0[:3, 3], velocity),
                      np.linalg.norm(run.p - p_ref, axis=1))


# ---- force from joint torques ------------------------------------------------------------------


def estimate_wrench(J, tau_ext, rcond: float = 1e-10) -> np.ndarray:
    """``F_hat = pinv(J^T) tau_ext``: the tool wrench ``(..., 6)`` that explains joint torques ``tau_ext``.

    ``J: (..., 6, n)`` geometric Jacobian; ``tau_ext: (..., n)`` the torque the external wrench puts on
    the joints, ``J^T F`` (for a held arm ``g(q) - tau_servo``). With ``n = 6`` and ``J`` invertible this is
    ``J^-T tau_ext``; otherwise the least-squares (``n > 6``) or minimum-norm (``n < 6``) wrench.
    """
    J = finite_array(J, "J")
    if J.ndim < 2 or J.shape[-2] != 6:
        raise InputError(f"J: expected shape (..., 6, n), got {J.shape}")
    tau = finite_array(tau_ext, "tau_ext", (J.shape[-1],))
    rcond = nonnegative(rcond, "rcond")
    return (np.linalg.pinv(np.swapaxes(J, -1, -2), rcond=rcond) @ tau[..., None])[..., 0]


def _geom_ids(m: mujoco.MjModel, geoms, name: str) -> list[int]:
    ids = list(geoms) if isinstance(geoms, (Sequence, set, frozenset, np.ndarray)) else None
    if ids is None or not all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) and 0 <= g < m.ngeom
                              for g in ids):
        raise InputError(f"{name}: expected geom ids in [0, {m.ngeom}), got {geoms!r}")
    return [int(g) for g in ids]


def contact_force(m: mujoco.MjModel, d: mujoco.MjData, geoms: Sequence[int]) -> np.ndarray:
    """Total force (N, world) that the geoms ``geoms`` exert on everything they touch in ``d`` -> ``(3,)``."""
    geoms = set(_geom_ids(m, geoms, "geoms"))
    total = np.zeros(3)
    f6 = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        if c.exclude or (c.geom1 in geoms) == (c.geom2 in geoms):
            continue
        mujoco.mj_contactForce(m, d, i, f6)
        # f6 is in the contact frame (rows of c.frame), the force geom1 exerts on geom2.
        f = c.frame.reshape(3, 3).T @ f6[:3]
        total += f if c.geom1 in geoms else -f
    return total


# ---- MuJoCo scene and closed loop --------------------------------------------------------------


def table_scene(model_path: str, center, half_size, top_z: float) -> mujoco.MjModel:
    """The robot of ``model_path`` with a box table whose top is at ``top_z`` (m); the table geom is named "table".

    The robot's own geoms are made not to collide with each other (``conaffinity = 0``), so the only
    contacts are robot-table ones: the folded home pose of some arms starts in self-contact otherwise.
    """
    hs = finite_array(half_size, "half_size", (3,))
    if hs.shape != (3,) or not np.all(hs > 0):
        raise InputError(f"half_size: expected 3 lengths > 0 (m), got {hs}")
    c = finite_array(center, "center", (2,))
    if c.shape != (2,):
        raise InputError(f"center: expected shape (2,), got {c.shape}")
    top_z = real(top_z, "top_z")
    with mujoco_warnings(Path(model_path).name):
        spec = mujoco.MjSpec.from_file(str(model_path))
        for g in spec.geoms:
            g.conaffinity = 0
        spec.worldbody.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=hs, pos=[c[0], c[1], top_z - hs[2]],
                                contype=1, conaffinity=1, rgba=[0.6, 0.5, 0.4, 1])
        return spec.compile()


@dataclass(frozen=True)
class SimResult:
    """A closed-loop run in MuJoCo: ``N`` control ticks of ``dt`` s, ``S`` physics steps in all.

    Per tick (read at the start of the tick, before its command): ``t: (N,)``, ``q_cmd: (N, n)`` the
    servo targets, ``q: (N, n)`` measured positions, ``p: (N, 3)`` measured tool positions,
    ``tau: (N, n)`` servo torques (``qfrc_actuator``: what the motors' effort sensors report, gravity
    compensation included), ``wrench_hat: (N, 6)`` :func:`estimate_wrench` of ``g(q) - tau``,
    ``force_true: (N, 3)`` the contact force of the ``probe`` geoms on the robot, ``health`` per commanded
    tick (one fewer than ``N`` when the guard stopped the run).
    Per physics step: ``sim_t, sim_p: (S,), (S, 3)`` and ``sim_force: (S, 3)``.
    ``stop_tick`` is the tick at which ``guard`` fired (-1 if never) and ``reason`` why the run ended.
    """

    t: np.ndarray
    q_cmd: np.ndarray
    q: np.ndarray
    p: np.ndarray
    tau: np.ndarray
    wrench_hat: np.ndarray
    force_true: np.ndarray
    health: HealthLog
    sim_t: np.ndarray
    sim_p: np.ndarray
    sim_force: np.ndarray
    stop_tick: int
    reason: str


def _loop_ticks(m: mujoco.MjModel, dt: float, duration: float) -> tuple[int, int]:
    """``(control ticks, physics steps per tick)``; ``dt`` must be a whole number of physics steps."""
    n_ticks = _ticks(duration, dt)
    substeps = round(dt / m.opt.timestep)
    if substeps < 1 or not np.isclose(substeps * m.opt.timestep, dt, rtol=1e-9, atol=0.0):
        raise InputError(f"dt: expected a whole number of physics steps of {m.opt.timestep} s, got {dt}")
    return n_ticks, substeps


def closed_loop(m: mujoco.MjModel, chain: Chain, q0, twist_fn: TwistFn, dt: float, duration: float, *,
                settings: StepSettings = StepSettings(), guard: Callable[[np.ndarray], bool] | None = None,
                hold: float = 0.0, probe: Sequence[int] = ()) -> SimResult:
    """Drive the MuJoCo model's position servos with resolved-rate control, one tick every ``dt`` s.

    Starts at rest at ``q0: (n,)`` (servo targets ``q0``). Every tick: read the measured state, estimate
    the tool wrench, stop if ``guard(wrench_hat)`` is true, else advance ``q_cmd`` by :func:`tick` of
    ``twist_fn(k, t, q_cmd, T(q_cmd))`` and send it (pose and Jacobian of ``q_cmd`` from MuJoCo, which
    equal the chain's and cost a tenth). On a stop the servos are told to stay where the arm
    *is* (``q_cmd = q``, so they stop pressing) and the physics runs ``hold`` s more. ``probe`` are geom
    ids whose contact force on the robot is recorded as ground truth. ``dt`` must be a whole number of
    physics steps (``m.opt.timestep``).
    """
    q_cmd = chain.check_q(q0).copy()
    n_ticks, substeps = _loop_ticks(m, dt, duration)
    hold, probe = nonnegative(hold, "hold"), _geom_ids(m, probe, "probe")
    _check_callable(twist_fn, "twist_fn")
    _check_callable(guard, "guard", optional=True)
    _check_settings(settings)
    act = list(joint_actuators(m, chain))
    qadr, dadr = list(chain.qpos_adr), list(chain.dof_adr)
    d, scratch = mujoco.MjData(m), mujoco.MjData(m)
    d.qpos[qadr] = q_cmd
    d.ctrl[act] = q_cmd
    mujoco.mj_forward(m, d)
    sid = m.site(chain.tool_name).id
    log = {k: [] for k in ("t", "q_cmd", "q", "p", "tau", "wrench_hat", "force_true", "sim_t", "sim_p", "sim_force")}
    steps, stop_tick, reason = [], -1, "duration"

    def physics(n_steps: int) -> None:
        for _ in range(n_steps):
            mujoco.mj_step(m, d)
            log["sim_t"].append(d.time)
            log["sim_p"].append(d.site_xpos[sid].copy())
            log["sim_force"].append(contact_force(m, d, probe))

    for k in range(n_ticks):
        mujoco.mj_forward(m, d)  # state, forces and contacts of one instant (mj_step leaves them one step apart)
        q = d.qpos[qadr].copy()
        tau = d.qfrc_actuator[dadr].copy()
        wrench = estimate_wrench(site_jacobian(m, chain, q, scratch), gravity_torques(m, chain, q, scratch) - tau)
        for key, val in (("t", d.time), ("q_cmd", q_cmd.copy()), ("q", q), ("p", d.site_xpos[sid].copy()),
                         ("tau", tau), ("wrench_hat", wrench), ("force_true", contact_force(m, d, probe))):
            log[key].append(val)
        if guard is not None and guard(wrench):
            stop_tick, reason = k, "guard"
            d.ctrl[act] = q
            physics(int(round(hold / m.opt.timestep)))
            break
        T, J = site_pose(m, chain, q_cmd, scratch), site_jacobian(m, chain, q_cmd, scratch)
        dq, h = tick(J, twist_fn(k, k * dt, q_cmd, T), dt, settings)
        steps.append(h)
        q_cmd = q_cmd + dq
        d.ctrl[act] = q_cmd
        physics(substeps)
    arrays = {k: np.array(v) for k, v in log.items()}
    return SimResult(**arrays, health=HealthLog.from_steps(steps), stop_tick=stop_tick, reason=reason)
