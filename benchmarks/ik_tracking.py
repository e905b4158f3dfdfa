"""A tracking loop on the IK API: the SO-101's tool round a 5 cm horizontal circle, its orientation held.

The 5-joint arm cannot hold a full orientation round the circle, so every tick is a compromise. Three ways to solve
each tick from the previous answer, timed per tick in the same run:

- ``one line``: the problem checked once, then ``solve(problem.with_target(T, q), Solver.tracking()).q[0]`` per tick,
  orientation weighted 0.01 (the preset of a teleop or servo loop);
- ``one-shot defaults``: ``solve_ik(chain, T, q)`` per tick (200 restarts, metres and radians weighted alike);
- ``reference``: SciPy's bounded trust-region least squares on the same weighted residual from the previous answer,
  to 1e-14: the compromise the loop should land on.

Run: ``uv run python benchmarks/ik_tracking.py [--ticks 200]``; the machine is shared, so times are medians.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import least_squares

from physai import ik, kinematics, robots
from physai.ik import Solver, Task, ik_problem, solve, solve_ik

Q_START = np.radians([0.0, -30.0, 30.0, 60.0, 0.0])  # the start of LeRobot's gamepad circle (benchmarks/lerobot.py)
TASK = Task("pose", weights=(1.0, 1.0, 1.0, 0.01, 0.01, 0.01))
TRACKING = Solver.tracking()


def circle(chain, ticks: int, radius: float = 0.05) -> np.ndarray:
    """``(ticks, 4, 4)`` targets: the start's tool pose moved round a horizontal circle of ``radius`` (m)."""
    T0 = kinematics.tool_pose(chain, Q_START)
    targets = np.repeat(T0[None], ticks, axis=0)
    angle = np.linspace(0, 2 * np.pi, ticks + 1)[1:]
    targets[:, :3, 3] += radius * np.stack([np.cos(angle) - 1, np.sin(angle), np.zeros(ticks)], axis=1)
    return targets


def run_loop(step, targets) -> tuple[np.ndarray, np.ndarray]:
    """``(q per tick, seconds per tick)`` of ``step(T, q_prev) -> q`` from ``Q_START``."""
    q, qs, times = Q_START, [], []
    for T in targets:
        t0 = time.perf_counter()
        q = step(T, q)
        times.append(time.perf_counter() - t0)
        qs.append(q)
    return np.array(qs), np.array(times)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ticks", type=int, default=200)
    a = p.parse_args(argv)
    chain = robots.load("so101")
    targets = circle(chain, a.ticks)
    problem = ik_problem(chain, targets[0], Q_START, task=TASK)
    sw = np.sqrt(TASK.weights)

    def reference(T, q):
        def residual(x):
            e = ik.task_residual("pose", *kinematics.tool_pose_and_jacobian(chain, x[None]), T[None],
                                 np.array([0.0, 0.0, 1.0]))[0]
            return e[0] * sw
        return least_squares(residual, q, bounds=(chain.lower, chain.upper), xtol=1e-14, ftol=1e-14, gtol=1e-14).x

    loops = {
        "one line (Solver.tracking, orientation 0.01)": lambda T, q: solve(problem.with_target(T, q), TRACKING).q[0],
        "one-shot defaults (solve_ik)": lambda T, q: solve_ik(chain, T, q).q,
        "reference (SciPy least_squares)": reference,
    }
    for _ in range(3):  # warm the compiled solver
        loops["one line (Solver.tracking, orientation 0.01)"](targets[0], Q_START)
    rows = {}
    for name, step in loops.items():
        qs, times = run_loop(step, targets)
        err = np.linalg.norm(kinematics.tool_pose(chain, qs)[:, :3, 3] - targets[:, :3, 3], axis=1)
        rows[name] = (1e3 * np.median(err), 1e3 * err.max(), 1e3 * np.median(times), 1e3 * np.percentile(times, 95))
    ref = rows["reference (SciPy least_squares)"][0]
    print(f"## 5 cm circle, SO-101, orientation held, {a.ticks} ticks from the previous answer\n")
    print("| loop | median position error mm | worst mm | median ms per tick | p95 ms |")
    print("|---|---|---|---|---|")
    for name, (med, worst, t, t95) in rows.items():
        print(f"| {name} | {med:.3f} | {worst:.3f} | {t:.4f} | {t95:.4f} |")
    line = rows["one line (Solver.tracking, orientation 0.01)"]
    print(f"\none line vs the reference compromise: {abs(line[0] - ref):.4f} mm apart (median error)")


if __name__ == "__main__":
    main()
