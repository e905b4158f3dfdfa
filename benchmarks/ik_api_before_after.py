"""Plain and ``avoid=`` IK before and after the IK API change (``ik_problem``/``solve``/``Task``/``Solver``): time and
success of the same ``solve_ik_batch`` calls, on the same targets and draws, in two checkouts timed in the same run.

Each checkout runs in a worker process of its own environment (``--before PYTHON``: the interpreter of a checkout
from before the change, with physai installed from it; the current one is this interpreter). The workers build the
same targets (FK of seeded draws; collision-free draws for ``avoid=``) and, round by round, in alternating order, each
solve every case once: a change of load between rounds hits both alike, and the ratio is the median over rounds of
after / before in the same round. Both workers compile their engines into one fresh cache folder (``--cache``: a
folder to reuse), so both are built by the same compiler in the same run: a module built earlier, elsewhere or by
another setup can compile the same kinematics walk to different machine code, several per cent apart.

Run (a checkout from before the change in ../ik-base, synced with its own ``uv sync --extra jit``)::

    uv run python benchmarks/ik_api_before_after.py --before ../ik-base/.venv/bin/python [--rounds 9] [--cache DIR]

It writes ``benchmarks/IK_API_RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# (robot, task, targets, with a collision world): the benchmarks' clutter scene (benchmarks/collision.py)
CASES = (("so101", "position", 1000, False), ("panda", "pose", 1000, False),
         ("so101", "position", 200, True), ("panda", "pose", 200, True))


def _case_name(robot: str, task: str, n: int, avoid: bool) -> str:
    return f"{robot} {task}, {n} targets" + (", avoid=" if avoid else "")


def worker() -> None:
    """Build the cases, answer ``ready``, then per ``round`` line one JSON line: case -> [seconds, converged, n]."""
    import time

    sys.path.insert(0, str(HERE))
    import physai
    from collision import MARGIN, obstacles
    from physai import collision, ik, kinematics

    calls = {}
    for robot, task, n, avoid in CASES:
        chain = physai.load(robot)
        rng = np.random.default_rng(0)
        scene = collision.scene(robot, obstacles(robot, "clutter"))
        world = collision.collision_world(scene, chain, MARGIN) if avoid else None
        q = chain.lower + rng.random((20 * n, chain.n)) * (chain.upper - chain.lower)
        if avoid:
            q = q[world.clear(q)]
        targets = kinematics.tool_pose(chain, q[:n])
        if task == "position":
            targets = targets[:, :3, 3]
        extra = {"avoid": world} if avoid else {}

        def call(chain=chain, targets=targets, task=task, extra=extra):
            return ik.solve_ik_batch(chain, targets, task=task, rng=np.random.default_rng(1), **extra)

        call()  # warm: compilation, caches
        calls[_case_name(robot, task, n, avoid)] = call
    print("ready", Path(physai.__file__).resolve().parents[1], flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        out = {}
        for name, call in calls.items():
            t0 = time.perf_counter()
            res = call()
            out[name] = [time.perf_counter() - t0, int(np.sum(res.converged)), int(np.size(res.converged))]
        print(json.dumps(out), flush=True)


def _start(python: str, cache: Path) -> subprocess.Popen:
    proc = subprocess.Popen([python, str(Path(__file__).resolve()), "--worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=HERE,
                            env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    word, _, checkout = proc.stdout.readline().strip().partition(" ")
    if word != "ready":
        raise SystemExit(f"{python}: the worker did not start")
    proc.commit = subprocess.run(["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip() or "?"
    return proc


def _round(proc: subprocess.Popen) -> dict:
    proc.stdin.write("round\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="the interpreter of a checkout from before the change")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--out", type=Path, default=HERE / "IK_API_RESULTS.md")
    p.add_argument("--cache", type=Path, help="the engines' cache folder (default: a fresh one, built in this run)")
    a = p.parse_args(argv)
    cache = (a.cache or Path(tempfile.mkdtemp(prefix="ik-api-engines-"))).resolve()
    workers = {"before": _start(a.before, cache), "after": _start(sys.executable, cache)}
    commits = {k: w.commit for k, w in workers.items()}
    samples = {k: [] for k in workers}
    for r in range(a.rounds):
        for k in (("before", "after") if r % 2 == 0 else ("after", "before")):
            samples[k].append(_round(workers[k]))
    for proc in workers.values():
        proc.stdin.close()
        proc.wait()
    rows = []
    for case in samples["before"][0]:
        t = {k: np.array([s[case][0] for s in samples[k]]) for k in samples}
        ok = {k: {(s[case][1], s[case][2]) for s in samples[k]} for k in samples}
        ratio = float(np.median(t["after"] / t["before"]))
        rows.append(f"| {case} | {1e3 * np.median(t['before']):.1f} | {1e3 * np.median(t['after']):.1f} | "
                    f"{ratio:.3f} | {'; '.join(f'{c}/{n}' for c, n in sorted(ok['before']))} | "
                    f"{'; '.join(f'{c}/{n}' for c, n in sorted(ok['after']))} |")
    text = "\n".join([
        "# IK before and after the IK API change",
        "",
        f"`uv run python benchmarks/ik_api_before_after.py --before <checkout before the change>/.venv/bin/python "
        f"--rounds {a.rounds}` on {platform.machine()}, Python {platform.python_version()}, "
        f"{a.rounds} interleaved rounds; a shared machine, loaded by other jobs: read the ratios, not the times "
        f"(interleaving makes them fair). Before: physai at commit {commits['before']}; after: at commit "
        f"{commits['after']} (a change not committed yet counts too). Both checkouts' engines compiled into one "
        "cache folder by the same compiler, on this machine (a fresh folder unless `--cache` names one).",
        "",
        "Each row is one `solve_ik_batch` call on the same targets and the same draws (`rng=default_rng(1)`) in both "
        "checkouts; ms is the median over rounds, the ratio the median over rounds of after / before in the same "
        "round, and converged counts every round's answer (one value: the same in every round).",
        "",
        "| case | before (ms) | after (ms) | after / before | converged before | converged after |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ])
    a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        main()
