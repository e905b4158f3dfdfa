"""The course's worked-example chains as built-in robots (no files): ``planar2r``, ``planar3r`` and
``wxai_illustrative``.

The table of named robots in :mod:`physai.robots` lists them, so ``robots.load("planar2r")`` works anywhere.
"""

from __future__ import annotations

from physai.kinematics import BodySpec, Chain, JointSpec, chain_from_bodies

PLANAR2R_LINKS = (0.5, 0.3)  # L1, L2 (m): the 2-link arm of lessons 10 and 13
PLANAR3R_LINKS = (0.5, 0.3, 0.2)  # planar2r plus a 0.2 m third link: redundant for a 2-D position task

# An illustrative WidowX-AI-like arm (the real arm's kinematic numbers were not published): unit joint axes and
# the offset of each joint origin from the previous one, both in the parent link frame; the tool sits EE_OFFSET
# beyond the last joint.
WXAI_AXES = ((0, 0, 1), (0, 1, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 0))
WXAI_OFFSETS = ((0, 0, 0.110), (0, 0, 0.050), (0.06, 0, 0.30), (0.17, 0, 0), (0.115, 0, 0), (0.075, 0, 0))
WXAI_EE_OFFSET = (0.11, 0.0, 0.0)


def _planar(name: str, links, source: str) -> Chain:
    """Hinges about world z with links along x at ``q = 0``: joint ``i`` sits at the end of link ``i - 1``."""
    z = (0.0, 0.0, 1.0)
    offsets = (0.0,) + tuple(links[:-1])
    bodies = [BodySpec(f"link{i + 1}", (x, 0, 0), joints=(JointSpec(f"q{i + 1}", "hinge", z),))
              for i, x in enumerate(offsets)]
    return chain_from_bodies(name, bodies, (links[-1], 0, 0), tool_name="tip", source=source)


def planar2r() -> Chain:
    """Two hinges about world z, links ``L1 = 0.5``, ``L2 = 0.3`` m along x at ``q = 0``; tool at the tip.

    Tool point ``(L1 cos q1 + L2 cos(q1 + q2), L1 sin q1 + L2 sin(q1 + q2), 0)``. Joints unlimited.
    """
    return _planar("planar2r", PLANAR2R_LINKS, "built-in (worked example, L1=0.5, L2=0.3)")


def planar3r() -> Chain:
    """Three hinges about world z, links ``0.5, 0.3, 0.2`` m (``planar2r`` plus a third link); tool at the tip.

    For a 2-D position task (x, y) it has one redundant degree of freedom (lesson 12). Joints unlimited.
    """
    return _planar("planar3r", PLANAR3R_LINKS, "built-in (lesson 12, L = 0.5, 0.3, 0.2)")


def wxai_illustrative() -> Chain:
    """An illustrative 6-DoF WidowX-AI-like chain (not the real arm, whose kinematic numbers were not published).

    Its reference ``fk`` does ``p += R @ OFFSETS[i]``, reads joint i's axis and origin, then
    ``R = R @ rodrigues(AXES[i], q[i])``: exactly MuJoCo's body-tree rule with one body per joint at
    ``pos = OFFSETS[i]``, identity orientation, hinge ``AXES[i]`` through the body origin. Joints unlimited.
    """
    bodies = [
        BodySpec(f"link{i}", off, joints=(JointSpec(f"joint_{i}", "hinge", ax),))
        for i, (ax, off) in enumerate(zip(WXAI_AXES, WXAI_OFFSETS))
    ]
    return chain_from_bodies("wxai_illustrative", bodies, WXAI_EE_OFFSET, tool_name="ee",
                             source="built-in (illustrative AXES/OFFSETS/EE_OFFSET)")

