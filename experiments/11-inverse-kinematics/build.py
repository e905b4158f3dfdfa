"""Lesson 11, Build it: position IK in a dozen lines (iterate the damped step of lesson 10 on the position
error), checked against physai's solve_ik and against MuJoCo's site position.

Run: uv run python experiments/11-inverse-kinematics/build.py   (writes build_output.txt and claims.json)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai import mj, robots
from physai.ik import solve_ik
from physai.kinematics import fk, jacobian
from physai.lesson import Claim, out_dir, publish_claims, run_script, verdict

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
SEED = 0
LAMBDA = 0.02  # m/rad
TOL = 1e-4  # m
MAX_STEP = 0.3  # rad, the largest joint change per step
PATIENCE = 10  # steps in which the error must fall by 1 %


def ik_by_hand(chain, p_target: np.ndarray, q0: np.ndarray, lam: float = LAMBDA, iterations: int = 100):
    """Damped least squares on the position error, clipped into the joint limits -> ``(q, errors per step)``.

    Each step solves min |J dq - e|^2 + lam^2 |dq|^2: Gauss-Newton on |e|^2 / 2 with a trust region, which is
    Levenberg-Marquardt with a fixed damping; no joint moves more than ``MAX_STEP`` per step.
    """
    q, errors = q0.copy(), []
    for _ in range(iterations):
        e = p_target - fk(chain, q).p
        errors.append(np.linalg.norm(e))
        if errors[-1] < TOL or (len(errors) > PATIENCE and errors[-1] > 0.99 * errors[-1 - PATIENCE]):
            break  # converged, or stuck (typically against a joint limit): a restart does better
        J = jacobian(chain, q)[:3]
        dq = J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(3), e)
        dq *= min(1.0, MAX_STEP / np.abs(dq).max())  # far from the target the linear model is poor: short steps
        q = np.clip(q + dq, chain.lower, chain.upper)
    return q, np.array(errors)


def solve_by_hand(chain, p_target: np.ndarray, rng: np.random.Generator, restarts: int = 50):
    """``ik_by_hand`` from the mid-range pose, then from random in-limit poses until one converges
    -> ``(q, steps over all attempts)``."""
    starts = [0.5 * (chain.lower + chain.upper)] + list(chain.random_q(rng, restarts))
    steps = 0
    for q0 in starts:
        q, errors = ik_by_hand(chain, p_target, q0)
        steps += len(errors) - 1
        if errors[-1] < TOL:
            break
    return q, steps


@dataclass(frozen=True)
class BuildRun:
    targets: np.ndarray  # (k, 3) m
    q_hand: np.ndarray  # (k, 5) the hand-built solver's answers
    q_lib: np.ndarray  # (k, 5) solve_ik's answers (position task)
    steps: np.ndarray  # (k,) hand-built steps taken over all attempts
    mujoco_error_hand: np.ndarray  # (k,) m, |p_target - MuJoCo site position at q_hand|
    mujoco_error_lib: np.ndarray  # (k,) m


def run(n_targets: int = 20, seed: int = SEED) -> BuildRun:
    """Random reachable SO-101 positions (FK of in-limit poses, seeded), solved by hand and by solve_ik."""
    chain, model = robots.load("so101"), robots.mujoco_model("so101")
    rng = np.random.default_rng(seed)
    targets = fk(chain, chain.random_q(rng, n_targets)).p
    hand = [solve_by_hand(chain, p, rng) for p in targets]
    lib = [solve_ik(chain, p, task="position", rng=np.random.default_rng(seed)).q for p in targets]
    err = lambda qs: np.array([np.linalg.norm(p - mj.site_pose(model, chain, q)[:3, 3])
                               for p, q in zip(targets, qs)])
    q_hand = np.array([q for q, _ in hand])
    return BuildRun(targets, q_hand, np.array(lib), np.array([n for _, n in hand]), err(q_hand), err(lib))


def print_run(r: BuildRun) -> None:
    print(f"== IK by hand: damped least squares on the position error (lambda {LAMBDA} m/rad), SO-101, "
          f"{len(r.targets)} random reachable targets, from the mid-range pose then up to 50 random restarts ==")
    ok = r.mujoco_error_hand < TOL
    print(f"  converged (MuJoCo site within {TOL:g} m): {ok.sum()} of {len(ok)}; "
          f"steps median {np.median(r.steps):.0f}, max {r.steps.max()}")
    print(f"  MuJoCo error at the hand-built answers: median {np.median(r.mujoco_error_hand):.1e} m; "
          f"at solve_ik's: median {np.median(r.mujoco_error_lib):.1e} m")


def claims(r: BuildRun) -> list[Claim]:
    rate = float(np.mean(r.mujoco_error_hand < TOL))
    return [Claim("11", "iterate the damped step on a pose error and you have Levenberg-Marquardt IK",
                  "it solves IK", f"{rate:.0%} of {len(r.targets)} targets within {TOL:g} m (MuJoCo)",
                  verdict(rate >= 0.9), "at least 90 % of reachable targets with at most 50 restarts (solve_ik: 200)",
                  "build.py")]


def main(n_targets: int = 20) -> list[Claim]:
    r = run(n_targets)
    print_run(r)
    return publish_claims(HERE, claims(r), "build.py")


if __name__ == "__main__":
    run_script(main, __file__)
