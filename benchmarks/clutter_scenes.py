"""How many clear targets ``solve_ik_batch(..., avoid=world)`` answers on a cluttered scene, per bundled arm.

    uv run python benchmarks/clutter_scenes.py make targets.npz [--targets 50] [--seed 0]
    uv run python benchmarks/clutter_scenes.py solve targets.npz

Each arm stands on a table with a shelf, two boxes and a post, sized to its reach (benchmarks/collision.py's
``clutter`` scene), margin 0.01 m. ``make`` draws uniform joint vectors and keeps those MuJoCo finds clear for the world
built now: every obstacle pair at least the margin apart, every pair of the robot's own that the world checks at
least its ``self_margin`` apart (``mj_geomDistance``, no physai code); their tool poses are the targets, saved with
the pairs and margins that judged them. ``solve`` answers the saved targets with the physai it imports (so the same
file can be solved by two versions of the library) and judges every converged answer by MuJoCo on the saved pairs:
"claimed colliding" counts answers reported converged that MuJoCo finds short of a saved pair's margin.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

import physai
from physai import collision as C
from physai import ik, kinematics

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collision import MARGIN, TASKS, obstacles  # noqa: E402  (the layout shared with the mink benchmark)

ROBOTS = ("wxai", "panda", "so101")


def mujoco_keeps(m, qpos_adr, pairs, margins, q) -> np.ndarray:
    """Whether every pair keeps its margin at each ``q (k, n)``, by ``mj_geomDistance`` alone."""
    d = mujoco.MjData(m)
    out = np.empty(len(q), bool)
    for k, qk in enumerate(q):
        d.qpos[qpos_adr] = qk
        mujoco.mj_kinematics(m, d)
        out[k] = all(mujoco.mj_geomDistance(m, d, a, b, 1.0, None) >= e for (a, b), e in zip(pairs, margins))
    return out


def make(path: str, n: int, seed: int) -> None:
    saved = {}
    for robot in ROBOTS:
        chain = physai.load(robot)
        world = C.collision_world(C.scene(robot, obstacles(robot, "clutter")), chain, margin=MARGIN)
        q = chain.random_q(np.random.default_rng(seed), 40 * n)
        q = q[mujoco_keeps(world.model, world.qpos_adr, world.pairs.tolist(), world.pair_margin, q)][:n]
        T = kinematics.tool_pose(chain, q)
        saved[f"{robot}_targets"] = T[:, :3, 3] if TASKS[robot] == "position" else T
        saved[f"{robot}_pairs"], saved[f"{robot}_margins"] = np.array(world.pairs), np.array(world.pair_margin)
        print(f"{robot}: {len(q)} clear targets; {len(world.pairs)} pairs judge them "
              f"({int(world.pair_self.sum())} of the robot's own, held to {world.self_margin} m)")
    np.savez(path, **saved)


def solve(path: str, seed: int) -> None:
    saved = np.load(path)
    print(f"physai at {Path(physai.__file__).parent}")
    for robot in ROBOTS:
        chain = physai.load(robot)
        world = C.collision_world(C.scene(robot, obstacles(robot, "clutter")), chain, margin=MARGIN)
        targets = saved[f"{robot}_targets"]
        t = time.perf_counter()
        res = ik.solve_ik_batch(chain, targets, task=TASKS[robot], avoid=world, rng=np.random.default_rng(seed))
        elapsed = time.perf_counter() - t
        conv = np.asarray(res.converged)
        keeps = mujoco_keeps(world.model, world.qpos_adr, saved[f"{robot}_pairs"].tolist(),
                             saved[f"{robot}_margins"], res.q[conv])
        reasons = np.asarray(res.reason)[~conv]
        reasons = {str(r): int(np.sum(reasons == r)) for r in sorted(set(reasons.tolist()))}
        print(f"{robot}: answered {int(conv.sum())} of {len(targets)}, claimed colliding {int((~keeps).sum())}, "
              f"{elapsed:.1f} s; unanswered: {reasons}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("make", "solve"))
    parser.add_argument("path")
    parser.add_argument("--targets", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    make(args.path, args.targets, args.seed) if args.step == "make" else solve(args.path, args.seed)
