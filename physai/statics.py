"""Statics of a serial arm (lesson 09): tool wrenches to joint torques, gravity, and payload limits.

Conventions:
- A wrench is ``[F; M]``: force (N) then moment (N m) that the tool exerts, world axes, the moment
  taken about the tool point. It pairs with the geometric Jacobian's ``[linear; angular]`` rows.
- Joint torques are ``(..., n)``, one per chain joint (N m for hinges, N for slides), in the sign
  convention of MuJoCo's generalized forces: the torque the joint actuators must *supply*.
  A held arm obeys ``tau_servo = g(q) - J^T [F; M]`` for a wrench ``[F; M]`` applied *to* the tool,
  where ``g(q)`` is MuJoCo's ``qfrc_bias`` at zero velocity (:func:`gravity_torques`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from physai._validate import finite_array
from physai.errors import InputError
from physai.kinematics import Chain
from physai.mj import posed_data, site_id, site_jacobian


def joint_torques(J, wrench) -> np.ndarray:
    """``tau = J^T [F; M]``: ``J: (..., 6, n)`` geometric Jacobian, ``wrench: (..., 6)`` -> ``(..., n)``.

    Rows of ``J`` and entries of ``wrench`` are in the same order: linear then angular, world axes.
    ``F`` in N, ``M`` in N m about the tool point; ``tau`` in N m for hinges, N for slides.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) at ``q = (0, pi/2)``, tip at ``(0.5, 0.3, 0)``: a 10 N force
    along -y at the tip acts on the shoulder with a 0.5 m lever and passes through the elbow's axis.

    >>> from physai import statics
    >>> J = physai.jacobian(physai.load("planar2r"), [0.0, np.pi / 2])
    >>> print(np.round(statics.joint_torques(J, [0.0, -10.0, 0.0, 0.0, 0.0, 0.0]), 3))
    [-5.  0.]
    """
    J = finite_array(J, "J")
    wrench = finite_array(wrench, "wrench", (6,))
    if J.ndim < 2 or J.shape[-2] != 6:
        raise InputError(f"J: expected shape (..., 6, n), got {J.shape}")
    return np.einsum("...kn,...k->...n", J, wrench)


def gravity_torques(m: mujoco.MjModel, chain: Chain, q, d: mujoco.MjData | None = None) -> np.ndarray:
    """MuJoCo's gravity torques ``g(q)`` at ``q: (n,)`` for the chain's joints -> ``(n,)``.

    This is ``qfrc_bias`` with every velocity zero (``mj_rne`` without acceleration): the torque
    each joint must supply to hold the pose against gravity. Other joints of the model keep their
    positions in ``d``; ``d.qvel`` is set to zero.
    """
    d = posed_data(m, chain, q, d)
    d.qvel[:] = 0.0
    mujoco.mj_comVel(m, d)  # mj_rne reads cvel/cdof_dot, zero only once recomputed at qvel = 0
    bias = np.zeros(m.nv)
    mujoco.mj_rne(m, d, 0, bias)
    return bias[list(chain.dof_adr)]


def joint_actuators(m: mujoco.MjModel, chain: Chain) -> tuple[int, ...]:
    """The one joint-transmission actuator (the servo) driving each chain joint -> ``n`` actuator ids.

    Raises :class:`InputError` when a chain joint has no such actuator or more than one.
    """
    ids = []
    for name in chain.joint_names:
        jid = m.joint(name).id
        found = [a for a in range(m.nu)
                 if m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and m.actuator_trnid[a, 0] == jid]
        if len(found) != 1:
            raise InputError(f"joint {name!r}: expected one actuator driving it, found {len(found)}")
        ids.append(found[0])
    return tuple(ids)


def actuator_force_limits(m: mujoco.MjModel, chain: Chain) -> np.ndarray:
    """Largest |torque| each chain joint's servo can apply -> ``(n,)`` (inf where unlimited).

    The servo's ``forcerange`` times its gear, tightened by the joint's own ``actuatorfrcrange``.
    """
    limits = []
    for name, a in zip(chain.joint_names, joint_actuators(m, chain)):
        jid = m.joint(name).id
        lim = abs(m.actuator_gear[a, 0]) * np.abs(m.actuator_forcerange[a]).max() if m.actuator_forcelimited[a] else np.inf
        if m.jnt_actfrclimited[jid]:
            lim = min(lim, np.abs(m.jnt_actfrcrange[jid]).max())
        limits.append(float(lim))
    return np.array(limits)


@dataclass(frozen=True)
class PayloadLimit:
    """The largest extra tip force a pose holds before a joint's torque reaches its limit.

    ``force`` (N) along ``direction``; negative when the unloaded pose already exceeds a limit.
    ``joint`` is the index of the limiting joint (``joint_name`` its name; -1 and "" when no joint
    is loaded). ``gravity`` and ``per_newton`` are the joint torques ``(n,)`` of gravity and of 1 N
    of tip force; ``limits`` the torque limits used.
    """

    force: float
    joint: int
    joint_name: str
    gravity: np.ndarray
    per_newton: np.ndarray
    limits: np.ndarray


def _limits(limits, shape: tuple[int, ...]) -> np.ndarray:
    """Torque limits ``shape``, each ``>= 0`` or inf (unlimited); one number stands for every joint."""
    raw = np.asarray(limits)
    if raw.dtype.kind not in "fiu" or raw.ndim > 1:
        raise InputError(f"limits: expected {shape} torques >= 0 (inf for none) or one for all, got {limits!r}")
    lim = np.broadcast_to(raw.astype(float), shape) if raw.ndim == 0 else raw.astype(float)
    if lim.shape != shape or not np.all(lim >= 0):  # NaN fails the comparison
        raise InputError(f"limits: expected shape {shape} of torques >= 0 (inf for none), got {lim}")
    return lim


def max_tip_force(gravity, per_newton, limits) -> tuple[float, int]:
    """Largest ``f`` with ``|gravity + f per_newton| <= limits`` in every joint, and the limiting joint.

    ``gravity, per_newton, limits: (n,)``. Joint ``i`` allows ``f <= (limit_i - gravity_i) / per_newton_i``
    when ``per_newton_i > 0`` and ``f <= (limit_i + gravity_i) / |per_newton_i|`` when it is negative;
    joints with ``per_newton_i = 0`` do not bound ``f``. Returns ``(inf, -1)`` when none does.
    """
    g = finite_array(gravity, "gravity")
    if g.ndim != 1:
        raise InputError(f"gravity: expected shape (n,), got {g.shape}")
    c = finite_array(per_newton, "per_newton", g.shape)
    lim = _limits(limits, g.shape)
    bound = np.full(g.shape, np.inf)
    up, down = c > 0, c < 0
    bound[up] = (lim[up] - g[up]) / c[up]
    bound[down] = (lim[down] + g[down]) / -c[down]
    i = int(np.argmin(bound))
    return (float(bound[i]), i) if np.isfinite(bound[i]) else (np.inf, -1)


def payload_limit(
    m: mujoco.MjModel,
    chain: Chain,
    q,
    limits=None,
    direction=(0.0, 0.0, -1.0),
    d: mujoco.MjData | None = None,
) -> PayloadLimit:
    """Extra tip force along ``direction`` (world, normalized here) that the pose ``q: (n,)`` holds.

    The joints must supply ``tau(f) = g(q) - f J_p(q)^T u`` (``u`` the unit direction, ``J_p`` the
    tool point's linear Jacobian from ``mj_jacSite``); ``limits: (n,)`` default to the model's
    actuator limits (:func:`actuator_force_limits`).
    """
    u = finite_array(direction, "direction", (3,))
    if u.ndim != 1 or not np.linalg.norm(u) > 0:
        raise InputError(f"direction: expected one non-zero 3-vector, got {direction!r}")
    u = u / np.linalg.norm(u)
    lim = actuator_force_limits(m, chain) if limits is None else _limits(limits, (chain.n,))
    g = gravity_torques(m, chain, q, d)
    per_newton = -joint_torques(site_jacobian(m, chain, q, d), np.r_[u, 0.0, 0.0, 0.0])
    force, i = max_tip_force(g, per_newton, lim)
    return PayloadLimit(force, i, chain.joint_names[i] if i >= 0 else "", g, per_newton, np.array(lim))


def push_at_site(m: mujoco.MjModel, d: mujoco.MjData, site: str, force) -> None:
    """Make the next ``mj_step`` push with ``force: (3,)`` (N, world) at a site of the current pose.

    ``xfrc_applied`` acts at the centre of mass ``xipos`` of the site's body, so the moment
    ``(site_xpos - xipos) x F`` is added to move the force's point of action to the site.
    Recomputes kinematics for ``d.qpos`` first (the positions ``mj_step`` left are one step old)
    and overwrites that body's row of ``d.xfrc_applied``.
    """
    F = finite_array(force, "force", (3,))
    if F.ndim != 1:
        raise InputError(f"force: expected shape (3,), got {F.shape}")
    sid = site_id(m, site)
    body = m.site_bodyid[sid]
    mujoco.mj_kinematics(m, d)
    d.xfrc_applied[body, :3] = F
    mujoco.mju_cross(d.xfrc_applied[body, 3:], d.site_xpos[sid] - d.xipos[body], F)
