"""Lesson 13, Build it: a learned inverse map for the planar 2R in NumPy: the network's forward pass, its two
losses (checked against physai.learned's JAX), why joint regression fails there (in closed form), the hybrid's
refinement step (checked against physai.singularity.damped_solve), which cannot rescue the averaged answer, and a
tiny network trained by hand on both elbows, which learns their average (checked against the closed-form floor of
its loss).

Run: uv run python experiments/13-learned-controllers/build.py   (writes build_output.txt, results.json)
The functions in EXERCISE are the ones ``physai exercise 13 DIR`` blanks for you to type; ``physai check 13 DIR``
grades them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from physai import jaxkin, robots
from physai.kinematics import jacobian
from physai.learned import fk_loss, init_model, joint_loss, predict, sample_dataset
from physai.course.lesson import full_run, out_dir, run_script, save_results, unsaved
from physai.example_robots import PLANAR2R_LINKS
from physai.singularity import damped_solve

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
SEED = 0
N_TARGETS = 200  # random targets of the by-hand checks
L1, L2 = PLANAR2R_LINKS
EXERCISE = ("mlp_forward", "tip", "fk_loss_by_hand", "joint_loss_by_hand", "elbows", "dls_step", "regression_step")
DAMPING = 0.01  # m/rad, the hybrid's damping
REFINE_STEPS = (0, 1, 2, 3, 5, 10, 30)
# Step 4's tiny network and its training: targets in the right half-plane at r in R_TRAIN (m), each with both elbows
# as labels; full-batch gradient descent. About a second on a CPU.
R_TRAIN, N_TRAIN, HIDDEN, TRAIN_STEPS, LEARNING_RATE = (0.3, 0.75), 400, 16, 2000, 0.2


def mlp_forward(params: dict, norm: dict, x: np.ndarray, head: str) -> np.ndarray:
    """The inverse network: targets ``x: (k, 3)`` m (world frame) -> joints ``(k, n)`` rad.

    ``params`` holds the weights of ``L`` layers, ``W0, b0, ..., W{L-1}, b{L-1}`` (``L = len(params) // 2``):
    ``W{i}: (in, out)``, ``b{i}: (out,)``, the first taking 3 inputs, the last giving ``n`` joints. ``norm`` holds
    ``x_mean (3,)`` and ``x_scale (3,)`` m, the targets' mean and spread, and ``q_mid (n,)``, ``q_half (n,)`` rad,
    the middle and the half range of each joint's limits. Steps: normalise, ``h = (x - x_mean) / x_scale``; each of
    the ``L - 1`` hidden layers is ``h = tanh(h @ W{i} + b{i})``; the last is ``z = h @ W{L-1} + b{L-1}``, kept as
    is for ``head == "linear"`` and squashed to ``tanh(z)`` for ``head == "bounded"``; return ``q_mid + q_half *
    z`` (the head's ``z``).
    """
    h = (x - norm["x_mean"]) / norm["x_scale"]
    last = len(params) // 2 - 1
    for i in range(last):
        h = np.tanh(h @ params[f"W{i}"] + params[f"b{i}"])
    z = h @ params[f"W{last}"] + params[f"b{last}"]
    return norm["q_mid"] + norm["q_half"] * (np.tanh(z) if head == "bounded" else z)


def tip(q: np.ndarray) -> np.ndarray:
    """Planar 2R tool point ``(k, 2)`` m (x, y) for joints ``q: (k, 2)`` rad (shoulder ``q1``, elbow ``q2``):
    ``L1 (cos q1, sin q1) + L2 (cos(q1 + q2), sin(q1 + q2))`` with the link lengths ``L1``, ``L2`` (m) above."""
    return np.c_[L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 0] + q[:, 1]),
                 L1 * np.sin(q[:, 0]) + L2 * np.sin(q[:, 0] + q[:, 1])]


def fk_loss_by_hand(q_pred: np.ndarray, x: np.ndarray) -> float:
    """FK-consistency -> one float (m^2): for joints ``q_pred: (k, 2)`` rad and targets ``x: (k, 3)`` m (z = 0), the
    mean over the k targets of the squared distance ``|tip(q_pred) - x[:, :2]|^2`` (x and y errors squared and
    summed per target, then averaged over targets). No labels needed."""
    return float(np.mean(np.sum((tip(q_pred) - x[:, :2]) ** 2, axis=1)))


def joint_loss_by_hand(q_pred: np.ndarray, q_label: np.ndarray, q_half: np.ndarray) -> float:
    """Joint regression -> one float (dimensionless): for ``q_pred``, ``q_label: (k, n)`` rad and the half ranges
    ``q_half: (n,)`` rad, the mean over the k rows of ``sum(((q_pred - q_label) / q_half)^2)`` (each joint's error
    scaled by its half range, squared, summed over the joints, then averaged over the rows)."""
    return float(np.mean(np.sum(((q_pred - q_label) / q_half) ** 2, axis=1)))


def elbows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two exact answers for targets ``x: (k, 3)`` m (z = 0), by the law of cosines -> ``(up, down)``, each
    ``(k, 2)`` rad (``q1``, ``q2``): "elbow up" is the answer with ``q2 > 0`` (``q2 = +acos(c)``), "elbow down" the
    one with ``q2 < 0``; ``c = (r^2 - L1^2 - L2^2) / (2 L1 L2)`` clipped to [-1, 1], ``r^2 = x^2 + y^2``, and
    ``q1 = atan2(y, x) - atan2(L2 sin q2, L1 + L2 cos q2)`` with that elbow's ``q2``."""
    r2 = np.sum(x[:, :2] ** 2, axis=1)
    q2 = np.arccos(np.clip((r2 - L1**2 - L2**2) / (2 * L1 * L2), -1.0, 1.0))
    phi = np.arctan2(x[:, 1], x[:, 0])
    return tuple(np.c_[phi - np.arctan2(L2 * np.sin(s), L1 + L2 * np.cos(s)), s] for s in (q2, -q2))


def dls_step(J: np.ndarray, e: np.ndarray, damping: float) -> np.ndarray:
    """One damped least-squares step ``J^T (J J^T + damping^2 I)^-1 e`` per target: ``J: (k, m, n)`` m/rad (one
    Jacobian per target, position rows), tool error ``e: (k, m)`` m (target minus tool), ``damping`` m/rad ->
    joint change ``(k, n)`` rad; ``I`` is the m x m identity. The hybrid's refinement, batched over targets."""
    JJt = J @ np.swapaxes(J, -1, -2) + damping**2 * np.eye(J.shape[-2])
    return (np.swapaxes(J, -1, -2) @ np.linalg.solve(JJt, e[..., None]))[..., 0]


def regression_step(params: dict, x: np.ndarray, q: np.ndarray, learning_rate: float) -> tuple[dict, float]:
    """One gradient-descent step of joint regression for the tiny network ``q_hat = tanh(x @ W0 + b0) @ W1 + b1``
    -> ``(new params, loss before the step)``.

    ``params``: a dict of ``W0 (2, h)``, ``b0 (h,)``, ``W1 (h, 2)``, ``b1 (2,)``; targets ``x: (k, 2)`` m (x, y);
    labels ``q: (k, 2)`` rad; ``learning_rate`` a float. The loss is the mean over the k rows of the sum over the two
    joints of ``(q_hat - q)^2`` (rad^2). Return a new dict with the same keys and shapes, each parameter moved by
    ``learning_rate`` times its gradient of that loss, downhill, and the loss (a float) at the ``params`` given. Work
    out the four gradients by hand with the chain rule (no automatic differentiation), and leave ``params``
    unchanged.
    """
    h = np.tanh(x @ params["W0"] + params["b0"])
    d = h @ params["W1"] + params["b1"] - q
    g_out = 2 * d / len(x)
    g_hidden = (g_out @ params["W1"].T) * (1 - h**2)
    grads = {"W0": x.T @ g_hidden, "b0": g_hidden.sum(axis=0), "W1": h.T @ g_out, "b1": g_out.sum(axis=0)}
    return {k: params[k] - learning_rate * grads[k] for k in params}, float(np.mean(np.sum(d**2, axis=1)))


def tiny_net(params: dict, x: np.ndarray) -> np.ndarray:
    """``regression_step``'s network: ``x: (k, 2)`` m -> ``(k, 2)`` rad."""
    return np.tanh(x @ params["W0"] + params["b0"]) @ params["W1"] + params["b1"]


@dataclass(frozen=True)
class TrainRun:
    """Step 4: the tiny network trained by ``regression_step`` on both elbows of ``n_targets`` targets."""

    n_targets: int
    r_range: tuple[float, float]  # m, the targets' distances from the base (the floor below depends on them)
    hidden: int
    steps: int
    loss: tuple[float, float]  # first and last training loss (rad^2)
    floor: float  # rad^2, the loss of the two elbows' mean: mean |up - down|^2 / 4, the least any network reaches
    floor_se: float  # rad^2, that mean's standard error over this draw (the spread of |up - down|^2 / 4 / sqrt(k))
    floor_population: float  # rad^2, E |up - down|^2 / 4 for r uniform in r_range, by Gauss-Legendre quadrature in r
    floor_z: float  # |floor - floor_population| / floor_se: how many standard errors this draw's floor is off
    q2_network: float  # rad, median |q2| of the trained network
    q2_exact: float  # rad, median |q2| of the exact answers
    to_mean: float  # rad, median distance of the network's joints to the mean of the two elbows
    to_nearest: float  # rad, ... to the nearer exact answer
    miss_mm: float  # median tool miss of the network's joints
    losses: np.ndarray = unsaved()  # (steps,) rad^2


def mean_gap(x: np.ndarray) -> np.ndarray:
    """``|up - down|^2 / 4`` per target ``x: (k, 3)`` m -> ``(k,)`` rad^2: the squared distance of either elbow
    from their mean, the least joint-regression loss a target with both elbows as labels allows."""
    up, down = elbows(x)
    return np.sum((up - down) ** 2, axis=1) / 4


def population_floor(r_range: tuple[float, float], nodes: int = 64) -> float:
    """``E mean_gap`` (rad^2) for r uniform in ``r_range`` (m): the gap depends on r alone, so one Gauss-Legendre
    rule in r gives the mean any large draw approaches."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    r = 0.5 * (r_range[0] + r_range[1]) + 0.5 * (r_range[1] - r_range[0]) * t
    return float(0.5 * np.sum(w * mean_gap(np.c_[r, np.zeros((nodes, 2))])))


def train_tiny(seed: int = SEED, steps: int = TRAIN_STEPS) -> TrainRun:
    """Train the tiny network with ``regression_step`` on targets with both elbows as labels (seed ``seed``)."""
    rng = np.random.default_rng(seed)
    r, phi = rng.uniform(*R_TRAIN, N_TRAIN), rng.uniform(-np.pi / 2, np.pi / 2, N_TRAIN)
    x = np.c_[r * np.cos(phi), r * np.sin(phi), np.zeros(N_TRAIN)]
    up, down = elbows(x)
    x2, q = np.r_[x, x][:, :2], np.r_[up, down]  # every target twice, once per elbow
    params = {"W0": rng.normal(size=(2, HIDDEN)), "b0": np.zeros(HIDDEN),
              "W1": rng.normal(size=(HIDDEN, 2)) / np.sqrt(HIDDEN), "b1": np.zeros(2)}
    losses = np.empty(steps)
    for i in range(steps):
        params, losses[i] = regression_step(params, x2, q, LEARNING_RATE)
    q_net = tiny_net(params, x[:, :2])
    near = np.minimum(np.linalg.norm(q_net - up, axis=1), np.linalg.norm(q_net - down, axis=1))
    gap, population = mean_gap(x), population_floor(R_TRAIN)
    se = np.std(gap) / np.sqrt(N_TRAIN)
    return TrainRun(N_TRAIN, R_TRAIN, HIDDEN, steps, (losses[0], losses[-1]), np.mean(gap), se, population,
                    abs(np.mean(gap) - population) / se,
                    np.median(np.abs(q_net[:, 1])), np.median(np.abs(up[:, 1])),
                    np.median(np.linalg.norm(q_net - 0.5 * (up + down), axis=1)), np.median(near),
                    np.median(np.linalg.norm(tip(q_net) - x[:, :2], axis=1)) * 1e3, losses)


def refine(q0: np.ndarray, x: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` of ``dls_step`` from guesses ``q0: (k, 2)`` toward targets ``x: (k, 3)`` -> ``(k, 2)``."""
    chain, q = robots.load("planar2r"), q0.copy()
    for _ in range(steps):
        q = q + dls_step(jacobian(chain, q)[:, :2], x[:, :2] - tip(q), DAMPING)
    return q


@dataclass(frozen=True)
class RefineRow:
    """The median miss (mm) after ``k`` damped steps, from the network's guesses and from the elbows' average."""

    k: int
    network_mm: float
    average_mm: float


@dataclass(frozen=True)
class BuildRun:
    """Steps 1 to 3 on ``n_targets`` targets of the planar 2R (links, m), ``seed``; the refinement's damping
    (m/rad)."""

    n_targets: int
    seed: int
    damping: float
    links: tuple[float, float]
    loss_fk: tuple[float, float]  # (by hand, physai.learned.fk_loss) on an untrained network's guesses
    loss_joint: tuple[float, float]  # (by hand, physai.learned.joint_loss)
    loss_fk_gap: float  # |by hand - physai|
    loss_joint_gap: float
    forward_gap: float  # rad, largest |mlp_forward - physai.learned.predict|
    mean_miss_max_mm: float  # the largest miss of the average of the two elbows
    mean_miss_gap: float  # m, largest |that miss - (L1 + L2 - r)|: the straight arm's closed form
    step_gap: float  # rad, largest |dls_step - physai.singularity.damped_solve| over the refinement's first step
    refine: tuple[RefineRow, ...]  # one row per REFINE_STEPS
    r: np.ndarray = unsaved()  # (k,) m, target distances from the base
    mean_miss: np.ndarray = unsaved()  # (k,) m, miss of the average of the two elbows
    refined: np.ndarray = unsaved()  # (len(REFINE_STEPS), 2) median miss (m) after k steps: network, average
    trained: TrainRun  # Step 4


@jaxkin.float64  # physai.learned's losses run in the caller's precision: float64 here, restored after
def run(n_targets: int = 200, seed: int = SEED, train_steps: int = TRAIN_STEPS) -> BuildRun:
    chain = robots.load("planar2r")
    data = sample_dataset(chain, n_targets, np.random.default_rng(seed), seed=seed)
    model = init_model(chain, data.x, np.random.default_rng(seed + 1), hidden=(16, 16), head="bounded")
    q_pred = mlp_forward(model.params, model.norm(), data.x, model.head)
    up, down = elbows(data.x)
    mean = 0.5 * (up + down)  # what E|q - label|^2 is minimised by when both elbows are labels
    J, e = jacobian(chain, q_pred)[:, :2], data.x[:, :2] - tip(q_pred)
    step_gap = np.abs(dls_step(J, e, DAMPING) - damped_solve(J, e, DAMPING)).max()
    refined = np.array([[np.median(np.linalg.norm(tip(refine(q0, data.x, k)) - data.x[:, :2], axis=1))
                         for q0 in (q_pred, mean)] for k in REFINE_STEPS])
    loss_fk = (fk_loss_by_hand(q_pred, data.x), float(fk_loss(model.params, model, chain, data.x)))
    loss_joint = (joint_loss_by_hand(q_pred, data.q, model.q_half), float(joint_loss(model.params, model, data.x,
                                                                                     data.q)))
    r, mean_miss = np.linalg.norm(data.x[:, :2], axis=1), np.linalg.norm(tip(mean) - data.x[:, :2], axis=1)
    return BuildRun(len(r), seed, DAMPING, (L1, L2), loss_fk, loss_joint, abs(loss_fk[0] - loss_fk[1]),
                    abs(loss_joint[0] - loss_joint[1]), np.abs(q_pred - predict(model, data.x)).max(),
                    mean_miss.max() * 1e3, np.abs(mean_miss - (L1 + L2 - r)).max(), step_gap,
                    tuple(RefineRow(k, net * 1e3, avg * 1e3) for k, (net, avg) in zip(REFINE_STEPS, refined)), r,
                    mean_miss, refined, train_tiny(seed, train_steps))


def main(full: bool = False) -> BuildRun:
    """The lesson's build steps, printed; their numbers saved and returned. ``full``: no larger size
    here."""
    b = run(N_TARGETS)
    print(f"== Step 1. The forward pass and the two losses by hand vs physai.learned (planar 2R, untrained network, "
          f"{b.n_targets} targets, seed {b.seed}) ==")
    print(f"  mlp_forward vs physai.learned.predict: largest difference {b.forward_gap:.1e} rad")
    print(f"  FK-consistency: {b.loss_fk[0]:.12f} by hand, {b.loss_fk[1]:.12f} physai (m^2)")
    print(f"  joint regression: {b.loss_joint[0]:.12f} by hand, {b.loss_joint[1]:.12f} physai")
    print("\n== Step 2. Why regression fails on the 2R: the best single answer to two labels is their mean ==")
    print(f"  the mean of the two elbows is a straight arm (q2 = 0): it misses each target by L1 + L2 - r, here "
          f"{b.mean_miss.min() * 1e3:.0f} .. {b.mean_miss.max() * 1e3:.0f} mm")
    print(f"\n== Step 3. The hybrid's refinement: k damped steps (damping {DAMPING}) from a guess ==")
    print(f"  dls_step vs physai.singularity.damped_solve: largest difference {b.step_gap:.1e} rad")
    print(f"  {'k':>3s} {'from the network, median mm':>28s} {'from the average of the elbows, median mm':>42s}")
    for row in b.refine:
        print(f"  {row.k:3d} {row.network_mm:28.4f} {row.average_mm:42.4f}")
    stuck = max(r.k for r in b.refine if np.isclose(r.average_mm, b.refine[0].average_mm, rtol=1e-9))
    print(f"  The average is a straight arm: its miss is along the arm, J^T e = 0 there; it is unchanged after {stuck} "
          "steps, and only round-off, grown by later steps, bends the elbow.")
    t = b.trained
    print(f"\n== Step 4. Train it yourself: a {t.hidden}-unit network, {t.steps} steps of regression_step on "
          f"{t.n_targets} targets x both elbows ==")
    print(f"  loss {t.loss[0]:.4f} -> {t.loss[1]:.4f} rad^2; floor (the elbows' mean) {t.floor:.4f} rad^2 over this "
          f"draw (standard error {t.floor_se:.3f}), {t.floor_population:.4f} rad^2 for the distribution")
    print(f"  median |q2| {t.q2_network:.3f} rad (exact {t.q2_exact:.3f}); distance to the elbows' mean "
          f"{t.to_mean:.3f} rad, to the nearer elbow {t.to_nearest:.3f} rad; median miss {t.miss_mm:.0f} mm")
    return save_results(HERE, "build.py", b)


if __name__ == "__main__":
    run_script(main, __file__, full_run())
