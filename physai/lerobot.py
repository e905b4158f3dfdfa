"""LeRobot's ``RobotKinematics`` on physai's solver: the same constructor, methods, defaults and units.

Hugging Face LeRobot's end-effector pipelines (``lerobot.model.kinematics.RobotKinematics``, lerobot 0.6.1) call
``forward_kinematics(joint_pos_deg) -> (4, 4)`` and ``inverse_kinematics(current_joint_pos, desired_ee_pose,
position_weight=1.0, orientation_weight=0.01) -> joint_pos_deg`` on any object that has them. This one answers
both with :func:`physai.tool_pose` and :func:`physai.solve_ik`, so an SO-101 owner swaps one import::

    # from lerobot.model.kinematics import RobotKinematics
    from physai.lerobot import RobotKinematics

    kinematics = RobotKinematics("so101_new_calib.urdf", "gripper_frame_link", joint_names=motor_names)

Conventions (LeRobot's): joint vectors in degrees, in ``joint_names`` order, possibly longer than it (the tail is
copied through); poses ``T_base_tool`` ``(4, 4)`` in m, in the frame of the model's root link. Joints of
``joint_names`` that do not move the target frame (the gripper) are copied through unchanged.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from physai import kinematics, robots
from physai.chain import chain_from_mujoco
from physai.errors import InputError, UnknownNameError
from physai.ik import DEFAULT_RESTARTS, Solver, Task, ik_problem

__all__ = ["FOLLOW_DISTANCE", "REASONS", "RESTARTS", "RobotKinematics", "SolveReport"]

# last_result.reason: physai's IK reasons, the same words for every task
REASONS = ("converged", "unreachable")
# A target within this distance (m) of the tool at the given joints is being followed (a teleop tick moves it by
# millimetres): a solve that fails there has settled on the best compromise on the arm's branch, and no restart
# may move the arm to another one. For a farther target, a failed attempt from the given joints is followed by
# physai's seeded restarts (its default count; a reachable target stops at the first that converges).
FOLLOW_DISTANCE = 0.02
RESTARTS = DEFAULT_RESTARTS
_ROUND_TRIP = 1e-12  # rad: the most a joint on its limit moves through rad -> deg -> rad
# A followed target: one attempt from the current joints (physai.ik.Solver.tracking); a farther one: the restarts too.
_FOLLOW, _SEEK = Solver.tracking(), Solver(restarts=RESTARTS)


@dataclass(frozen=True)
class SolveReport:
    """How the last :meth:`RobotKinematics.inverse_kinematics` call ended (LeRobot's API has no place to return it).

    ``converged``: both errors within physai's IK tolerances (0.1 mm, 1e-3 rad; position only when
    ``orientation_weight == 0``); ``reason`` one of :data:`REASONS`: ``"unreachable"`` when every attempt stopped
    short of the target (for a followed target the one attempt from the given joints: not reachable on the arm's
    present branch); ``position_error``
    (m) and ``orientation_error`` (rad, 0 for position only) of the returned joints; ``iterations`` over all
    attempts and ``restarts`` used; ``clipped``: the joints whose start lay outside their limits and was clipped
    into them.

    Examples
    --------
    >>> from physai.lerobot import RobotKinematics
    >>> kin = RobotKinematics(str(physai.model_path("so101")), "gripperframe")
    >>> q_deg = kin.inverse_kinematics(np.zeros(6), kin.forward_kinematics(np.full(6, 20.0)))
    >>> kin.last_result.converged, kin.last_result.reason, kin.last_result.position_error < 1e-4
    (True, 'converged', True)
    """

    converged: bool
    reason: str
    position_error: float
    orientation_error: float
    iterations: int
    restarts: int
    clipped: tuple[str, ...] = ()


class RobotKinematics:
    """Forward and inverse kinematics of one target frame, called as LeRobot calls its placo-based class.

    ``urdf_path``: a URDF (or MJCF) file MuJoCo compiles; ``target_frame_name``: the link (or site) whose pose is
    controlled; ``joint_names``: the order of the joint vectors (LeRobot passes its motor names, the gripper
    among them); ``None`` takes every hinge and slide joint of the model, in model order. Names of
    ``joint_names`` on the path to the target frame form the solved chain (``self.chain``); the others are
    copied through; a joint on the path left out of ``joint_names`` stays at zero.

    :meth:`inverse_kinematics` starts from ``current_joint_pos`` (degrees), clipped into the limits (a
    ``UserWarning`` once per joint and object: calibrated motors read a little past the URDF's limits). It
    solves from there first. A target within :data:`FOLLOW_DISTANCE` of the tool is being followed: that one
    attempt is the answer, so a target that moves a little each tick is tracked on the branch the arm is on,
    and where it cannot be met the answer settles on the best compromise there. For a farther target, only
    when that attempt fails outright does it go on to :func:`physai.solve_ik`'s seeded restarts
    (:data:`RESTARTS`), and it returns the best answer of all attempts. It never raises for a reachable or
    unreachable target; ``last_result`` (a :class:`SolveReport`) says how it ended. ``orientation_weight == 0``
    solves the position only. Nothing of one call is kept for the next, except which joints were already warned
    about (and the checked problem of each pair of weights, which no call's joints or target enter).

    Examples
    --------
    physai's SO-101 model stands in for LeRobot's URDF here (its tool site is ``gripperframe``); the gripper, the
    sixth joint, does not move the tool and is carried through:

    >>> from physai.lerobot import RobotKinematics
    >>> kin = RobotKinematics(str(physai.model_path("so101")), target_frame_name="gripperframe")
    >>> kin.joint_names
    ['shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll', 'gripper']
    >>> T_base_tool = kin.forward_kinematics(np.array([10.0, -30.0, 40.0, 50.0, 0.0, 0.0]))
    >>> print(np.round(T_base_tool[:3, 3], 3))
    [ 0.257 -0.04   0.078]
    >>> q_deg = kin.inverse_kinematics(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 25.0]), T_base_tool)
    >>> print(np.round(q_deg, 2))
    [ 10. -30.  40.  50.   0.  25.]
    >>> kin.last_result.reason
    'converged'
    """

    def __init__(self, urdf_path: str, target_frame_name: str = "gripper_frame_link",
                 joint_names: list[str] | None = None):
        import mujoco

        model = robots.mujoco_model(urdf_path)
        moving = [model.joint(j).name for j in range(model.njnt)
                  if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))]
        if joint_names is not None and (isinstance(joint_names, str) or not all(isinstance(j, str) for j in joint_names)
                                        or len(set(joint_names)) != len(joint_names)):
            raise InputError(f"joint_names: expected a list of distinct joint names, got {joint_names!r}")
        self.joint_names = moving if joint_names is None else list(joint_names)
        for name in self.joint_names:
            if name not in moving:
                raise UnknownNameError("joint", name, moving)
        path = chain_from_mujoco(model, target_frame_name).joint_names
        solved = [j for j in path if j in self.joint_names]
        if not solved:
            raise InputError(f"joint_names: none of {self.joint_names} moves {target_frame_name!r} "
                             f"(the joints on its path: {list(path)})")
        self.chain = chain_from_mujoco(model, target_frame_name, solved, name=Path(urdf_path).stem)
        self.target_frame_name = target_frame_name
        self._last = None  # the last solve's rows and clipped joints, read into last_result on access
        index = [self.joint_names.index(j) for j in self.chain.joint_names]
        # the usual order (the chain's joints leading joint_names) reads and writes them as one slice
        self._index = slice(0, len(index)) if index == list(range(len(index))) else np.array(index)
        self._lower, self._upper = self.chain.lower.tolist(), self.chain.upper.tolist()
        self._warned: set[str] = set()
        self._problems: dict = {}  # Task -> the checked IK problem of this chain and its solves, built on first use
        self._weights, self._problem = None, None  # the last call's two weights and their _problem_of

    def forward_kinematics(self, joint_pos_deg: np.ndarray) -> np.ndarray:
        """``T_base_tool`` ``(4, 4)`` (m) of the target frame at ``joint_pos_deg`` (degrees, ``joint_names`` order;
        entries past ``len(joint_names)`` ignored). Joints outside their limits are evaluated where they are.

        Examples
        --------
        >>> from physai.lerobot import RobotKinematics
        >>> kin = RobotKinematics(str(physai.model_path("so101")), "gripperframe")
        >>> print(np.round(kin.forward_kinematics(np.zeros(6))[:3, 3], 3))
        [ 0.391 -0.001  0.246]
        """
        q_deg = self._joint_vector(joint_pos_deg, "joint_pos_deg")
        return kinematics.tool_pose(self.chain, np.deg2rad(q_deg[self._index]))

    def inverse_kinematics(self, current_joint_pos: np.ndarray, desired_ee_pose: np.ndarray,
                           position_weight: float = 1.0, orientation_weight: float = 0.01) -> np.ndarray:
        """Joint positions (degrees, the shape of ``current_joint_pos``) that put the target frame on
        ``desired_ee_pose`` (``T_base_target`` ``(4, 4)``, m), starting from ``current_joint_pos`` (degrees).

        ``position_weight`` (> 0) and ``orientation_weight`` (>= 0; 0: position only) weight the squared position
        (m) and rotation (rad) residuals, as LeRobot's soft frame task does. Never raises for a reachable or
        unreachable target; ``last_result`` says how it ended.

        Examples
        --------
        A target 1 m away, beyond the SO-101's reach: the closest pose it finds, and why.

        >>> from physai.lerobot import RobotKinematics

        >>> kin = RobotKinematics(str(physai.model_path("so101")), "gripperframe")
        >>> T_far = np.eye(4)
        >>> T_far[:3, 3] = [1.0, 0.0, 0.2]
        >>> q_deg = kin.inverse_kinematics(np.zeros(6), T_far, orientation_weight=0.0)
        >>> kin.last_result.converged, kin.last_result.reason, round(kin.last_result.position_error, 2)
        (False, 'unreachable', 0.52)
        """
        current = self._joint_vector(current_joint_pos, "current_joint_pos")
        weights = (position_weight, orientation_weight)
        # a control loop passes the same two floats every tick: their problem is kept, anything else looked up again
        if type(position_weight) is not float or type(orientation_weight) is not float or weights != self._weights:
            self._problem = self._problem_of(_task(*_numbers(position_weight, orientation_weight)))
            self._weights = weights if type(position_weight) is float and type(orientation_weight) is float else None
        problem, follow, seek = self._problem
        q0, clipped = self._clipped_start(np.deg2rad(current[self._index]))
        try:  # a position-only task would take a 3-vector: the adapter never does
            shape = np.shape(desired_ee_pose)
        except ValueError:  # ragged nesting: the check below names it
            shape = (4, 4)
        if shape != (4, 4):
            raise InputError(f"desired_ee_pose: expected one 4x4 T_base_target, got shape {shape}")
        # each call checks its target; the start is this object's own, finite and clipped into the limits above,
        # so the solve trusts it
        try:
            T_target = problem.checked_target(desired_ee_pose)
        except InputError as error:  # named as the caller spelled it
            raise InputError(f"desired_ee_pose:{str(error).partition(':')[2]}") from None
        # A followed target gets one attempt from the current joints; a farther one, if that attempt fails,
        # physai's seeded restarts too (they are tried only after the attempt from q0 has failed).
        rows = (follow if self._follows(q0, T_target[0]) else seek)(T_target, q0)
        self._last = (rows, clipped)
        answer = current.copy()
        if type(self._index) is slice:  # written in place: no temporary
            np.rad2deg(rows.q[0], out=answer[self._index])
        else:
            answer[self._index] = np.rad2deg(rows.q[0])
        return answer

    @property
    def last_result(self) -> SolveReport | None:
        """How the last :meth:`inverse_kinematics` call ended (a :class:`SolveReport`; None before the first)."""
        if self._last is None:
            return None
        rows, clipped = self._last
        return SolveReport(bool(rows.outcome[0] == 0), REASONS[min(int(rows.outcome[0]), 1)], rows.perr.item(0),
                           rows.oerr.item(0), rows.iterations.item(0), rows.restarts.item(0), clipped)

    def _problem_of(self, task: Task) -> tuple:
        """The IK problem of this chain and ``task`` (the chain and task checked once per object) and its trusted
        solves of a followed and of a farther target."""
        if task not in self._problems:
            problem = ik_problem(self.chain, np.eye(4), task=task)
            self._problems[task] = (problem, problem.trusted_solver(_FOLLOW), problem.trusted_solver(_SEEK))
        return self._problems[task]

    def _joint_vector(self, joint_pos, name: str) -> np.ndarray:
        q = np.asarray(joint_pos, dtype=float)
        k = len(self.joint_names)
        if q.ndim != 1 or len(q) < k:
            raise InputError(f"{name}: expected a 1-D vector of at least {k} joint positions "
                             f"(degrees, order {self.joint_names}), got shape {q.shape}")
        # a sum of finite numbers is finite unless it overflows, which the exact test then clears
        if not math.isfinite(sum(q[:k].tolist())) and not np.isfinite(q[:k]).all():
            raise InputError(f"{name}: joint positions must be finite, got {q}")
        return q

    def _clipped_start(self, q0: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
        """``q0`` (rad) clipped into the limits, and the names of the joints that were outside."""
        if all(lo <= x <= hi for lo, x, hi in zip(self._lower, q0.tolist(), self._upper)):
            return q0, ()  # the usual tick: inside, nothing to clip (five float compares cost less than NumPy's)
        lower, upper = self.chain.lower, self.chain.upper
        q_in = np.minimum(np.maximum(q0, lower), upper)
        # an answer on a limit comes back a round-off past it through degrees: clipped without a word
        outside = np.flatnonzero(np.abs(q_in - q0) > _ROUND_TRIP)
        for j in outside:
            name = self.chain.joint_names[j]
            if name not in self._warned:
                self._warned.add(name)
                warnings.warn(f"current_joint_pos: joint {name!r} = {np.rad2deg(q0[j]):.2f} deg is outside its "
                              f"limits [{np.rad2deg(lower[j]):.2f}, {np.rad2deg(upper[j]):.2f}] deg; the solve starts "
                              "from the nearest limit (warned once per joint)", stacklevel=3)
        return q_in, tuple(self.chain.joint_names[j] for j in outside)

    def _follows(self, q0: np.ndarray, T_target: np.ndarray) -> bool:
        """Whether the checked target ``T_target (4, 4)`` lies within :data:`FOLLOW_DISTANCE` of the tool at ``q0``: a
        target being followed."""
        p_target, p_tool = T_target[:3, 3].tolist(), kinematics.tool_pose(self.chain, q0)[:3, 3].tolist()
        return math.dist(p_target, p_tool) <= FOLLOW_DISTANCE  # on three floats half the cost of NumPy's


def _numbers(position_weight, orientation_weight) -> tuple[float, float]:
    try:
        return float(position_weight), float(orientation_weight)
    except (TypeError, ValueError):
        raise InputError(f"position_weight, orientation_weight: expected numbers, got {position_weight!r}, "
                         f"{orientation_weight!r}") from None


@functools.lru_cache(maxsize=16)  # a control loop passes the same two weights every tick
def _task(pw: float, ow: float) -> Task:
    """The IK task of LeRobot's weights: 3 position rows, then 3 rotation rows unless ``orientation_weight == 0``."""
    if not (math.isfinite(pw) and pw > 0):
        raise InputError(f"position_weight: expected a positive number, got {pw!r}")
    if not (math.isfinite(ow) and ow >= 0):
        raise InputError(f"orientation_weight: expected a number >= 0 (0: position only), got {ow!r}")
    return Task("position", (pw,) * 3) if ow == 0 else Task("pose", (pw,) * 3 + (ow,) * 3)
