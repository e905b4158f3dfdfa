"""The seeds' illustrative chains as built-in robots (no files): ``planar2r`` and ``wxai_illustrative``.

Importing :mod:`physai.robots` registers them, so ``robots.load("planar2r")`` works anywhere.
"""

from __future__ import annotations

from physai.kinematics import BodySpec, Chain, JointSpec, chain_from_bodies
from physai.robots import RobotInfo, register

PLANAR2R_LINKS = (0.5, 0.3)  # L1, L2 (m), the WidowX AI lesson's worked example

# The WidowX AI lesson's reference code: unit joint axes and the offset of each joint origin from
# the previous one, both in the parent link frame; the tool sits EE_OFFSET beyond the last joint.
WXAI_AXES = ((0, 0, 1), (0, 1, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 0))
WXAI_OFFSETS = ((0, 0, 0.110), (0, 0, 0.050), (0.06, 0, 0.30), (0.17, 0, 0), (0.115, 0, 0), (0.075, 0, 0))
WXAI_EE_OFFSET = (0.11, 0.0, 0.0)


def planar2r() -> Chain:
    """Two hinges about world z, links ``L1 = 0.5``, ``L2 = 0.3`` m along x at ``q = 0``; tool at the tip.

    Tool point ``(L1 cos q1 + L2 cos(q1 + q2), L1 sin q1 + L2 sin(q1 + q2), 0)``. Joints unlimited.
    """
    l1, l2 = PLANAR2R_LINKS
    z = (0.0, 0.0, 1.0)
    bodies = [
        BodySpec("link1", (0, 0, 0), joints=(JointSpec("q1", "hinge", z),)),
        BodySpec("link2", (l1, 0, 0), joints=(JointSpec("q2", "hinge", z),)),
    ]
    return chain_from_bodies("planar2r", bodies, (l2, 0, 0), tool_name="tip", source="built-in (WidowX AI lesson, L1=0.5, L2=0.3)")


def wxai_illustrative() -> Chain:
    """The WidowX AI lesson's illustrative 6-DoF chain (not the real arm: its geometry "is not published").

    The lesson's ``fk`` does ``p += R @ OFFSETS[i]``, reads joint i's axis and origin, then
    ``R = R @ rodrigues(AXES[i], q[i])``: exactly MuJoCo's body-tree rule with one body per joint at
    ``pos = OFFSETS[i]``, identity orientation, hinge ``AXES[i]`` through the body origin. Joints unlimited.
    """
    bodies = [
        BodySpec(f"link{i}", off, joints=(JointSpec(f"joint_{i}", "hinge", ax),))
        for i, (ax, off) in enumerate(zip(WXAI_AXES, WXAI_OFFSETS))
    ]
    return chain_from_bodies("wxai_illustrative", bodies, WXAI_EE_OFFSET, tool_name="ee",
                             source="built-in (WidowX AI lesson AXES/OFFSETS/EE_OFFSET)")


register(RobotInfo("planar2r", "2-link planar arm, L1 = 0.5 m, L2 = 0.3 m (WidowX AI lesson worked example)",
                   site="tip", builtin=planar2r))
register(RobotInfo("wxai_illustrative", "the WidowX AI lesson's illustrative 6-DoF chain (AXES/OFFSETS/EE_OFFSET)",
                   site="ee", builtin=wxai_illustrative))
