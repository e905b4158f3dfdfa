"""physai against the peers, measured side by side in one process; prints ratios and writes RESULTS.md.

    uv sync --group bench          # once: roboticstoolbox-python, pytorch-kinematics (torch), mink, ikpy
    uv run python benchmarks/run.py [--out benchmarks/RESULTS.md] [--rounds 15]

The peers can also live in a separate virtual environment (for a CPU-only torch: install torch from a CPU
wheel first, then the ``bench`` group's packages and physai's dependencies with pip) and run this checkout
with ``PYTHONPATH=. /path/to/venv/bin/python benchmarks/run.py``.

It measures the public functions (``physai.jacobian``, ``physai.tool_pose``, ``physai.solve_ik``); a peer whose
package is not installed is skipped with a printed reason.

Sections: (0) compilation cost of the compiled engine, cold and from the disk cache, and a fresh process's
start against Pinocchio's, from this checkout and from a wheel of it installed in a fresh environment; (1) one
FK / Jacobian call, SO-101 and Panda; (2) batched Jacobians, 10,000 and 1,000,000 SO-101 configurations;
(3) IK success and time per target; (3b) solve_ik_batch against a loop of solve_ik; (4) memory per configuration
of the batch path. Every peer's
answer is checked against physai's before it is timed. Times are medians over ``--rounds`` samples
taken in turns (each round times every candidate), so load spikes on a shared machine hit all alike; a goal's
ratio is the median of the per-round ratios (``_timing.paired_ratio``).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _timing import paired_ratio, per_call_seconds

import physai
from physai import kinematics, robots

SO101_XML = robots.model_path("so101")
PANDA_XML = robots.model_path("panda")
WXAI_XML = robots.model_path("wxai")
# Each float32-rounded constant below 1 (m, or a rotation entry) is off by <= 3e-8; the SO-101's few
# placements add up to ~1e-8 in the Jacobian (see torch_peer).
PK_TOL = 1e-7
GOALS = {
    "start": "fresh process -> first physai.solve_ik <= 2 x fresh process -> first Pinocchio Jacobian (checkout "
             "and installed wheel); first `physai ik` from a fresh install < 2 s",
    "single": "physai.jacobian <= Pinocchio computeFrameJacobian + updateFramePlacement, physai.tool_pose <= "
              "Pinocchio forwardKinematics + updateFramePlacement",
    "batch": "physai.jacobian >= 2 x Pinocchio loop and >= 10 x pytorch_kinematics (CPU), 10k configurations",
    "ik": "success 100 % on every robot/task and median time <= roboticstoolbox ik_LM",
    "ik_batch": "solve_ik_batch >= 1.8 x a loop of solve_ik with the same answers on 2 cores, every arm and task",
}


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.2f} us"


class Report:
    """Collects Markdown lines; prints each as it is added."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        self.lines.append(line)
        print(line, flush=True)

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self("| " + " | ".join(header) + " |")
        self("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for row in rows:
            self("| " + " | ".join(row) + " |")
        self()


# ---- peers, each built from the same model file and checked against physai ----------------------


def mujoco_peer(xml: Path, chain):
    """``q -> (site pose, J)`` with MuJoCo's three calls, and the bare three calls for timing."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    sid = m.site(chain.tool_name).id
    adr = list(chain.qpos_adr)
    assert adr == list(range(adr[0], adr[0] + len(adr))), "benchmark assumes contiguous qpos"
    sl = slice(adr[0], adr[0] + len(adr))
    dofs = list(chain.dof_adr)
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))

    def three_calls(q):
        d.qpos[sl] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, jacp, jacr, sid)

    def jac(q):
        three_calls(q)
        return np.vstack([jacp, jacr])[:, dofs]

    return three_calls, jac


def pinocchio_peer(chain):
    """Pinocchio model of ``chain`` (same placements, RX/RY/RZ or PX/PY/PZ joints where the axis allows) and
    ``computeFrameJacobian`` at the tool frame, LOCAL_WORLD_ALIGNED (world axes at the tool point).

    Built from the chain's numbers rather than ``buildModelFromMJCF``: Pinocchio 4.1's MJCF parser reads
    the SO-101 file right but the Panda file wrong (its Jacobian differs from MuJoCo's by ~0.1).
    """
    import pinocchio as pin

    assert np.all(chain.q_ref == 0), "the Pinocchio model here assumes q_ref = 0"
    model, parent = pin.Model(), 0
    for name, T, axis, jtype in zip(chain.joint_names, chain.T_prev_joint, chain.axis_joint, chain.joint_types):
        k = int(np.argmax(np.abs(axis)))
        aligned = np.isclose(axis[k], 1.0)
        if jtype == "hinge":
            joint = (pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)[k]() if aligned else pin.JointModelRevoluteUnaligned(axis)
        else:
            joint = (pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ)[k]() if aligned else pin.JointModelPrismaticUnaligned(axis)
        parent = model.addJoint(parent, joint, pin.SE3(T[:3, :3].copy(), T[:3, 3].copy()), name)
    tool = pin.SE3(chain.T_last_tool[:3, :3].copy(), chain.T_last_tool[:3, 3].copy())
    fid = model.addFrame(pin.Frame(chain.tool_name, parent, 0, tool, pin.FrameType.OP_FRAME))
    data = model.createData()

    def jac(q):
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        pin.updateFramePlacement(model, data, fid)
        return J

    def pose(q):
        pin.forwardKinematics(model, data, q)
        return pin.updateFramePlacement(model, data, fid)

    return jac, pose


def rtb_ets(chain):
    """A roboticstoolbox ETS equal to ``chain`` (limits included): fixed SE3 placements, Rz/tz in an axis-aligned frame."""
    from roboticstoolbox import ET
    from spatialmath import SE3

    assert np.all(chain.q_ref == 0), "the ETS here assumes q_ref = 0"
    ets = None
    for T_prev, axis, jtype, lo, hi in zip(chain.T_prev_joint, chain.axis_joint, chain.joint_types, chain.lower, chain.upper):
        # R_align maps z onto the joint axis, so the ETS joint is always about/along its z.
        z = np.array([0.0, 0.0, 1.0])
        v, c = np.cross(z, axis), float(z @ axis)
        if np.linalg.norm(v) < 1e-12:
            R_align = np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
        else:
            K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
            R_align = np.eye(3) + K + K @ K / (1 + c)
        A = np.eye(4)
        A[:3, :3] = R_align
        qlim = np.array([lo, hi])  # ik_LM's restarts and joint_limits read these
        parts = [ET.SE3(SE3(T_prev @ A, check=False)), ET.Rz(qlim=qlim) if jtype == "hinge" else ET.tz(qlim=qlim)]
        if not np.allclose(R_align, np.eye(3)):
            parts.append(ET.SE3(SE3(np.linalg.inv(A), check=False)))
        for p in parts:
            ets = p if ets is None else ets * p
    return ets * ET.SE3(SE3(chain.T_last_tool, check=False))


def torch_peer(xml: Path, chain):
    """pytorch_kinematics SerialChain to the tool site, float64 on the CPU.

    Its arithmetic is float64, but pytorch_kinematics 0.10 parses the MJCF's placements into float32
    transforms before ``.to(float64)``: its constants carry float32 rounding, so it agrees with physai
    to ~1e-8, not to round-off (``PK_TOL``).
    """
    import pytorch_kinematics as pk
    import pytorch_kinematics.mjcf as pkm
    import torch

    # pytorch_kinematics 0.10 keys its joint-type map by mujoco enums, which newer mujoco no longer
    # hands back (it gives np.int32): re-key by int so the parser runs. No numbers are changed.
    items = list(pkm.JOINT_TYPE_MAP.items())
    pkm.JOINT_TYPE_MAP.clear()
    pkm.JOINT_TYPE_MAP.update({int(k): v for k, v in items})
    assets = {}
    meshdir = xml.parent / "assets"
    if meshdir.is_dir():
        assets = {f"assets/{f.name}": f.read_bytes() for f in meshdir.iterdir() if f.is_file()}
    full = pk.build_chain_from_mjcf(xml.read_text(), assets=assets)
    return pk.SerialChain(full, chain.tool_name).to(dtype=torch.float64), torch


def optional(report: Report, what: str, build, *args):
    """``build(*args)``, or None with a printed reason when the peer's package is not installed."""
    try:
        return build(*args)
    except ImportError as exc:
        report(f"- {what}: skipped, not importable here ({exc}; `uv sync --group bench` installs it)")
        return None


def check(name: str, got, want, tol: float, report: Report) -> None:
    err = float(np.abs(np.asarray(got) - np.asarray(want)).max())
    report(f"- {name} agrees with physai to {err:.1e}" + ("" if err <= tol else f"  **(more than {tol:g})**"))


# ---- sections ------------------------------------------------------------------------------------


def compile_cost(report: Report) -> None:
    code = ("import time; t = time.perf_counter(); import numpy as np; import physai; "
            "c = physai.load('so101', source='builtin'); physai.jacobian(c, c.q_ref.copy()); "
            "physai.jacobian(c, np.zeros((2, c.n))); print(time.perf_counter() - t)")
    rows = []
    with tempfile.TemporaryDirectory() as cold:
        for label, env in (("cold (empty NUMBA_CACHE_DIR: compiles)", {"NUMBA_CACHE_DIR": cold}),
                           ("second process (loads the disk cache)", {"NUMBA_CACHE_DIR": cold}),
                           ("default cache location (the user's cache folder)", {})):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 env={**os.environ, **env}, cwd=HERE.parent)
            rows.append([label, f"{float(out.stdout.split()[-1]):.2f} s"])
    report("## 0. First-call cost of the compiled engine (import + single + batch call, fresh process)\n")
    report.table(["case", "seconds"], rows)
    start = {
        "fresh process -> first physai.solve_ik answer (Panda)": (
            "import time; t = time.perf_counter(); import physai; c = physai.load('panda'); "
            "r = physai.solve_ik(c, physai.tool_pose(c, c.q_ref)); print(time.perf_counter() - t)"),
        "fresh process -> first Pinocchio Jacobian (Panda MJCF)": (
            "import time; t = time.perf_counter(); import pinocchio as pin; from physai.robots import model_path; "
            "m = pin.buildModelFromMJCF(str(model_path('panda'))); d = m.createData(); "
            "pin.computeFrameJacobian(m, d, pin.neutral(m), m.nframes - 1, pin.LOCAL_WORLD_ALIGNED); "
            "print(time.perf_counter() - t)"),
    }
    med = {}
    for label, code in start.items():
        times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      cwd=HERE.parent).stdout.split()[-1]) for _ in range(5)]
        med[label] = float(np.median(times))
    report.table(["fresh process (median of 5, warm disk cache)", "seconds"], [[k, f"{v:.2f} s"] for k, v in med.items()])
    ratio = med[next(iter(start))] / med[list(start)[1]]
    report(f"- physai start / Pinocchio start = **{ratio:.1f}** (goal <= 2: {'met' if ratio <= 2 else 'NOT met'})\n")
    installed_start(report, *start.values())


def _uv(*args, **kwargs) -> str:
    return subprocess.run([shutil.which("uv"), *map(str, args)], capture_output=True, text=True, check=True,
                          **kwargs).stdout


def _install_wheel(tmp: Path) -> tuple[Path, dict]:
    """A wheel of this checkout in a fresh virtual environment under ``tmp`` -> its python, and a user's environment
    for it (HOME an empty folder, no NUMBA_CACHE_DIR)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH")}
    _uv("build", "--wheel", "-o", tmp / "dist", HERE.parent, env=env)
    _uv("export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-q", "-o", tmp / "req.txt",
        cwd=HERE.parent, env=env)
    _uv("venv", "-q", "--python", sys.executable, tmp / "venv", env=env)
    python = tmp / "venv" / "bin" / "python"
    _uv("pip", "install", "-q", "--compile-bytecode", "--python", python, "-r", tmp / "req.txt",
        *(tmp / "dist").glob("*.whl"), env=env)
    (tmp / "home").mkdir()
    return python, env | {"HOME": str(tmp / "home"), "PATH": f"{python.parent}{os.pathsep}{env['PATH']}"}


def installed_start(report: Report, first_ik: str, first_pinocchio: str) -> None:
    """The same start from a wheel of this checkout installed in a fresh virtual environment (its dependencies as
    uv.lock pins them, Pinocchio included; bytecode compiled at install as pip does), HOME and the cache folder
    empty; physai and Pinocchio timed in turns, five rounds."""
    report("### From an installed wheel\n")
    if shutil.which("uv") is None:
        report("Skipped: needs uv to build and install the wheel.\n")
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        python, env = _install_wheel(tmp)
        ik_times, pin_times, cli_times = [], [], []
        for _ in range(5):
            for times, code in ((ik_times, first_ik), (pin_times, first_pinocchio)):
                times.append(float(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True,
                                                  env=env, cwd=tmp).stdout.split()[-1]))
            t = time.perf_counter()
            subprocess.run(["physai", "ik", "--robot", "so101", "--target", "0.2", "0", "0.1"], capture_output=True,
                           check=True, env=env, cwd=tmp)
            cli_times.append(time.perf_counter() - t)
        origin = subprocess.run([python, "-c", "from physai import _engine; print(_engine.kernels.origin)"],
                                capture_output=True, text=True, check=True, env=env, cwd=tmp).stdout.strip()
    rows = [["fresh install -> first physai.solve_ik answer (Panda), first process", f"{ik_times[0]:.2f} s"],
            ["fresh install -> first physai.solve_ik answer (Panda), median of 5", f"{np.median(ik_times):.2f} s"],
            ["same environment -> first Pinocchio Jacobian (Panda MJCF), median of 5", f"{np.median(pin_times):.2f} s"],
            ["first `physai ik --robot so101 --target 0.2 0 0.1` (wall, whole command)", f"{cli_times[0]:.2f} s"],
            ["`physai ik ...`, median of 5", f"{np.median(cli_times):.2f} s"]]
    report.table(["installed wheel", "seconds"], rows)
    ratio = float(np.median(np.array(ik_times) / np.array(pin_times)))  # per round: load drift cancels
    met = {True: "met", False: "NOT met"}
    wheel = origin.startswith("prebuilt module")  # what the installed package reported, not assumed
    served = "the wheel's modules, nothing compiled at run time" if wheel else "NOT the wheel's modules"
    report(f"- served by: {origin.split(' /')[0]} ({served})")
    report(f"- installed physai start / Pinocchio start (median of per-round ratios) = **{ratio:.2f}** "
           f"(goal <= 2: {met[ratio <= 2]}); first `physai ik` {cli_times[0]:.2f} s "
           f"(goal < 2 s: {met[cli_times[0] < 2]})\n")


def single_call(report: Report, rounds: int) -> dict:
    report("## 1. One call: the public functions, validation included\n")
    report("`physai.jacobian(chain, q)` and `physai.tool_pose(chain, q)` (the compiled engine, the default) against "
           "Pinocchio's `computeFrameJacobian` / `forwardKinematics`, each followed by `updateFramePlacement` (so the "
           "tool frame's pose is available, as physai's is), MuJoCo's three calls into preallocated buffers and "
           "roboticstoolbox's `jacob0`.\n")
    ratios, rows = {}, []
    for label, xml, site in (("SO-101", SO101_XML, "gripperframe"), ("Panda", PANDA_XML, "tcp")):
        chain = robots.load(xml, site=site)
        q = chain.random_q(np.random.default_rng(0))
        J = physai.jacobian(chain, q)
        three, mj_jac = mujoco_peer(xml, chain)
        pin_jac, pin_pose = pinocchio_peer(chain)
        ets = optional(report, "roboticstoolbox", rtb_ets, chain)
        check(f"{label}: MuJoCo mj_jacSite", mj_jac(q), J, 1e-12, report)
        check(f"{label}: Pinocchio computeFrameJacobian", pin_jac(q), J, 1e-12, report)
        check(f"{label}: Pinocchio frame placement", pin_pose(q).homogeneous, physai.tool_pose(chain, q), 1e-12, report)
        check(f"{label}: physai numpy engine", physai.jacobian(chain, q, engine="numpy"), J, 1e-13, report)
        if ets is not None:
            check(f"{label}: roboticstoolbox jacob0", ets.jacob0(q), J, 1e-12, report)
        t = per_call_seconds(_single_candidates(chain, q, pin_jac, pin_pose, three, ets), calls=2000, rounds=rounds)
        t.update(per_call_seconds({"physai.jacobian(engine='numpy')": partial(physai.jacobian, chain, q, engine="numpy")},
                                  calls=50, rounds=rounds))
        med = {k: float(np.median(v)) for k, v in t.items()}
        base = med["physai.jacobian"]
        rows += [[label, k, us(v), f"{v / base:.2f}"] for k, v in med.items()]
        ratios[label] = (paired_ratio(t, "physai.jacobian", "Pinocchio computeFrameJacobian + updateFramePlacement"),
                         paired_ratio(t, "physai.tool_pose", "Pinocchio forwardKinematics + updateFramePlacement"),
                         paired_ratio(t, "physai.jacobian", "MuJoCo kinematics+comPos+jacSite"))
    report()
    report.table(["robot", "call", "median", "time / physai.jacobian"], rows)
    for label, (r_jac, r_pose, r_mj) in ratios.items():
        report(f"- {label}: physai.jacobian / Pinocchio = **{r_jac:.2f}** (goal <= 1: {'met' if r_jac <= 1 else 'NOT met'}); "
               f"physai.tool_pose / Pinocchio = **{r_pose:.2f}** (goal <= 1: {'met' if r_pose <= 1 else 'NOT met'}); "
               f"physai.jacobian / MuJoCo three calls = **{r_mj:.2f}**")
    report()
    return ratios


def _single_candidates(chain, q, pin_jac, pin_pose, three, ets) -> dict:
    """The one-call candidates, each a no-argument callable on the same ``q``."""
    cands = {
        "physai.jacobian": lambda: physai.jacobian(chain, q),
        "physai.tool_pose": lambda: physai.tool_pose(chain, q),
        "physai.tool_pose_and_jacobian": lambda: physai.tool_pose_and_jacobian(chain, q),
        "Pinocchio computeFrameJacobian + updateFramePlacement": lambda: pin_jac(q),
        "Pinocchio forwardKinematics + updateFramePlacement": lambda: pin_pose(q),
        "MuJoCo kinematics+comPos+jacSite": lambda: three(q),
    }
    if ets is not None:
        cands["roboticstoolbox ETS jacob0"] = lambda: ets.jacob0(q)
    return cands


def batched(report: Report, rounds: int) -> dict:
    report("## 2. Batched Jacobians, SO-101: `physai.jacobian(chain, Q)` on Q of shape (B, n)\n")
    chain = robots.load(SO101_XML, site="gripperframe")
    _, mj_jac = mujoco_peer(SO101_XML, chain)
    pin_jac, _ = pinocchio_peer(chain)
    torch_chain = optional(report, "pytorch_kinematics", torch_peer, SO101_XML, chain)
    Q = chain.random_q(np.random.default_rng(1), 10_000)
    J = physai.jacobian(chain, Q)
    check("Pinocchio loop", np.array([pin_jac(q) for q in Q[:100]]), J[:100], 1e-12, report)
    check("physai numpy engine (vectorised)", physai.jacobian(chain, Q, engine="numpy"), J, 1e-13, report)
    cores = len(os.sched_getaffinity(0))

    def one_thread():
        shared, kinematics.THREAD_MIN_ROWS = kinematics.THREAD_MIN_ROWS, len(Q)
        try:
            return physai.jacobian(chain, Q)
        finally:
            kinematics.THREAD_MIN_ROWS = shared

    cands = {
        f"physai.jacobian ({cores} threads)": lambda: physai.jacobian(chain, Q),
        "physai.jacobian (1 thread)": one_thread,
        "physai.jacobian(engine='numpy')": lambda: physai.jacobian(chain, Q, engine="numpy"),
        "Pinocchio computeFrameJacobian loop": lambda: [pin_jac(q) for q in Q],
        "MuJoCo three-call loop": lambda: [mj_jac(q) for q in Q],
    }
    if torch_chain is not None:
        pk_chain, torch = torch_chain
        torch.set_num_threads(cores)
        Qt = torch.tensor(Q)
        check("pytorch_kinematics jacobian (CPU, float64; float32-parsed constants)", pk_chain.jacobian(Qt).numpy(), J,
              PK_TOL, report)
        report(f"- torch {torch.__version__}: {torch.get_num_threads()} threads ({cores} cores available)")
        cands["pytorch_kinematics jacobian (CPU, float64)"] = lambda: pk_chain.jacobian(Qt)
    t = per_call_seconds(cands, calls=1, rounds=max(5, rounds // 3))
    med = {k: float(np.median(v)) for k, v in t.items()}
    base = med[next(iter(cands))]
    rows = [[k, f"{v * 1e3:,.1f} ms", f"{len(Q) / v / 1e6:.2f}", f"{v / base:.1f}"] for k, v in med.items()]
    report.table(["10,000 configurations", "median", "M configs/s", "time / physai.jacobian"], rows)
    first, pk = next(iter(cands)), "pytorch_kinematics jacobian (CPU, float64)"
    r_pin = paired_ratio(t, "Pinocchio computeFrameJacobian loop", first)
    r_pk = paired_ratio(t, pk, first) if pk in t else float("nan")
    report(f"- physai.jacobian is **{r_pin:.1f} x** a Pinocchio loop (goal >= 2: {'met' if r_pin >= 2 else 'NOT met'}) and "
           f"**{r_pk:.1f} x** pytorch_kinematics (goal >= 10: "
           f"{'not measured' if np.isnan(r_pk) else 'met' if r_pk >= 10 else 'NOT met'})\n")

    Qm = chain.random_q(np.random.default_rng(2), 1_000_000)
    big = per_call_seconds({"physai.jacobian": lambda: physai.jacobian(chain, Qm),
                            "Pinocchio loop": lambda: [pin_jac(q) for q in Qm]}, calls=1, rounds=3)
    rows = [[k, f"{np.median(v):.2f} s", f"{len(Qm) / np.median(v) / 1e6:.2f}"] for k, v in big.items()]
    report.table(["1,000,000 configurations", "median", "M configs/s"], rows)
    return {"pin": r_pin, "pk": r_pk}


def ik(report: Report, n_targets: int) -> None:
    report("## 3. IK: random reachable targets\n")
    report("benchmarks/ik_peers.py holds the full IK peer comparison (mink, ikpy, Pinocchio, ...); this section "
           "measures physai against roboticstoolbox `ik_LM` (its defaults) in this process.\n")
    rows = []
    for label, xml, site, task in (("Panda", PANDA_XML, "tcp", "pose"), ("WidowX AI", WXAI_XML, "ee_site", "pose"),
                                   ("SO-101", SO101_XML, "gripperframe", "position")):
        chain = robots.load(xml, site=site)
        rng = np.random.default_rng(3)
        targets = physai.tool_pose(chain, chain.random_q(rng, n_targets))
        t0 = time.perf_counter()
        res = physai.ik.solve(physai.ik.ik_problem(chain, targets, task=task),
                              physai.ik.Solver(method="dls", iterations=40, restarts=20, backend="numpy"), rng=rng)
        per = (time.perf_counter() - t0) / n_targets
        rows.append([label, task, "physai ik.solve batch (dls, NumPy, 40 steps x 21 attempts)",
                     f"{100 * res.success_rate:.1f} %", f"{per * 1e3:.3f} ms (amortised)"])
        rows += physai_ik_rows(label, chain, task, targets)
        ets = optional(report, "roboticstoolbox ik_LM", rtb_ets, chain)
        if ets is None:
            continue
        mask = np.array([1, 1, 1, 1, 1, 1.0]) if task == "pose" else np.array([1, 1, 1, 0, 0, 0.0])
        times, ok = [], 0
        for T in targets:
            t0 = time.perf_counter()
            sol = ets.ik_LM(T, tol=1e-8, mask=mask, joint_limits=True)
            times.append(time.perf_counter() - t0)
            q = np.asarray(sol.q)
            Tq = physai.tool_pose(chain, q)
            perr = np.linalg.norm(Tq[:3, 3] - T[:3, 3])
            oerr = 0.0 if task == "position" else np.arccos(np.clip((np.trace(T[:3, :3] @ Tq[:3, :3].T) - 1) / 2, -1, 1))
            inside = np.all((q >= chain.lower - 1e-9) & (q <= chain.upper + 1e-9))
            ok += bool(perr <= 1e-4 and oerr <= 1e-3 and inside)
        rows.append([label, task, "roboticstoolbox ik_LM", f"{100 * ok / n_targets:.1f} %",
                     f"{np.median(times) * 1e3:.3f} ms (median)"])
    report.table(["robot", "task", "solver", "success", "time per target"], rows)
    report("Success: position error <= 1e-4 m, orientation error <= 1e-3 rad (pose), joints inside their limits, "
           "judged by physai's FK for both solvers.\n")


def ik_batch(report: Report, n_targets: int, rounds: int) -> dict:
    """``solve_ik_batch`` on many targets against a Python loop of ``solve_ik`` giving the same answers (one shared
    generator), and against a loop with the default generator (each solve's restarts those of ``default_rng(0)``).
    Wall and CPU time (all threads of the process) are both taken: on a loaded machine the wall ratio carries the
    load, while CPU time shows the work, and the batch's CPU / wall shows how many cores it kept busy."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    report(f"## 3b. Batched IK: solve_ik_batch vs a loop of solve_ik, {n_targets} random reachable targets\n")
    report(f"Cores this process may use: {cores} (of {os.cpu_count()}); load average now "
           f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}. Targets seed 3, restarts seed 7, {rounds} rounds taken "
           "in turns; a ratio is the median over rounds of loop time / batch time in the same round.\n")
    rows, ratios = [], {}
    for label, name, task in (("SO-101", "so101", "position"), ("WidowX AI", "wxai", "pose"),
                              ("Panda", "panda", "pose")):
        chain = physai.load(name)
        targets = physai.tool_pose(chain, chain.random_q(np.random.default_rng(3), n_targets))
        batch = physai.solve_ik_batch(chain, targets, task=task, rng=np.random.default_rng(7))
        shared = np.random.default_rng(7)
        looped = [physai.solve_ik(chain, T, task=task, rng=shared) for T in targets]
        same = all(np.array_equal(batch.q[b], r.q) and batch.iterations[b] == r.iterations
                   for b, r in enumerate(looped))
        wall, cpu = _wall_and_cpu({
            "batch": lambda: physai.solve_ik_batch(chain, targets, task=task, rng=np.random.default_rng(7)),
            "loop": lambda: [physai.solve_ik(chain, T, task=task, rng=g) for g in [np.random.default_rng(7)]
                             for T in targets],
            "loop default": lambda: [physai.solve_ik(chain, T, task=task) for T in targets],
        }, rounds)
        ratios[label] = paired_ratio(wall, "loop", "batch")
        rows.append([label, task, f"{100 * batch.success_rate:.1f} %", "yes" if same else "NO",
                     *(f"{np.median(wall[k]) / n_targets * 1e6:.1f} us" for k in ("batch", "loop")),
                     f"**{ratios[label]:.2f} x**", f"{paired_ratio(wall, 'loop default', 'batch'):.2f} x",
                     f"{paired_ratio(cpu, 'loop', 'batch'):.2f} x",
                     *(f"{np.median(cpu[k] / wall[k]):.2f}" for k in ("batch", "loop"))])
    report.table(["robot", "task", "success", "batch rows == loop", "batch wall per target", "loop wall per target",
                  "loop / batch (wall)", "loop (default rng) / batch (wall)", "loop / batch (CPU)",
                  "cores busy: batch", "loop"], rows)
    report("Cores busy = CPU time / wall time of the process. Where the batch keeps no more cores busy than the loop, "
           "the machine (or the process's share of it) had no idle core to give, and the wall ratio is the ratio "
           "of the work alone.\n")
    worst = min(ratios.values())
    report(f"- solve_ik_batch is {', '.join(f'{k} {v:.2f} x' for k, v in ratios.items())} a loop of solve_ik with the "
           f"same answers on {cores} cores (goal >= 1.8 x on 2 cores: {'met' if worst >= 1.8 else 'NOT met'}, "
           f"lowest {worst:.2f} x). Load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}.\n")
    return ratios


def _wall_and_cpu(fns: dict, rounds: int) -> tuple[dict, dict]:
    """Wall and process CPU seconds of each zero-argument function, one sample of each per round, taken in turns."""
    wall, cpu = {k: [] for k in fns}, {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            w, c = time.perf_counter(), time.process_time()
            f()
            wall[k].append(time.perf_counter() - w)
            cpu[k].append(time.process_time() - c)
    return {k: np.array(v) for k, v in wall.items()}, {k: np.array(v) for k, v in cpu.items()}


def physai_ik_rows(label, chain, task, targets) -> list[list[str]]:
    """``physai.solve_ik`` one target at a time (default method): its defaults (the compiled solve; restarts drawn
    from ``default_rng(0)``, as for any caller who passes no ``rng``), and
    ``engine="numpy"`` (the NumPy loop on the NumPy kinematics, the readable code) on the first 50 targets."""
    rows = []
    for engine, name, some in (("compiled", "defaults: compiled", targets), ("numpy", "backend='numpy'", targets[:50])):
        times, ok = [], 0
        for k, T in enumerate(some):
            t0 = time.perf_counter()
            res = physai.solve_ik(chain, T, task=task, solver=physai.ik.Solver(backend=engine))
            times.append(time.perf_counter() - t0)
            ok += res.converged
        rows.append([label, task, f"physai.solve_ik ({name})", f"{100 * ok / len(times):.1f} %",
                     f"{np.median(times) * 1e3:.3f} ms (median, {len(times)} targets)"])
    return rows


def memory(report: Report) -> None:
    report("## 4. Memory per configuration in the batch path (SO-101, n = 5, tracemalloc peak / B)\n")
    chain = robots.load(SO101_XML, site="gripperframe")
    Q = chain.random_q(np.random.default_rng(4), 100_000)
    rows = []
    for label, f in (("physai compiled (default)", physai.tool_pose_and_jacobian),
                     ("physai numpy engine", partial(physai.tool_pose_and_jacobian, engine="numpy"))):
        f(chain, Q[:10])
        tracemalloc.start()
        f(chain, Q)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append([label, f"{peak / len(Q):,.0f} B"])
    rows.append(["outputs alone (T 16 + J 30 float64)", f"{(16 + 6 * chain.n) * 8} B"])
    report.table(["path", "peak bytes per configuration"], rows)


def versions() -> str:
    names = ["numpy", "numba", "jax", "mujoco", "pin", "roboticstoolbox-python", "pytorch-kinematics", "torch"]
    out = []
    for n in names:
        try:
            out.append(f"{n} {md.version(n)}")
        except md.PackageNotFoundError:
            out.append(f"{n} (not installed)")
    return ", ".join(out)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}"


SECTIONS = ("start", "single", "batch", "ik", "ik_batch", "memory")
GOALS_LINE = "Goals: " + "; ".join(f"{k}: {v}" for k, v in GOALS.items()) + "\n"


def _by_section(lines: list[str]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """A report's lines before its first ``## N.`` heading, each section's lines by its number (``"3b."``), and its
    closing ``Load average at end`` line."""
    head, parts, key, end = [], {}, None, []
    for line in "\n".join(lines).splitlines():  # a reported line may hold several
        if line.startswith("Load average at end"):
            end.append(line)
            continue
        if line.startswith("## "):
            key = line.split()[1]
            parts[key] = []
        (parts[key] if key else head).append(line)
    return head, parts, end


def splice(old: list[str], new: list[str], provenance: str) -> list[str]:
    """The report ``old`` with the sections of the partial run ``new`` in place of their earlier runs (or added),
    each section of ``new`` headed by ``provenance``, so a file never mixes runs without saying which is which."""
    head, parts, end = _by_section(old)
    for key, lines in _by_section(new)[1].items():
        parts[key] = [lines[0], "", provenance, *lines[1:]]
    head = [GOALS_LINE.strip() if line.startswith("Goals: ") else line for line in head]  # the goals checked now
    return head + [line for key in sorted(parts) for line in parts[key]] + end


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--rounds", type=int, default=15, help="timing samples per candidate")
    parser.add_argument("--ik-targets", type=int, default=1000)
    parser.add_argument("--ik-batch-targets", type=int, default=2000)
    parser.add_argument("--ik-batch-rounds", type=int, default=5)
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS),
                        help="which sections to run (default: all); a subset replaces those sections of an "
                             "existing --out file, each marked with this run's command, time and load")
    args = parser.parse_args(argv)
    report = Report()
    command = f"`python benchmarks/run.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
    start = " ".join(f"{x:.1f}" for x in os.getloadavg())
    report("# physai speed benchmark\n")
    report(f"Command: {command}  ")
    report(f"Machine: {machine()}  ")
    report(f"Load average at start: {start}  ")
    report(f"Versions: {versions()}\n")
    report(GOALS_LINE)
    run = {"start": lambda: compile_cost(report), "single": lambda: single_call(report, args.rounds),
           "batch": lambda: batched(report, args.rounds), "ik": lambda: ik(report, args.ik_targets),
           "ik_batch": lambda: ik_batch(report, args.ik_batch_targets, args.ik_batch_rounds),
           "memory": lambda: memory(report)}
    for section in args.sections:
        run[section]()
    end = " ".join(f"{x:.1f}" for x in os.getloadavg())
    report(f"Load average at end: {end}")
    lines = report.lines
    if set(args.sections) != set(SECTIONS) and args.out.exists():  # the other sections' earlier run stays
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        lines = splice(args.out.read_text().splitlines(), lines,
                       f"Run alone, not with the rest of this file: {command}, {when}, load average {start} at "
                       f"start and {end} at end; {versions()}.")
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
