"""Collision-aware IK side by side: physai's plain IK, physai with ``avoid=``, and mink with its
CollisionAvoidanceLimit, on the same scenes and targets.

    uv sync --group bench      # once (mink)
    uv run python benchmarks/collision.py [--targets 1000] [--seed 0] [--robots so101 wxai panda]
                                          [--scenes tabletop clutter] [--markdown]

Each bundled arm stands on a table with a shelf and two boxes in its workspace (the same layout, scaled to the arm's
reach): the ``tabletop`` scene. The ``clutter`` scene adds a post, and a quarter of its targets are hard ones: targets
whose answer from plain IK (``solve_ik_batch`` without ``avoid=``) MuJoCo finds within the margin of an obstacle or
of the arm's own links (as many as the draws hold, up to a quarter; the table says how many). Targets are the tool
poses of uniform random joint vectors that MuJoCo finds collision-free (every pair of the world at least its margin
apart), so a collision-free answer exists for every target. Every answer is judged by
MuJoCo directly (``mj_geomDistance`` on each pair of the world, no physai code) and by the task's errors (position
< 1e-4 m, orientation < 1e-3 rad). "claimed colliding" counts answers a solver reports converged that MuJoCo finds
within the margin. Times are wall-clock per target: physai's over one batched call, mink's per target over all its
attempts; the cost ratio is avoid/plain per round, median over rounds run in turn. Writes
``benchmarks/COLLISION_RESULTS.md`` with ``--markdown``.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import platform
import time
from pathlib import Path

import mujoco
import numpy as np

import physai
from physai import collision as C
from physai import ik, kinematics

HERE = Path(__file__).resolve().parent
MARGIN = 0.01
TASKS = {"so101": "position", "wxai": "pose", "panda": "pose"}
SCALE = {"so101": 1.0, "wxai": 1.6, "panda": 2.2}  # the layout below is the SO-101's, scaled to each arm's reach


SCENES = {"tabletop": 0.0, "clutter": 0.25}  # each scene's share of hard targets


def obstacles(robot: str, scene: str = "tabletop") -> list[C.Obstacle]:
    """A table under the arm, a shelf board in front of it, and two boxes beside it (m, SO-101 scale times s); the
    clutter scene adds a post behind and beside the arm."""
    s = SCALE[robot]

    def box(name, half, pos):
        return C.Obstacle(name, "box", tuple(s * x for x in half), tuple(s * x for x in pos))

    tabletop = [box("table", (0.5, 0.5, 0.02), (0.0, 0.0, -0.02)),
                box("shelf", (0.06, 0.2, 0.01), (0.26, 0.0, 0.2)),
                box("box_left", (0.04, 0.04, 0.04), (0.16, 0.17, 0.04)),
                box("box_right", (0.03, 0.03, 0.06), (0.14, -0.18, 0.06))]
    if scene == "tabletop":
        return tabletop
    return tabletop + [C.Obstacle("post", "capsule", (0.015 * s, 0.12 * s), (-0.05 * s, 0.2 * s, 0.12 * s))]


def mujoco_clearance(world: C.CollisionWorld, q: np.ndarray) -> np.ndarray:
    """The smallest ``mj_geomDistance`` over the world's pairs at each ``q: (k, n)`` -> ``(k,)``, each pair's
    distance less its margin beyond ``MARGIN`` (the robot's own pairs are held to ``self_margin``): MuJoCo alone."""
    m, d = world.model, mujoco.MjData(world.model)
    out = np.empty(len(q))
    for k, qk in enumerate(q):
        d.qpos[world.qpos_adr] = qk
        mujoco.mj_kinematics(m, d)
        out[k] = min(mujoco.mj_geomDistance(m, d, int(a), int(b), 1.0, None) - e + MARGIN
                     for (a, b), e in zip(world.pairs, world.pair_margin))
    return out


def make_targets(world: C.CollisionWorld, task: str, n: int, rng: np.random.Generator, hard: float = 0.0):
    """``(targets, T_all, n_hard)``: tool poses (positions for the position task) of clear random joint vectors, the
    first ``n_hard`` of them (up to ``hard * n``, from at most 60 n draws) targets whose plain-IK answer MuJoCo finds
    colliding."""
    want, found_T, found_hard = round(hard * n), [], []
    for _ in range(1 if hard == 0 else 6):
        q = world.chain.random_q(rng, 10 * n if hard else 30 * n)
        q = q[mujoco_clearance(world, q) >= MARGIN]
        T = kinematics.tool_pose(world.chain, q)
        through = np.zeros(len(q), bool)
        if hard:
            targets = T[:, :3, 3] if task == "position" else T
            plain = physai.solve_ik_batch(world.chain, targets, task=task)
            through = judge(world, task, T, plain.q, plain.converged)[1]
        found_T.append(T)
        found_hard.append(through)
        if np.concatenate(found_hard).sum() >= want:
            break
    T, through = np.concatenate(found_T), np.concatenate(found_hard)
    hard_rows = np.flatnonzero(through)[:want]
    rows = np.concatenate([hard_rows, np.flatnonzero(~through)[:n - len(hard_rows)]])
    return (T[rows, :3, 3] if task == "position" else T[rows]), T[rows], len(hard_rows)


def task_errors(chain, task, T_target, q):
    T, J = kinematics.tool_pose_and_jacobian(chain, q)
    _, _, perr, oerr = ik.task_residual(task, T, J, T_target, np.array([0.0, 0.0, 1.0]))
    return perr, oerr


def judge(world, task, T_target, q, claimed):
    """``(success, claimed_colliding)`` per target by MuJoCo and the task's errors."""
    perr, oerr = task_errors(world.chain, task, T_target, q)
    clear = mujoco_clearance(world, q) >= MARGIN
    ok = (perr <= ik.TOL_POSITION) & (oerr <= ik.TOL_ORIENTATION) & clear
    return ok, np.asarray(claimed) & ~clear


def run_physai(world, task, targets, rounds: int):
    """Plain and avoid= batch solves, alternating ``rounds`` times: (plain result, avoid result, times, ratio)."""
    t_plain, t_avoid = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        plain = physai.solve_ik_batch(world.chain, targets, task=task)
        t1 = time.perf_counter()
        avoid = physai.solve_ik_batch(world.chain, targets, task=task, avoid=world)
        t2 = time.perf_counter()
        t_plain.append((t1 - t0) / len(targets))
        t_avoid.append((t2 - t1) / len(targets))
    ratio = float(np.median(np.array(t_avoid) / np.array(t_plain)))
    return plain, avoid, float(np.median(t_plain)), float(np.median(t_avoid)), ratio


def mink_solver(world: C.CollisionWorld, task: str, iterations: int = 200, attempts: int = 20):
    """mink's QP IK with ConfigurationLimit and CollisionAvoidanceLimit on every pair of the world (the obstacle
    pairs held to the margin, the robot's own to ``self_margin``, as physai holds them), iterated until converged or
    stalled (1 % in 10 steps), restarted from clear random starts; joints outside the chain held."""
    import mink

    m, chain = world.model, world.chain
    cfg = mink.Configuration(m)
    adr = list(world.qpos_adr)
    frame = mink.FrameTask(chain.tool_name, "site", position_cost=1.0, orientation_cost=1.0 if task == "pose" else 0.0)
    limits = [mink.ConfigurationLimit(m)]
    for own, distance in ((False, world.margin), (True, world.self_margin)):  # each pair held to its own margin
        pairs = [([int(a)], [int(b)]) for (a, b), s in zip(world.pairs, world.pair_self) if s == own]
        if pairs:
            limits.append(mink.CollisionAvoidanceLimit(m, pairs, minimum_distance_from_collisions=distance,
                                                       collision_detection_distance=world.distmax))

    def set_q(q):
        qpos = m.qpos0.copy()
        qpos[adr] = q
        cfg.update(qpos)

    def attempt(T, q0):
        frame.set_target(mink.SE3.from_matrix(T))
        set_q(q0)
        ref, since = np.inf, 0
        for _ in range(iterations):
            perr, oerr = task_errors(chain, task, T[None], cfg.q[adr][None])
            if perr[0] <= ik.TOL_POSITION and oerr[0] <= ik.TOL_ORIENTATION:
                return True
            err = perr[0] + oerr[0]
            ref, since = (err, 0) if err < 0.99 * ref else (ref, since + 1)
            if since >= 10:
                return False
            try:
                vel = mink.solve_ik(cfg, [frame], 1.0, solver="daqp", damping=1e-6, limits=limits)
            except mink.exceptions.NoSolutionFound:  # the limits' QP is infeasible: this attempt has ended
                return False
            cfg.integrate_inplace(vel, 1.0)
            set_q(np.clip(cfg.q[adr], chain.lower, chain.upper))
        return False

    def solve(T, rng):
        starts = [chain.q_middle] + [s for s in chain.random_q(rng, 4 * attempts)]
        used = 0
        for q0 in starts:
            if used == attempts:
                break
            if mujoco_clearance(world, q0[None])[0] < MARGIN:
                continue  # mink's limit cannot start inside the margin: clear starts only
            used += 1
            if attempt(T, q0):
                break
        return cfg.q[adr].copy()

    return solve


def run_mink(world, task, T_all, seed: int):
    solve = mink_solver(world, task)
    rng = np.random.default_rng(seed)
    qs, times = [], []
    for T in T_all:
        t0 = time.perf_counter()
        qs.append(solve(T, rng))
        times.append(time.perf_counter() - t0)
    return np.array(qs), float(np.median(times)), float(np.mean(times))


def run(robots=("so101", "wxai", "panda"), n: int = 1000, seed: int = 0, rounds: int = 3, peers=True,
        scenes=("tabletop", "clutter")) -> list[dict]:
    rows = []
    for scene, robot in ((scene, robot) for scene in scenes for robot in robots):
        task = TASKS[robot]
        chain = physai.load(robot)
        world = C.collision_world(C.scene(robot, obstacles(robot, scene)), chain, margin=MARGIN)
        targets, T_all, n_hard = make_targets(world, task, n, np.random.default_rng(seed), SCENES[scene])
        plain, avoid, tp, ta, ratio = run_physai(world, task, targets, rounds)
        ok_p, claimed_p = judge(world, task, T_all, plain.q, plain.converged)
        ok_a, claimed_a = judge(world, task, T_all, avoid.q, avoid.converged)
        row = {"scene": scene, "robot": robot, "task": task, "targets": len(targets), "hard": n_hard,
               "pairs": len(world.pairs), "dropped": len(world.dropped),
               "plain_success": ok_p.mean(), "plain_claimed_colliding": int(claimed_p.sum()), "plain_ms": tp * 1e3,
               "avoid_success": ok_a.mean(), "avoid_claimed_colliding": int(claimed_a.sum()), "avoid_ms": ta * 1e3,
               "avoid_cost_ratio": ratio}
        if peers:
            q_mink, med, mean = run_mink(world, task, T_all, seed)
            ok_m, _ = judge(world, task, T_all, q_mink, np.zeros(len(T_all), bool))
            row.update(mink_success=ok_m.mean(), mink_ms=mean * 1e3, mink_median_ms=med * 1e3)
        rows.append(row)
        print(row, flush=True)
    return rows


def markdown(rows, args) -> str:
    head = ("| scene | arm | task | targets (hard) | pairs (dropped) | plain IK: clear & converged | "
            "plain: claimed colliding | plain ms/target | avoid=: clear & converged | avoid=: claimed colliding | "
            "avoid= ms/target | avoid/plain cost | mink: clear & converged | mink ms/target (mean; median) |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        mink = "not run | -"
        if "mink_success" in r:
            mink = f"{100 * r['mink_success']:.1f} % | {r['mink_ms']:.2f}; {r['mink_median_ms']:.2f}"
        lines.append(f"| {r['scene']} | {r['robot']} | {r['task']} | {r['targets']} ({r['hard']}) | "
                     f"{r['pairs']} ({r['dropped']}) | "
                     f"{100 * r['plain_success']:.1f} % | {r['plain_claimed_colliding']} | {r['plain_ms']:.3f} | "
                     f"{100 * r['avoid_success']:.1f} % | {r['avoid_claimed_colliding']} | {r['avoid_ms']:.3f} | "
                     f"{r['avoid_cost_ratio']:.2f}x | {mink} |")
    versions = ", ".join(f"{p} {md.version(p)}" for p in ("mujoco", "numpy", "mink") if _has(p))
    return "\n".join([
        "# Collision-aware IK: physai avoid= and mink on the same scenes and targets", "",
        f"`uv run python benchmarks/collision.py --targets {args.targets} --seed {args.seed} "
        f"--scenes {' '.join(args.scenes)} --markdown` "
        f"({platform.machine()}, {platform.python_version()}, {versions}).", "",
        "Scenes: each bundled arm on a table with a shelf board and two boxes (`tabletop`), and the same with a post "
        "(`clutter`) (benchmarks/collision.py `obstacles`), margin "
        f"{MARGIN} m. Targets: tool poses of random joint vectors that MuJoCo finds clear; on `clutter` a quarter are "
        "hard (the count in brackets): plain IK's answer to them collides. Success: task "
        "errors within 1e-4 m / 1e-3 rad and every pair of the world at least the margin apart by MuJoCo's "
        "`mj_geomDistance` (no physai code in the verdict). Claimed colliding: reported converged but within the "
        "margin. physai times are per target over one batched call; avoid/plain is the median over rounds of the "
        "per-round ratio. mink: `CollisionAvoidanceLimit` on every pair of the world (minimum distance: the "
        "margin for obstacle pairs, `self_margin` = 0 for the arm's own, as physai holds them) with "
        "`ConfigurationLimit`, daqp, dt = 1, iterated until converged or stalled, up to 20 attempts "
        "from clear starts.", "", *lines, "", *goals(rows), ""])


def goals(rows) -> list[str]:
    """The goals, each with its verdict from this run's rows."""
    def verdict(ok):
        return "met" if ok else "NOT met"

    out = ["Goals (this run):", ""]
    for r in rows:
        rate = r["avoid_success"]
        parts = [f"clear & converged {100 * rate:.1f} % >= 99.5 %: {verdict(rate >= 0.995)}",
                 f"claimed colliding {r['avoid_claimed_colliding']} = 0: {verdict(r['avoid_claimed_colliding'] == 0)}",
                 f"cost {r['avoid_cost_ratio']:.2f}x <= 3x plain: {verdict(r['avoid_cost_ratio'] <= 3)}"]
        if "mink_success" in r:
            parts.append(f"more successes and less time than mink: "
                         f"{verdict(r['avoid_success'] > r['mink_success'] and r['avoid_ms'] < r['mink_ms'])}")
        out.append(f"- {r['scene']}, {r['robot']}: " + "; ".join(parts))
    return out


def _has(pkg: str) -> bool:
    try:
        md.version(pkg)
        return True
    except md.PackageNotFoundError:
        return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # mink fails about 1 target in 100 on the Panda: 200 targets cannot tell that from none
    p.add_argument("--targets", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--robots", nargs="+", default=["so101", "wxai", "panda"], choices=sorted(TASKS))
    p.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    p.add_argument("--no-peers", action="store_true", help="skip mink")
    p.add_argument("--markdown", action="store_true", help="write benchmarks/COLLISION_RESULTS.md")
    args = p.parse_args()
    rows = run(args.robots, args.targets, args.seed, args.rounds, peers=not args.no_peers, scenes=args.scenes)
    (HERE / "collision.json").write_text(json.dumps(rows, indent=1, default=float))
    text = markdown(rows, args)
    print(text)
    if args.markdown:
        (HERE / "COLLISION_RESULTS.md").write_text(text)


if __name__ == "__main__":
    main()
