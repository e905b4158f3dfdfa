"""Grader for lesson 09's Build it (``physai check 09 DIR``): the learner's ``hinge_column``, ``jacobian`` and
``fd_jacobian`` against MuJoCo's ``mj_jacSite``, the closed form of a rigid rotation and finite differences of a
function whose Jacobian is known in closed form. A failure names the likely mistake."""

from __future__ import annotations

import numpy as np

from physai import kinematics, mj, robots
from physai.exercise import Hint, close, shaped

Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # the lesson's SO-101 pose
SEED = 9
EXACT = 1e-12  # closed forms and mj_jacSite agree with a right answer to round-off

MUTATIONS = [
    ("np.cross(axis, p - o)", "np.cross(p - o, axis)", "cross"),
    ("np.concatenate([np.cross(axis, p - o), axis])", "np.concatenate([axis, np.cross(axis, p - o)])", "angular"),
    ("np.column_stack([hinge_column(a, o, p)", "np.column_stack([-hinge_column(a, o, p)", "sign"),
    ("zip(axes, anchors)", "zip(axes, np.roll(anchors, 1, axis=0))", "off-by-one"),
    ("(tool_pos(q + dq) - tool_pos(q - dq))", "(tool_pos(q - dq) - tool_pos(q + dq))", "sign"),
    ("tool_pos(q - dq)) / (2 * eps)", "tool_pos(q)) / eps", "forward"),
    ("tool_pos(q - dq)) / (2 * eps)", "tool_pos(q - dq)) / eps", "2 eps"),
    ("eps: float = 1e-5", "eps: float = 1e-14", "round-off"),
]


def _so101():
    return robots.load("so101"), robots.mujoco_model("so101")


def _close(a, b, tol=EXACT) -> bool:
    return close(a, b, tol)


# ---- hinge_column ------------------------------------------------------------------------------


def _column_hint(col, a, o, p) -> str:
    """Name the wrong variant the learner's column equals, if any."""
    lever = np.cross(a, p - o)
    variants = {
        "the cross product order is flipped: (p - o) x a points the other way; write a x (p - o)":
            np.r_[-lever, a],
        "linear and angular parts are swapped: the twist is [a x (p - o); a], linear first": np.r_[a, lever],
        "the lever is measured from the world origin: use p - o, the tool point relative to the axis point o":
            np.r_[np.cross(a, p), a],
        "the angular part should be the axis a itself (1 rad/s about a per 1 rad/s of the hinge)":
            np.r_[lever, np.zeros(3)],
    }
    for hint, wrong in variants.items():
        if _close(col, wrong):
            return hint
    if _close(col[:3], lever):
        return "the linear part a x (p - o) is right; the angular part should be the axis a"
    return "the linear part should be a x (p - o) (m/s per rad/s) and the angular part the axis a"


def check_hinge_column(build, rng) -> None:
    chain, m = _so101()
    axes, anchors, p = kinematics.fk(chain, Q0)
    J_mj = mj.site_jacobian(m, chain, Q0)
    for i in range(chain.n):
        col = shaped(build.hinge_column(axes[i], anchors[i], p), (6,), "hinge_column")
        if not _close(col, J_mj[:, i]):
            raise Hint(f"{chain.joint_names[i]}'s column differs from mj_jacSite by "
                       f"{np.abs(col - J_mj[:, i]).max():.1e}: {_column_hint(col, axes[i], anchors[i], p)}")
    rng = np.random.default_rng(SEED)
    a = rng.normal(size=3)
    a /= np.linalg.norm(a)
    o, p = rng.normal(size=3), rng.normal(size=3)
    col = shaped(build.hinge_column(a, o, p), (6,), "hinge_column")
    if not _close(col, np.r_[np.cross(a, p - o), a]):
        raise Hint(f"right at the SO-101's joints but not for a general axis: {_column_hint(col, a, o, p)}")


# ---- jacobian ----------------------------------------------------------------------------------


def _jacobian_hint(build, J, chain, q) -> str:
    axes, anchors, p = kinematics.fk(chain, q)
    J_ref = kinematics.jacobian(chain, q)
    if _close(-J, J_ref):
        return "every entry has the wrong sign"
    if _close(J[:3], J_ref[:3]):
        return "the linear rows are right; the angular rows 3-5 should be the joint axes"
    n = chain.n
    for shift, word in ((1, "previous"), (-1, "next")):
        off_o = np.column_stack([kinematics.hinge_column(axes[i], anchors[(i - shift) % n], p) for i in range(n)])
        off_a = np.column_stack([kinematics.hinge_column(axes[(i - shift) % n], anchors[i], p) for i in range(n)])
        if _close(J, off_o) or _close(J, off_a):
            which = "point o" if _close(J, off_o) else "axis"
            return f"off-by-one frame: column i uses the {which} of the {word} joint; pair axes[i] with anchors[i]"
    if not all(_close(build.hinge_column(a, o, p), kinematics.hinge_column(a, o, p)) for a, o in zip(axes, anchors)):
        return "hinge_column is wrong, and jacobian stacks its columns: fix hinge_column first"
    return "column i should be hinge_column(axes[i], anchors[i], p) with fk's axes, anchors and tool point p"


def check_jacobian(build, rng) -> None:
    chain, m = _so101()
    for q in np.r_[Q0[None], chain.random_q(np.random.default_rng(SEED), 4)]:
        J = np.asarray(build.jacobian(chain, q), dtype=float)
        if J.shape == (chain.n, 6):
            raise Hint("transposed: the Jacobian has one row per twist component (6) and one column per joint")
        J = shaped(J, (6, chain.n), "jacobian")
        J_mj = mj.site_jacobian(m, chain, q)
        if not _close(J, J_mj):
            raise Hint(f"differs from mj_jacSite by {np.abs(J - J_mj).max():.1e} at q = {np.round(q, 3)}: "
                       + _jacobian_hint(build, J, chain, q))


# ---- fd_jacobian -------------------------------------------------------------------------------


def _cubic(x):
    """A map R^3 -> R^2 with a closed-form Jacobian (non-square, so a transpose shows)."""
    return np.array([x[0] ** 3 * x[1] + np.sin(x[2]), np.exp(x[1]) * x[2] ** 2])


def _cubic_jacobian(x):
    return np.array([[3 * x[0] ** 2 * x[1], x[0] ** 3, np.cos(x[2])],
                     [0.0, np.exp(x[1]) * x[2] ** 2, 2 * np.exp(x[1]) * x[2]]])


def _fd_hint(J, J_ref, f, x, eps) -> str:
    fwd = np.column_stack([(f(x + eps * e) - f(x)) / eps for e in np.eye(len(x))])
    if _close(J, fwd, 1e-9 * max(1.0, np.abs(J_ref).max())):
        return "that is a forward difference (error O(eps)); use central differences (x(q+eps) - x(q-eps)) / (2 eps)"
    if _close(J, -J_ref, 1e-6):
        return "sign flipped: difference x(q + eps e_i) - x(q - eps e_i), in that order"
    if _close(J, 2 * J_ref, 1e-6):
        return "twice too large: the central difference spans 2 eps, so divide by 2 eps"
    if _close(J, 0.5 * J_ref, 1e-6):
        return "half too small: divide by 2 eps, not 4 eps (or step +-eps, not +-eps/2)"
    return "column i should be (x(q + eps e_i) - x(q - eps e_i)) / (2 eps)"


def check_fd_jacobian(build, rng) -> None:
    x = np.array([0.7, -0.4, 1.1])
    J_ref = _cubic_jacobian(x)
    J = np.asarray(build.fd_jacobian(_cubic, x, eps=1e-4), dtype=float)
    if J.shape == (3, 2):
        raise Hint("transposed: one row per output of tool_pos and one column per joint, (m, n)")
    J = shaped(J, (2, 3), "fd_jacobian")
    if not _close(J, J_ref, 1e-7):  # central truncation at eps = 1e-4: ~eps^2 |x'''| / 6 ~ 1e-8
        raise Hint(f"on a closed form, error {np.abs(J - J_ref).max():.1e} at eps = 1e-4: "
                   + _fd_hint(J, J_ref, _cubic, x, 1e-4))
    chain = robots.load("so101")
    J = shaped(build.fd_jacobian(lambda q: kinematics.tool_pose(chain, q)[:3, 3], Q0), (3, chain.n), "fd_jacobian")
    err = np.abs(J - kinematics.jacobian(chain, Q0)[:3]).max()
    if err > 1e-9:  # central differences at the default step land near 1e-11 (the lesson's sweep)
        raise Hint(f"at the default step the SO-101's position rows are off by {err:.1e}: the default eps is too "
                   "small, round-off dominates (eps_mach |x| / eps); use eps near 1e-5, near cbrt(eps_mach)")
