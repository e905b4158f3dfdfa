"""Lesson 09, Build it: the SO-101 Jacobian from hinge columns, checked step by step against MuJoCo.

The three functions the learner types (``EXERCISE``) are written here from scratch on top of lesson 08's ``fk``;
``physai exercise 09 DIR`` blanks them and ``physai check 09 DIR`` grades them.

Run: uv run python experiments/09-jacobians/build.py
(writes build_output.txt and results.json beside this file)
"""

from dataclasses import dataclass

import numpy as np

from physai import kinematics as lib
from physai import mj, robots
from physai.kinematics import fk
from physai.course.lesson import (
    fmt_row,
    full_run,
    out_dir,
    run_script,
    save_results,
)

EXERCISE = ("hinge_column", "jacobian", "fd_jacobian")

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
N_POSES = 50
FD_EPS = 1e-5  # rad, Step 4's central-difference step (near cbrt(eps_mach))
FORCES = [np.array([0, 0, -2.0]), np.array([2.0, 0, 0]), np.array([0, 1.5, 0])]
SCRIPT = "build.py"


def hinge_column(axis: np.ndarray, o: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The tool's twist when this one hinge turns at 1 rad/s and every other joint holds still -> ``(6,)``.

    ``axis: (3,)`` the hinge's unit axis; ``o: (3,)`` m, a point on that axis (any point: the answer must not depend
    on which); ``p: (3,)`` m, the tool point. All three in world axes, as ``fk(chain, q)`` gives them. Returns a new
    array: entries 0-2 the tool point's linear velocity (m/s per rad/s of the hinge), entries 3-5 the tool's angular
    velocity (rad/s per rad/s), both in world axes. The inputs are left unchanged.
    """
    return np.concatenate([np.cross(axis, p - o), axis])


def jacobian(chain, q: np.ndarray) -> np.ndarray:
    """Geometric Jacobian of the tool point at ``q: (n,)`` rad -> ``(6, n)``, world axes.

    Column i is the tool's twist when joint i alone turns at 1 rad/s: rows 0-2 the tool point's linear velocity
    (m/s per rad/s), rows 3-5 its angular velocity (rad/s per rad/s). ``chain`` is a physai chain of hinges
    (``physai.load("so101")``; the grader also uses the WidowX AI, whose axes point along x, y, -y and -z). Lesson
    08's forward kinematics ``fk(chain, q)`` (imported above) returns ``axes (n, 3)``, each joint's unit axis,
    ``anchors (n, 3)`` m, a point on each joint's axis, and ``p (3,)`` m, the tool point (the tool offset
    included), all in world axes and in the chain's joint order. ``q`` is left unchanged.
    """
    axes, anchors, p = fk(chain, q)
    return np.column_stack([hinge_column(a, o, p) for a, o in zip(axes, anchors)])


def fd_jacobian(tool_pos, q: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Jacobian of any function ``tool_pos: (n,) -> (m,)`` at ``q: (n,)``, estimated by central differences ->
    ``(m, n)``.

    ``tool_pos`` takes a pose ``(n,)`` and returns ``(m,)`` floats (for the arm, the tool position in m:
    ``lambda q: fk(chain, q).p``). ``eps`` is the step (rad) taken by one joint at a time; entry ``[j, i]``
    estimates d tool_pos[j] / d q[i], in tool_pos's units per rad. The default step balances the central
    difference's truncation error against round-off (Math details). ``q`` is left unchanged.
    """
    cols = []
    for i in range(len(q)):
        dq = np.zeros(len(q))
        dq[i] = eps
        cols.append((tool_pos(q + dq) - tool_pos(q - dq)) / (2 * eps))
    return np.column_stack(cols)


@dataclass(frozen=True)
class Column:
    """Step 1: the shoulder_lift column ``[a x (p - o); a]`` split into its linear (m/rad) and angular (1/rad) parts,
    MuJoCo's column, the lever ``|a x (p - o)|`` (m), and the largest difference from MuJoCo's and physai's."""

    linear: np.ndarray
    angular: np.ndarray
    mujoco: np.ndarray
    lever: float
    diff: float
    vs_library: float


def column_step(m, chain, q=Q0) -> Column:
    """Step 1: the shoulder_lift column ``[a x (p - o); a]`` at ``q``, ours and MuJoCo's."""
    axes, anchors, p = fk(chain, q)
    ours, mujoco = hinge_column(axes[1], anchors[1], p), mj.site_jacobian(m, chain, q)[:, 1]
    return Column(ours[:3], ours[3:], mujoco, float(np.linalg.norm(ours[:3])), float(np.abs(ours - mujoco).max()),
                  float(np.abs(ours - lib.hinge_column(axes[1], anchors[1], p)).max()))


def random_poses(chain, n_poses=N_POSES) -> np.ndarray:
    """Step 2's and Step 4's poses ``(n_poses, n)`` (rad), within the limits (random seed SEED)."""
    return chain.random_q(np.random.default_rng(SEED), n_poses)


@dataclass(frozen=True)
class JacobianCheck:
    """Step 2: over ``n`` poses, the largest entry error of the linear and angular rows against mj_jacSite, and
    against physai's own ``jacobian``."""

    n: int
    linear: float
    angular: float
    vs_library: float


def jacobian_step(m, chain, poses) -> JacobianCheck:
    """Step 2: max entry error of the hinge-column Jacobian against mj_jacSite over the ``poses`` (and against
    physai's own ``jacobian``)."""
    err = np.array([np.abs(jacobian(chain, q) - mj.site_jacobian(m, chain, q)) for q in poses])
    lib_err = max(np.abs(jacobian(chain, q) - lib.jacobian(chain, q)).max() for q in poses)
    return JacobianCheck(len(poses), float(err[:, :3].max()), float(err[:, 3:].max()), float(lib_err))


@dataclass(frozen=True)
class Use:
    """Step 3: the tool velocity (3,) m/s in the world frame and its length, the speed, with every joint at
    1/sqrt(n) rad/s; the forces (N), J^T F for each (N m), and the torque on shoulder_lift under the first (the
    downward push)."""

    velocity: np.ndarray
    speed: float
    forces: np.ndarray
    tau: tuple[np.ndarray, ...]
    lift_push_down: float


def use_step(chain, q=Q0) -> Use:
    """Step 3: tool speed with every joint at 1/sqrt(n) rad/s, and J^T F for the three forces."""
    J = jacobian(chain, q)
    tau = tuple(J[:3].T @ F for F in FORCES)
    v = J[:3] @ np.full(chain.n, chain.n**-0.5)
    return Use(v, float(np.linalg.norm(v)), FORCES, tau, float(tau[0][1]))


@dataclass(frozen=True)
class FiniteDiff:
    """Step 4: the step ``eps`` (rad) and the median over poses of the largest entry error of central differences."""

    eps: float
    median: float


def fd_step(chain, poses, eps=FD_EPS) -> FiniteDiff:
    """Step 4: median over poses of the max entry error of central differences of our FK vs our Jacobian."""
    errs = [np.abs(fd_jacobian(lambda x: fk(chain, x).p, q, eps=eps) - jacobian(chain, q)[:3]).max() for q in poses]
    return FiniteDiff(eps, float(np.median(errs)))


def print_steps(chain, column, jac, use, fd) -> None:
    q0 = "(" + ", ".join(f"{x:g}" for x in Q0) + ")"
    print(f"\n== Step 1. One hinge column at q = {q0} ==")
    print(f"shoulder_lift column, ours:   {fmt_row(np.concatenate([column.linear, column.angular]))}")
    print(f"shoulder_lift column, MuJoCo: {fmt_row(column.mujoco)}")
    print(f"lever |a x (p - o)| = {column.lever:.4f} m, max difference {column.diff:.1e}")
    print(f"\n== Step 2. Jacobian from hinge columns vs mj_jacSite ({jac.n} poses) ==")
    print(f"max entry error: linear rows {jac.linear:.1e}, angular rows {jac.angular:.1e}")
    print(f"\n== Step 3. Use it at q = {q0} ==")
    print(f"tool speed for every joint at 1/sqrt({chain.n}) rad/s: {use.speed:.3f} m/s, velocity "
          f"{np.array2string(use.velocity, precision=3)} m/s (world x, y, z)")
    for F, tau in zip(use.forces, use.tau):
        label = "[" + ", ".join("0" if v == 0 else f"{v:.1f}" for v in F) + "] N"
        print(f"F = {label:>16s}  ->  J^T F = {fmt_row(tau)} N m")
    print(f"\n== Step 4. Central differences of our FK vs our analytic Jacobian (eps = {fd.eps:.0e}) ==")
    print(f"median max entry error: {fd.median:.1e}")


def main(full: bool = False) -> dict:
    """The lesson's build steps, printed; their numbers saved and returned. ``full``: no larger size
    here."""
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; tool site {chain.tool_name!r}; random seed {SEED}")
    poses = random_poses(chain)
    column, jac, use, fd = column_step(m, chain), jacobian_step(m, chain, poses), use_step(chain), fd_step(chain, poses)
    print_steps(chain, column, jac, use, fd)
    return save_results(HERE, SCRIPT, {"q0": Q0, "column": column, "jac": jac, "use": use, "fd": fd})


if __name__ == "__main__":
    run_script(main, __file__, full_run())
