"""Lesson 12, Build it: the null-space projector and the redundant rate qdot = J^+ v + (I - J^+ J) qdot0 in a few
lines (J^+ from the normal equations), checked against physai.nullspace and against MuJoCo's mj_jacSite; then the
projected gradient step -alpha N grad H that lowers a secondary cost while the tool stays put.

Run: uv run python experiments/12-null-space/build.py   (writes build_output.txt and results.json)
The functions in EXERCISE are the ones ``physai exercise 12 DIR`` blanks for you to type; ``physai check 12 DIR``
grades them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from physai import mj, robots
from physai import nullspace as ns
from physai.ik import task_residual
from physai.kinematics import tool_pose, tool_pose_and_jacobian
from physai.course.lesson import full_run, out_dir, run_script, save_results, unsaved

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
SEED = 0
N_POSES = 50  # random poses of the by-hand checks
EXERCISE = ("pinv_by_hand", "projector_by_hand", "redundant_rate_by_hand", "null_space_step")
# libfranka's "ready" pose: the preferred posture of Step 2
PANDA_READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
STEPS, ALPHA = 200, 0.05  # Step 2: projected gradient steps and their rate (1/s x s: dimensionless)


def pinv_by_hand(J: np.ndarray) -> np.ndarray:
    """``J: (m, n)``, full row rank, m < n -> the minimum-norm right inverse ``J^T (J J^T)^-1: (n, m)``."""
    return J.T @ np.linalg.inv(J @ J.T)  # J J^T squares the condition number: round-off ~ eps kappa^2


def projector_by_hand(J: np.ndarray) -> np.ndarray:
    """``N = I - J^+ J: (n, n)``: keeps the part of a joint velocity that the task cannot see."""
    return np.eye(J.shape[1]) - pinv_by_hand(J) @ J


def redundant_rate_by_hand(J: np.ndarray, v: np.ndarray, qdot0: np.ndarray) -> np.ndarray:
    """``J: (m, n)`` (the task Jacobian, m < n), ``v: (m,)`` the task velocity, ``qdot0: (n,)`` rad/s the wished-for
    joint velocity -> ``qdot: (n,)`` rad/s: track ``v`` with the least joint speed (``J^+ v``), and move as close to
    ``qdot0`` as the task allows (``+ N qdot0``, with :func:`pinv_by_hand` and :func:`projector_by_hand`)."""
    return pinv_by_hand(J) @ v + projector_by_hand(J) @ qdot0


def null_space_step(J: np.ndarray, grad_H: np.ndarray, alpha: float) -> np.ndarray:
    """One projected gradient step ``-alpha N grad_H: (n,)`` (rad) on a secondary cost ``H`` (``grad_H: (n,)``, per
    rad): downhill on ``H`` to first order, and invisible to the task (``J @ step = 0``)."""
    return -alpha * projector_by_hand(J) @ grad_H


@dataclass(frozen=True)
class Checks:
    """The largest relative differences over ``n_poses`` poses, each divided by the size of the exact answer (2-norms;
    a projector's is 1), and the relative error the normal equations allow at the worst pose."""

    n_poses: int
    projector_vs_library: float  # |N_hand - ns.projector|_2
    rate_vs_library: float  # |qdot_hand - ns.redundant_rate| / |ns.redundant_rate|
    task_leak: float  # |J_mujoco N_hand qdot0| / |qdot0|: what the secondary motion does to the tool
    idempotence: float  # |N N - N|_2
    tracking: float  # |J_mujoco qdot_hand - v| / |v|
    round_off: float  # eps kappa(J)^2: the relative error of a solve through J J^T, at the worst pose


def check_panda(n_poses: int = 50, seed: int = SEED) -> Checks:
    """The hand-built pieces at ``n_poses`` random Panda poses (6-D pose task, 7 joints), largest differences."""
    chain, model = robots.load("panda"), robots.mujoco_model("panda")
    rng = np.random.default_rng(seed)
    err = np.zeros(6)
    for q in chain.random_q(rng, n_poses, inset=0.1):
        J = mj.site_jacobian(model, chain, q)
        v, qdot0 = rng.normal(size=6), rng.normal(size=7)
        N, qdot, qdot_lib = projector_by_hand(J), redundant_rate_by_hand(J, v, qdot0), ns.redundant_rate(J, v, qdot0)
        err = np.maximum(err, [np.linalg.norm(N - ns.projector(J), 2),
                               np.linalg.norm(qdot - qdot_lib) / np.linalg.norm(qdot_lib),
                               np.linalg.norm(J @ N @ qdot0) / np.linalg.norm(qdot0), np.linalg.norm(N @ N - N, 2),
                               np.linalg.norm(J @ qdot - v) / np.linalg.norm(v),
                               np.finfo(float).eps * np.linalg.cond(J) ** 2])
    return Checks(n_poses, *err)


@dataclass(frozen=True)
class Descent:
    """One descent with rate ``alpha``: its steps, the posture cost (rad^2) and |N grad H| (rad) at the start and
    the end, and the tool's largest position (m) and rotation (rad) drift (MuJoCo's site pose)."""

    alpha: float
    steps: int
    cost_start: float
    cost_end: float
    pg_start: float
    pg_end: float
    drift_pos: float
    drift_rot: float
    q_end: np.ndarray = unsaved()  # (7,) where the descent stopped
    cost: np.ndarray = unsaved()  # (STEPS + 1,) rad^2, the posture cost 1/2 |q - q_ready|^2 along the descent
    drift: tuple[float, float] = unsaved()  # (drift_pos, drift_rot)
    projected_gradient: tuple[float, float] = unsaved()  # (pg_start, pg_end); 0: stationary on the family


def descend_posture(alpha: float = ALPHA, seed: int = SEED, steps: int = STEPS) -> Descent:
    """From a random Panda pose, lower ``H = 1/2 |q - q_ready|^2`` with ``null_space_step`` while holding the tool
    pose (each tick adds the correction ``J^+ e`` of the pose residual, as a resolved-rate loop does)."""
    chain, model = robots.load("panda"), robots.mujoco_model("panda")
    posture = ns.posture_cost(chain, PANDA_READY)
    q = chain.random_q(np.random.default_rng(seed), 1, inset=0.1)[0]
    T0 = tool_pose(chain, q)
    qs, pg = [q], []
    for _ in range(steps):
        T, J = tool_pose_and_jacobian(chain, q[None])
        e = task_residual("pose", T, J, T0[None], np.array([0.0, 0.0, 1.0]))[0][0]
        step = null_space_step(J[0], posture.gradient(q), alpha)
        pg.append(np.linalg.norm(step) / alpha)
        q = q + step + pinv_by_hand(J[0]) @ e
        qs.append(q)
    T_mj = np.array([mj.site_pose(model, chain, qi) for qi in qs])
    dp = np.linalg.norm(T_mj[:, :3, 3] - T_mj[0, :3, 3], axis=-1).max()
    cos = (np.trace(T_mj[:, :3, :3] @ T_mj[0, :3, :3].T, axis1=1, axis2=2) - 1) / 2
    dr = np.arccos(np.clip(cos, -1.0, 1.0)).max()  # rotation angle between the site frames
    cost = posture.value(np.array(qs))
    return Descent(alpha, len(cost) - 1, cost[0], cost[-1], pg[0], pg[-1], dp, dr, qs[-1], cost, (dp, dr),
                   (pg[0], pg[-1]))


@dataclass(frozen=True)
class HalvedStep:
    """Step 2 twice: at ``alpha`` and at half of it over twice the steps; the first's largest position drift over
    the second's (about 4: a second-order error)."""

    runs: tuple[Descent, Descent]
    drift_ratio: float


def halve_the_step(alpha: float = ALPHA, steps: int = STEPS) -> HalvedStep:
    """:func:`descend_posture` at ``alpha`` for ``steps`` steps and at ``alpha / 2`` for ``2 steps``."""
    runs = (descend_posture(alpha, steps=steps), descend_posture(alpha / 2, steps=2 * steps))
    return HalvedStep(runs, runs[0].drift_pos / runs[1].drift_pos)


def main(full: bool = False) -> dict:
    """The lesson's build steps, printed; their numbers saved and returned. ``full``: no larger size
    here."""
    c = check_panda(N_POSES)
    print(f"== Null-space projector and redundant rate by hand vs physai.nullspace and mj_jacSite "
          f"(Panda, {c.n_poses} random poses, seed {SEED}; largest relative differences, 2-norms) ==")
    print(f"  N vs ns.projector {c.projector_vs_library:.1e}; qdot vs ns.redundant_rate {c.rate_vs_library:.1e}")
    print(f"  |J N qdot0| / |qdot0| = {c.task_leak:.1e} (the secondary motion moves the tool by nothing);"
          f" |N N - N| = {c.idempotence:.1e}; |J qdot - v| = {c.tracking:.1e}")
    print(f"  (the normal equations square the condition number: their relative error eps kappa^2 reaches "
          f"{c.round_off:.1e}; the SVD in physai.nullspace does not)")
    halved = halve_the_step()
    runs = halved.runs
    print(f"\n== Step 2. Lower a secondary cost in the null space (Panda, random pose, seed {SEED}; H = 1/2 |q - "
          f"q_ready|^2; steps of -alpha N grad H plus J^+ e) ==")
    for d in runs:
        print(f"  alpha {d.alpha:g}, {d.steps} steps: H {d.cost_start:.4f} -> {d.cost_end:.4f} rad^2, |N grad H| "
              f"{d.pg_start:.3f} -> {d.pg_end:.1e} rad; tool drift (MuJoCo) {d.drift_pos:.1e} m, {d.drift_rot:.1e} rad")
    print(f"  halving alpha divides the drift by {halved.drift_ratio:.2f}: it is each step's "
          "second-order error, which the next correction removes")
    # the page reads the checks' fields at the top (B.task_leak), beside Step 2's two descents
    return save_results(HERE, "build.py", {"seed": SEED, **asdict(c), "descent": runs,
                                           "drift_ratio": halved.drift_ratio})


if __name__ == "__main__":
    run_script(main, __file__, full_run())
