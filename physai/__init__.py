"""physai: robot-arm kinematics you can check -- frames, forward kinematics, Jacobians, IK, null space.

The front door::

    import physai
    chain = physai.load("so101")                   # an immutable Chain
    T = physai.tool_pose(chain, q)                 # (4, 4), world frame
    J = physai.jacobian(chain, q)                  # (6, n): linear rows, then angular; world axes
    result = physai.solve_ik(chain, T_target)      # a frozen IKResult
    problem = physai.ik_problem(chain, T_targets)  # checked once; physai.solve(problem, physai.Solver(...))

Kinematics run the compiled engine by default (``engine="compiled"``); ``engine="numpy"`` runs the readable
NumPy code the lessons teach, which the compiled engine is tested equal to. The names below load on first
use, so ``import physai`` itself stays light.
"""

from __future__ import annotations

from importlib import import_module

# public name -> the module that defines it
_HOME = {
    "load": "physai.robots", "model_path": "physai.robots", "names": "physai.robots",
    "Chain": "physai.chain", "chain_from_mujoco": "physai.chain", "chain_from_bodies": "physai.chain",
    "BodySpec": "physai.chain", "JointSpec": "physai.chain",
    "fk": "physai.kinematics", "tool_pose": "physai.kinematics", "jacobian": "physai.kinematics",
    "tool_pose_and_jacobian": "physai.kinematics", "fd_jacobian": "physai.kinematics", "FK": "physai.kinematics",
    "ENGINES": "physai.kinematics",
    "solve_ik": "physai.ik", "solve_ik_batch": "physai.ik", "IKResult": "physai.ik",
    "IKBatchResult": "physai.ik", "ik_problem": "physai.ik", "solve": "physai.ik", "Task": "physai.ik",
    "Solver": "physai.ik", "Clearance": "physai.ik",
    "collision_world": "physai.collision", "CollisionWorld": "physai.collision",
    "damped_solve": "physai.singularity", "health": "physai.singularity",
    "PhysaiError": "physai.errors", "InputError": "physai.errors", "UnknownNameError": "physai.errors",
    "UnsupportedJointError": "physai.errors", "ModelNotFoundError": "physai.errors",
}
# other names that resolve here but are not in __all__: physai.check grades a notebook's functions
_ALIASES = {"check": ("physai.course.exercise", "check_functions")}
_MODULES = ("errors", "transforms", "chain", "kinematics", "robots", "ik", "nullspace", "singularity", "statics",
            "control", "conventions", "mj", "jaxkin", "jaxik", "collision", "lerobot")

__all__ = [
    "ENGINES",
    "FK",
    "BodySpec",
    "Chain",
    "Clearance",
    "CollisionWorld",
    "IKBatchResult",
    "IKResult",
    "InputError",
    "JointSpec",
    "ModelNotFoundError",
    "PhysaiError",
    "Solver",
    "Task",
    "UnknownNameError",
    "UnsupportedJointError",
    "chain",
    "chain_from_bodies",
    "chain_from_mujoco",
    "collision",
    "collision_world",
    "control",
    "conventions",
    "damped_solve",
    "errors",
    "fd_jacobian",
    "fk",
    "health",
    "ik",
    "ik_problem",
    "jacobian",
    "jaxik",
    "jaxkin",
    "kinematics",
    "lerobot",
    "load",
    "mj",
    "model_path",
    "names",
    "nullspace",
    "robots",
    "singularity",
    "solve",
    "solve_ik",
    "solve_ik_batch",
    "statics",
    "tool_pose",
    "tool_pose_and_jacobian",
    "transforms",
]


def __getattr__(name: str):
    if name == "__version__":  # read on first use: importlib.metadata costs more than the rest of this import
        from importlib.metadata import version

        from physai._extras import DISTRIBUTION

        value = version(DISTRIBUTION)
    elif name in _HOME:
        value = getattr(import_module(_HOME[name]), name)
    elif name in _ALIASES:
        value = getattr(import_module(_ALIASES[name][0]), _ALIASES[name][1])
    elif name in _MODULES:
        value = import_module(f"physai.{name}")
    else:
        raise AttributeError(f"module 'physai' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
