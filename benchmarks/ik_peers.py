"""physai.solve_ik against the IK peers on the same targets: roboticstoolbox ik_LM, ikpy, Pinocchio CLIK, mink.

    uv sync --group bench        # once: roboticstoolbox-python, ikpy, mink (Pinocchio is a dev dependency)
    uv run python benchmarks/ik_peers.py [--targets 1000] [--slow-targets 200] [--restarts 20] [--seed 0]
                                         [--robots so101 wxai panda] [--solvers physai physai-numpy rtb ikpy pinocchio mink]

(or, with the peers in a separate virtual environment: ``PYTHONPATH=. /path/to/venv/bin/python benchmarks/ik_peers.py``)

Per robot/task the targets are the tool poses of uniform random joint vectors inside the limits
(``targets(chain, n, seed)``), so every target is reachable. Every solver gets the same targets, the
same first start (the middle of the limits, physai's default ``q0``) and random restarts inside the
limits after a failed attempt; success is judged by physai's own FK and the task's errors
(position < 1e-4 m, orientation < 1e-3 rad, every joint inside its limits), never by the peer's claim.
Each peer's kinematics is built from the same physai ``Chain`` (roboticstoolbox ETS; ikpy and Pinocchio via
a URDF written from the chain) or from the same MJCF file (mink) and its FK is checked equal
to physai's to 1e-9 on random joint vectors before anything is timed. Times are wall-clock per
target, over all its attempts. Prints a table, writes ``benchmarks/ik_peers.json`` and, with
``--markdown``, ``benchmarks/IK_RESULTS.md``. ``run()`` returns the rows.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from rich.progress import track

from physai import Chain, kinematics, robots, solve_ik, solve_ik_batch
from physai.ik import Solver
from physai import transforms as tf
from physai.ik import DEFAULT_RESTARTS, default_start, task_residual

HERE = Path(__file__).resolve().parent

TOL_POSITION, TOL_ORIENTATION = 1e-4, 1e-3
TOOL_AXIS = np.array([0.0, 0.0, 1.0])  # the tool axis "position+axis" aligns (physai's default)
FK_TOL = 1e-9
ROBOTS = {  # key: (label, robots.load name or MJCF path, tool site)
    "so101": ("SO-101", "so101", "gripperframe"),
    "wxai": ("WidowX AI", "wxai", "ee_site"),
    "panda": ("Panda", "panda", "tcp"),
}
CASES = (("so101", "position"), ("so101", "position+axis"), ("wxai", "pose"), ("panda", "pose"))
SOLVERS = ("physai", "physai-numpy", "rtb", "ikpy", "pinocchio", "mink")
SLOW = ("ikpy", "physai-numpy")  # solvers run on the first --slow-targets targets only (tens of ms per solve)


# ---- targets, success, and the chain in the peers' formats (core dependencies only) -------------


def load(robot: str) -> Chain:
    _, model, site = ROBOTS[robot]
    return robots.load(model, site=site)


def targets(chain: Chain, n: int, seed: int) -> np.ndarray:
    """``T_world_target: (n, 4, 4)``: tool poses of ``n`` uniform random joint vectors inside the limits (seeded)."""
    return kinematics.tool_pose(chain, chain.random_q(np.random.default_rng(seed), n))


def task_errors(chain: Chain, task: str, T_target: np.ndarray, q: np.ndarray):
    """physai's judgement of joint vectors ``q: (k, n)`` for targets ``(k, 4, 4)``.

    Returns ``position_error (k,)`` (m), ``orientation_error (k,)`` (rad; tool-axis angle for
    ``"position+axis"``, 0 for ``"position"``) and ``inside (k,)`` (every joint within its limits).
    """
    T, J = kinematics.tool_pose_and_jacobian(chain, q)
    _, _, perr, oerr = task_residual(task, T, J, T_target, TOOL_AXIS)
    return perr, oerr, np.all((q >= chain.lower) & (q <= chain.upper), axis=-1)


def succeeded(chain: Chain, task: str, T_target: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``(k,)`` bool: within 1e-4 m and 1e-3 rad of the target and inside the limits, by physai's FK."""
    perr, oerr, inside = task_errors(chain, task, T_target, q)
    return (perr < TOL_POSITION) & (oerr < TOL_ORIENTATION) & inside


def joint_origins(chain: Chain) -> np.ndarray:
    """``(n, 4, 4)``: joint ``i``'s frame in the previous one at ``q_i = 0`` (``q_ref`` folded in).

    physai moves joint ``i`` by ``q_i - q_ref_i`` from ``T_prev_joint[i]``; URDF and ETS joints move by
    ``q_i`` from their origin, so the origin is ``T_prev_joint[i]`` moved by ``-q_ref_i``.
    """
    return np.stack([T @ kinematics.joint_motion(t, a, -r) for T, t, a, r in
                     zip(chain.T_prev_joint, chain.joint_types, chain.axis_joint, chain.q_ref)])


def _xyz_rpy(T: np.ndarray) -> str:
    xyz = " ".join(repr(float(v)) for v in T[:3, 3])
    rpy = " ".join(repr(float(v)) for v in tf.matrix_to_rpy(T[:3, :3]))
    return f'<origin xyz="{xyz}" rpy="{rpy}"/>'


def chain_to_urdf(chain: Chain) -> str:
    """A URDF of the chain: links ``base, link1 .. linkn, tool``; joints as in physai (names kept), tool fixed."""
    links = ["base"] + [f"link{i + 1}" for i in range(chain.n)] + ["tool"]
    out = [f'<?xml version="1.0"?>\n<robot name="{chain.name}">']
    out += [f'  <link name="{name}"/>' for name in links]
    for i, (T, jtype, axis) in enumerate(zip(joint_origins(chain), chain.joint_types, chain.axis_joint)):
        lo, hi = chain.lower[i], chain.upper[i]
        kind = "prismatic" if jtype == "slide" else ("revolute" if np.isfinite(lo) and np.isfinite(hi) else "continuous")
        limit = f'<limit lower="{float(lo)!r}" upper="{float(hi)!r}" effort="0" velocity="0"/>' if kind != "continuous" else ""
        out.append(f'  <joint name="{chain.joint_names[i]}" type="{kind}"><parent link="{links[i]}"/>'
                   f'<child link="{links[i + 1]}"/>{_xyz_rpy(T)}'
                   f'<axis xyz="{" ".join(repr(float(v)) for v in axis)}"/>{limit}</joint>')
    out.append(f'  <joint name="{chain.tool_name}" type="fixed"><parent link="{links[-2]}"/>'
               f'<child link="tool"/>{_xyz_rpy(chain.T_last_tool)}</joint>')
    return "\n".join(out + ["</robot>\n"])


def _z_onto(axis: np.ndarray) -> np.ndarray:
    """A rotation ``R`` with ``R @ z = axis`` (unit ``axis``)."""
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, axis)
    s, c = np.linalg.norm(v), float(z @ axis)
    return tf.rotation_about_axis(v / s if s > 1e-12 else np.array([1.0, 0.0, 0.0]), np.arctan2(s, c))


# ---- peers: each builds from the chain / the MJCF, checks its FK, returns solve(T, rng) -> (q, attempts) ---


@dataclass(frozen=True)
class Peer:
    """A solver ready to time: ``solve(T_target, rng) -> (q (n,) in chain order, attempts used)``."""

    name: str
    solve: Callable[[np.ndarray, np.random.Generator], tuple[np.ndarray, int]]
    settings: str


def _check_fk(name: str, chain: Chain, fk: Callable[[np.ndarray], np.ndarray], seed: int = 123) -> None:
    """Raise unless the peer's tool pose equals physai's to ``FK_TOL`` on 20 random joint vectors."""
    Q = chain.random_q(np.random.default_rng(seed), 20)
    err = max(np.abs(fk(q) - T).max() for q, T in zip(Q, kinematics.tool_pose(chain, Q)))
    if not err <= FK_TOL:
        raise RuntimeError(f"{name}: FK differs from physai's by {err:.2e} (> {FK_TOL})")


def _with_restarts(chain, restarts, attempt):
    """``solve(T, rng)``: ``attempt(T, q0) -> (q, ok)`` from the middle of the limits, then from random starts."""

    def solve(T, rng):
        starts = np.concatenate([default_start(chain)[None], chain.random_q(rng, restarts)])
        q = starts[0]
        for k, q0 in enumerate(starts):
            q, ok = attempt(T, q0)
            if ok:
                break
        return q, k + 1

    return solve


def _errors(task, T, T_target) -> tuple[float, float]:
    """The peer's own position (m) and orientation (rad) errors from its FK ``T`` (checked equal to physai's)."""
    perr = float(np.linalg.norm(T[:3, 3] - T_target[:3, 3]))
    if task == "position":
        return perr, 0.0
    if task == "pose":
        c = 0.5 * (np.trace(T_target[:3, :3] @ T[:3, :3].T) - 1.0)
    else:
        c = float((T[:3, :3] @ TOOL_AXIS) @ (T_target[:3, :3] @ TOOL_AXIS))
    return perr, float(np.arccos(np.clip(c, -1.0, 1.0)))


class _Attempt:
    """One attempt's stopping rule for the Python-loop peers: converged, or stalled (its error, m + rad, has
    not fallen by 1 % within ``patience`` iterations, the rule physai's LM uses), or ``iterations`` spent."""

    def __init__(self, task, T_target, iterations=100, patience=10):
        self.task, self.T_target, self.left, self.patience = task, T_target, iterations, patience
        self.ref, self.since = np.inf, 0
        self.converged = False

    def done(self, T) -> bool:
        perr, oerr = _errors(self.task, T, self.T_target)
        self.converged = perr < TOL_POSITION and oerr < TOL_ORIENTATION
        err = perr + oerr
        self.ref, self.since = (err, 0) if err < 0.99 * self.ref else (self.ref, self.since + 1)
        self.left -= 1
        return self.converged or self.since >= self.patience or self.left < 0


def physai_peer(chain: Chain, robot: str, task: str, restarts: int, backend: str = "compiled") -> Peer:
    """physai with every default (its restarts are its own: up to ``DEFAULT_RESTARTS``; ``restarts`` is the peers');
    ``backend="numpy"``: the same solver's vectorised NumPy loop instead of the compiled default (for the ratio)."""

    def solve(T, rng):
        r = solve_ik(chain, T, task=task, solver=Solver(backend=backend))
        return r.q, r.restarts + 1

    if backend != "compiled":
        return Peer("physai solve_ik (NumPy backend)", solve, f"backend='{backend}', otherwise defaults")
    return Peer("physai solve_ik", solve, f"defaults: method 'lm' (compiled backend), <= {DEFAULT_RESTARTS} restarts "
                "(seeded default_rng(0))")


def rtb_ets(chain: Chain):
    """A roboticstoolbox ETS of the chain: fixed SE3 placements around Rz / tz joints in frames turned onto the axis."""
    from roboticstoolbox import ET
    from spatialmath import SE3

    ets = None
    for T, jtype, axis, lo, hi in zip(joint_origins(chain), chain.joint_types, chain.axis_joint, chain.lower, chain.upper):
        A = tf.make_transform(_z_onto(axis), np.zeros(3))
        joint = ET.Rz(qlim=[lo, hi]) if jtype == "hinge" else ET.tz(qlim=[lo, hi])
        for e in (ET.SE3(SE3(T @ A, check=False)), joint, ET.SE3(SE3(tf.inverse(A), check=False))):
            ets = e if ets is None else ets * e
    return (ets * ET.SE3(SE3(chain.T_last_tool, check=False))).compile()


def rtb_peer(chain: Chain, robot: str, task: str, restarts: int) -> Peer | str:
    if task == "position+axis":
        return "n/a: ik_LM's mask weights world-frame error rows; it has no tool-axis task"
    ets = rtb_ets(chain)
    _check_fk("roboticstoolbox", chain, lambda q: np.asarray(ets.fkine(q).A))
    mask = np.array([1.0, 1, 1, 1, 1, 1] if task == "pose" else [1.0, 1, 1, 0, 0, 0])
    tol = 0.5 * TOL_POSITION**2  # E = |e|^2 / 2 < tol implies |dp| < 1e-4 m and angle < 1e-4 rad
    q0 = np.array(default_start(chain))  # a writable copy: ik_LM's binding refuses a read-only array

    def solve(T, rng):  # ik_LM restarts itself (slimit searches, C++ rand(), unseeded by us)
        sol = ets.ik_LM(T, q0=q0, ilimit=30, slimit=1 + restarts, tol=tol, mask=mask, joint_limits=True)
        return np.asarray(sol.q, dtype=float), min(int(sol.searches), 1 + restarts)  # a failure ends at slimit + 1

    return Peer("roboticstoolbox ik_LM", solve, f"C++ LM (Chan), ilimit=30, slimit=1+{restarts}, tol E<{tol:.0e}, "
                "joint_limits=True")


def ikpy_peer(chain: Chain, robot: str, task: str, restarts: int) -> Peer | str:
    from ikpy.chain import Chain as IkpyChain

    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
        f.write(chain_to_urdf(chain))
    try:
        ik_chain = IkpyChain.from_urdf_file(f.name, base_elements=["base"], symbolic=False, jax_precompile=False,
                                            active_links_mask=[False] + [True] * chain.n + [False])
    finally:
        os.unlink(f.name)

    def full(q):  # ikpy's joint vector has the origin link and the fixed tool link too
        return np.concatenate([[0.0], q, [0.0]])

    _check_fk("ikpy", chain, lambda q: ik_chain.forward_kinematics(full(q)))
    mode = {"pose": "all", "position": None, "position+axis": "Z"}[task]

    def attempt(T, q0):
        q = ik_chain.inverse_kinematics_frame(T, initial_position=full(q0), orientation_mode=mode)[1:-1]
        perr, oerr = _errors(task, ik_chain.forward_kinematics(full(q)), T)
        return q, perr < TOL_POSITION and oerr < TOL_ORIENTATION

    return Peer("ikpy", _with_restarts(chain, restarts, attempt),
                f"scipy least_squares (ikpy defaults), orientation_mode={mode}, +{restarts} restarts")


def pinocchio_peer(chain: Chain, robot: str, task: str, restarts: int, iterations: int = 100,
                   damping: float = 1e-6) -> Peer | str:
    import pinocchio as pin

    # From the chain's URDF: pin.buildModelFromMJCF (Pinocchio 4.1) misplaces a site on a body that
    # has no joint of its own (Panda's tcp: the link8 offset is lost, 0.107 m), so it fails the FK check.
    model = pin.buildModelFromXML(chain_to_urdf(chain))
    data, fid = model.createData(), model.getFrameId("tool", pin.FrameType.BODY)

    def fk(q):
        pin.framesForwardKinematics(model, data, q)
        return data.oMf[fid].homogeneous

    _check_fk("Pinocchio", chain, fk)
    lo, hi = chain.lower, chain.upper

    def attempt(T, q0):
        """The Pinocchio documentation's CLIK loop (damped pseudoinverse, full step), clipped to the limits."""
        q, oMdes, state = q0.copy(), pin.SE3(T), _Attempt(task, T, iterations)
        while not state.done(fk(q)):
            oMf = data.oMf[fid]
            if task == "pose":
                iMd = oMf.actInv(oMdes)
                e = pin.log6(iMd).vector
                J = -pin.Jlog6(iMd.inverse()) @ pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL)
            else:
                J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
                e = oMf.translation - oMdes.translation
                if task == "position+axis":  # mink's axis-align residual a - R^T t, in the tool frame
                    d = oMf.rotation.T @ (oMdes.rotation @ TOOL_AXIS)
                    e = np.concatenate([e, TOOL_AXIS - d])
                    J = np.vstack([J[:3], -tf.skew(d) @ oMf.rotation.T @ J[3:]])
                else:
                    J = J[:3]
            v = -J.T @ np.linalg.solve(J @ J.T + damping * np.eye(len(e)), e)
            q = np.clip(pin.integrate(model, q, v), lo, hi)
        return q, state.converged

    return Peer("Pinocchio CLIK", _with_restarts(chain, restarts, attempt),
                f"damped pseudoinverse, step 1, damping {damping:g}, <= {iterations} it/attempt (stall: 1 % in 10), "
                f"clip to limits, "
                f"+{restarts} restarts")


def mink_peer(chain: Chain, robot: str, task: str, restarts: int, iterations: int = 100,
              damping: float = 1e-6) -> Peer | str:
    import mink

    m = robots.mujoco_model(ROBOTS[robot][1])
    cfg = mink.Configuration(m)
    adr = list(chain.qpos_adr)

    def set_q(q):
        qpos = m.qpos0.copy()
        qpos[adr] = q
        cfg.update(qpos)

    def fk_now():
        return cfg.get_transform_frame_to_world(chain.tool_name, "site").as_matrix()

    def fk(q):
        set_q(q)
        return fk_now()

    _check_fk("mink", chain, fk)
    frame = mink.FrameTask(chain.tool_name, "site", position_cost=1.0, orientation_cost=1.0 if task == "pose" else 0.0)
    tasks = [frame]
    if task == "position+axis":
        align = mink.AxisAlignTask(chain.tool_name, "site", axis=TOOL_AXIS, cost=1.0)
        tasks.append(align)
    limits = [mink.ConfigurationLimit(m)]

    def attempt(T, q0):
        frame.set_target(mink.SE3.from_matrix(T))
        if task == "position+axis":
            align.set_target(T[:3, :3] @ TOOL_AXIS)
        set_q(q0)
        state = _Attempt(task, T, iterations)
        while not state.done(fk_now()):
            vel = mink.solve_ik(cfg, tasks, 1.0, solver="daqp", damping=damping, limits=limits)
            cfg.integrate_inplace(vel, 1.0)
        return cfg.q[adr].copy(), state.converged

    return Peer("mink", _with_restarts(chain, restarts, attempt),
                f"QP (daqp), dt=1, damping {damping:g}, ConfigurationLimit, <= {iterations} it/attempt "
                "(stall: 1 % in 10), "
                f"+{restarts} restarts")


PEERS = {"physai": physai_peer, "physai-numpy": partial(physai_peer, backend="numpy"), "rtb": rtb_peer, "ikpy": ikpy_peer, "pinocchio": pinocchio_peer, "mink": mink_peer}


# ---- the run ------------------------------------------------------------------------------------


def _row(robot, task, solver, n, ok, times, attempts, settings="", note=""):
    t = np.asarray(times) * 1e3
    return {
        "robot": ROBOTS[robot][0], "task": task, "solver": solver, "targets": n,
        "success": float(np.mean(ok)) if n else None,
        "median_ms": float(np.median(t)) if len(t) else None,
        "p95_ms": float(np.percentile(t, 95)) if len(t) else None,
        "attempts_max": int(np.max(attempts)) if len(attempts) else None,
        "attempts_mean": float(np.mean(attempts)) if len(attempts) else None,
        "settings": settings, "note": note, "ratio_to_fastest_peer": None,
    }


def _time_each(solve, T_all, label: str) -> tuple[np.ndarray, list, list]:
    """Solve each target in turn: joint vectors ``(k, n)``, seconds per target, attempts per target."""
    qs, times, attempts = [], [], []
    for T in track(T_all, description=label, transient=True):
        t0 = time.perf_counter()
        q, k = solve(T)
        times.append(time.perf_counter() - t0)
        qs.append(q)
        attempts.append(k)
    return np.array(qs), times, attempts


def run(n_targets: int = 1000, seed: int = 0, robots_: tuple[str, ...] | None = None,
        solvers: tuple[str, ...] = SOLVERS, restarts: int = 20, slow_targets: int = 200) -> list[dict]:
    """Solve the same targets with every solver; one row per (robot, task, solver), dict fields as in the table.

    ``n_targets`` per robot/task (targets seed ``seed``; the peers' restarts use ``seed + 1``); peers get
    ``restarts`` random restarts, physai its defaults (``DEFAULT_RESTARTS``); ikpy only solves the first
    ``slow_targets``. physai's rows carry ``ratio_to_fastest_peer`` = its median over the smallest peer median.
    """
    rows = []
    for robot, task in CASES:
        if robots_ is not None and robot not in robots_:
            continue
        chain = load(robot)
        T_all = targets(chain, n_targets, seed)
        case_rows = []
        for key in solvers:
            peer = PEERS[key](chain, robot, task, restarts)
            if isinstance(peer, str):
                case_rows.append(_row(robot, task, key, 0, [], [], [], note=peer))
                continue
            n = min(n_targets, slow_targets) if key in SLOW else n_targets
            rng = np.random.default_rng(seed + 1)
            peer.solve(T_all[0], rng)  # warm: caches, compilation, first allocations
            q, times, attempts = _time_each(partial(peer.solve, rng=rng), T_all[:n], f"{robot} {task} {key}")
            case_rows.append(_row(robot, task, peer.name, n, succeeded(chain, task, T_all[:n], q), times, attempts,
                                  settings=peer.settings, note="" if n == n_targets else f"first {n} targets only"))
            if key == "physai":
                t0 = time.perf_counter()
                res = solve_ik_batch(chain, T_all, task=task)
                per = (time.perf_counter() - t0) / n_targets
                ok = succeeded(chain, task, T_all, res.q)
                case_rows.append(_row(robot, task, "physai solve_ik_batch", n_targets, ok, [per],
                                      res.restarts + 1, settings="all targets in one call (the compiled loop over targets)",
                                      note="time = batch wall / targets (amortised)"))
        peer_meds = [(r["median_ms"], r["solver"]) for r in case_rows
                     if not r["solver"].startswith("physai") and r["median_ms"] is not None]
        if peer_meds:
            fastest, name = min(peer_meds)
            for r in case_rows:
                if r["solver"].startswith("physai"):
                    r["ratio_to_fastest_peer"] = r["median_ms"] / fastest
                    r["fastest_peer"] = name
        rows += case_rows
    return rows


def versions() -> dict:
    out = {"python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    for pkg in ("numpy", "mujoco", "pin", "roboticstoolbox-python", "ikpy", "mink", "daqp"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def table(rows: list[dict]) -> str:
    """A Markdown table of the rows."""
    head = ["robot", "task", "solver", "targets", "success", "median ms", "p95 ms", "attempts max",
            "physai / fastest peer", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["targets"] == 0:
            cells = [r["robot"], r["task"], r["solver"], "-", "-", "-", "-", "-", "-", r["note"]]
        else:
            ratio = f"{r['ratio_to_fastest_peer']:.2f} x ({r['fastest_peer']})" if r["ratio_to_fastest_peer"] else ""
            cells = [r["robot"], r["task"], r["solver"], str(r["targets"]), f"{100 * r['success']:.1f} %",
                     f"{r['median_ms']:.3f}", "-" if "amortised" in r["note"] else f"{r['p95_ms']:.3f}",
                     str(r["attempts_max"]), ratio, r["note"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=1000, help="random reachable targets per robot/task")
    p.add_argument("--slow-targets", type=int, default=200, help="targets for the slow solvers (ikpy, physai-numpy)")
    p.add_argument("--restarts", type=int, default=20, help="random restarts per target for the peers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--robots", nargs="+", choices=sorted(ROBOTS), default=None)
    p.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    p.add_argument("--markdown", type=Path, default=None, help="also write the table here (e.g. benchmarks/IK_RESULTS.md)")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(a.targets, a.seed, tuple(a.robots) if a.robots else None, tuple(a.solvers), a.restarts, a.slow_targets)
    wall = time.perf_counter() - t0
    command = ("python benchmarks/ik_peers.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    result = {"command": command, "wall_s": wall, "seed": a.seed, "versions": versions(), "rows": rows}
    text = markdown(result)
    print(text)
    (HERE / "ik_peers.json").write_text(json.dumps(result, indent=1))
    if a.markdown:
        a.markdown.write_text(text)


def summary(rows: list[dict]) -> list[str]:
    """The IK acceptance lines, met or not, from physai's single-solve rows: every target solved, at a median
    no slower than roboticstoolbox ik_LM's."""
    mine = [r for r in rows if r["solver"] == "physai solve_ik"]
    if not mine:
        return []
    worst = min(mine, key=lambda r: r["success"])
    ratios = [r for r in mine if r["ratio_to_fastest_peer"] is not None]
    rtb = {(r["robot"], r["task"]): r["median_ms"] for r in rows if r["solver"] == "roboticstoolbox ik_LM"}
    vs_rtb = [(r, r["median_ms"] / rtb[r["robot"], r["task"]]) for r in mine if (r["robot"], r["task"]) in rtb]
    out = [f"- physai success 100 % on every robot/task: **{'met' if worst['success'] == 1 else 'NOT met'}** "
           f"(lowest {100 * worst['success']:.1f} %, {worst['robot']} {worst['task']})."]
    if ratios:
        out.append("- physai median time / fastest peer's median: " + ", ".join(
            f"{r['robot']} {r['task']} {r['ratio_to_fastest_peer']:.2f} x" for r in ratios) + ".")
    if vs_rtb:
        ok = all(x <= 1 for _, x in vs_rtb)
        out.append(f"- physai median <= roboticstoolbox ik_LM's: **{'met' if ok else 'NOT met'}** ("
                   + ", ".join(f"{r['robot']} {r['task']} {x:.2f} x" for r, x in vs_rtb) + ").")
    return out


def markdown(result: dict) -> str:
    """IK_RESULTS.md from a run's JSON (``command``, ``wall_s``, ``seed``, ``versions``, ``rows``)."""
    rows, seed = result["rows"], result["seed"]
    return "\n".join([
        "# IK: physai vs peers on the same random reachable targets\n",
        f"Command: `{result['command']}` ({result['wall_s']:.0f} s). Targets seed {seed}; peers' restarts seed {seed + 1}.",
        ("Success: position < 1e-4 m, orientation < 1e-3 rad (tool-axis angle for position+axis), all joints inside "
         "their limits, judged by physai's FK. Time: wall-clock per target over all its attempts (first attempt "
         "from the middle of the limits), solvers run one after another on a possibly shared machine: compare "
         "within one run. 'attempts max' = 1 + restarts used by the worst target."),
        f"Versions: {', '.join(f'{k} {val}' for k, val in result['versions'].items())}.\n",
        table(rows),
        "",
        *summary(rows),
        "\nSettings:\n",
        *sorted({f"- {r['solver']}: {r['settings']}" for r in rows if r["settings"]}),
        "",
    ])


if __name__ == "__main__":
    main()
