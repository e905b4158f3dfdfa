"""Grader for lesson 09's Build it (``physai check 09 DIR``): the learner's ``hinge_column``, ``jacobian`` and
``fd_jacobian`` against MuJoCo's ``mj_jacSite`` on three arms (the SO-101, the WidowX AI whose axes include y, -y,
-z and x, and the WidowX AI with nonzero ``q_ref``) at fresh random poses and at the limits, the closed form of a
rigid rotation, and finite differences of a function whose Jacobian is known in closed form. A failure names the
likely mistake."""

from __future__ import annotations

import functools

import numpy as np

from physai import kinematics, mj
from physai.course.exercise import Hint, arms, close, poses, shaped

EXACT = 1e-12  # closed forms and mj_jacSite agree with a right answer to round-off
OWN = {"hinge_column": ("physai.kinematics.hinge_column",),
       "jacobian": ("physai.kinematics.jacobian", "physai.kinematics.tool_pose_and_jacobian",
                    "physai.kinematics.jacobian_from_fk", "physai.mj.site_jacobian"),
       "fd_jacobian": ("physai.kinematics.fd_jacobian",)}

EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "hinge_column": "hinge_column(np.array([0.0, 0.0, 1.0]), np.array([0.1, 0.0, 0.0]), np.array([0.3, 0.0, 0.2]))",
    "jacobian": "jacobian(robots.load(\"so101\"), np.array([0.0, -0.6, 0.9, 0.4, 0.3]))",
    "fd_jacobian": "fd_jacobian(lambda q: np.array([np.sin(q[0]) * q[1], q[0] ** 2]), np.array([0.5, 2.0]))",
}

MUTATIONS = [
    ("    return np.column_stack([hinge_column(a, o, p) for a, o in zip(axes, anchors)])",
     "    return lib.jacobian(chain, q)", "uses physai.kinematics.jacobian"),
    ("np.cross(axis, p - o)", "np.cross(p - o, axis)", "cross"),
    ("np.concatenate([np.cross(axis, p - o), axis])", "np.concatenate([axis, np.cross(axis, p - o)])", "angular"),
    ("np.column_stack([hinge_column(a, o, p)", "np.column_stack([-hinge_column(a, o, p)", "sign"),
    ("zip(axes, anchors)", "zip(axes, np.roll(anchors, 1, axis=0))", "off-by-one"),
    ("zip(axes, anchors)", "zip(axes, np.r_[anchors[1:], [p]])", "tool point p as its anchor"),
    ("hinge_column(a, o, p) for a, o in", "hinge_column(a, 0 * o, p) for a, o in", "origin"),
    ("    axes, anchors, p = fk(chain, q)\n    return np.column_stack",
     "    J = fd_jacobian(lambda x: fk(chain, x).p, q)\n    return np.r_[J, fk(chain, q).axes.T]\n"
     "    axes, anchors, p = fk(chain, q)\n    return np.column_stack", "analytic form"),
    ("(tool_pos(q + dq) - tool_pos(q - dq))", "(tool_pos(q - dq) - tool_pos(q + dq))", "sign"),
    ("tool_pos(q - dq)) / (2 * eps)", "tool_pos(q)) / eps", "forward"),
    ("tool_pos(q - dq)) / (2 * eps)", "tool_pos(q - dq)) / eps", "2 eps"),
    ("        dq[i] = eps\n        cols.append((tool_pos(q + dq) - tool_pos(q - dq)) / (2 * eps))",
     "        dq[i] = 1e-14\n        cols.append((tool_pos(q + dq) - tool_pos(q)) / 1e-14)",
     "eps argument is ignored; forward differences at a step of 1e-14"),
    ("eps: float = 1e-5", "eps: float = 1e-14", "too small"),
    ("eps: float = 1e-5", "eps: float = 1e-2", "too large"),
]


def _close(a, b, tol=EXACT) -> bool:
    return close(a, b, tol)


# ---- hinge_column ------------------------------------------------------------------------------


def _column_hint(col, a, o, p) -> str:
    """Name the wrong variant the learner's column equals, if any."""
    lever = np.cross(a, p - o)
    variants = {
        "the cross product order is flipped: (p - o) x a points the other way; write a x (p - o)":
            np.r_[-lever, a],
        "linear and angular parts are swapped (angular rows first): the twist is [a x (p - o); a], linear first":
            np.r_[a, lever],
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
    cases = []
    for arm in arms(rng)[:2]:
        q = arm.chain.random_q(rng)
        axes, anchors, p = kinematics.fk(arm.chain, q)
        J_mj = mj.site_jacobian(arm.model, arm.chain, q)
        cases += [(f"{arm.label}'s {arm.chain.joint_names[i]}", axes[i], anchors[i], p, J_mj[:, i])
                  for i in range(arm.chain.n)]
    a = rng.normal(size=3)
    a /= np.linalg.norm(a)
    o, p = rng.normal(size=3), rng.normal(size=3)
    cases.append(("a general axis", a, o, p, np.r_[np.cross(a, p - o), a]))
    for where, a, o, p, want in cases:
        col = shaped(build.hinge_column(a, o, p), (6,), "hinge_column")
        if not _close(col, want):
            raise Hint(f"{where}: the column differs from the reference by {np.abs(col - want).max():.1e}: "
                       f"{_column_hint(col, a, o, p)}")


# ---- jacobian ----------------------------------------------------------------------------------


def _stack(axes, anchors, p) -> np.ndarray:
    return np.column_stack([kinematics.hinge_column(a, o, p) for a, o in zip(axes, anchors)])


def _jacobian_hint(build, J, chain, q) -> str:
    """The likeliest slip that gives ``J`` instead of the world-frame Jacobian at ``q``."""
    axes, anchors, p = kinematics.fk(chain, q)
    J_ref = _stack(axes, anchors, p)
    R = kinematics.tool_pose(chain, q)[:3, :3]
    frames = kinematics.joint_frames(chain, q)[0]
    named = [
        (-J_ref, "every entry has the wrong sign"),
        (J_ref.T, "transposed: the Jacobian has one row per twist component (6) and one column per joint"),
        (np.r_[J_ref[3:], J_ref[:3]], "angular rows first: the lesson's Jacobian has the linear rows 0-2 (m/s per "
                                      "rad/s), then the angular rows 3-5"),
        (np.r_[R.T @ J_ref[:3], R.T @ J_ref[3:]], "expressed in the tool (body) frame: the lesson's Jacobian is in "
                                                  "world axes, fk's axes and anchors as they are, no R^T"),
        (_stack(axes, anchors, frames[-1][:3, 3]), "the tool offset is missing: p is the tool point fk(chain, q).p "
                                                   "(the last joint frame times T_last_tool), not the last anchor"),
        (_stack(axes, np.zeros_like(anchors), p), "the anchor is at the world origin: the lever is p - o with "
                                                  "o = anchors[i], the point where joint i's axis passes"),
        (_stack(axes, np.r_[np.zeros((1, 3)), anchors[1:]], p), "anchor 0 is at the world origin: use "
                                                                "anchors[0] from fk, not (0, 0, 0)"),
    ]
    for wrong, hint in named:
        if _close(J, wrong):
            return hint
    if _close(J, J_ref, 1e-5):
        return (f"correct to {np.abs(J - J_ref).max():.0e}, but the analytic form is exact to round-off (1e-15): "
                "build the columns from hinge_column, not from finite differences")
    if _close(J[:3], J_ref[:3]):
        return "the linear rows are right; the angular rows 3-5 should be the joint axes"
    pairing = _pairing_hint(J, chain, axes, anchors, p)
    if pairing:
        return pairing
    cols = [build.hinge_column(a, o, p) for a, o in zip(axes, anchors)]
    if not all(isinstance(c, np.ndarray) and _close(c, kinematics.hinge_column(a, o, p))
               for c, a, o in zip(cols, axes, anchors)):
        return "hinge_column is wrong, and jacobian stacks its columns: fix hinge_column first"
    wrong = [f"{i} ({chain.joint_names[i]})" for i in range(chain.n) if not _close(J[:, i], J_ref[:, i])]
    return (f"column{'s' if len(wrong) > 1 else ''} {', '.join(wrong)} differ{'' if len(wrong) > 1 else 's'}, and "
            "not by a swapped axis or anchor: column i is the tool's twist when joint i alone turns at 1 rad/s, from "
            "joint i's axis and anchor and the tool point p of fk(chain, q)")


def _pairing_hint(J, chain, axes, anchors, p) -> str:
    """Name a column built from one joint's axis and another joint's anchor (or the reverse), if ``J`` is made of
    such columns; an off-by-one shift is named by the column where it is not wrapped round, and a column anchored
    at the tool point ``p`` itself (a shift that runs off the end) is named too."""
    n, names = chain.n, chain.joint_names
    found, at_p = [], []  # (column, other joint, "anchor" or "axis"); columns anchored at p
    for i in range(n):
        if _close(J[:, i], kinematics.hinge_column(axes[i], anchors[i], p)):
            continue
        if _close(J[:, i], kinematics.hinge_column(axes[i], p, p)):
            at_p.append(i)
            continue
        other = next(((j, part) for j in range(n) if j != i for part, col in
                      (("anchor", kinematics.hinge_column(axes[i], anchors[j], p)),
                       ("axis", kinematics.hinge_column(axes[j], anchors[i], p))) if _close(J[:, i], col)), None)
        if other is None:
            return ""
        found.append((i, *other))
    tail = "".join(f"; column {k} ({names[k]}) takes the tool point p as its anchor, so its lever is zero" for k in at_p)
    if not found:
        return (f"{tail[2:]}: a hinge's lever runs from a point on its own axis to the tool, so pair each joint's "
                "axis with that same joint's anchor") if at_p else ""
    i, j, part = min(found, key=lambda f: abs(f[1] - f[0]))
    label = "off-by-one frame: " if abs(j - i) == 1 else ""
    also = f" (and {len(found) - 1} more column{'s' if len(found) > 2 else ''} mispaired)" if len(found) > 1 else ""
    fix = ("a hinge's lever runs from a point on its own axis to the tool, so pair each joint's axis with that same "
           "joint's anchor" if part == "anchor" else "each column turns about its own joint's axis, so pair each "
           "joint's anchor with that same joint's axis")
    return f"{label}column {i} ({names[i]}) uses joint {j}'s ({names[j]}) {part}{also}{tail}: {fix}"


def check_jacobian(build, rng) -> None:
    for arm in arms(rng):
        chain = arm.chain
        for q in poses(chain, rng):
            J = build.jacobian(chain, q)
            if isinstance(J, np.ndarray) and J.shape == (chain.n, 6) != (6, chain.n):
                raise Hint("transposed: the Jacobian has one row per twist component (6) and one column per joint")
            J = shaped(J, (6, chain.n), "jacobian")
            J_mj = mj.site_jacobian(arm.model, chain, q)
            if not _close(J, J_mj):
                raise Hint(f"{arm.label} at q = {np.round(q, 3)}: differs from mj_jacSite by "
                           f"{np.abs(J - J_mj).max():.1e}: " + _jacobian_hint(build, J, chain, q))


# ---- fd_jacobian -------------------------------------------------------------------------------


def _cubic(x):
    """A map R^3 -> R^2 with a closed-form Jacobian (non-square, so a transpose shows)."""
    return np.array([x[0] ** 3 * x[1] + np.sin(x[2]), np.exp(x[1]) * x[2] ** 2])


def _cubic_jacobian(x):
    return np.array([[3 * x[0] ** 2 * x[1], x[0] ** 3, np.cos(x[2])],
                     [0.0, np.exp(x[1]) * x[2] ** 2, 2 * np.exp(x[1]) * x[2]]])


def _tool_position(chain, q):
    """The tool point of ``chain`` at ``q`` (m): the function whose Jacobian the lesson differentiates."""
    return kinematics.tool_pose(chain, q)[:3, 3]


def _central(f, x, eps) -> np.ndarray:
    return np.column_stack([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def _forward(f, x, h) -> np.ndarray:
    return np.column_stack([(f(x + h * e) - f(x)) / h for e in np.eye(len(x))])


def _fd_hint(J, J_ref, f, x, eps) -> str:
    tol = 1e-9 * max(1.0, np.abs(J_ref).max())
    if _close(J, _forward(f, x, eps), tol):
        return "that is a forward difference (error O(eps)); use central differences (x(q+eps) - x(q-eps)) / (2 eps)"
    for h in 10.0 ** np.arange(-16, 0):
        if _close(J, _forward(f, x, h), tol):
            return (f"forward differences at a step of {h:.0e}, not the eps given ({eps:g}): round-off "
                    "(eps_mach |x| / h) swamps a tiny step; use central differences (x(q+eps) - x(q-eps)) / (2 eps) "
                    "with the eps argument")
    if _close(J, -J_ref, 1e-6):
        return "sign flipped: difference x(q + eps e_i) - x(q - eps e_i), in that order"
    if _close(J, 2 * J_ref, 1e-6):
        return "twice too large: the central difference spans 2 eps, so divide by 2 eps"
    if _close(J, 0.5 * J_ref, 1e-6):
        return "half too small: divide by 2 eps, not 4 eps (or step +-eps, not +-eps/2)"
    return "column i should be (x(q + eps e_i) - x(q - eps e_i)) / (2 eps)"


def _default_step_hint(J, f, q, err) -> str:
    """Whether the learner's default step is too large (truncation, error ~ eps^2) or too small (round-off, error
    ~ eps_mach / eps): the step of the central difference that ``J`` matches best."""
    steps = 10.0 ** np.arange(-14, -0.9, 0.25)
    best = steps[int(np.argmin([np.abs(J - _central(f, q, h)).max() for h in steps]))]
    if best > 1e-4:
        return (f"the default eps (near {best:.0e}) is too large: truncation error grows as eps^2; use eps near "
                "1e-5, near cbrt(eps_mach)")
    if best < 1e-7:
        return (f"the default eps (near {best:.0e}) is too small: round-off dominates (eps_mach |x| / eps); use eps "
                "near 1e-5, near cbrt(eps_mach)")
    return f"off by {err:.1e}: use central differences with eps near 1e-5"


def check_fd_jacobian(build, rng) -> None:
    x = rng.uniform(-1.2, 1.2, 3)
    J_ref = _cubic_jacobian(x)
    J = build.fd_jacobian(_cubic, x, eps=1e-4)
    if isinstance(J, np.ndarray) and J.shape == (3, 2):
        raise Hint("transposed: one row per output of tool_pos and one column per joint, (m, n)")
    J = shaped(J, (2, 3), "fd_jacobian")
    if not _close(J, J_ref, 1e-7):  # central truncation at eps = 1e-4: eps^2 |x'''| / 6 < 3e-8 here
        again = build.fd_jacobian(_cubic, x, eps=1e-3)
        ignored = ("the same answer at eps = 1e-3: the eps argument is ignored; " if isinstance(again, np.ndarray)
                   and np.array_equal(again, J) else "")
        raise Hint(f"on a closed form, error {np.abs(J - J_ref).max():.1e} at eps = 1e-4: {ignored}"
                   + _fd_hint(J, J_ref, _cubic, x, 1e-4))
    for arm in arms(rng)[:2]:
        q = arm.chain.random_q(rng)
        f = functools.partial(_tool_position, arm.chain)
        J = shaped(build.fd_jacobian(f, q), (3, arm.chain.n), "fd_jacobian")
        err = np.abs(J - mj.site_jacobian(arm.model, arm.chain, q)[:3]).max()
        if err > 1e-9:  # central differences at eps near 1e-5 land near 1e-11 (the lesson's sweep)
            raise Hint(f"at the default step the {arm.label}'s position rows are off by {err:.1e}: "
                       + _default_step_hint(J, f, q, err))
