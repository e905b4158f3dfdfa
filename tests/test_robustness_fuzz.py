"""Malformed MJCF/URDF files give physai errors: never a crash, a hang, a foreign exception or a NaN chain.

Every file is loaded by ``robots.load`` in a separate worker process, so a segfault or a hang in the
model compiler fails the one example (with the file that caused it) instead of killing the test run.
The reference for "clean" is the error type (a ``PhysaiError``) and the message naming the file.
"""

import json
import re
import selectors
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TIMEOUT_S = 60  # a small model compiles in milliseconds; a minute means a hang, even on a loaded CI machine

WORKER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from physai import robots
    from physai.errors import PhysaiError
    from physai.kinematics import tool_pose_and_jacobian

    for line in sys.stdin:
        req = json.loads(line)
        try:
            chain = robots.load(req["path"], site=req["site"])
            T, J = tool_pose_and_jacobian(chain, chain.random_q(np.random.default_rng(0)))
            out = {"outcome": "chain", "n": chain.n, "finite": bool(np.isfinite(T).all() and np.isfinite(J).all())}
        except PhysaiError as exc:
            out = {"outcome": type(exc).__name__, "message": str(exc)}
        except BaseException as exc:
            out = {"outcome": "foreign", "message": f"{type(exc).__name__}: {exc}"}
        # MuJoCo prints warnings on stdout: the marker tells our answer apart
        print("@@" + json.dumps(out), flush=True)
    """
)


class LoaderWorker:
    """One long-lived ``python`` child that loads model files on request; restarted after a crash or hang."""

    def __init__(self, cwd):
        self.cwd = cwd  # MuJoCo's warnings write MUJOCO_LOG.TXT into the working directory
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1, cwd=self.cwd)

    def stop(self) -> int | None:
        """End the child (if still running), close its pipes, return its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.proc = None
        return code

    def load(self, path, site):
        if self.proc is not None and self.proc.poll() is not None:
            self.stop()
        if self.proc is None:
            self._start()
        self.proc.stdin.write(json.dumps({"path": str(path), "site": site}) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                if not sel.select(timeout=TIMEOUT_S):
                    self.stop()
                    pytest.fail(f"loading {path} hung for {TIMEOUT_S} s")
                line = self.proc.stdout.readline()
                if not line:
                    code = self.stop()
                    pytest.fail(f"loading {path} crashed the interpreter (exit code {code})")
                if line.startswith("@@"):
                    return json.loads(line[2:])
        finally:
            sel.close()


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = LoaderWorker(tmp_path_factory.mktemp("loader"))
    yield w
    w.stop()


def check_clean(result, path):
    """A chain with finite kinematics, or a physai error; a file that will not compile is named."""
    assert result["outcome"] != "foreign", result["message"]
    if result["outcome"] == "chain":
        assert result["finite"], f"{path} loaded into a chain with non-finite kinematics"
    elif result["outcome"] == "ModelNotFoundError":
        assert str(path) in result["message"]


# ---- a fixed corpus of known-bad files -----------------------------------------------------------

ARM = '<joint name="j"/><geom size=".1"/><site name="s"/>'
CORPUS = {
    "empty.xml": ("", "ModelNotFoundError", "empty"),
    "binary.xml": ("\x00\x01\xfe\xff garbage", "ModelNotFoundError", "does not compile"),
    "unclosed.xml": ("<mujoco><worldbody><body>", "ModelNotFoundError", "does not compile"),
    "other_root.xml": ("<robot2/>", "ModelNotFoundError", "'robot2'"),
    "bad_number.xml": (f'<mujoco><worldbody><body pos="a b c">{ARM}</body></worldbody></mujoco>', "ModelNotFoundError", "'pos'"),
    "nan_pos.xml": (f'<mujoco><worldbody><body pos="nan 0 0">{ARM}</body></worldbody></mujoco>', "InputError", "not finite"),
    "inf_axis.xml": ('<mujoco><worldbody><body><joint name="j" axis="inf 0 0"/><geom size=".1"/><site name="s"/>'
                     '</body></worldbody></mujoco>', "InputError", "'j'"),
    "zero_axis.xml": ('<mujoco><worldbody><body><joint axis="0 0 0"/><geom size=".1"/><site name="s"/></body>'
                      '</worldbody></mujoco>', "ModelNotFoundError", "axis"),
    "zero_quat.xml": (f'<mujoco><worldbody><body quat="0 0 0 0">{ARM}</body></worldbody></mujoco>', "ModelNotFoundError", "quaternion"),
    "bad_range.xml": ('<mujoco><worldbody><body><joint range="1 -1" limited="true"/><geom size=".1"/><site name="s"/>'
                      '</body></worldbody></mujoco>', "ModelNotFoundError", "range"),
    "screw_joint.xml": ('<mujoco><worldbody><body><joint type="screw"/><geom size=".1"/><site name="s"/></body>'
                        '</worldbody></mujoco>', "ModelNotFoundError", "'screw'"),
    "missing_include.xml": ('<mujoco><include file="nope.xml"/></mujoco>', "ModelNotFoundError", "nope.xml"),
    "self_include.xml": ('<mujoco><include file="self_include.xml"/></mujoco>', "ModelNotFoundError", "already included"),
    "missing_mesh.xml": ('<mujoco><asset><mesh file="nope.stl"/></asset><worldbody/></mujoco>', "ModelNotFoundError", "nope.stl"),
    "repeated_name.xml": ('<mujoco><worldbody><body><joint name="a"/><geom size=".1"/><body><joint name="a"/>'
                          '<geom size=".1"/><site name="s"/></body></body></worldbody></mujoco>', "ModelNotFoundError", "'a'"),
    "nested_free.xml": ('<mujoco><worldbody><body><joint/><geom size=".1"/><body><freejoint/><geom size=".1"/>'
                        '<site name="s"/></body></body></worldbody></mujoco>', "ModelNotFoundError", "free joint"),
    "too_deep.xml": ("<mujoco><worldbody>" + '<body><joint/><geom size=".01"/>' * 5000 + '<site name="s"/>'
                     + "</body>" * 5000 + "</worldbody></mujoco>", "ModelNotFoundError", "does not compile"),
    "no_site.xml": ('<mujoco><worldbody><body><joint/><geom size=".1"/></body></worldbody></mujoco>', "UnknownNameError", "'s'"),
    "world_site.xml": ('<mujoco><worldbody><site name="s"/></worldbody></mujoco>', "InputError", "no joints"),
    "no_joint.xml": ('<mujoco><worldbody><body><geom size=".1"/><site name="s"/></body></worldbody></mujoco>', "InputError", "no joints"),
    "floating_base.xml": ('<mujoco><worldbody><body><freejoint name="base"/><geom size=".1"/><body><joint name="h"/>'
                          '<geom size=".1"/><site name="s"/></body></body></worldbody></mujoco>', "UnsupportedJointError", "'base'"),
    "massless.urdf": ('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
                      '<child link="b"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
                      "</robot>", "InputError", "tool="),  # loads for kinematics; asks for its tool link
    "orphan.urdf": ('<robot name="r"><link name="a"/><joint name="j" type="revolute"><parent link="x"/><child link="a"/>'
                    "</joint></robot>", "ModelNotFoundError", "parent"),
    "loop.urdf": ('<robot name="r"><link name="a"/><link name="b"/><joint name="j1" type="revolute"><parent link="a"/>'
                  '<child link="b"/></joint><joint name="j2" type="revolute"><parent link="b"/><child link="a"/></joint>'
                  "</robot>", "ModelNotFoundError", "does not compile"),
    "bad_xyz.urdf": ('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
                     '<child link="b"/><origin xyz="x y"/></joint></robot>', "ModelNotFoundError", "'xyz'"),
    "no_sites.urdf": ('<robot name="r"><link name="a"/></robot>', "InputError", "no sites"),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_known_bad_file_gives_a_physai_error_naming_the_problem(worker, tmp_path, name):
    text, outcome, fragment = CORPUS[name]
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    result = worker.load(path, None if name.endswith(".urdf") else "s")
    check_clean(result, path)
    assert result["outcome"] == outcome, result
    assert fragment in result["message"]


def test_model_path_that_is_a_directory_is_named(worker, tmp_path):
    result = worker.load(tmp_path, "s")
    assert result["outcome"] == "ModelNotFoundError" and str(tmp_path) in result["message"]


# ---- random mutations of valid files --------------------------------------------------------------

VALID = {
    "arm.xml": """<mujoco model="arm"><compiler angle="radian"/><worldbody>
      <body name="base" pos="0 0 0.1"><joint name="pan" axis="0 0 1" range="-2 2"/><geom size=".05"/>
        <body name="link" pos="0 0 0.2" quat="0.7 0.7 0 0"><joint name="lift" type="slide" axis="0 0 1" range="0 .3"/>
          <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02"/>
          <body name="hand" pos="0.2 0 0" euler="0.1 0.2 0.3"><joint name="roll" axis="1 0 0"/><geom size=".02"/>
            <site name="tool" pos="0.05 0 0" quat="1 0 1 0"/>
          </body></body></body></worldbody></mujoco>""",
    "arm.urdf": """<robot name="arm"><link name="base"><inertial><mass value="1"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <link name="upper"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="pan" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 0.1" rpy="0 0 0.3"/>
      <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint></robot>""",
}
TOKENS = ["<", ">", "/>", "</body>", "<body>", '"', "=", " ", "nan", "inf", "-inf", "1e400", "-0", "0 0 0", "\x00",
          "&", "&amp;", "<!--", "]]>", 'type="ball"', 'type="free"', "<joint/>", "<include file='x.xml'/>", "é"]


NUMBER = re.compile(r"-?\d+\.?\d*(?:e-?\d+)?")
ODD_NUMBERS = ["nan", "inf", "-inf", "1e400", "1e-320", "0", "-0", "1e30", "-1e30", "1e-30", "3.14159265358979"]


@st.composite
def mutated_files(draw):
    """A valid file with 1-4 textual mutations, or (keeping the XML well formed) 1-3 numbers replaced by odd ones."""
    name = draw(st.sampled_from(sorted(VALID)))
    text = VALID[name]
    if draw(st.booleans()):
        spans = [m.span() for m in NUMBER.finditer(text)]
        picks = draw(st.lists(st.integers(0, len(spans) - 1), min_size=1, max_size=3, unique=True))
        for k in sorted(picks, reverse=True):  # right to left, so earlier spans stay valid
            i, j = spans[k]
            text = text[:i] + draw(st.sampled_from(ODD_NUMBERS)) + text[j:]
        return name, text
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        piece = draw(st.sampled_from(TOKENS) | st.text(max_size=6))
        text = {"delete": text[:i] + text[j:], "insert": text[:i] + piece + text[i:],
                "replace": text[:i] + piece + text[j:], "duplicate": text[:j] + text[i:j] + text[j:]}[op]
    return name, text


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=mutated_files())
def test_mutated_model_files_load_cleanly_or_give_physai_errors(worker, tmp_path, case):
    name, text = case
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    check_clean(worker.load(path, None if name.endswith(".urdf") else "tool"), path)
