"""Reading kinematics out of MuJoCo without the stale-data trap.

``mj_jacSite`` reads positions that only ``mj_kinematics`` (and ``mj_comPos``) compute: change
``qpos`` and forget to recompute, and MuJoCo hands back the previous pose's Jacobian with no error.
Every helper here takes the joint positions explicitly and recomputes before it reads, so the
answer always belongs to the ``q`` you passed.
"""

from __future__ import annotations

import mujoco
import numpy as np

from physai.errors import InputError, UnknownNameError
from physai.kinematics import Chain


def site_id(m: mujoco.MjModel, site: str) -> int:
    """Index of a named site; unknown names list the valid ones."""
    names = [m.site(i).name for i in range(m.nsite)]
    if site not in names:
        raise UnknownNameError("site", site, names)
    return names.index(site)


def _check_chain_belongs_to(m: mujoco.MjModel, chain: Chain) -> None:
    """A chain read against another model would write q into the wrong qpos slots and read the wrong columns."""
    site_id(m, chain.tool_name)
    joint_names = [m.joint(j).name for j in range(m.njnt)]
    for jname, qadr, vadr in zip(chain.joint_names, chain.qpos_adr, chain.dof_adr):
        if jname not in joint_names:
            raise UnknownNameError("joint", jname, joint_names)
        j = joint_names.index(jname)
        if (int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])) != (qadr, vadr):
            raise InputError(
                f"chain {chain.name!r}: joint {jname!r} has qpos/dof address ({qadr}, {vadr}) in the chain but "
                f"({int(m.jnt_qposadr[j])}, {int(m.jnt_dofadr[j])}) in this model: the chain was built from another model"
            )


def _check_types(m, chain, d=None) -> None:
    """The MuJoCo helpers take an ``MjModel``, a physai ``Chain`` and optionally an ``MjData``, in that order."""
    for value, name, kind in ((m, "m", mujoco.MjModel), (chain, "chain", Chain), (d, "d", (mujoco.MjData, type(None)))):
        if not isinstance(value, kind):
            want = kind.__name__ if isinstance(kind, type) else "mujoco.MjData or None"
            raise InputError(f"{name}: expected {want}, got {type(value).__name__}")


def posed_data(m: mujoco.MjModel, chain: Chain, q, d: mujoco.MjData | None) -> mujoco.MjData:
    """An ``MjData`` of ``m`` with the chain's joints at ``q: (n,)`` and kinematics computed (``d`` reused when given).

    Checks that ``m``, ``chain`` and ``d`` belong together; ``q`` is validated like every public ``q``.
    """
    _check_types(m, chain, d)
    if chain.qpos_adr is None:
        raise InputError(f"chain {chain.name!r} was not built from a MuJoCo model (no qpos addresses)")
    _check_chain_belongs_to(m, chain)
    q = chain.check_q(q)
    if q.ndim != 1:
        raise InputError(f"q: MuJoCo helpers take one pose of shape ({chain.n},), got {q.shape}")
    if d is not None and (d.qpos.shape != (m.nq,) or d.qvel.shape != (m.nv,)):
        raise InputError(f"d: MjData with nq={d.qpos.shape[0]}, nv={d.qvel.shape[0]} is not for this model "
                         f"(nq={m.nq}, nv={m.nv})")
    d = mujoco.MjData(m) if d is None else d
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)  # mj_jac* reads cdof/subtree_com data that only mj_comPos fills
    return d


def site_jacobian(m: mujoco.MjModel, chain: Chain, q, d: mujoco.MjData | None = None) -> np.ndarray:
    """MuJoCo's ``[jacp; jacr]`` of the chain's tool site at ``q: (n,)``, the chain's columns -> ``(6, n)``.

    World axes, linear rows first. Recomputes kinematics for ``q`` before reading (never stale);
    other joints of the model keep the values already in ``d`` (``qpos0`` for a fresh ``MjData``).
    """
    d = posed_data(m, chain, q, d)
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    mujoco.mj_jacSite(m, d, jacp, jacr, site_id(m, chain.tool_name))
    return np.vstack([jacp, jacr])[:, list(chain.dof_adr)]


def site_pose(m: mujoco.MjModel, chain: Chain, q, d: mujoco.MjData | None = None) -> np.ndarray:
    """MuJoCo's ``T_world_site`` (4x4) of the chain's tool site at ``q: (n,)``, recomputed for ``q``."""
    d = posed_data(m, chain, q, d)
    sid = site_id(m, chain.tool_name)
    T = np.eye(4)
    T[:3, :3] = d.site_xmat[sid].reshape(3, 3)
    T[:3, 3] = d.site_xpos[sid]
    return T
