"""The JAX path on a GPU against the CPU path, in one run: batched Panda Jacobians and batched DLS IK.

On a machine with an NVIDIA GPU (JAX needs its CUDA plugin, which ``uv sync`` does not install):

    uv run --with "jax[cuda12]" python benchmarks/gpu_batch.py

Small sizes with JAX on the CPU, to check the script anywhere: ``python benchmarks/gpu_batch.py --cpu-smoke``.

- Jacobians: ``jax.jit(jax.vmap(physai.jaxkin.jacobian))`` (float64) on the GPU, timed with ``Q`` already on the
  device (``block_until_ready``) and with the transfers (``Q`` up, ``J`` back into NumPy), against
  ``physai.jacobian(chain, Q, out=J)`` (the compiled engine, every CPU core).
- IK: ``physai.jaxik.dls_ik`` with ``backend="jax"`` (on the GPU) against ``backend="numpy"`` (the same iteration
  on the CPU, the compiled engine's batched Jacobians), Panda pose targets made from joint vectors drawn inside
  the limits (seeded), the same options and restarts; compilation is timed apart.

``--chains FILE``: the chains from a pickle (a machine without MuJoCo, which parses the model files).
The Markdown table is printed and written to ``--out`` with the device named.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_seconds  # noqa: E402


def jacobian_rows(chain, sizes, repeats, gpu, jax) -> list[str]:
    import physai
    from physai import jaxkin

    batched = jax.jit(jax.vmap(lambda q: jaxkin.jacobian(chain, q)))  # runs where its input lies
    rows = []
    for size in sizes:
        Q = chain.random_q(np.random.default_rng(1), size)
        J = np.empty((size, 6, chain.n))
        Q_dev = jax.device_put(Q, gpu)
        t0 = time.perf_counter()
        J_dev = batched(Q_dev).block_until_ready()
        compile_s = time.perf_counter() - t0
        cpu_s = best_seconds(lambda: physai.jacobian(chain, Q, out=J), repeats)
        err = float(np.abs(np.asarray(J_dev) - J).max())
        on_device = best_seconds(lambda: batched(Q_dev).block_until_ready(), repeats)
        with_transfers = best_seconds(lambda: np.asarray(batched(jax.device_put(Q, gpu))), repeats)
        rows.append(f"| Jacobians | {size:,} | {on_device / size * 1e9:,.1f} ns | {with_transfers / size * 1e9:,.1f} ns"
                    f" | {cpu_s / size * 1e9:,.1f} ns | {cpu_s / on_device:,.1f} x | {cpu_s / with_transfers:,.1f} x"
                    f" | {err:.1e} | {compile_s:.1f} s |")
        print(rows[-1], flush=True)
    return rows


def ik_rows(chain, sizes, iterations, restarts, gpu, jax) -> list[str]:
    import physai
    from physai import jaxik

    rows = []
    for size in sizes:
        targets = physai.tool_pose(chain, chain.random_q(np.random.default_rng(2), size))
        opts = dict(task="pose", max_iterations=iterations, restarts=restarts)
        res, seconds = {}, {}
        with jax.default_device(gpu):
            t0 = time.perf_counter()
            jaxik.dls_ik(chain, targets, backend="jax", rng=np.random.default_rng(3), **opts)  # compiles
            compile_s = time.perf_counter() - t0
            for backend in ("jax", "numpy"):
                t0 = time.perf_counter()
                res[backend] = jaxik.dls_ik(chain, targets, backend=backend, rng=np.random.default_rng(3), **opts)
                seconds[backend] = time.perf_counter() - t0
        compile_s -= seconds["jax"]
        same = float(np.mean(res["jax"].converged == res["numpy"].converged))
        rows.append(f"| DLS IK (pose) | {size:,} | {seconds['jax'] / size * 1e6:,.2f} us | "
                    f"{100 * res['jax'].success_rate:.1f} % | {seconds['numpy'] / size * 1e6:,.2f} us | "
                    f"{100 * res['numpy'].success_rate:.1f} % | {seconds['numpy'] / seconds['jax']:,.1f} x | "
                    f"{100 * same:.2f} % | {compile_s:.1f} s |")
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-smoke", action="store_true", help="small sizes, JAX on the CPU")
    parser.add_argument("--jacobian-sizes", type=float, nargs="+", help="default 1e5 1e6 1e7 (smoke: 1e3)")
    parser.add_argument("--ik-sizes", type=float, nargs="+", help="default 1e4 1e5 (smoke: 100)")
    parser.add_argument("--iterations", type=int, default=40, help="DLS steps per attempt")
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chains", type=Path, help="a pickle of {'panda': Chain} (no MuJoCo needed)")
    parser.add_argument("--out", type=Path, help="default benchmarks/GPU_BATCH_RESULTS.md (smoke: a temporary name)")
    args = parser.parse_args(argv)
    if args.cpu_smoke:
        os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    jax.config.update("jax_enable_x64", True)
    import physai

    here = Path(__file__).resolve().parent
    out = args.out or here / ("gpu_batch_cpu_smoke.md" if args.cpu_smoke else "GPU_BATCH_RESULTS.md")
    device = jax.devices()[0]
    if not args.cpu_smoke and device.platform != "gpu":
        print(f"JAX found no GPU (default device: {device}); run with --cpu-smoke, or install the CUDA plugin",
              file=sys.stderr)
        return 2
    chain = pickle.loads(args.chains.read_bytes())["panda"] if args.chains else physai.load("panda")
    jac_sizes = [int(s) for s in (args.jacobian_sizes or ([1e3] if args.cpu_smoke else [1e5, 1e6, 1e7]))]
    ik_sizes = [int(s) for s in (args.ik_sizes or ([100] if args.cpu_smoke else [1e4, 1e5]))]
    cpu = f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cores"
    lines = [
        f"# The JAX path on {'the CPU (smoke run)' if args.cpu_smoke else 'a GPU'} against the CPU path",
        "",
        f"Command: `python benchmarks/gpu_batch.py {' '.join(argv if argv is not None else sys.argv[1:])}`  ",
        f"Device: **{device.device_kind}** ({device.platform}); host CPU: {cpu}; jax {jax.__version__}; "
        f"Python {platform.python_version()}; physai engine for batches: numba JIT.  ",
        "Robot: Panda (7 hinges), float64 throughout. Times are the best of "
        f"{args.repeats} calls after one untimed call (Jacobians) or one run each (IK).",
        "",
        "| work | batch | GPU, data on the device | GPU, with transfers | CPU: physai.jacobian(out=) | CPU / GPU "
        "(on device) | CPU / GPU (with transfers) | max abs difference | GPU compile |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *jacobian_rows(chain, jac_sizes, args.repeats, device, jax),
        "",
        f"| work | targets | GPU: dls_ik(backend='jax') per target | success | CPU: dls_ik(backend='numpy') per "
        f"target | success | CPU / GPU | same targets converged | GPU compile |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *ik_rows(chain, ik_sizes, args.iterations, args.restarts, device, jax),
        "",
        f"IK: {args.iterations} DLS steps per attempt, {args.restarts} restarts from the same seeded draws on both "
        "paths, task `pose` (1e-4 m, 1e-3 rad). The GPU times include moving the targets up and the answers back.",
        "",
    ]
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
