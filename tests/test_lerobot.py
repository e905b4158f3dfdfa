"""physai.lerobot.RobotKinematics on the URDF LeRobot drives the SO-101 with (tests/data/so101_lerobot).

References: MuJoCo's own compile of the URDF (mj_kinematics: every pose below is scored by it, never by physai),
LeRobot 0.6.1's signatures (read from lerobot where it is installed, else the copy written here), and, in the
``lerobot`` dependency group, placo (LeRobot's backend) with LeRobot's IK call copied as it is written.
"""

import importlib.util
import inspect
import re
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest

from physai.lerobot import FOLLOW_DISTANCE, RobotKinematics

URDF = Path(__file__).resolve().parent / "data" / "so101_lerobot" / "so101_new_calib.urdf"
ARM = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
MOTORS = [*ARM, "gripper"]  # LeRobot's SO-101 motor names, the order its pipelines pass
ONE_MM, ONE_DEG = 1e-3, np.deg2rad(1.0)

# lerobot 0.6.1, lerobot/model/kinematics.py: RobotKinematics' signatures (names, defaults, kinds)
LEROBOT_SIGNATURES = {
    "__init__": [("self", inspect.Parameter.empty), ("urdf_path", inspect.Parameter.empty),
                 ("target_frame_name", "gripper_frame_link"), ("joint_names", None)],
    "forward_kinematics": [("self", inspect.Parameter.empty), ("joint_pos_deg", inspect.Parameter.empty)],
    "inverse_kinematics": [("self", inspect.Parameter.empty), ("current_joint_pos", inspect.Parameter.empty),
                           ("desired_ee_pose", inspect.Parameter.empty), ("position_weight", 1.0),
                           ("orientation_weight", 0.01)],
}


class MujocoFK:
    """The reference: MuJoCo's compile of the URDF (links kept as bodies), the tool body's pose by mj_kinematics."""

    def __init__(self):
        spec = mujoco.MjSpec.from_file(str(URDF))
        spec.compiler.fusestatic = False  # keep gripper_frame_link, hung on a fixed joint, as a body
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self.adr = [self.model.joint(name).qposadr[0] for name in MOTORS]
        self.body = self.model.body("gripper_frame_link").id
        self.lower = np.rad2deg([self.model.joint(name).range[0] for name in ARM])
        self.upper = np.rad2deg([self.model.joint(name).range[1] for name in ARM])

    def pose(self, q_deg) -> np.ndarray:
        self.data.qpos[:] = 0.0
        self.data.qpos[self.adr[: len(q_deg)]] = np.deg2rad(q_deg[: len(self.adr)])
        mujoco.mj_kinematics(self.model, self.data)
        T = np.eye(4)
        T[:3, :3] = self.data.xmat[self.body].reshape(3, 3)
        T[:3, 3] = self.data.xpos[self.body]
        return T

    def random_deg(self, rng, size) -> np.ndarray:
        return rng.uniform(self.lower, self.upper, (size, len(ARM)))


def errors(T, T_target) -> tuple[float, float]:
    """Position (m) and rotation angle (rad) between two poses."""
    R = T[:3, :3].T @ T_target[:3, :3]
    return float(np.linalg.norm(T[:3, 3] - T_target[:3, 3])), float(np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)))


@pytest.fixture(scope="module")
def ref():
    return MujocoFK()


@pytest.fixture
def kin():
    return RobotKinematics(str(URDF), "gripper_frame_link", joint_names=MOTORS)


def test_signatures_are_lerobots():
    """Against lerobot's own class where it is installed, and always against the copy written above."""
    tables = [LEROBOT_SIGNATURES]
    if importlib.util.find_spec("lerobot") is not None:
        from lerobot.model.kinematics import RobotKinematics as LeRobotKinematics

        tables.append({name: [(p.name, p.default) for p in inspect.signature(getattr(LeRobotKinematics, name))
                              .parameters.values()] for name in LEROBOT_SIGNATURES})
    for table in tables:
        for name, params in table.items():
            ours = inspect.signature(getattr(RobotKinematics, name)).parameters.values()
            assert [(p.name, p.default) for p in ours] == params, name
            assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in ours), name


def test_default_joint_names_are_every_joint_of_the_urdf(ref):
    kin = RobotKinematics(str(URDF))
    assert kin.joint_names == MOTORS == [ref.model.joint(j).name for j in range(ref.model.njnt)]
    assert kin.target_frame_name == "gripper_frame_link" and kin.last_result is None


def test_forward_kinematics_equals_mujoco(kin, ref):
    rng = np.random.default_rng(0)
    Q = np.hstack([ref.random_deg(rng, 200), rng.uniform(-10, 100, (200, 1))])
    Q[:20, :5] += 5.0  # FK evaluates joints past their limits where they are (calibrated motors read there)
    for q_deg in Q:
        np.testing.assert_allclose(kin.forward_kinematics(q_deg), ref.pose(q_deg), rtol=0, atol=1e-12)


def _solve_all(kin, ref, targets_deg, chained: bool):
    """Solve for each target (FK of ``targets_deg``), from the zero pose or from the previous answer; returns the
    answers and their errors scored by MuJoCo."""
    start, answers, errs = np.zeros(6), [], []
    for q_deg in targets_deg:
        T_target = ref.pose(q_deg)
        answer = kin.inverse_kinematics(start if chained else np.zeros(6), T_target)
        answers.append(answer)
        errs.append(errors(ref.pose(answer), T_target))
        start = answer
    return np.array(answers), np.array(errs)


@pytest.mark.parametrize("chained", [False, True], ids=["from-zero", "from-previous"])
def test_reaches_1000_random_targets_within_1mm_and_1deg_inside_the_limits(kin, ref, chained):
    targets = ref.random_deg(np.random.default_rng(2), 1000)
    answers, errs = _solve_all(kin, ref, targets, chained)
    assert np.all(errs[:, 0] < ONE_MM) and np.all(errs[:, 1] < ONE_DEG)
    assert np.all(answers[:, :5] >= ref.lower) and np.all(answers[:, :5] <= ref.upper)
    assert np.all(answers[:, 5] == 0.0)  # the gripper, carried through


def test_gripper_and_extra_entries_are_copied_through(kin, ref):
    T_target = ref.pose(np.array([10.0, -20.0, 30.0, 40.0, 5.0]))
    answer = kin.inverse_kinematics(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 37.5, -1.25]), T_target)
    assert answer.shape == (7,) and answer[5] == 37.5 and answer[6] == -1.25
    assert errors(ref.pose(answer[:6]), T_target)[0] < 1e-4
    assert kin.inverse_kinematics([0, 0, 0, 0, 0, 12], T_target)[5] == 12.0  # a list of ints too


def test_start_outside_limits_is_clipped_with_one_warning_per_joint(kin, ref):
    start = np.array([ref.upper[0] + 2.0, ref.lower[1] - 2.0, 0.0, 0.0, 0.0, 0.0])  # 2 deg past two limits
    T_target = ref.pose(np.zeros(6))
    with pytest.warns(UserWarning, match="outside its limits") as heard:
        answer = kin.inverse_kinematics(start, T_target)
    assert sorted(str(w.message).split("'")[1] for w in heard) == ["shoulder_lift", "shoulder_pan"]
    assert kin.last_result.clipped == ("shoulder_pan", "shoulder_lift") and kin.last_result.converged
    assert np.all(answer[:5] >= ref.lower) and np.all(answer[:5] <= ref.upper)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per joint: the next tick is silent
        kin.inverse_kinematics(start, T_target)
    assert kin.last_result.clipped == ("shoulder_pan", "shoulder_lift")


def test_unreachable_target_returns_the_best_compromise(kin, ref):
    """1 m out, beyond the arm: no random pose of 20,000 (scored by MuJoCo) comes closer than the answer."""
    T_target = np.eye(4)
    T_target[:3, 3] = [0.7, 0.3, 0.4]
    answer = kin.inverse_kinematics(np.zeros(6), T_target, orientation_weight=0.0)
    result = kin.last_result
    assert (result.converged, result.reason) == (False, "unreachable")
    got = errors(ref.pose(answer), T_target)[0]
    assert result.position_error == pytest.approx(got, abs=1e-12)
    sampled = ref.random_deg(np.random.default_rng(3), 20_000)
    assert got <= min(errors(ref.pose(q), T_target)[0] for q in sampled) + 1e-6
    assert np.all(answer[:5] >= ref.lower) and np.all(answer[:5] <= ref.upper)


def test_orientation_weight_zero_solves_position_only(kin, ref):
    T_target = ref.pose(np.array([20.0, -10.0, 20.0, 30.0, 0.0]))
    T_target[:3, :3] = np.diag([1.0, -1.0, -1.0])  # an orientation the 5-joint arm cannot hold there
    kin.inverse_kinematics(np.zeros(6), T_target, orientation_weight=0.0)
    assert kin.last_result.converged and kin.last_result.orientation_error == 0.0
    assert kin.last_result.position_error < 1e-4
    kin.inverse_kinematics(np.zeros(6), T_target)  # weighted like LeRobot: a compromise, reported as such
    assert (kin.last_result.converged, kin.last_result.reason) == (False, "unreachable")


def test_circle_with_fixed_orientation_tracks_without_jumping(kin, ref):
    """LeRobot's gamepad mode: the position moves on a 5 cm circle, the orientation is held; the 5-joint arm
    cannot hold it, so every tick is a compromise, each found from the previous answer with no restart."""
    q = np.array([0.0, -30.0, 30.0, 60.0, 0.0, 0.0])
    T0 = ref.pose(q)
    for angle in np.linspace(0, 2 * np.pi, 201)[1:]:
        T_target = T0.copy()
        T_target[:3, 3] += 0.05 * np.array([np.cos(angle) - 1, np.sin(angle), 0.0])
        answer = kin.inverse_kinematics(q, T_target)
        assert kin.last_result.restarts == 0 and np.max(np.abs(answer - q)) < 5.0  # deg per 1.6 mm tick
        assert errors(ref.pose(answer), T_target)[0] < 0.01
        q = answer
    assert np.linalg.norm(ref.pose(q)[:3, 3] - T0[:3, 3]) < FOLLOW_DISTANCE


def test_no_stale_state_between_calls(kin, ref):
    """Asked to stay where it is right after a forward kinematics call at another pose, it stays."""
    here, elsewhere = np.array([15.0, -40.0, 50.0, 20.0, 10.0, 0.0]), np.array([-60.0, 30.0, -50.0, 0.0, 0.0, 0.0])
    kin.forward_kinematics(elsewhere)
    np.testing.assert_allclose(kin.inverse_kinematics(here, ref.pose(here)), here, atol=1e-9)


def test_each_tick_equals_physais_checked_solve(kin, ref):
    """The adapter's trusted path (Problem.trusted_solver, nothing checked again) against physai.ik.solve on the
    checked problem, its reference: the same joints bit for bit and the same report, on a path of small steps (the
    followed solver), on far targets (the restarts) and on targets out of reach, pose and position only."""
    import physai
    from physai.ik import Solver, Task, ik_problem, solve

    rng = np.random.default_rng(7)
    T_out = np.eye(4)
    T_out[:3, 3] = [0.7, 0.3, 0.4]
    q = np.array([0.0, -30.0, 30.0, 60.0, 0.0, 0.0])
    seen = set()
    for tick in range(60):
        target = q + np.append(rng.normal(0.0, 1.0 if tick % 3 else 40.0, 5), 0.0)
        T_target = T_out if tick % 10 == 0 else ref.pose(np.clip(target[:5], ref.lower, ref.upper))
        weight = 0.0 if tick % 4 == 0 else 0.01
        answer = kin.inverse_kinematics(q, T_target, orientation_weight=weight)
        task = Task("position", (1.0,) * 3) if weight == 0 else Task("pose", (1.0,) * 3 + (weight,) * 3)
        q0 = np.clip(np.deg2rad(q[:5]), kin.chain.lower, kin.chain.upper)  # an answer on a limit, back through deg
        problem = ik_problem(kin.chain, T_target, q0, task=task)
        followed = np.linalg.norm(T_target[:3, 3] - physai.tool_pose(kin.chain, q0)[:3, 3]) <= FOLLOW_DISTANCE
        expected = solve(problem, Solver.tracking() if followed else Solver())
        np.testing.assert_array_equal(answer[:5], np.rad2deg(expected.q[0]))
        report = kin.last_result
        assert (report.converged, report.reason, report.position_error, report.orientation_error,
                report.iterations, report.restarts) == (expected.converged[0], expected.reason[0],
                                                        expected.position_error[0], expected.orientation_error[0],
                                                        expected.iterations[0], expected.restarts[0])
        seen.add((bool(followed), report.reason))
        q = answer
    assert {(True, "converged"), (False, "converged"), (False, "unreachable")} <= seen


def test_trusted_solver_runs_only_the_compiled_plain_solve(kin):
    from physai.errors import InputError
    from physai.ik import Solver, ik_problem

    with pytest.raises(InputError, match="trusted_solver: runs a compiled 'lm' Solver"):
        ik_problem(kin.chain, np.eye(4)).trusted_solver(Solver(backend="numpy"))


def test_bad_input_is_one_clear_error(kin):
    from physai.errors import InputError, UnknownNameError

    with pytest.raises(InputError, match="current_joint_pos: expected a 1-D vector of at least 6"):
        kin.inverse_kinematics(np.zeros(4), np.eye(4))
    with pytest.raises(InputError, match="position_weight"):
        kin.inverse_kinematics(np.zeros(6), np.eye(4), position_weight=0.0)
    kin.inverse_kinematics(np.zeros(6), np.eye(4))  # a valid pair kept for the next tick ...
    with pytest.raises(InputError, match="position_weight"):  # ... is not mistaken for an array of them
        kin.inverse_kinematics(np.zeros(6), np.eye(4), position_weight=np.ones(2))
    with pytest.raises(InputError, match="current_joint_pos: joint positions must be finite"):
        kin.inverse_kinematics(np.array([0.0, np.nan, 0.0, 0.0, 0.0, 0.0]), np.eye(4))
    for bad in (np.eye(3), np.stack([np.eye(4)] * 2), np.full((4, 4), np.nan), [[1.0, 0.0], [0.0]]):
        with pytest.raises(InputError, match="desired_ee_pose: "):
            kin.inverse_kinematics(np.zeros(6), bad)
    with pytest.raises(InputError, match="desired_ee_pose: expected one 4x4"):  # a position-only task too
        kin.inverse_kinematics(np.zeros(6), np.array([0.2, 0.0, 0.1]), orientation_weight=0.0)
    with pytest.raises(UnknownNameError, match="wrist_yaw"):
        RobotKinematics(str(URDF), joint_names=[*ARM[:4], "wrist_yaw"])


# ---- the lessons' "On the real robot" snippets, run as written against MuJoCo with an ideal servo -----------------

LESSONS = Path(__file__).resolve().parents[1] / "experiments"


def _real_robot_snippet(folder: str) -> str:
    text = (LESSONS / folder / "lesson.md").read_text()
    section = text[text.index("## On the real robot"):]
    section = section[: section.index("\n## ", 1)]
    return re.search(r"```python\n(.*?)```", section, re.S)[1]


@pytest.mark.parametrize("folder, ticks, moved", [
    ("09-jacobians", 30, [0.03, 0.0, 0.0]),
    ("11-inverse-kinematics", 50, [0.0, 0.0, 0.05]),
])
def test_lesson_snippet_moves_the_gripper_as_it_says(folder, ticks, moved, ref, monkeypatch):
    """The page's loop, exec'd as written from the URDF's folder; the servo reaches each command exactly, and MuJoCo
    scores where the gripper went."""
    monkeypatch.chdir(URDF.parent)
    arm = {"q": np.array([0.0, -30.0, 30.0, 60.0, 0.0, 20.0]), "sent": 0}
    start = ref.pose(arm["q"])

    def send_joints_deg(q_deg):
        arm["q"], arm["sent"] = np.array(q_deg, dtype=float), arm["sent"] + 1

    exec(_real_robot_snippet(folder), {"MOTORS": MOTORS, "read_joints_deg": lambda: arm["q"].copy(),
                                       "send_joints_deg": send_joints_deg})
    end = ref.pose(arm["q"])
    assert arm["sent"] == ticks and arm["q"][5] == 20.0
    np.testing.assert_allclose(end[:3, 3] - start[:3, 3], moved, atol=1e-4)
    if folder.startswith("11"):
        assert errors(end, start)[1] < 1e-3  # the orientation held


# ---- the lerobot group: placo, LeRobot's backend, beside physai ------------------------------------------------


def _benchmark():
    """benchmarks/lerobot.py, where LeRobot's placo call is copied."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "lerobot.py"
    spec = importlib.util.spec_from_file_location("lerobot_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def placo():
    """placo, or a skip: absent (it is in the lerobot dependency group: ``uv run --group lerobot pytest
    tests/test_lerobot.py``), or present but unable to load its Pinocchio (an environment that mixes groups)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pinocchio's hppfcl shim warns on import
        try:
            import placo
        except ImportError as exc:
            pytest.skip(f"placo does not import ({exc}); it is in the lerobot dependency group: "
                        "uv run --group lerobot pytest tests/test_lerobot.py")
    return placo


def test_placo_forward_kinematics_equals_physai(kin, placo):
    robot = placo.RobotWrapper(str(URDF))
    rng = np.random.default_rng(4)
    for q_deg in np.hstack([MujocoFK().random_deg(rng, 100), np.zeros((100, 1))]):
        for name, value in zip(MOTORS, np.deg2rad(q_deg)):
            robot.set_joint(name, value)
        robot.update_kinematics()
        np.testing.assert_allclose(robot.get_T_world_frame("gripper_frame_link"), kin.forward_kinematics(q_deg),
                                   rtol=0, atol=1e-12)


def test_lerobot_ik_call_beside_physai(kin, ref, placo):
    """LeRobot's call (one placo QP step per call), copied as written, beside physai's on the same targets: physai
    reaches every one within 1 mm and 1 deg; one LeRobot step reaches fewer."""
    lerobot_kin = _benchmark().LeRobotPlaco(str(URDF), joint_names=MOTORS)
    targets = ref.random_deg(np.random.default_rng(5), 50)
    ok = {"physai": 0, "lerobot": 0}
    for q_deg in targets:
        T_target = ref.pose(q_deg)
        for name, solver in (("physai", kin), ("lerobot", lerobot_kin)):
            perr, oerr = errors(ref.pose(solver.inverse_kinematics(np.zeros(6), T_target)), T_target)
            ok[name] += perr < ONE_MM and oerr < ONE_DEG
    assert ok["physai"] == len(targets) and ok["lerobot"] < len(targets)


@pytest.mark.skipif(importlib.util.find_spec("lerobot") is None,
                    reason="lerobot is not installed (it needs Python >= 3.12); its processor steps are not run")
def test_lerobot_processor_steps_run_with_physai(kin, ref):
    """LeRobot's own steps with physai's object in place of theirs: joints -> ee pose -> joints."""
    from lerobot.processor import TransitionKey
    from lerobot.robots.so_follower.robot_kinematic_processor import (
        ForwardKinematicsJointsToEE,
        InverseKinematicsEEToJoints,
    )

    q_deg = np.array([10.0, -20.0, 30.0, 40.0, 5.0, 20.0])
    joints = {f"{name}.pos": float(v) for name, v in zip(MOTORS, q_deg)}
    ee = ForwardKinematicsJointsToEE(kinematics=kin, motor_names=MOTORS)(
        {TransitionKey.ACTION: dict(joints), TransitionKey.OBSERVATION: None})[TransitionKey.ACTION]
    np.testing.assert_allclose([ee["ee.x"], ee["ee.y"], ee["ee.z"]], ref.pose(q_deg)[:3, 3], atol=1e-12)
    start = {f"{name}.pos": 0.0 for name in MOTORS}
    out = InverseKinematicsEEToJoints(kinematics=kin, motor_names=MOTORS, orientation_weight=0.01)(
        {TransitionKey.ACTION: dict(ee), TransitionKey.OBSERVATION: start})[TransitionKey.ACTION]
    answer = np.array([out[f"{name}.pos"] for name in MOTORS])
    assert errors(ref.pose(answer), ref.pose(q_deg))[0] < 1e-4 and answer[5] == 20.0
