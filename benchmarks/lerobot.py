"""physai.lerobot.RobotKinematics beside LeRobot's placo-based RobotKinematics on LeRobot's SO-101 URDF.

    uv run --group lerobot python benchmarks/lerobot.py [--targets 1000] [--ticks 500] [--seed 0]

writes ``benchmarks/LEROBOT_RESULTS.md``. Both objects get the same targets, starts and paths, and every answer
is scored by MuJoCo's compile of the URDF (never by either library's own FK). LeRobot's side is its
``inverse_kinematics`` call as lerobot 0.6.1 makes it (``LeRobotPlaco``: the same placo calls in the same order,
one QP step per call); "LeRobot x100" repeats that call, each from the last answer, up to 100 times until the
answer is within 1 mm and 1 deg. Times are wall-clock per call, the two libraries taking turns on every target.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import platform
import sys
import time
import warnings
from pathlib import Path

import mujoco
import numpy as np

from physai.lerobot import RobotKinematics

HERE = Path(__file__).resolve().parent
URDF = HERE.parent / "tests" / "data" / "so101_lerobot" / "so101_new_calib.urdf"
MOTORS = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]
ONE_MM, ONE_DEG = 1e-3, np.deg2rad(1.0)
REPEATS = 100


class LeRobotPlaco:
    """LeRobot 0.6.1's RobotKinematics (lerobot/model/kinematics.py): its placo calls, in its order."""

    def __init__(self, urdf_path: str, target_frame_name: str = "gripper_frame_link", joint_names=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # pinocchio's hppfcl shim warns on import
            import placo
        self.robot = placo.RobotWrapper(urdf_path)
        self.solver = placo.KinematicsSolver(self.robot)
        self.solver.mask_fbase(True)
        self.target_frame_name = target_frame_name
        self.joint_names = list(self.robot.joint_names()) if joint_names is None else joint_names
        self.tip_frame = self.solver.add_frame_task(self.target_frame_name, np.eye(4))

    def forward_kinematics(self, joint_pos_deg):
        joint_pos_rad = np.deg2rad(joint_pos_deg[: len(self.joint_names)])
        for i, name in enumerate(self.joint_names):
            self.robot.set_joint(name, joint_pos_rad[i])
        self.robot.update_kinematics()
        return self.robot.get_T_world_frame(self.target_frame_name)

    def inverse_kinematics(self, current_joint_pos, desired_ee_pose, position_weight=1.0, orientation_weight=0.01):
        current_joint_rad = np.deg2rad(current_joint_pos[: len(self.joint_names)])
        for i, name in enumerate(self.joint_names):
            self.robot.set_joint(name, current_joint_rad[i])
        self.tip_frame.T_world_frame = desired_ee_pose
        self.tip_frame.configure(self.target_frame_name, "soft", position_weight, orientation_weight)
        self.solver.solve(True)
        self.robot.update_kinematics()
        joint_pos_deg = np.rad2deg([self.robot.get_joint(name) for name in self.joint_names])
        if len(current_joint_pos) > len(self.joint_names):
            result = np.zeros_like(current_joint_pos)
            result[: len(self.joint_names)] = joint_pos_deg
            result[len(self.joint_names):] = current_joint_pos[len(self.joint_names):]
            return result
        return joint_pos_deg


class Scorer:
    """MuJoCo's compile of the URDF: the tool pose of any answer, and the joint limits (deg)."""

    def __init__(self):
        spec = mujoco.MjSpec.from_file(str(URDF))
        spec.compiler.fusestatic = False
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self.adr = np.array([self.model.joint(name).qposadr[0] for name in MOTORS])
        self.body = self.model.body("gripper_frame_link").id
        self.lower = np.rad2deg([self.model.joint(name).range[0] for name in MOTORS[:5]])
        self.upper = np.rad2deg([self.model.joint(name).range[1] for name in MOTORS[:5]])

    def pose(self, q_deg) -> np.ndarray:
        q = np.deg2rad(q_deg[:6])  # the arm's five, and the gripper where given
        self.data.qpos[self.adr[: len(q)]] = q
        mujoco.mj_kinematics(self.model, self.data)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = self.data.xmat[self.body].reshape(3, 3), self.data.xpos[self.body]
        return T

    def errors(self, q_deg, T_target) -> tuple[float, float]:
        T = self.pose(q_deg)
        R = T[:3, :3].T @ T_target[:3, :3]
        angle = np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
        return float(np.linalg.norm(T[:3, 3] - T_target[:3, 3])), float(angle)

    def outside(self, q_deg) -> bool:
        return bool(np.any(q_deg[:5] < self.lower - 1e-9) or np.any(q_deg[:5] > self.upper + 1e-9))


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def random_targets(scorer: Scorer, rng, n: int) -> np.ndarray:
    q = rng.uniform(scorer.lower, scorer.upper, (n, 5))
    return np.hstack([q, np.zeros((n, 1))])


def reachable_path(scorer: Scorer, rng, ticks: int, step: float = 0.01) -> np.ndarray:
    """Joint vectors (deg) whose tool poses lie ``step`` m apart: a random walk in joint space that turns back
    before it leaves the limits shrunk by 10 %, each joint step scaled until the tool moves ``step``."""
    lo, hi = scorer.lower + 0.1 * (scorer.upper - scorer.lower), scorer.upper - 0.1 * (scorer.upper - scorer.lower)
    q = (lo + hi) / 2
    direction = rng.normal(size=5)
    path = []
    for _ in range(ticks):
        direction = 0.9 * direction + 0.3 * rng.normal(size=5)
        p0 = scorer.pose(q)[:3, 3]
        for _ in range(2):  # turn back any joint this step would take past its bound, then scale again
            d = direction / np.linalg.norm(direction)
            for _ in range(4):  # the tool's motion is nearly linear in a step of a few degrees: scale, refine
                d *= step / max(np.linalg.norm(scorer.pose(q + d)[:3, 3] - p0), 1e-12)
            direction[(q + d < lo) | (q + d > hi)] *= -1
        q = np.clip(q + d, lo, hi)
        path.append(np.append(q, 0.0))
    return np.array(path)


def circle_targets(scorer: Scorer, ticks: int, radius: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """LeRobot's gamepad mode: the tool's orientation held, its position on a horizontal circle of ``radius``."""
    q0 = np.array([0.0, -30.0, 30.0, 60.0, 0.0, 0.0])
    T0 = scorer.pose(q0)
    targets = []
    for angle in np.linspace(0, 2 * np.pi, ticks + 1)[1:]:
        T = T0.copy()
        T[:3, 3] += radius * np.array([np.cos(angle) - 1, np.sin(angle), 0.0])
        targets.append(T)
    return q0, np.array(targets)


def random_rows(scorer, solvers, targets_deg) -> dict:
    """Success within 1 mm and 1 deg (pose) and within 1 mm (orientation_weight = 0), from the zero pose and from
    the previous answer; times per call; joint-limit violations."""
    rows = {name: {"times-zero": [], "times-previous": [], "violations": 0} for name in solvers}
    for start_mode in ("zero", "previous"):
        for weight, key in ((0.01, "pose"), (0.0, "position")):
            previous = {name: np.zeros(6) for name in solvers}
            ok = {name: 0 for name in solvers}
            for q_deg in targets_deg:
                T_target = scorer.pose(q_deg)
                for name, (kin, solve) in solvers.items():
                    start = np.zeros(6) if start_mode == "zero" else previous[name]
                    kin.forward_kinematics(start)  # as LeRobot's pipeline does each tick (the observation's pose)
                    answer, seconds = solve(start, T_target, weight)
                    perr, oerr = scorer.errors(answer, T_target)
                    ok[name] += perr < ONE_MM and (key == "position" or oerr < ONE_DEG)
                    rows[name]["violations"] += scorer.outside(answer)
                    if key == "pose":
                        rows[name][f"times-{start_mode}"].append(seconds)
                    previous[name] = answer
            for name in solvers:
                rows[name][f"{key}-{start_mode}"] = ok[name] / len(targets_deg)
    return rows


def track(scorer, solvers, q_start, targets) -> dict:
    """Each tick solved from the previous answer: position error to the target (m) and seconds per tick."""
    out = {}
    for name, (kin, solve) in solvers.items():
        q, errs, times, violations = q_start.copy(), [], [], 0
        kin.forward_kinematics(q)  # the pipeline's observation at the start
        for T_target in targets:
            q, seconds = solve(q, T_target, 0.01)
            errs.append(scorer.errors(q, T_target)[0])
            times.append(seconds)
            violations += scorer.outside(q)
        out[name] = {"err": np.array(errs), "times": np.array(times), "violations": violations}
    return out


def repeated(lerobot: LeRobotPlaco, scorer: Scorer):
    """LeRobot's call repeated from its own last answer, up to REPEATS times or until within 1 mm and 1 deg."""
    def solve(start, T_target, weight):
        q, total = start, 0.0
        for _ in range(REPEATS):
            q, seconds = timed(lerobot.inverse_kinematics, q, T_target, orientation_weight=weight)
            total += seconds
            perr, oerr = scorer.errors(q, T_target)
            if perr < ONE_MM and (weight == 0 or oerr < ONE_DEG):
                break
        return q, total
    return solve


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=1000)
    p.add_argument("--ticks", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=HERE / "LEROBOT_RESULTS.md")
    a = p.parse_args(argv)
    t_start = time.perf_counter()
    scorer = Scorer()
    rng = np.random.default_rng(a.seed)
    physai_kin = RobotKinematics(str(URDF), "gripper_frame_link", joint_names=MOTORS)
    lerobot = LeRobotPlaco(str(URDF), "gripper_frame_link", joint_names=MOTORS)
    solvers = {  # name: (the object, a solve returning (answer, seconds))
        "physai": (physai_kin, lambda s, T, w: timed(physai_kin.inverse_kinematics, s, T, orientation_weight=w)),
        "LeRobot (one call)": (lerobot, lambda s, T, w: timed(lerobot.inverse_kinematics, s, T, orientation_weight=w)),
        f"LeRobot x{REPEATS}": (lerobot, repeated(lerobot, scorer)),
    }
    physai_kin.inverse_kinematics(np.zeros(6), scorer.pose(np.zeros(6)))  # warm: compiled engine loaded
    rows = random_rows(scorer, solvers, random_targets(scorer, rng, a.targets))
    one_call = {k: solvers[k] for k in ("physai", "LeRobot (one call)")}
    path = reachable_path(scorer, rng, a.ticks)
    steps = np.linalg.norm(np.diff([scorer.pose(q)[:3, 3] for q in path], axis=0), axis=1)
    paths = {"reachable path": track(scorer, one_call, path[0], [scorer.pose(q) for q in path[1:]])}
    q0, circle = circle_targets(scorer, a.ticks)
    paths["5 cm circle, orientation held"] = track(scorer, one_call, q0, circle)
    T_far = np.eye(4)
    T_far[:3, 3] = [0.7, 0.3, 0.4]
    far = {name: scorer.errors(solve(np.zeros(6), T_far, 0.0)[0], T_far)[0] for name, (_, solve) in one_call.items()}
    far_result = physai_kin.last_result
    text = report(a, rows, paths, steps, far, far_result, time.perf_counter() - t_start)
    a.out.write_text(text)
    print(text)


def _ms(x) -> str:
    return f"{1e3 * float(x):.3f}"


def report(a, rows, paths, steps, far, far_result, wall_s: float) -> str:
    step = {mode: float(np.median(rows["LeRobot (one call)"][f"times-{mode}"])) for mode in ("zero", "previous")}
    lines = [
        "# physai.lerobot beside LeRobot's placo kinematics (SO-101, so101_new_calib.urdf)",
        "",
        "`uv run --group lerobot python benchmarks/lerobot.py "
        f"--targets {a.targets} --ticks {a.ticks} --seed {a.seed}` "
        f"({wall_s:.0f} s; Python {platform.python_version()}, {platform.machine()}; placo {md.version('placo')}, "
        f"numpy {np.__version__}, mujoco {mujoco.__version__}). Every answer scored by MuJoCo's compile of the URDF. "
        "Times are wall-clock on a shared machine under load: read the ratios, measured in the same run. Before "
        "each call both objects' forward kinematics runs at the start joints, untimed, as LeRobot's pipeline computes "
        "the observation's pose every tick (placo linearises at the joints of its last kinematics update).",
        "",
        f"## {a.targets} random reachable targets (tool poses of uniform joints inside the limits)",
        "",
        "| solver | start | within 1 mm, 1 deg | within 1 mm, position only | median ms per call | p95 ms "
        "| median / one LeRobot call |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        for mode in ("zero", "previous"):
            t = np.array(r[f"times-{mode}"])
            lines.append(f"| {name} | {'zero pose' if mode == 'zero' else 'previous answer'} | {r[f'pose-{mode}']:.1%} "
                         f"| {r[f'position-{mode}']:.1%} | {_ms(np.median(t))} | {_ms(np.percentile(t, 95))} | "
                         f"{np.median(t) / step[mode]:.2f} |")
    lines += ["", "Orientation weight 0.01 (LeRobot's default) for the pose column and the times, 0 for position only. "
              "Answers outside the joint limits, over all these solves: "
              + ", ".join(f"{name} {r['violations']}" for name, r in rows.items()) + ".",
              "", f"## Teleop: {a.ticks} ticks, each solved from the previous answer (orientation weight 0.01)", "",
              f"The reachable path: tool poses of a random walk in joint space, {np.median(steps) * 100:.1f} cm apart "
              f"(median; {steps.min() * 100:.2f}-{steps.max() * 100:.2f} cm). The circle: radius 5 cm, horizontal, "
              "the start's orientation held, which the 5-joint arm cannot keep all round: every tick is a compromise.",
              "", "| path | solver | median position error mm | worst mm | median ms per tick | p95 ms | "
              "median tick / LeRobot's tick | answers outside limits |", "|---|---|---|---|---|---|---|---|"]
    for path, result in paths.items():
        lerobot_tick = np.median(result["LeRobot (one call)"]["times"])
        for name, r in result.items():
            lines.append(f"| {path} | {name} | {_ms(np.median(r['err']))} | {_ms(np.max(r['err']))} | "
                         f"{_ms(np.median(r['times']))} | {_ms(np.percentile(r['times'], 95))} | "
                         f"{np.median(r['times']) / lerobot_tick:.2f} | {r['violations']} |")
    lines += ["", "## A target beyond reach: (0.7, 0.3, 0.4) m from the zero pose, position only", "",
              "| solver | position error mm |", "|---|---|"]
    lines += [f"| {name} | {1e3 * err:.1f} |" for name, err in far.items()]
    lines += ["", f"physai's `last_result`: converged={far_result.converged}, reason={far_result.reason!r}, "
              f"position_error={far_result.position_error:.4f} m.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
