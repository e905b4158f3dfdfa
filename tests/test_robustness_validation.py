"""Bad input at the public boundary: every refusal is a physai error whose message names the input.

The reference for "right" here is the message itself: it must name the offending argument (and,
for names, list the valid ones), so a caller can fix the call without reading physai's source.
"""

from contextlib import contextmanager

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from conftest import PANDA_XML

from physai import jaxkin, mj, robots
from physai import transforms as tf
from physai._validate import finite_array
from physai.errors import InputError, ModelNotFoundError, PhysaiError, UnknownNameError, UnsupportedJointError
from physai.ik import solve_ik, solve_ik_batch
from physai.kinematics import (
    BodySpec,
    Chain,
    JointSpec,
    chain_from_bodies,
    chain_from_mujoco,
    fd_jacobian,
    fk,
    jacobian,
    joint_frames,
    tool_pose,
    tool_pose_and_jacobian,
)

NUMPY_ENTRY_POINTS = (fk, jacobian, tool_pose, tool_pose_and_jacobian, joint_frames)
JAX_ENTRY_POINTS = (jaxkin.joint_frames, jaxkin.tool_pose, jaxkin.tool_position, jaxkin.jacobian)


@contextmanager
def raises(exc_type, *fragments):
    """``exc_type`` is raised, it is a PhysaiError, and its message holds every fragment."""
    with pytest.raises(exc_type) as info:
        yield info
    assert isinstance(info.value, PhysaiError)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


# ---- joint positions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q, fragments",
    [
        (np.zeros(6), ("q:", "expected shape (..., 5)", "got (6,)", "shoulder_pan")),
        (np.zeros((3, 4)), ("q:", "got (3, 4)",)),
        (0.3, ("q:", "got ()")),
        ([0, 0, np.inf, 0, 0], ("q:", "finite", "inf", "(2,)")),
        ([[0, 0, 0, 0, 0], [0, np.nan, 0, 0, 0]], ("q:", "finite", "nan", "(1, 1)")),
        (np.array([0, 0, 1j, 0, 0]), ("q:", "complex")),
        ([[0, 0], [0, 0, 0]], ("q:", "array of numbers")),
        ({"shoulder_pan": 0.0}, ("q:",)),
        (["0", "0.1", "0", "0", "0"], ("q:", "strings")),
        (np.array([0, 1, 2, 3, 4], dtype="datetime64[s]"), ("q:", "datetime64")),
        (np.array([0, 1, 2, 3, 4], dtype="timedelta64[s]"), ("q:", "timedelta64")),
        (np.zeros(5, dtype=[("rad", float)]), ("q:", "structured")),
        (np.array([0.0, "0.1", 0, 0, 0], dtype=object), ("q:", "str '0.1'")),
        (np.array([0.0, None, 0, 0, 0], dtype=object), ("q:", "NoneType")),
        ([True, False, True, False, True], ("q:", "booleans")),
        (np.array([0.0, True, 0, 0, 0], dtype=object), ("q:", "bool True")),
        (np.ma.masked_array(np.zeros(5), mask=[0, 1, 0, 0, 0]), ("q:", "masked entries")),
    ],
)
def test_bad_q_is_refused_by_every_numpy_entry_point(so101, q, fragments):
    for f in NUMPY_ENTRY_POINTS:
        with raises(InputError, *fragments):
            f(so101, q)


def test_real_numbers_of_any_numeric_type_pass_with_float64_values(so101):
    """Reference: the same pose as plain float64 (an unmasked masked array, Fractions, float32, ints)."""
    from fractions import Fraction

    q = np.array([0.25, -0.5, 0.75, 0.0, 1.0])
    for same in (np.ma.masked_array(q, mask=False), [Fraction(1, 4), Fraction(-1, 2), Fraction(3, 4), 0, 1],
                 q.astype(np.float32), np.array([0.25, -0.5, 0.75, 0, 1], dtype=object)):
        np.testing.assert_array_equal(tool_pose(so101, same), tool_pose(so101, q))
    np.testing.assert_array_equal(tool_pose(so101, np.array([0, -1, 1, 0, 1])), tool_pose(so101, [0.0, -1, 1, 0, 1]))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("q", [np.zeros(4), np.zeros(6), np.zeros((2, 5)), np.zeros(())])
def test_jax_entry_points_refuse_wrong_shape_even_under_jit(so101, q):
    # JAX clamps out-of-range indices: without the check, a 4-vector would silently reuse q[3] for joint 5
    for f in JAX_ENTRY_POINTS:
        with raises(InputError, "q:", f"got {q.shape}", f"({so101.n},)"):
            f(so101, jnp.asarray(q))
        with raises(InputError, "q:", f"got {q.shape}"):
            jax.jit(lambda x, f=f: f(so101, x))(jnp.asarray(q))


@pytest.mark.usefixtures("x64")
def test_jax_entry_points_refuse_nan_for_concrete_q(so101):
    for f in JAX_ENTRY_POINTS:
        with raises(InputError, "q:", "finite", "nan"):
            f(so101, jnp.array([0.0, np.nan, 0.0, 0.0, 0.0]))


def test_q_outside_limits_is_accepted_by_fk_and_flagged_for_seeds(so101, so101_model):
    q = np.array([0.0, 0.0, 2.0, 0.0, 0.0])  # elbow_flex beyond its 1.69 rad limit
    d = mujoco.MjData(so101_model)
    np.testing.assert_allclose(tool_pose(so101, q), mj.site_pose(so101_model, so101, q, d), atol=1e-14)
    with raises(InputError, "q0:", "'elbow_flex'", "2", "1.69"):
        so101.check_q(q, "q0", within_limits=True)
    with raises(InputError, "seeds:", "'shoulder_pan'", "(1, 0)"):
        so101.check_q(np.stack([np.zeros(5), [-3.0, 0, 0, 0, 0]]), "seeds", within_limits=True)
    np.testing.assert_array_equal(so101.check_q(np.zeros(5), within_limits=True), np.zeros(5))


def test_ik_start_outside_limits_and_starts_of_the_wrong_shape_are_refused(so101):
    T = tool_pose(so101, np.zeros(5))
    with raises(InputError, "q0:", "'elbow_flex'", "2", "[-1.69, 1.69]"):
        solve_ik(so101, T, q0=[0.0, 0.0, 2.0, 0.0, 0.0])
    with raises(InputError, "q0:", "(5,) or (2, 5)", "(3, 5)"):
        solve_ik_batch(so101, np.stack([T, T]), q0=np.zeros((3, 5)))


@pytest.mark.parametrize(
    "R, bottom, fragment",
    [
        (np.diag([1.0, 1.0, -1.0]), [0, 0, 0, 1], "target[:3, :3]: a reflection"),  # R R^T = I, det -1
        (np.diag([1.0, 1.0, 1.01]), [0, 0, 0, 1], "target[:3, :3]: not a rotation matrix"),
        (np.eye(3), [0.1, 0, 0, 1], "target: bottom row"),
    ],
)
def test_ik_target_that_is_not_a_pose_is_refused(so101, R, bottom, fragment):
    T = tf.make_transform(R, [0.2, 0.0, 0.1])
    T[3] = bottom
    with raises(InputError, fragment):
        solve_ik(so101, T)


def test_mj_helpers_take_one_pose(so101, so101_model):
    for f in (mj.site_jacobian, mj.site_pose):
        with raises(InputError, "q:", "one pose", "(2, 5)"):
            f(so101_model, so101, np.zeros((2, 5)))
        with raises(InputError, "q:", "got (4,)"):
            f(so101_model, so101, np.zeros(4))


@pytest.mark.parametrize("inset", [-0.1, 1.7, np.nan])
def test_random_q_refuses_an_inset_that_empties_a_range(so101, inset):
    # wrist_flex has the narrowest range, 2 x 1.658063 rad: a 1.7 rad inset on each side empties it
    with raises(InputError, "inset:", str(inset), "'wrist_flex'"):
        so101.random_q(np.random.default_rng(0), 3, inset=inset)


def test_random_q_margin_keyword_still_works_and_warns_naming_inset(so101):
    with pytest.warns(DeprecationWarning, match="inset="):
        old = so101.random_q(np.random.default_rng(0), 3, margin=0.1)
    np.testing.assert_array_equal(old, so101.random_q(np.random.default_rng(0), 3, inset=0.1))


def test_fd_jacobian_refuses_bad_step_and_batched_q():
    f = lambda q: q**2  # noqa: E731
    with raises(InputError, "eps:", "0.0"):
        fd_jacobian(f, np.zeros(2), eps=0.0)
    with raises(InputError, "eps:", "nan"):
        fd_jacobian(f, np.zeros(2), eps=np.nan)
    with raises(InputError, "q:", "(n,)", "(2, 2)"):
        fd_jacobian(f, np.zeros((2, 2)))


# ---- names ---------------------------------------------------------------------------------------


def test_unknown_robot_site_and_joint_names_list_the_valid_ones(so101, so101_model):
    with raises(UnknownNameError, "robot", "'so100'", "so101"):
        robots.load("so100")
    with raises(UnknownNameError, "tool frame", "'gripperfrme'", "gripperframe", "Did you mean"):
        robots.load("so101", site="gripperfrme")
    with raises(UnknownNameError, "site", "'nope'", "gripperframe"):
        mj.site_id(so101_model, "nope")
    with raises(UnknownNameError, "joint", "'elbow'", "elbow_flex", "wrist_roll"):
        chain_from_mujoco(so101_model, "gripperframe", joints=["shoulder_pan", "elbow"])
    with raises(UnknownNameError, "joint", "'elbow'", "elbow_flex"):
        so101.joint_index("elbow")
    assert so101.joint_index("elbow_flex") == 2


def test_unknown_names_are_key_errors_printed_without_quotes():
    with pytest.raises(KeyError) as info:
        robots.load("so100")
    assert str(info.value).startswith("unknown robot")


def test_joints_off_the_path_out_of_order_duplicated_or_a_string_are_refused(so101_model):
    with raises(InputError, "joints:", "'gripper'", "not on the path", "'gripperframe'", "wrist_roll"):
        chain_from_mujoco(so101_model, "gripperframe", joints=["shoulder_pan", "gripper"])
    with raises(InputError, "joints:", "root to tip", "['shoulder_pan', 'elbow_flex']", "['elbow_flex', 'shoulder_pan']"):
        chain_from_mujoco(so101_model, "gripperframe", joints=["elbow_flex", "shoulder_pan"])
    with raises(InputError, "joints:", "once", "['elbow_flex', 'elbow_flex']"):
        chain_from_mujoco(so101_model, "gripperframe", joints=["elbow_flex", "elbow_flex"])
    with raises(InputError, "joints:", "string", "'elbow_flex'"):
        chain_from_mujoco(so101_model, "gripperframe", joints="elbow_flex")


def test_bad_source_is_refused():
    with raises(InputError, "source:", "'pip'", "'menagerie'"):
        robots.load("so101", source="pip")


def test_builtin_with_a_custom_site_is_refused_naming_both():
    with raises(ModelNotFoundError, "'so101'", "site='base'"):
        robots.load("so101", site="base", source="builtin")


# ---- joint types ---------------------------------------------------------------------------------

BALL_IN_PATH = """<mujoco><worldbody><body name="b0"><joint name="h0" axis="0 0 1"/><geom size=".1"/>
  <body name="b1" pos="0 0 .3"><joint name="shoulder_ball" type="ball"/><geom size=".1"/>
  <body name="b2" pos="0 0 .3"><joint name="h2" axis="0 1 0"/><geom size=".1"/><site name="tip" pos=".2 0 0"/>
  </body></body></body></worldbody></mujoco>"""


def test_ball_joint_on_the_path_is_refused_with_the_joints_to_pass():
    m = mujoco.MjModel.from_xml_string(BALL_IN_PATH)
    with raises(UnsupportedJointError, "'shoulder_ball'", "ball", "'tip'", "joints=['h0', 'h2']"):
        chain_from_mujoco(m, "tip")
    with raises(UnsupportedJointError, "'shoulder_ball'", "'ball'"):
        chain_from_mujoco(m, "tip", joints=["h0", "shoulder_ball", "h2"])


def test_unsupported_joint_type_in_a_body_spec_is_refused():
    bodies = [BodySpec("b", (0, 0, 0), joints=(JointSpec("screw", "helical", (0, 0, 1)),))]
    with raises(UnsupportedJointError, "'screw'", "'b'", "'helical'", "hinge, slide"):
        chain_from_bodies("c", bodies, (1, 0, 0))


# ---- chains built by hand ------------------------------------------------------------------------


def _chain(**overrides):
    fields = dict(
        name="c", joint_names=("a", "b"), joint_types=("hinge", "slide"), T_prev_joint=np.stack([np.eye(4)] * 2),
        axis_joint=[[0, 0, 1], [1, 0, 0]], q_ref=[0, 0], T_last_tool=np.eye(4), lower=[-1, -1], upper=[1, 1],
    )
    fields.update(overrides)
    return Chain(**fields)


@pytest.mark.parametrize(
    "overrides, fragments",
    [
        (dict(q_ref=[0, 0, 0]), ("q_ref", "(3,)", "(2,)")),
        (dict(joint_types=("hinge", "ball")), ("'b'", "'ball'")),
        (dict(axis_joint=[[0, 0, 2], [1, 0, 0]]), ("'a'", "unit", "2.0")),
        (dict(axis_joint=[[0, 0, 1], [np.nan, 0, 0]]), ("axis_joint", "'b'", "finite")),
        (dict(T_last_tool=np.full((4, 4), np.inf)), ("T_last_tool", "finite")),
        (dict(lower=[-1, 2]), ("'b'", "[2.0, 1.0]", "interval")),
        (dict(upper=[1, np.nan]), ("'b'", "nan", "interval")),
        (dict(joint_names=(), joint_types=(), T_prev_joint=np.zeros((0, 4, 4)), axis_joint=np.zeros((0, 3)),
              q_ref=[], lower=[], upper=[]), ("no joints",)),
    ],
)
def test_inconsistent_chain_is_refused_naming_the_field(overrides, fragments):
    with raises(InputError, "'c'", *fragments):
        _chain(**overrides)


# ---- model files ---------------------------------------------------------------------------------


def test_missing_model_file_is_named(tmp_path):
    path = tmp_path / "arm.xml"
    with raises(ModelNotFoundError, str(path), "does not exist"):
        robots.load(path)
    with raises(ModelNotFoundError, str(path)):
        robots.mujoco_model(str(path))


def test_model_that_does_not_compile_names_the_file_and_passes_mujocos_message_on(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text('<mujoco><worldbody><body><joint axis="0 0 0"/><geom size=".1"/></body></worldbody></mujoco>')
    with pytest.raises(ValueError) as mj_info:
        mujoco.MjModel.from_xml_path(str(path))
    mujoco_message = str(mj_info.value).splitlines()[0]
    with raises(ModelNotFoundError, str(path), "does not compile", mujoco_message):
        robots.load(path)


def test_model_with_nan_is_refused_though_mujoco_compiles_it(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's own warning handler writes MUJOCO_LOG.TXT into the working directory
    path = tmp_path / "nan_arm.xml"
    path.write_text('<mujoco><worldbody><body pos="nan 0 0"><joint name="j"/><geom size=".1"/>'
                    '<site name="tip"/></body></worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_path(str(path))  # MuJoCo only warns
    assert np.isnan(m.body_pos).any()
    capfd.readouterr()  # MuJoCo's NaN warning
    with pytest.warns(UserWarning, match="NaN"), raises(InputError, "'nan_arm'", "'j'", "not finite"):
        robots.load(path)


def test_model_without_sites_or_with_several_asks_for_site(tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text('<robot name="r"><link name="a"/></robot>')
    with raises(InputError, "tool:", str(urdf), "no sites"):
        robots.load(urdf)
    two = tmp_path / "two.xml"
    two.write_text('<mujoco><worldbody><body><joint/><geom size=".1"/><site name="s1"/><site name="s2"/>'
                   '</body></worldbody></mujoco>')
    with raises(UnknownNameError, "site", "pass site=", "s1, s2"):
        robots.load(two)


# ---- MuJoCo helpers fed the wrong model ----------------------------------------------------------


def test_mj_helpers_refuse_a_chain_or_data_from_another_model(so101, so101_model):
    panda = mujoco.MjModel.from_xml_path(str(PANDA_XML))
    with raises(UnknownNameError, "site", "'gripperframe'", "tcp"):
        mj.site_jacobian(panda, so101, np.zeros(5))
    wrist_only = chain_from_mujoco(so101_model, "gripperframe", joints=["wrist_flex", "wrist_roll"])
    renamed = mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody><body><joint name="wrist_roll"/><geom size=".1"/><body pos="0 0 1">
        <joint name="wrist_flex"/><geom size=".1"/><site name="gripperframe"/></body></body></worldbody></mujoco>"""
    )
    with raises(InputError, "'wrist_flex'", "(3, 3)", "(1, 1)", "another model"):
        mj.site_pose(renamed, wrist_only, np.zeros(2))
    with raises(InputError, "d:", f"nq={panda.nq}", f"nq={so101_model.nq}"):
        mj.site_pose(so101_model, so101, np.zeros(5), mujoco.MjData(panda))
    with raises(InputError, "'so101'", "not built from a MuJoCo model"):
        mj.site_pose(so101_model, robots.load("so101", source="builtin"), np.zeros(5))


def test_mj_helpers_refuse_arguments_of_the_wrong_type_naming_them(so101, so101_model):
    for args, name in (((so101, so101_model, np.zeros(5)), "m:"), ((so101_model, "so101", np.zeros(5)), "chain:"),
                       ((so101_model, so101, np.zeros(5), so101_model), "d:")):
        for f in (mj.site_pose, mj.site_jacobian):
            with raises(InputError, name):
                f(*args)


# ---- poses and quaternions -----------------------------------------------------------------------


def test_zero_or_nan_quaternion_is_refused():
    with raises(InputError, "quat_wxyz:", "zero quaternion"):
        tf.quat_to_matrix([0.0, 0.0, 0.0, 0.0])
    with raises(InputError, "quat_wxyz:", "finite"):
        tf.quat_to_matrix([1.0, np.nan, 0.0, 0.0])
    with raises(InputError, "quat_wxyz:", "(..., 4)", "(3,)"):
        tf.quat_to_matrix([1.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "R, bottom, fragment",
    [
        (np.diag([1.0, 1.0, 1.001]), [0, 0, 0, 1], "target[:3, :3]: not a rotation matrix"),
        (np.diag([1.0, 1.0, -1.0]), [0, 0, 0, 1], "target[:3, :3]: a reflection"),
        (np.eye(3), [0, 0, 0.5, 1], "target: bottom row"),
    ],
)
def test_check_transform_refuses_non_poses_naming_the_input(R, bottom, fragment):
    T = tf.make_transform(R, np.zeros(3))
    T[3] = bottom
    with raises(InputError, fragment):
        tf.check_transform(T, "target")
    with raises(InputError, fragment.replace("target", "targets")):
        tf.check_transform(np.stack([np.eye(4), T]), "targets")


def test_check_transform_accepts_poses_to_round_off():
    R = tf.quat_to_matrix(np.random.default_rng(0).normal(size=(10, 4)))
    T = tf.make_transform(R, np.random.default_rng(1).normal(size=(10, 3)))
    np.testing.assert_array_equal(tf.check_transform(T, "T"), T)
    with raises(InputError, "T:", "(..., 4, 4)", "(3, 3)"):
        tf.check_transform(np.eye(3), "T")


def test_inverse_refuses_a_scaled_rotation():
    with raises(InputError, "T_a_b[:3, :3]", "not a rotation"):
        tf.inverse(tf.make_transform(2 * np.eye(3), np.zeros(3)))


def test_finite_array_names_shape_and_index():
    with raises(InputError, "x:", "(..., 3)", "(2, 2)"):
        finite_array(np.zeros((2, 2)), "x", (3,))
    with raises(InputError, "x:", "-inf", "(1, 0)"):
        finite_array([[0.0, 0.0], [-np.inf, 0.0]], "x")
    with raises(InputError, "compose"):
        tf.compose()
