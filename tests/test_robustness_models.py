"""Unusual models, pinned to MuJoCo (site_xpos/site_xmat and mj_jacSite computed from scratch).

Decision for ``nq != nv``: supported. A free or ball joint on the path is frozen at ``qpos0`` when the
caller chooses the chain's joints by name (by default it is refused, naming the joints to pass); the
chain keeps each joint's qpos address (where ``q`` goes) and dof address (which ``mj_jacSite`` column
it is), and these differ once a quaternion sits earlier in ``qpos``.
"""

from dataclasses import replace

import jax
import mujoco
import numpy as np
import pytest
from conftest import PANDA_XML, WXAI_XML
from conftest import mj_site

from physai import jaxkin, mj, robots
from physai.errors import UnsupportedJointError
from physai.kinematics import chain_from_mujoco, jacobian, tool_pose

# A mobile manipulator: a free-floating crate listed first (shifts every address), a mobile base on a free
# joint, a lift on a slide, fixed bodies with rotations between joints, a body with two hinges at
# different anchors, a ball wrist, a hinge with ref != 0, a rotated tool site, and fingers beyond it.
MOBILE_ARM = """
<mujoco model="mobile_arm">
  <compiler angle="radian"/>
  <worldbody>
    <body name="crate" pos="2 0 0.2"><freejoint name="crate_free"/><geom type="box" size=".1 .1 .1"/></body>
    <body name="base" pos="0.3 -0.2 0.1" quat="0.9 0.1 -0.2 0.3">
      <freejoint name="base_free"/><geom type="box" size=".3 .2 .05"/>
      <body name="mast" pos="0.1 0 0.05" euler="0.1 -0.2 0.3">
        <joint name="lift" type="slide" axis="0.1 0.2 1" range="0 0.5"/><geom size=".05"/>
        <body name="bracket" pos="0 0.02 0.3" euler="0.7 0 -0.4"><geom size=".03"/>
          <body name="shoulder" pos="0.05 0 0.1" quat="0.7 0.7 0.1 0">
            <joint name="pan" axis="0 0 1" range="-2 2"/>
            <joint name="tilt" axis="0 1 0.2" pos="0.03 0.01 0.02" range="-1.5 1.5"/><geom size=".04"/>
            <body name="upper" pos="0.25 0 0" euler="0 0.3 0"><geom size=".03"/>
              <body name="forearm" pos="0.2 0.01 0" quat="0.6 0 0.8 0">
                <joint name="elbow" axis="0 1 0" pos="-0.02 0 0" ref="0.4" range="-2 2"/><geom size=".03"/>
                <body name="wrist" pos="0.15 0 0"><joint name="wrist_ball" type="ball"/><geom size=".02"/>
                  <body name="hand" pos="0.05 0 0.01" euler="0.2 0.1 -0.5">
                    <joint name="roll" axis="1 0 0"/><geom size=".02"/>
                    <site name="tool" pos="0.07 0.01 -0.02" euler="0.4 -1.1 2.0"/>
                    <body name="finger" pos="0.05 0 0"><joint name="finger" type="slide" axis="0 1 0"/>
                      <geom size=".01"/></body>
                  </body>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
ARM_JOINTS = ["lift", "pan", "tilt", "elbow", "roll"]


@pytest.fixture(scope="module")
def mobile():
    m = mujoco.MjModel.from_xml_string(MOBILE_ARM)
    return m, chain_from_mujoco(m, "tool", joints=ARM_JOINTS)


def assert_chain_matches_mujoco(m, chain, qs, tol=1e-14):
    for q in qs:
        p_mj, R_mj, J_mj = mj_site(m, chain, q)
        T, J = tool_pose(chain, q), jacobian(chain, q)
        assert np.abs(T[:3, 3] - p_mj).max() <= tol
        assert np.abs(T[:3, :3] - R_mj).max() <= tol
        assert np.abs(J - J_mj).max() <= tol


def test_floating_base_on_the_path_is_refused_by_default_naming_the_joints_to_pass():
    m = mujoco.MjModel.from_xml_string(MOBILE_ARM)
    with pytest.raises(UnsupportedJointError, match=r"'base_free' \(free\).*joints=\['lift', 'pan', 'tilt', 'elbow', 'roll'\]"):
        chain_from_mujoco(m, "tool")


def test_mobile_arm_with_frozen_base_and_ball_matches_mj_jacSite_at_dof_addresses(mobile):
    m, chain = mobile
    assert (m.nq, m.nv) == (7 + 7 + 1 + 2 + 1 + 4 + 1 + 1, 6 + 6 + 1 + 2 + 1 + 3 + 1 + 1)
    assert chain.joint_names == tuple(ARM_JOINTS) and chain.joint_types == ("slide",) + ("hinge",) * 4
    assert chain.qpos_adr == (14, 15, 16, 17, 22) and chain.dof_adr == (12, 13, 14, 15, 19)
    assert_chain_matches_mujoco(m, chain, chain.random_q(np.random.default_rng(0), 40))


def test_reading_columns_at_qpos_addresses_is_the_trap_physai_avoids(mobile):
    m, _ = mobile
    chain = chain_from_mujoco(m, "tool", joints=ARM_JOINTS[:4])  # qpos 14..17, dofs 12..15
    q = chain.random_q(np.random.default_rng(1))
    _, _, J_mj = mj_site(m, chain, q)
    _, _, wrong = mj_site(m, replace(chain, dof_adr=chain.qpos_adr), q)  # columns picked by position index
    assert np.abs(wrong - J_mj).max() > 0.1
    assert np.abs(jacobian(chain, q) - J_mj).max() <= 1e-14
    np.testing.assert_array_equal(mj.site_jacobian(m, chain, q), J_mj)


def test_chain_joints_carry_no_motion_from_frozen_joints_other_than_qpos0(mobile):
    # the ref="0.4" elbow: its zero displacement is at qpos0 = 0.4, not at 0
    m, chain = mobile
    # exact: the number written into the model, read back
    assert m.qpos0[chain.qpos_adr[chain.joint_index("elbow")]] == 0.4
    assert chain.q_ref[chain.joint_index("elbow")] == 0.4
    q0 = m.qpos0[list(chain.qpos_adr)]
    p_mj, R_mj, _ = mj_site(m, chain, q0)
    T = tool_pose(chain, q0)
    assert np.abs(T[:3, 3] - p_mj).max() <= 1e-15 and np.abs(T[:3, :3] - R_mj).max() <= 1e-15


@pytest.mark.usefixtures("x64")
def test_mobile_chain_in_jax_equals_numpy(mobile):
    _, chain = mobile
    qs = chain.random_q(np.random.default_rng(2), 16)
    J = np.asarray(jax.jit(jax.vmap(lambda q: jaxkin.jacobian(chain, q)))(qs))
    assert np.abs(J - jacobian(chain, qs)).max() <= 1e-12


def test_chain_from_the_middle_of_the_model_freezes_the_rest_at_qpos0(mobile):
    # the wrist joints only: lift, pan, tilt and elbow frozen at qpos0 (elbow at its ref 0.4)
    m, _ = mobile
    chain = chain_from_mujoco(m, "tool", joints=["roll"])
    assert chain.dof_adr == (19,)
    assert_chain_matches_mujoco(m, chain, np.linspace(-3, 3, 13)[:, None])


@pytest.mark.parametrize("joints", [["joint3", "joint4", "joint5", "joint6", "joint7"],
                                    ["joint1", "joint2", "joint4", "joint6"]])
def test_panda_subchains_match_mujoco_with_the_other_joints_at_qpos0(joints):
    m = mujoco.MjModel.from_xml_path(str(PANDA_XML))
    chain = chain_from_mujoco(m, "tcp", joints=joints)
    assert chain.joint_names == tuple(joints)
    assert_chain_matches_mujoco(m, chain, chain.random_q(np.random.default_rng(3), 30))


def test_panda_full_arm_matches_mujoco_at_home_and_random_poses():
    chain = robots.load(PANDA_XML, site="tcp")
    m = robots.mujoco_model(PANDA_XML)
    assert chain.n == 7 and chain.source.endswith("panda.xml")
    home = m.key("home").qpos[list(chain.qpos_adr)]
    assert_chain_matches_mujoco(m, chain, np.vstack([home, chain.random_q(np.random.default_rng(4), 30)]))


def test_wxai_arm_leaves_the_gripper_slides_out_and_matches_mujoco():
    path = WXAI_XML
    chain = robots.load(path, site="ee_site")
    m = robots.mujoco_model(path)
    assert chain.joint_names == tuple(f"joint_{i}" for i in range(6))
    assert_chain_matches_mujoco(m, chain, chain.random_q(np.random.default_rng(5), 30))


def test_so101_with_a_frozen_middle_joint_matches_mujoco(so101_model):
    chain = robots.load("so101", joints=["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_roll"])
    assert chain.source.startswith("bundled")
    assert_chain_matches_mujoco(so101_model, chain, chain.random_q(np.random.default_rng(6), 30))


SAMEFRAME_SITES = """<mujoco><compiler angle="radian"/><worldbody><body pos=".1 .2 .3" quat="1 .2 .3 .4">
  <joint name="j" axis="0 1 0"/><geom size=".02" pos="0.01 0.02 0.03" euler=".3 .2 .1"/><geom size=".03" pos="-0.05 0 0.03"/>
  <site name="body" pos="0 0 1e-8" quat="1 0 0 1e-9"/><site name="bodyrot" pos="0 0.1 0" quat="1 1e-9 0 0"/>
  <site name="inertia" pos="{ipos}" quat="{iquat}"/><site name="inertiarot" pos="0.3 0 0" quat="{iquat}"/>
  <site name="none" pos=".1 .2 .3" euler="1 2 3"/></body></worldbody></mujoco>"""


def test_sites_within_1e_6_of_their_body_or_inertial_frame_follow_mujocos_same_frame_rule():
    # MuJoCo's compiler snaps such a site onto the body (or inertial) frame and ignores the written offset
    first = mujoco.MjModel.from_xml_string(SAMEFRAME_SITES.format(ipos="0 0 0", iquat="1 0 0 0"))
    fmt = lambda v: " ".join(repr(float(x)) for x in v)  # noqa: E731
    m = mujoco.MjModel.from_xml_string(SAMEFRAME_SITES.format(ipos=fmt(first.body_ipos[1]), iquat=fmt(first.body_iquat[1])))
    SF = mujoco.mjtSameFrame
    assert list(m.site_sameframe) == [SF.mjSAMEFRAME_BODY, SF.mjSAMEFRAME_BODYROT, SF.mjSAMEFRAME_INERTIA,
                                      SF.mjSAMEFRAME_INERTIAROT, SF.mjSAMEFRAME_NONE]
    for site in ("body", "bodyrot", "inertia", "inertiarot", "none"):
        chain = chain_from_mujoco(m, site)
        assert_chain_matches_mujoco(m, chain, np.linspace(-2, 2, 5)[:, None], tol=1e-14)
