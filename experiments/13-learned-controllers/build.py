"""Lesson 13, Build it: the two losses of a learned inverse map for the planar 2R, written in NumPy, checked
against physai.learned's JAX losses; and why joint regression fails there, in closed form.

Run: uv run python experiments/13-learned-controllers/build.py   (writes build_output.txt and claims.json)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai import jaxkin, robots
from physai.learned import fk_loss, init_model, joint_loss, predict, sample_dataset
from physai.lesson import Claim, out_dir, publish_claims, run_script, verdict
from physai.seed_robots import PLANAR2R_LINKS

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
SEED = 0
L1, L2 = PLANAR2R_LINKS


def tip(q: np.ndarray) -> np.ndarray:
    """Planar 2R tool point ``(k, 2)`` m for joints ``q: (k, 2)`` rad."""
    return np.c_[L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 0] + q[:, 1]),
                 L1 * np.sin(q[:, 0]) + L2 * np.sin(q[:, 0] + q[:, 1])]


def fk_loss_by_hand(q_pred: np.ndarray, x: np.ndarray) -> float:
    """FK-consistency: the mean squared miss (m^2) of the predicted joints' tool point. No labels needed."""
    return float(np.mean(np.sum((tip(q_pred) - x[:, :2]) ** 2, axis=1)))


def joint_loss_by_hand(q_pred: np.ndarray, q_label: np.ndarray, q_half: np.ndarray) -> float:
    """Joint regression: the mean squared distance to the labels, each joint scaled by its half range."""
    return float(np.mean(np.sum(((q_pred - q_label) / q_half) ** 2, axis=1)))


def elbows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two exact answers (elbow up, elbow down) for targets ``x: (k, 3)``, by the law of cosines."""
    r2 = np.sum(x[:, :2] ** 2, axis=1)
    q2 = np.arccos(np.clip((r2 - L1**2 - L2**2) / (2 * L1 * L2), -1.0, 1.0))
    phi = np.arctan2(x[:, 1], x[:, 0])
    return tuple(np.c_[phi - np.arctan2(L2 * np.sin(s), L1 + L2 * np.cos(s)), s] for s in (q2, -q2))


@dataclass(frozen=True)
class BuildRun:
    loss_fk: tuple[float, float]  # (by hand, physai.learned.fk_loss) on an untrained network's guesses
    loss_joint: tuple[float, float]  # (by hand, physai.learned.joint_loss)
    r: np.ndarray  # (k,) m, target distances from the base
    mean_miss: np.ndarray  # (k,) m, miss of the average of the two elbows


@jaxkin.float64  # physai.learned's losses run in the caller's precision: float64 here, restored after
def run(n_targets: int = 200, seed: int = SEED) -> BuildRun:
    chain = robots.load("planar2r")
    data = sample_dataset(chain, n_targets, np.random.default_rng(seed), seed=seed)
    model = init_model(chain, data.x, np.random.default_rng(seed + 1), hidden=(16, 16), head="bounded")
    q_pred = predict(model, data.x)
    up, down = elbows(data.x)
    mean = 0.5 * (up + down)  # what E|q - label|^2 is minimised by when both elbows are labels
    return BuildRun((fk_loss_by_hand(q_pred, data.x), float(fk_loss(model.params, model, chain, data.x))),
                    (joint_loss_by_hand(q_pred, data.q, model.q_half),
                     float(joint_loss(model.params, model, data.x, data.q))),
                    np.linalg.norm(data.x[:, :2], axis=1), np.linalg.norm(tip(mean) - data.x[:, :2], axis=1))


def claims(b: BuildRun) -> list[Claim]:
    gap = np.abs(b.mean_miss - (L1 + L2 - b.r)).max()
    return [Claim("13", "regression onto both elbows learns their mean: a straight arm that overshoots",
                  "averaging two elbows", f"miss = L1 + L2 - r to {gap:.0e} m", verdict(gap < 1e-12),
                  "closed form: the mean of q2 and -q2 is 0, the straight arm reaches r = L1 + L2", "build.py")]


def main(n_targets: int = 200) -> list[Claim]:
    b = run(n_targets)
    print(f"== The two losses by hand vs physai.learned (planar 2R, untrained network, {len(b.r)} targets) ==")
    print(f"  FK-consistency: {b.loss_fk[0]:.12f} by hand, {b.loss_fk[1]:.12f} physai (m^2)")
    print(f"  joint regression: {b.loss_joint[0]:.12f} by hand, {b.loss_joint[1]:.12f} physai")
    print("\n== Why regression fails on the 2R: the best single answer to two labels is their mean ==")
    print(f"  the mean of the two elbows is a straight arm (q2 = 0): it misses each target by L1 + L2 - r, here "
          f"{b.mean_miss.min() * 1e3:.0f} .. {b.mean_miss.max() * 1e3:.0f} mm")
    return publish_claims(HERE, claims(b), "build.py")


if __name__ == "__main__":
    run_script(main, __file__)
