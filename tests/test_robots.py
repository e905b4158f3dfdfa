"""physai.robots: bundled models, Menagerie names, tool frames on sites, bodies and URDF links.

References: MuJoCo's ``site_xpos``/``xpos``/``xmat``, ``mj_jacSite``/``mj_jac`` on the same model files, and the
genuine Menagerie SO-101 through ``MENAGERIE_ROOT`` (skipped when it is not set).
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from numpy.testing import assert_allclose

from physai import robots
from physai.errors import InputError, ModelNotFoundError, UnknownNameError
from physai.kinematics import jacobian, tool_pose

BUNDLED = {"so101": 5, "wxai": 6, "panda": 7}
ARM_URDF = """<robot name="arm">
  <link name="base"/>
  <link name="l1"><collision><geometry><mesh filename="meshes/missing.stl"/></geometry></collision></link>
  <link name="l2"><inertial><mass value="0.5"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"/>
  <link name="tool0"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1" rpy="0.1 0.2 0.3"/>
    <axis xyz="0 0.6 0.8"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.3 0 0.02" rpy="0 0.5 -0.2"/>
    <axis xyz="1 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.25 0.01 0" rpy="0.7 0 0.1"/>
    <axis xyz="0.2 0.3 0.9"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="fix" type="fixed"><parent link="l3"/><child link="tool0"/><origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.4 0.5"/></joint>
</robot>
"""


def mujoco_frame(m, q, chain, body=None, site=None, point_in_body=None):
    """``(T_world_frame, J_world)`` from MuJoCo: a site (mj_jacSite) or a body frame / body point (mj_jac)."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_forward(m, d)
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    if site is not None:
        s = m.site(site).id
        R, p = d.site_xmat[s].reshape(3, 3), d.site_xpos[s].copy()
        mujoco.mj_jacSite(m, d, jp, jr, s)
    else:
        b = m.body(body).id
        R = d.xmat[b].reshape(3, 3)
        p = d.xpos[b] + R @ (np.zeros(3) if point_in_body is None else point_in_body)
        mujoco.mj_jac(m, d, jp, jr, p, b)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T, np.vstack([jp, jr])[:, list(chain.dof_adr)]


def assert_matches(chain, m, qs, **frame):
    for q in qs:
        T_ref, J_ref = mujoco_frame(m, q, chain, **frame)
        assert_allclose(tool_pose(chain, q), T_ref, rtol=0, atol=1e-12)
        assert_allclose(jacobian(chain, q), J_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_robot_matches_mujoco_site_at_50_in_limit_poses(name):
    chain = robots.load(name)
    assert chain.n == BUNDLED[name] and chain.source.startswith("bundled")
    m = mujoco.MjModel.from_xml_path(str(robots.model_path(name)))
    assert_matches(chain, m, chain.random_q(np.random.default_rng(14), 50), site=chain.tool_name)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_stored_chain_equals_mujoco_compile_of_the_bundled_model(name):
    """chain.json beside each bundled model holds exactly what MuJoCo compiles from it today (bit for bit)."""
    stored = json.loads((robots.model_path(name).with_name("chain.json")).read_text())
    fresh = json.loads(json.dumps(robots.compiled_chain_record(name)))
    assert stored == fresh, f"physai/models/{name}/chain.json is out of date: run robots.write_stored_chains()"
    loaded = robots.load(name)
    compiled = robots._chain_of_model(robots._compile(robots.model_path(name)), loaded.tool_name, None, name,
                                      loaded.source)
    for field in dataclasses.fields(compiled):
        a, b = getattr(loaded, field.name), getattr(compiled, field.name)
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), field.name


def test_an_edited_bundled_model_is_compiled_again_not_read_from_its_stored_chain(tmp_path, monkeypatch):
    copy = tmp_path / "models"
    shutil.copytree(robots.MODELS_DIR / "panda", copy / "panda")
    xml = copy / "panda" / "panda.xml"
    text = xml.read_text()
    assert text.count('range="-2.8973 2.8973"') >= 1
    xml.write_text(text.replace('range="-2.8973 2.8973"', 'range="-1.5 1.5"', 1))
    monkeypatch.setattr(robots, "MODELS_DIR", copy)
    chain = robots.load("panda")
    assert chain.lower[0] == -1.5 and chain.upper[0] == 1.5  # exact: the edited file's numbers, read back


def test_bundled_robots_load_in_a_fresh_process_from_any_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MENAGERIE_ROOT"}
    code = ("from physai import robots; "
            "print(';'.join(f'{n}:{robots.load(n).n}:{robots.load(n).source}' for n in ('so101', 'wxai', 'panda')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("so101:5:bundled physai/models/so101/so101.xml;wxai:6:bundled physai/models/wxai/"
                                  "wxai_follower.xml;panda:7:bundled physai/models/panda/panda.xml")
    assert list(tmp_path.iterdir()) == []  # nothing written into the working directory


@pytest.mark.menagerie
@pytest.mark.skipif(not os.environ.get("MENAGERIE_ROOT"), reason="needs MENAGERIE_ROOT (a Menagerie checkout)")
def test_bundled_so101_equals_genuine_menagerie_model():
    genuine = robots.load("so101", source="menagerie")
    assert genuine.source.startswith("Menagerie")
    m = mujoco.MjModel.from_xml_path(str(robots.model_path("so101", source="menagerie")))
    bundled = robots.load("so101")
    qs = bundled.random_q(np.random.default_rng(15), 50)
    assert_matches(bundled, m, qs, site="gripperframe")
    mb = robots.mujoco_model("so101")
    for field in ("body_pos", "body_quat", "jnt_range", "body_mass", "body_ipos", "actuator_gainprm"):
        assert_allclose(getattr(mb, field), getattr(m, field), rtol=0, atol=0, err_msg=field)


def test_registry_robot_offline_names_robot_and_menagerie_root(monkeypatch, tmp_path):
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))  # an empty checkout: nothing to find, no download
    with pytest.raises(ModelNotFoundError, match="universal_robots_ur5e.*MENAGERIE_ROOT"):
        robots.load("universal_robots_ur5e")
    with pytest.raises(UnknownNameError, match="so101"):
        robots.load("so1O1")
    with pytest.raises(InputError, match="source"):
        robots.load("so101", source="auto")


def test_urdf_link_on_a_fixed_joint_as_tool_matches_mujoco_body_frame(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM_URDF)
    with pytest.warns(UserWarning, match="mesh"):
        chain = robots.load(path, tool="tool0")
        m = robots.mujoco_model(path)
    assert chain.joint_names == ("j1", "j2", "j3") and m.body("tool0").id > 0
    assert_matches(chain, m, chain.random_q(np.random.default_rng(16), 50), body="tool0")


def test_mjcf_body_as_tool_and_tool_offset_match_mujoco():
    m = robots.mujoco_model("so101")
    rng = np.random.default_rng(17)
    chain = robots.load("so101", tool="gripper")
    assert_matches(chain, m, chain.random_q(rng, 50), body="gripper")
    offset = np.array([0.01, -0.02, -0.1])
    shifted = robots.load("so101", tool="gripper", tool_offset=offset)
    for q in shifted.random_q(rng, 20):
        T_ref, J_ref = mujoco_frame(m, q, shifted, body="gripper", point_in_body=offset)
        assert_allclose(tool_pose(shifted, q), T_ref, rtol=0, atol=1e-12)
        assert_allclose(jacobian(shifted, q), J_ref, rtol=0, atol=1e-12)


def test_unknown_tool_lists_sites_and_bodies():
    with pytest.raises(UnknownNameError, match="gripperframe") as info:
        robots.load("so101", tool="hand")
    assert "upper_arm" in str(info.value)  # bodies are listed beside the sites
    with pytest.raises(InputError, match="tool_offset"):
        robots.load("so101", tool="gripper", tool_offset=[1.0, 2.0])


def test_cli_fk_and_ik_on_a_urdf_with_a_link_tool(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM_URDF)
    env = {k: v for k, v in os.environ.items() if k != "MENAGERIE_ROOT"}
    cli = [str(Path(sys.executable).parent / "physai")]  # the console script, as a user runs it
    fk = subprocess.run(cli + ["fk", "--robot", str(path), "--tool", "tool0", "--q", "0.3", "-0.7", "0.2", "--json"],
                        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert fk.returncode == 0, fk.stderr
    p = np.array(json.loads(fk.stdout)["T_world_tool"])[:3, 3]
    with pytest.warns(UserWarning):
        ref_chain = robots.load(path, tool="tool0")
        mm = robots.mujoco_model(path)
    T_ref, _ = mujoco_frame(mm, np.array([0.3, -0.7, 0.2]), ref_chain, body="tool0")
    assert_allclose(p, T_ref[:3, 3], rtol=0, atol=1e-9)
    ik = subprocess.run(cli + ["ik", "--robot", str(path), "--tool", "tool0", "--target", *map(str, T_ref[:3, 3]),
                               "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ik.returncode == 0, ik.stderr
    assert json.loads(ik.stdout)["converged"] is True


def _robotics_toolbox_urdf(relpath: str, tmp_path: Path) -> Path:
    """A URDF shipped by Robotics Toolbox's data package; a ``.xacro`` is expanded first, as Robotics Toolbox does."""
    rtbdata = pytest.importorskip("rtbdata", reason="Robotics Toolbox's URDFs come with the bench group "
                                                    "(uv sync --group bench)")
    root = Path(list(rtbdata.__path__)[0]) / "xacro"
    if not relpath.endswith(".xacro"):
        return root / relpath
    xacrodoc = pytest.importorskip("xacrodoc", reason="xacro expansion comes with the bench group")
    xacrodoc.packages.update_package_cache({d.name: str(d) for d in root.iterdir() if d.is_dir()})
    path = tmp_path / Path(relpath).name.removesuffix(".xacro")
    path.write_text(xacrodoc.XacroDoc.from_file(root / relpath).to_urdf_string(), encoding="utf-8")
    return path


@pytest.mark.parametrize("urdf, link", [("qut_frankie_description/robots/panda_arm_hand.urdf.xacro", "panda_hand"),
                                        ("kuka_description/kuka_lbr_iiwa/urdf/lbr_iiwa_14_r820.urdf", "tool0"),
                                        ("unimation_puma560_description/urdf/puma560_robot.urdf", "link7")])
def test_robotics_toolbox_urdfs_load_in_one_call_and_match_pinocchio(urdf, link, tmp_path):
    path = _robotics_toolbox_urdf(urdf, tmp_path)
    pin = pytest.importorskip("pinocchio")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the visual meshes are .dae files MuJoCo does not read
        chain = robots.load(path, tool=link)
    model = pin.buildModelFromUrdf(str(path))
    data, frame = model.createData(), model.getFrameId(link)
    # Pinocchio's q holds every joint of the file (the Panda's fingers too); the chain's joints by name
    idx = [model.joints[model.getJointId(name)].idx_q for name in chain.joint_names]
    for q in chain.random_q(np.random.default_rng(18), 50):
        q_pin = pin.neutral(model)
        q_pin[idx] = q
        pin.forwardKinematics(model, data, q_pin)
        pin.updateFramePlacements(model, data)
        J_ref = pin.computeFrameJacobian(model, data, q_pin, frame, pin.LOCAL_WORLD_ALIGNED)[:, idx]
        assert_allclose(tool_pose(chain, q), data.oMf[frame].homogeneous, rtol=0, atol=1e-12)
        assert_allclose(jacobian(chain, q), J_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("call, arg", [
    (lambda: robots.load(None), "name_or_path"), (lambda: robots.load(3), "name_or_path"),
    (lambda: robots.load(""), "name_or_path"), (lambda: robots.mujoco_model(None), "name_or_path"),
    (lambda: robots.mujoco_model(b"so101"), "name_or_path"), (lambda: robots.model_path(None), "name"),
    (lambda: robots.model_path(Path("so101")), "name"), (lambda: robots.load("so101", site=3), "site"),
    (lambda: robots.load("so101", tool=["tcp"]), "tool"), (lambda: robots.load("so101", joints="shoulder_pan"), "joints"),
    (lambda: robots.load("so101", joints=[1, 2]), "joints"), (lambda: robots.load("so101", source=1), "source"),
])
def test_bad_arguments_raise_input_error_naming_the_argument(call, arg):
    with pytest.raises(InputError, match=f"^{arg}:"):
        call()


NAN_ARM = ('<mujoco><worldbody><body pos="nan 0 0"><joint name="j"/><geom size=".1"/><site name="tip"/></body>'
           '</worldbody></mujoco>')


def test_a_model_mujoco_warns_about_leaves_no_log_file_in_the_working_directory(tmp_path, monkeypatch):
    """MuJoCo's default warning handler appends to ./MUJOCO_LOG.TXT; physai's load turns it into a Python warning."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nan_arm.xml").write_text(NAN_ARM)
    with (pytest.warns(UserWarning, match="nan_arm.xml: MuJoCo warns: XML contains a 'NaN'"),
          pytest.raises(InputError, match="not finite")):
        robots.load("nan_arm.xml")
    assert list(tmp_path.iterdir()) == [tmp_path / "nan_arm.xml"]
    assert mujoco.get_mju_user_warning() is None  # MuJoCo's own handler is back for everyone else


def test_cli_on_a_model_that_fails_to_load_writes_nothing_into_the_working_directory(tmp_path):
    model = tmp_path / "models" / "nan_arm.xml"
    model.parent.mkdir()
    model.write_text(NAN_ARM)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cli = [str(Path(sys.executable).parent / "physai")]  # the console script, as a user runs it
    run = subprocess.run(cli + ["fk", "--robot", str(model)], cwd=cwd, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not finite" in run.stderr, run.stderr
    assert list(cwd.iterdir()) == []
