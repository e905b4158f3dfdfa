"""Lesson 10, Build it: the SVD of a Jacobian from the eigen-decomposition of J J^T, manipulability, the
condition number and the damped inverse, each in a few lines, checked against NumPy, physai.singularity and
MuJoCo's mj_jacSite.

The functions the learner types are listed in ``EXERCISE``: ``physai exercise 10 DIR`` blanks them and
``physai check 10 DIR`` grades them.

Run: uv run python experiments/10-singularities/build.py
(writes build_output.txt and results.json beside this file)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai import mj, robots, singularity
from physai.kinematics import jacobian
from physai.course.lesson import fmt_row, full_run, out_dir, run_script, save_results

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
SEED = 0
N_POSES = 50  # random poses per robot of the by-hand checks
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # lesson 09's SO-101 pose
LAMBDA = 0.05  # m/rad
ROBOTS = ("so101", "wxai")  # Step 2's arms
EXERCISE = ("svd_by_hand", "manipulability", "condition_number", "dls_by_hand")


def svd_by_hand(J: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``J: (m, n)``, full row rank, m <= n -> ``U: (m, m)``, ``sigma: (m,)`` descending, ``V: (n, m)``.

    J J^T = U diag(sigma^2) U^T: its eigenvectors are the task-space axes, the square roots of its eigenvalues
    the gains; each joint-space axis is the joint motion that makes that tool motion, v_i = J^T u_i / sigma_i.
    """
    eig, U = np.linalg.eigh(J @ J.T)  # ascending
    eig, U = eig[::-1], U[:, ::-1]
    sigma = np.sqrt(np.clip(eig, 0.0, None))
    return U, sigma, J.T @ U / sigma


def manipulability(J: np.ndarray) -> float:
    """Yoshikawa's volume of the velocity ellipsoid -> one float: ``sqrt(det(J J^T))`` (= the product of the singular
    values) for ``J: (m, n)``, m <= n (here the 3 x n position rows, m/rad); 0 at a singularity, never NaN."""
    return float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0)))


def condition_number(J: np.ndarray) -> float:
    """``kappa = sigma_max / sigma_min`` of ``J: (m, n)``, m <= n: how much more the best-served tool direction
    moves than the worst for the same joint speed (1 is perfect; inf when a direction is lost)."""
    sigma = np.linalg.svd(J, compute_uv=False)
    return float(sigma[0] / sigma[-1]) if sigma[-1] > 0 else np.inf


def dls_by_hand(J: np.ndarray, v: np.ndarray, lam: float) -> np.ndarray:
    """Damped least squares -> ``qdot: (n,)`` rad/s, the joint rates minimising ``|J qdot - v|^2 + lam^2 |qdot|^2``
    for ``J: (m, n)`` m/rad (position rows), the tool velocity ``v: (m,)`` m/s and the damping ``lam`` m/rad:
    ``qdot = J^T (J J^T + lam^2 I)^-1 v`` with ``I`` the m x m identity (finite at a singular ``J``)."""
    return J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(len(J)), v)


@dataclass(frozen=True)
class Checks:
    """Largest differences over the poses checked on ``robot`` (one number per comparison)."""

    robot: str
    n_poses: int
    jacobian_vs_mujoco: float  # physai's J vs mj_jacSite, position rows
    sigma_vs_numpy: float  # hand sigma vs np.linalg.svd of MuJoCo's J
    sigma_vs_library: float  # hand sigma vs singularity.health
    reconstruction: float  # |U diag(sigma) V^T - J|
    manipulability_vs_library: float  # relative
    kappa_vs_library: float  # relative
    dls_vs_library: float  # hand DLS vs singularity.damped_solve
    peak_gain: float  # the largest |qdot| / |v| seen over all poses and directions with lambda = LAMBDA


def check_robot(name: str, n_poses: int = 50, seed: int = SEED) -> Checks:
    """Compare the hand-built SVD, manipulability and DLS with the references at ``n_poses`` random poses."""
    chain, model = robots.load(name), robots.mujoco_model(name)
    rng = np.random.default_rng(seed)
    err = {k: 0.0 for k in ("jac", "np", "lib", "rec", "man", "kappa", "dls")}
    gain = 0.0
    for q in chain.random_q(rng, n_poses):
        J6 = mj.site_jacobian(model, chain, q)
        J = J6[:3]
        U, S, V = svd_by_hand(J)
        h = singularity.health(J6, "position")
        v = rng.normal(size=3)
        err["jac"] = max(err["jac"], np.abs(jacobian(chain, q)[:3] - J).max())
        err["np"] = max(err["np"], np.abs(S - np.linalg.svd(J, compute_uv=False)).max())
        err["lib"] = max(err["lib"], np.abs(S - h.sigma).max())
        err["rec"] = max(err["rec"], np.abs(U @ np.diag(S) @ V.T - J).max())
        err["man"] = max(err["man"], abs(manipulability(J) / h.manipulability - 1))
        err["kappa"] = max(err["kappa"], abs(condition_number(J) / h.kappa - 1))
        err["dls"] = max(err["dls"], np.abs(dls_by_hand(J, v, LAMBDA) - singularity.damped_solve(J, v, LAMBDA)).max())
        gain = max(gain, np.linalg.norm(dls_by_hand(J, U[:, -1], LAMBDA)))  # the weakest direction, |v| = 1
    return Checks(name, n_poses, err["jac"], err["np"], err["lib"], err["rec"], err["man"], err["kappa"], err["dls"], gain)


def print_checks(name: str, c: Checks) -> None:
    print(f"{name:8s} {c.n_poses:5d} {c.jacobian_vs_mujoco:9.1e} {c.sigma_vs_numpy:9.1e} {c.sigma_vs_library:9.1e} "
          f"{c.reconstruction:9.1e} {c.manipulability_vs_library:9.1e} {c.kappa_vs_library:9.1e} "
          f"{c.dls_vs_library:9.1e} {c.peak_gain:9.3f}")


@dataclass(frozen=True)
class OnePose:
    """Step 1 at the SO-101 pose ``q0`` (rad): the position block's singular values (m/rad), manipulability and the
    product of the sigmas, kappa, the weakest tool direction ``u_weak`` and the joint motion ``v_weak`` that makes
    it, the damped (LAMBDA) and exact gain along it (rad/s per m/s), and the lift's share of ``v_weak``."""

    q0: np.ndarray
    sigma: np.ndarray
    manipulability: float
    prod_sigma: float
    kappa: float
    u_weak: np.ndarray
    v_weak: np.ndarray
    gain_weak: float
    gain_weak_exact: float
    lift_in_v_weak: float


def one_pose() -> OnePose:
    chain = robots.load("so101")
    J = mj.site_jacobian(robots.mujoco_model("so101"), chain, Q0)[:3]
    U, S, V = svd_by_hand(J)
    lift = chain.joint_index("shoulder_lift")
    print(f"== Step 1. SO-101 at q = {fmt_row(Q0, 4, 1)}: position block of mj_jacSite, SVD by hand ==")
    print(f"sigma = {fmt_row(S, 7, 4)} m/rad; manipulability sqrt(det(J J^T)) = {manipulability(J):.6f} "
          f"= prod(sigma) {np.prod(S):.6f}")
    print(f"weakest tool direction u_3 = {fmt_row(U[:, -1], 7, 3)}, "
          f"made by joint motion v_3 = {fmt_row(V[:, -1], 7, 3)}")
    print(f"condition number sigma_1 / sigma_3 = {condition_number(J):.3f}")
    return OnePose(Q0, S, manipulability(J), float(np.prod(S)), condition_number(J), U[:, -1], V[:, -1],
                   float(np.linalg.norm(dls_by_hand(J, U[:, -1], LAMBDA))), 1 / S[-1], float(V[lift, -1]))


def main(full: bool = False) -> dict:
    """The lesson's build steps, printed; their numbers saved and returned. ``full``: no larger size
    here."""
    n_poses = N_POSES
    pose = one_pose()
    print(f"\n== Step 2. Hand-built SVD, manipulability and DLS vs NumPy, physai.singularity and MuJoCo "
          f"({n_poses} random poses each, seed {SEED}; largest differences) ==")
    print(f"{'robot':8s} {'poses':>5s} {'J vs mj':>9s} {'sig np':>9s} {'sig lib':>9s} {'U S V^T':>9s} {'manip':>9s} "
          f"{'kappa':>9s} {'DLS lib':>9s} {'max gain':>9s}")
    checks = []
    for name in ROBOTS:
        checks.append(check_robot(name, n_poses))
        print_checks(name, checks[-1])
    return save_results(HERE, "build.py", {"lambda": LAMBDA, "bound": 1 / (2 * LAMBDA), "pose": pose, "seed": SEED,
                                           "checks": checks, "peak_gain": max(c.peak_gain for c in checks)})


if __name__ == "__main__":
    run_script(main, __file__, full_run())
