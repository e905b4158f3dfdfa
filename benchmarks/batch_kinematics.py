"""Batched Panda Jacobians from 1e3 to 1e7 poses: time per Jacobian, peak memory, the peers, the memory floor.

    uv sync --group bench          # once: pytorch-kinematics (torch), Pinocchio
    uv run --group bench python benchmarks/batch_kinematics.py [--out benchmarks/BATCH_RESULTS.md] [--rounds 5]

Every measurement runs in a fresh process of its own (``--worker``, which prints its result as one line of JSON),
so that no candidate's threads, allocator or imports touch another's timings, and each process's peak resident
memory (``VmHWM``) is its own:

- one worker per size and candidate: ``--worker physai`` runs ``physai.jacobian(chain, Q)`` (a new array),
  ``physai.jacobian(chain, Q, out=J)`` (the caller's array) and the same held to one thread;
  ``--worker pytorch_kinematics`` its ``jacobian`` (CPU, float64, all cores) and ``--worker pinocchio`` a Python loop
  of ``computeFrameJacobian``, each alone in its process, after checking its answer against physai's on 100 poses.
  The peers run up to the sizes ``--torch-max`` and ``--pinocchio-max`` (their cost per pose is flat by then);
- peak memory: a worker's first call of each candidate, its peak resident memory above what the process held
  before it (the candidates in the order of their peaks, so that each call's peak is the process's);
- time: then each candidate's calls, physai's three taking turns in each round (``_timing.per_call_seconds``),
  median over the rounds;
- streamed: 1e7 poses drawn and solved chunk by chunk (``out=`` slices of one output array), peak memory above
  the output array;
- the floor: the bytes each Jacobian moves (``q`` read, ``J`` written) over the write bandwidth NumPy reaches on
  this machine (a large ``fill`` and ``copyto`` on one thread and on every core), measured in the same run.

One worker alone, e.g. ``python benchmarks/batch_kinematics.py --worker physai --n 1000000``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _timing import best_seconds, per_call_seconds  # noqa: E402

SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
STREAM_CHUNK = 100_000


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status, MB: ``VmHWM`` its peak resident memory since it
    started (``ru_maxrss`` would carry the parent's peak over, through fork and exec), ``VmRSS`` its current one."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _rss_mb() -> float:
    return _status_mb("VmHWM")


def _current_rss_mb() -> float:
    return _status_mb("VmRSS")


def _panda():
    from physai import robots

    return robots.load("panda")


PEERS = ("pytorch_kinematics", "Pinocchio loop")
_WORKER = {"pytorch_kinematics": "pytorch_kinematics", "pinocchio": "Pinocchio loop"}


def _peer(chain, name: str):
    """``Q -> J`` of the peer ``name`` (of :data:`PEERS`), checked against physai on 100 poses; ImportError where it
    is not installed."""
    import physai
    from run import PANDA_XML, PK_TOL, pinocchio_peer, torch_peer

    Q = chain.random_q(np.random.default_rng(5), 100)
    J = physai.jacobian(chain, Q)
    if name == "Pinocchio loop":
        pin_jac, _ = pinocchio_peer(chain)
        assert np.abs(np.array([pin_jac(q) for q in Q]) - J).max() <= 1e-12
        return lambda Q: [pin_jac(q) for q in Q]
    pk_chain, torch = torch_peer(PANDA_XML, chain)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    assert np.abs(pk_chain.jacobian(torch.tensor(Q)).numpy() - J).max() <= PK_TOL
    return lambda Q: pk_chain.jacobian(torch.from_numpy(Q))


def _calls(size: int) -> int:
    return max(1, 100_000 // size)


def _peak_above_mb(f) -> float:
    """Peak resident memory of a call of ``f``, MB above what the process held before it. The process's peak so
    far must lie below that (each worker measures its candidates in the order of their peaks, before timing them)."""
    before = _current_rss_mb()
    f()
    return _rss_mb() - before


def worker_physai(size: int, rounds: int) -> dict:
    """physai's candidates at ``size`` poses: the peak memory of one call of each above what the process held
    before it, then seconds per Jacobian, taking turns (medians over the rounds). At 1e7 the new array is measured
    after the caller's array is freed: two arrays of Jacobians would take 6.7 GB."""
    import physai
    from physai import kinematics

    chain = _panda()
    Q = chain.random_q(np.random.default_rng(1), size)
    J = np.empty((size, 6, chain.n))
    J.fill(0.0)  # the caller's array, in memory before the call
    physai.jacobian(chain, Q[:10])  # the engine loaded before the baseline

    def one_thread():
        shared, kinematics.THREAD_MIN_ROWS = kinematics.THREAD_MIN_ROWS, size
        try:
            physai.jacobian(chain, Q, out=J)
        finally:
            kinematics.THREAD_MIN_ROWS = shared

    new = {"physai": lambda: physai.jacobian(chain, Q)}
    cands = {"physai out=": lambda: physai.jacobian(chain, Q, out=J), "physai out=, 1 thread": one_thread}
    big = size >= 10_000_000
    rounds = rounds if not big else 1
    mb = {"physai out=": _peak_above_mb(cands["physai out="])}
    if not big:
        mb["physai"] = _peak_above_mb(new["physai"])
    t = per_call_seconds(cands if big else cands | new, calls=_calls(size), rounds=rounds)
    cpu = {k: _cpu_seconds(f, max(1, 1_000_000 // size)) / size for k, f in cands.items()}
    if big:
        del J, cands
        mb["physai"] = _peak_above_mb(new["physai"])
        t |= per_call_seconds(new, calls=1, rounds=rounds)
    cpu["physai"] = _cpu_seconds(new["physai"], max(1, 1_000_000 // size)) / size
    return {"seconds": {k: float(np.median(v)) / size for k, v in t.items()}, "peak_above_mb": mb, "cpu_seconds": cpu}


def _cpu_seconds(f, calls: int) -> float:
    """Processor seconds (user and system, every thread of the process) per call of ``f``: the work a call does,
    which other processes on the cores do not stretch as they stretch its wall time."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(calls):
        f()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / calls


def worker_peer(name: str, size: int, rounds: int) -> dict:
    """The peer ``name`` at ``size`` poses, alone in this process: the peak memory of one call above what the
    process held before it (its imports and model included there), then seconds per Jacobian (median over the
    rounds)."""
    chain = _panda()
    peer = _peer(chain, name)
    Q = chain.random_q(np.random.default_rng(1), size)
    mb = _peak_above_mb(lambda: peer(Q))
    t = per_call_seconds({name: lambda: peer(Q)}, calls=_calls(size), rounds=rounds)
    return {"seconds": {name: float(np.median(t[name])) / size}, "peak_above_mb": {name: mb}}


def worker_stream(size: int, chunk: int) -> dict:
    """``size`` poses drawn chunk by chunk into one output array through ``out=`` slices."""
    import physai

    chain = _panda()
    rng = np.random.default_rng(2)
    J = np.empty((size, 6, chain.n))
    J.fill(0.0)
    physai.jacobian(chain, chain.random_q(rng, 10))
    before = _current_rss_mb()
    t0 = time.perf_counter()
    for lo in range(0, size, chunk):
        hi = min(lo + chunk, size)
        physai.jacobian(chain, chain.random_q(rng, hi - lo), out=J[lo:hi])
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "output_mb": J.nbytes / 2**20, "before_mb": before,
            "peak_above_output_mb": _rss_mb() - J.nbytes / 2**20, "peak_mb": _rss_mb()}


def bandwidth() -> dict:
    """Write and copy bandwidth NumPy reaches here (GB/s), one thread and one thread per core, on 1 GiB arrays."""
    a, b = np.ones(2**27), np.ones(2**27)  # touched: no page faults in the timed part
    cores = len(os.sched_getaffinity(0))

    def threaded(op):
        parts = np.array_split(np.arange(len(a)), cores)

        def run():
            threads = [threading.Thread(target=op, args=(p[0], p[-1] + 1)) for p in parts]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return run

    gb = a.nbytes / 1e9
    return {
        "fill 1 thread": gb / best_seconds(lambda: a.fill(2.0)),
        "copy 1 thread": gb / best_seconds(lambda: np.copyto(a, b)),  # counts the bytes written
        f"copy {cores} threads": gb / best_seconds(threaded(lambda lo, hi: np.copyto(a[lo:hi], b[lo:hi]))),
    }


def _worker(*args) -> dict:
    """Run ``--worker *args`` in a fresh process; its result."""
    cmd = [sys.executable, __file__, "--worker", *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[1:])} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_worker(args) -> dict:
    n = int(args.n)
    if args.worker == "physai":
        return worker_physai(n, args.rounds)
    if args.worker in _WORKER:
        return worker_peer(_WORKER[args.worker], n, args.rounds)
    return worker_stream(n, args.chunk)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "BATCH_RESULTS.md")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", type=float, nargs="+", default=SIZES)
    parser.add_argument("--torch-max", type=float, default=1e6, help="largest size pytorch_kinematics runs")
    parser.add_argument("--pinocchio-max", type=float, default=1e5, help="largest size Pinocchio's loop runs")
    parser.add_argument("--stream-size", type=float, default=1e7, help="poses streamed through out= slices")
    parser.add_argument("--worker", choices=("physai", *_WORKER, "stream"),
                        help="measure one thing in this process and print it as JSON (the table's runs use these)")
    parser.add_argument("--n", type=float, default=1e6, help="poses of a worker's batch")
    parser.add_argument("--chunk", type=int, default=STREAM_CHUNK, help="rows per chunk of --worker stream")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_run_worker(args)))
        return 0

    import physai
    from physai import _threads

    sizes = [int(s) for s in args.sizes]
    torch_max, pin_max = int(args.torch_max), int(args.pinocchio_max)
    bw = bandwidth()
    best_bw = max(bw.values())
    chain = _panda()
    bytes_per = (6 * chain.n + chain.n) * 8  # J written, q read
    floor_ns = bytes_per / best_bw
    rows, cpu_rows = [], []
    for size in sizes:
        got = _worker("physai", "--n", size, "--rounds", args.rounds)
        t, mem = got["seconds"], got["peak_above_mb"]
        cpu_rows.append([f"{size:,}"] + [f"{got['cpu_seconds'][k] * 1e9:,.0f}" for k in
                                         ("physai", "physai out=", "physai out=, 1 thread")])
        for worker, name in _WORKER.items():
            if size <= (torch_max if name == "pytorch_kinematics" else pin_max):
                try:
                    got = _worker(worker, "--n", size, "--rounds", args.rounds)
                except RuntimeError as exc:
                    print(f"{name} skipped: {str(exc).splitlines()[-1]}", file=sys.stderr)
                    continue
                t |= got["seconds"]
                mem |= got["peak_above_mb"]
        cell = lambda k: f"{t[k] * 1e9:,.0f}" if k in t else "-"  # noqa: E731
        mcell = lambda k: f"{mem[k]:,.0f}" if k in mem else "-"  # noqa: E731
        rows.append([f"{size:,}", cell("physai"), cell("physai out="), cell("physai out=, 1 thread"), f"{floor_ns:.0f}",
                     cell("pytorch_kinematics"), cell("Pinocchio loop"),
                     mcell("physai"), mcell("physai out="), f"{size * 6 * chain.n * 8 / 2**20:,.0f}",
                     mcell("pytorch_kinematics"), mcell("Pinocchio loop")])
        print(rows[-1], flush=True)
    streamed = int(args.stream_size)
    stream = _worker("stream", "--n", streamed, "--chunk", min(STREAM_CHUNK, streamed))
    print(stream, flush=True)

    cores = _threads.cores()
    load = os.getloadavg()
    lines = [
        "# Batched Jacobians: 1e3 to 1e7 poses",
        "",
        "Command (from the repository root, after `uv sync --group bench`): `uv run --group bench python "
        f"benchmarks/batch_kinematics.py {' '.join(argv if argv is not None else sys.argv[1:])}`".rstrip() + "  ",
        f"Machine: {platform.machine()}, {cores} cores available, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, physai engine: {physai.kinematics._KERNELS.origin.split(' ')[0]} "
        f"(batches: numba JIT).  ",
        f"Load average when the table was written: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min); "
        "a load above the run's own (about 1-2) means other work shared the cores, and the threaded times carry it.",
        "",
        "How it was measured: every cell is a fresh process of its own (`--worker`, its result one line of JSON): "
        "physai's three candidates take turns in one process, round after round; pytorch_kinematics and Pinocchio "
        "each run alone in theirs, so that no peer's threads, allocator or imports are in physai's process (or the "
        "other way round). Memory: the first call of each candidate in its worker, the process's peak resident "
        "memory (`VmHWM`, its own: `ru_maxrss` would carry over its parent's) above what it held before the call "
        "(`Q`, the caller's array for `out=`, and a peer's imports and model).",
        "",
        "Robot: Panda (7 hinges), tool site `tcp`; `Q` uniform in the joint limits (seeded). Times in ns per "
        f"Jacobian, medians over {args.rounds} rounds (1 at 1e7); memory in MB, the peak resident memory of one call "
        "above what the process held before it.",
        "",
        "| poses | physai.jacobian | physai out= | physai out=, 1 thread | floor | pytorch_kinematics (CPU) | "
        "Pinocchio loop | peak MB: physai | physai out= | J itself | pytorch_kinematics | Pinocchio loop |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        f"- floor: {bytes_per} bytes per Jacobian (a 6 x 7 float64 `J` written, a 7-float64 `q` read) over the best "
        f"bandwidth NumPy reached here, {best_bw:.1f} GB/s (" + ", ".join(f"{k} {v:.1f} GB/s" for k, v in bw.items())
        + ", 1 GiB arrays); it leaves out the arithmetic, ~400 flops and 7 sines and cosines per Jacobian.",
        "- physai: a new `(B, 6, 7)` array per call (its pages are faulted in by the call); physai out=: the caller's "
        "array, reused call after call. Both share a batch among one thread per core from 2,048 poses per core "
        "(4,096 here); physai out=, 1 thread: the same call held to one thread, the work of one core, which a "
        "load of one other busy process leaves alone (the threaded figures are what the load left of the other).",
        f"- pytorch_kinematics runs up to {torch_max:,} poses (float64, {cores} threads), Pinocchio's loop up to "
        f"{pin_max:,} (a `computeFrameJacobian` per pose from Python: its cost per pose is flat); '-': not run at "
        "that size. At 1e7, `physai` (a new array) is timed after the `out=` array is freed (two arrays of "
        "Jacobians would take 6.7 GB).",
        "",
        "Processor time of physai's calls (user and system, all its threads; one more pass of each candidate after "
        "the timed rounds), ns per Jacobian: the work each call does, which other processes on the cores do not "
        "stretch as they stretch the wall times above (a page fault's kernel work, zeroing a new array, counts).",
        "",
        "| poses | physai.jacobian | physai out= | physai out=, 1 thread |",
        "|---:|---:|---:|---:|",
        *("| " + " | ".join(r) + " |" for r in cpu_rows),
        "",
        f"## {streamed:,} Jacobians streamed through `out=` slices",
        "",
        f"{streamed:,} poses drawn {min(STREAM_CHUNK, streamed):,} at a time (`chain.random_q`) and written with "
        f"`physai.jacobian(chain, Q_chunk, out=J[lo:hi])` into one `({streamed:,}, 6, 7)` array allocated beforehand: "
        f"{stream['seconds']:.2f} s ({stream['seconds'] / streamed * 1e9:.0f} ns per Jacobian, drawing `Q` included), "
        f"output array {stream['output_mb']:,.0f} MB, peak resident memory {stream['peak_mb']:,.0f} MB: "
        f"**{stream['peak_above_output_mb']:,.0f} MB above the output array** (the interpreter, NumPy, numba and "
        "one chunk).",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
