"""Lesson 12, Build it: the null-space projector and the redundant rate qdot = J^+ v + (I - J^+ J) qdot0 in a few
lines (J^+ from the normal equations), checked against physai.nullspace and against MuJoCo's mj_jacSite.

Run: uv run python experiments/12-null-space/build.py   (writes build_output.txt and claims.json beside this file)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai import mj, robots
from physai import nullspace as ns
from physai.lesson import Claim, out_dir, publish_claims, run_script, verdict

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
SEED = 0


def pinv_by_hand(J: np.ndarray) -> np.ndarray:
    """``J: (m, n)``, full row rank, m < n -> the minimum-norm right inverse ``J^T (J J^T)^-1: (n, m)``."""
    return J.T @ np.linalg.inv(J @ J.T)  # J J^T squares the condition number: round-off ~ eps kappa^2


def projector_by_hand(J: np.ndarray) -> np.ndarray:
    """``N = I - J^+ J: (n, n)``: keeps the part of a joint velocity that the task cannot see."""
    return np.eye(J.shape[1]) - pinv_by_hand(J) @ J


def redundant_rate_by_hand(J: np.ndarray, v: np.ndarray, qdot0: np.ndarray) -> np.ndarray:
    """Track ``v`` with the least joint speed, and move as close to ``qdot0`` as the task allows."""
    return pinv_by_hand(J) @ v + projector_by_hand(J) @ qdot0


@dataclass(frozen=True)
class Checks:
    n_poses: int
    projector_vs_library: float  # |N_hand - ns.projector|
    rate_vs_library: float  # |qdot_hand - ns.redundant_rate|
    task_leak: float  # |J_mujoco N_hand qdot0| / |qdot0|: what the secondary motion does to the tool
    idempotence: float  # |N N - N|
    tracking: float  # |J_mujoco qdot_hand - v|
    round_off: float  # eps kappa(J)^2, the normal equations' round-off scale, at the worst pose


def check_panda(n_poses: int = 50, seed: int = SEED) -> Checks:
    """The hand-built pieces at ``n_poses`` random Panda poses (6-D pose task, 7 joints), largest differences."""
    chain, model = robots.load("panda"), robots.mujoco_model("panda")
    rng = np.random.default_rng(seed)
    err = np.zeros(6)
    for q in chain.random_q(rng, n_poses, margin=0.1):
        J = mj.site_jacobian(model, chain, q)
        v, qdot0 = rng.normal(size=6), rng.normal(size=7)
        N, qdot = projector_by_hand(J), redundant_rate_by_hand(J, v, qdot0)
        err = np.maximum(err, [np.abs(N - ns.projector(J)).max(), np.abs(qdot - ns.redundant_rate(J, v, qdot0)).max(),
                               np.linalg.norm(J @ N @ qdot0) / np.linalg.norm(qdot0), np.abs(N @ N - N).max(),
                               np.abs(J @ qdot - v).max(), np.finfo(float).eps * np.linalg.cond(J) ** 2])
    return Checks(n_poses, *err)


def claims(c: Checks) -> list[Claim]:
    return [Claim("12", "null-space projection: a secondary motion that leaves the task alone", "J N = 0",
                  f"|J N qdot0| / |qdot0| <= {c.task_leak:.0e}", verdict(c.task_leak < 10 * c.round_off),
                  "MuJoCo's J times the hand-built N, within 10 eps kappa^2 (round-off)", "build.py")]


def main(n_poses: int = 50) -> list[Claim]:
    c = check_panda(n_poses)
    print(f"== Null-space projector and redundant rate by hand vs physai.nullspace and mj_jacSite "
          f"(Panda, {c.n_poses} random poses, seed {SEED}; largest differences) ==")
    print(f"  N vs ns.projector {c.projector_vs_library:.1e}; qdot vs ns.redundant_rate {c.rate_vs_library:.1e}")
    print(f"  |J N qdot0| / |qdot0| = {c.task_leak:.1e} (the secondary motion moves the tool by nothing);"
          f" |N N - N| = {c.idempotence:.1e}; |J qdot - v| = {c.tracking:.1e}")
    print(f"  (the normal equations square the condition number: eps kappa^2 reaches {c.round_off:.1e}; the SVD in"
          " physai.nullspace does not)")
    return publish_claims(HERE, claims(c), "build.py")


if __name__ == "__main__":
    run_script(main, __file__)
