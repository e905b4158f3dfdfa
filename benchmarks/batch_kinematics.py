"""Batched Panda Jacobians from 1e3 to 1e7 poses: time per Jacobian, peak memory, the peers, the memory floor.

    uv sync --group bench          # once: pytorch-kinematics (torch), Pinocchio
    uv run python benchmarks/batch_kinematics.py [--out benchmarks/BATCH_RESULTS.md] [--rounds 5]

Every size runs in a fresh process of its own, so that its peak resident memory (``ru_maxrss``) is that size's:

- time: ``physai.jacobian(chain, Q)`` (a new array), ``physai.jacobian(chain, Q, out=J)`` (the caller's array;
  also held to one thread),
  pytorch_kinematics' ``jacobian`` (CPU, float64, all cores) and a Python loop of Pinocchio's
  ``computeFrameJacobian``, taking turns in each round (``_timing.per_call_seconds``), median over the rounds.
  The peers run up to the sizes ``--torch-max`` and ``--pinocchio-max`` (their cost per pose is flat by then);
- peak memory: one more process per size and candidate, which makes ``Q``, calls once and reports its peak
  resident memory above what it held before the call;
- streamed: 1e7 poses drawn and solved chunk by chunk (``out=`` slices of one output array), peak memory above
  the output array;
- the floor: the bytes each Jacobian moves (``q`` read, ``J`` written) over the write bandwidth NumPy reaches on
  this machine (a large ``fill`` and ``copyto`` on one thread and on every core), measured in the same run.

Every peer's answer is checked against physai's before it is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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


def _peers(chain):
    """``{name: Q -> J}`` of the installed peers, each checked against physai on 100 poses."""
    import physai
    from run import PANDA_XML, PK_TOL, pinocchio_peer, torch_peer

    Q = chain.random_q(np.random.default_rng(5), 100)
    J = physai.jacobian(chain, Q)
    peers = {}
    try:
        pin_jac, _ = pinocchio_peer(chain)
        assert np.abs(np.array([pin_jac(q) for q in Q]) - J).max() <= 1e-12
        peers["Pinocchio loop"] = lambda Q: [pin_jac(q) for q in Q]
    except ImportError as exc:
        print(f"Pinocchio skipped: {exc}", file=sys.stderr)
    try:
        pk_chain, torch = torch_peer(PANDA_XML, chain)
        torch.set_num_threads(len(os.sched_getaffinity(0)))
        assert np.abs(pk_chain.jacobian(torch.tensor(Q)).numpy() - J).max() <= PK_TOL
        peers["pytorch_kinematics"] = lambda Q: pk_chain.jacobian(torch.from_numpy(Q))
    except ImportError as exc:
        print(f"pytorch_kinematics skipped: {exc}", file=sys.stderr)
    return peers


def child_time(size: int, rounds: int, torch_max: int, pin_max: int) -> dict:
    """Seconds per Jacobian of each candidate at ``size`` poses (medians over the rounds)."""
    import physai
    from physai import kinematics

    chain = _panda()
    Q = chain.random_q(np.random.default_rng(1), size)
    J = np.empty((size, 6, chain.n))

    def one_thread():
        shared, kinematics.THREAD_MIN_ROWS = kinematics.THREAD_MIN_ROWS, size
        try:
            physai.jacobian(chain, Q, out=J)
        finally:
            kinematics.THREAD_MIN_ROWS = shared

    cands = {"physai out=": lambda: physai.jacobian(chain, Q, out=J), "physai out=, 1 thread": one_thread}
    if size < 10_000_000:  # at 1e7 a second array of Jacobians would need 3.4 GB more (its memory is measured alone)
        cands["physai"] = lambda: physai.jacobian(chain, Q)
    for name, f in _peers(chain).items():
        if size <= (torch_max if name == "pytorch_kinematics" else pin_max):
            cands[name] = lambda f=f: f(Q)
    calls = max(1, 100_000 // size)
    t = per_call_seconds(cands, calls=calls, rounds=rounds if size < 10_000_000 else 1)
    return {k: float(np.median(v)) / size for k, v in t.items()}


def child_memory(size: int, candidate: str) -> dict:
    """Peak resident memory of one call of ``candidate`` at ``size`` poses, above what the process held before."""
    import physai

    chain = _panda()
    Q = chain.random_q(np.random.default_rng(1), size)
    if candidate == "physai":
        f = lambda: physai.jacobian(chain, Q)  # noqa: E731
    elif candidate == "physai out=":
        J = np.empty((size, 6, chain.n))
        J.fill(0.0)  # the caller's array, in memory before the call
        f = lambda: physai.jacobian(chain, Q, out=J)  # noqa: E731
    else:
        peer = _peers(chain)[candidate]  # its imports and model before the baseline
        f = lambda: peer(Q)  # noqa: E731
    physai.jacobian(chain, Q[:10])  # the engine loaded before the baseline
    before = _current_rss_mb()
    f()
    return {"peak_above_mb": _rss_mb() - before, "before_mb": before}


def child_stream(size: int, chunk: int) -> dict:
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


def _child(kind: str, *args) -> dict:
    """Run ``child_<kind>(*args)`` in a fresh process; its result."""
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps([kind, *args])], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "BATCH_RESULTS.md")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", type=float, nargs="+", default=SIZES)
    parser.add_argument("--torch-max", type=float, default=1e6, help="largest size pytorch_kinematics runs")
    parser.add_argument("--pinocchio-max", type=float, default=1e5, help="largest size Pinocchio's loop runs")
    parser.add_argument("--stream-size", type=float, default=1e7, help="poses streamed through out= slices")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = json.loads(args.child)
        print(json.dumps({"time": child_time, "memory": child_memory, "stream": child_stream}[kind](*rest)))
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
    rows, times = [], {}
    for size in sizes:
        t = _child("time", size, args.rounds, torch_max, pin_max)
        times[size] = t
        mem = {}
        for cand in ("physai", "physai out=") + tuple(k for k in t if k.startswith(("py", "Pin"))):
            mem[cand] = _child("memory", size, cand)["peak_above_mb"]
        cell = lambda k: f"{t[k] * 1e9:,.0f}" if k in t else "-"  # noqa: E731
        mcell = lambda k: f"{mem[k]:,.0f}" if k in mem else "-"  # noqa: E731
        rows.append([f"{size:,}", cell("physai"), cell("physai out="), cell("physai out=, 1 thread"), f"{floor_ns:.0f}",
                     cell("pytorch_kinematics"), cell("Pinocchio loop"),
                     mcell("physai"), mcell("physai out="), f"{size * 6 * chain.n * 8 / 2**20:,.0f}",
                     mcell("pytorch_kinematics"), mcell("Pinocchio loop")])
        print(rows[-1], flush=True)
    streamed = int(args.stream_size)
    stream = _child("stream", streamed, min(STREAM_CHUNK, streamed))
    print(stream, flush=True)

    cores = _threads.cores()
    load = os.getloadavg()
    lines = [
        "# Batched Jacobians: 1e3 to 1e7 poses",
        "",
        "Command: `uv run python benchmarks/batch_kinematics.py "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`  ",
        f"Machine: {platform.machine()}, {cores} cores available, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, physai engine: {physai.kinematics._KERNELS.origin.split(' ')[0]} "
        f"(batches: numba JIT).  ",
        f"Load average when the table was written: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min): "
        "the machine is shared with other work, so these are times under load; the peers took turns with physai "
        "in every round, so the ratios hold better than the absolute times.",
        "",
        "Robot: Panda (7 hinges), tool site `tcp`; `Q` uniform in the joint limits (seeded). Times in ns per "
        f"Jacobian, medians over {args.rounds} rounds (1 at 1e7); memory in MB, the peak resident memory of one call "
        "above what the process held before it (fresh process per size and candidate).",
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
        "that size. At 1e7, `physai` (a new array) is not timed beside `out=` (two arrays of Jacobians would take "
        "6.7 GB); its memory is measured alone.",
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
