"""Batched DLS IK on the GPU with JAX: 1e6 and 1e7 random reachable targets, SO-101 position and Panda pose.

On a machine with an NVIDIA GPU (JAX needs its CUDA plugin, which ``uv sync`` does not install):

    uv run --with "jax[cuda12]" python benchmarks/gpu.py

On any machine, small sizes on the CPU (what CI runs):

    uv run python benchmarks/gpu.py --cpu-smoke

Targets are the tool poses of joint vectors drawn uniformly inside the limits (seeded), so every one is
reachable; the solver is :func:`physai.ik.solve` with ``Solver(method="dls", backend="jax")`` (float64). Reported per
robot/task and size: solves/s over the whole batch (host<->device transfers included, target
generation and the one-time ``jit`` compilation excluded and reported separately), success rate,
median iterations. The Markdown table is printed and written to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np



def cases():
    """``(label, chain, task)`` rows of the benchmark."""
    from physai import robots

    return [("SO-101", robots.load("so101"), "position"), ("Panda", robots.load("panda"), "pose")]


def run_case(chain, task, size, chunk, iterations, restarts, seed):
    """Solve ``size`` targets in chunks of ``chunk``; returns a dict of the measured numbers."""
    from physai import ik, kinematics

    chunk = min(chunk, size)
    rng = np.random.default_rng(seed)
    solver = ik.Solver(method="dls", backend="jax", iterations=iterations, restarts=restarts)
    t0 = time.perf_counter()
    warm = kinematics.tool_pose(chain, chain.random_q(rng, chunk))
    ik.solve(ik.ik_problem(chain, warm, task=task), solver, rng=np.random.default_rng(seed))  # jit for this shape
    compile_s = time.perf_counter() - t0
    solved, iters, solve_s = 0, [], 0.0
    for start in range(0, size, chunk):
        count = min(chunk, size - start)
        q_true = chain.random_q(rng, chunk)  # a short last chunk is padded: one compiled shape only
        targets = kinematics.tool_pose(chain, q_true)
        t0 = time.perf_counter()
        res = ik.solve(ik.ik_problem(chain, targets, task=task), solver, rng=rng)
        solve_s += time.perf_counter() - t0
        solved += int(res.converged[:count].sum())
        iters.append(res.iterations[:count])
    return {"solves_per_s": size / solve_s, "success": solved / size, "median_iterations": float(np.median(np.concatenate(iters))),
            "solve_s": solve_s, "compile_s": compile_s}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-smoke", action="store_true", help="small sizes on the CPU (CI)")
    parser.add_argument("--sizes", type=float, nargs="+", help="numbers of targets (default 1e6 1e7; smoke 200)")
    parser.add_argument("--chunk", type=int, help="targets per device call (default 1e6; smoke 100)")
    parser.add_argument("--iterations", type=int, default=40, help="DLS steps per attempt")
    parser.add_argument("--restarts", type=int, default=20, help="random restarts for unconverged targets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="results file (default benchmarks/GPU_RESULTS.md; smoke: gpu_cpu_smoke.md)")
    args = parser.parse_args(argv)
    if args.cpu_smoke:
        os.environ["JAX_PLATFORMS"] = "cpu"
    import jax  # after JAX_PLATFORMS is set (the JAX loop scopes float64 itself)

    sizes = [int(s) for s in (args.sizes or ([200] if args.cpu_smoke else [1e6, 1e7]))]
    chunk = args.chunk or (100 if args.cpu_smoke else 1_000_000)
    here = Path(__file__).resolve().parent
    out = args.out or here / ("gpu_cpu_smoke.md" if args.cpu_smoke else "GPU_RESULTS.md")
    device = jax.devices()[0]
    if not args.cpu_smoke and device.platform != "gpu":
        print(f"JAX found no GPU (default device: {device}); run with --cpu-smoke, or install the CUDA plugin: "
              'uv run --with "jax[cuda12]" python benchmarks/gpu.py', file=sys.stderr)
        return 2
    lines = [
        f"# Batched DLS IK with JAX ({'CPU smoke run' if args.cpu_smoke else 'GPU'})",
        "",
        f"Command: `python benchmarks/gpu.py {' '.join(argv if argv is not None else sys.argv[1:])}`  ",
        f"Device: {device.device_kind} ({device.platform}); jax {jax.__version__}; Python {platform.python_version()}; "
        f"{platform.machine()} {os.cpu_count()} CPUs  ",
        f"Solver: physai.ik.solve, Solver(method='dls', backend='jax'), float64, {args.iterations} steps per attempt, {args.restarts} restarts, "
        f"chunks of {chunk} targets, seed {args.seed}",
        "",
        "| robot | task | targets | solves/s | success | median iterations | solve s | compile s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, chain, task in cases():
        for size in sizes:
            r = run_case(chain, task, size, chunk, args.iterations, args.restarts, args.seed)
            lines.append(f"| {label} | {task} | {size:,} | {r['solves_per_s']:,.0f} | {100 * r['success']:.2f} % | "
                         f"{r['median_iterations']:.0f} | {r['solve_s']:.2f} | {r['compile_s']:.1f} |")
            print(lines[-1], flush=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
