"""The ``physai`` command line.

``physai tour`` runs every lesson (``experiments/NN-name/{build.py,experiment.py,<variant>.py}``, discovered,
so a new lesson needs no edit here) in one process and builds the course site; ``lesson`` runs one lesson,
``exercise`` and ``check`` write and grade a lesson's Build it; ``fk``, ``jacobian``, ``health`` and ``ik`` print
one robot's numbers as tables (``--json`` for scripts); ``view`` opens the interactive 3-D viewer.

Exit codes: 0 ok, 1 a lesson or benchmark failed, 2 bad input (one line on stderr naming the input) or a
missing extra (one line naming it and its install command).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from physai._cli_app import ROOT, app, bad_input, console, new_table, parse_numbers
from physai._cli_course import check, exercise, lesson, lesson_dirs, lesson_scripts, notebook, tour
from physai._validate import count, nonnegative
from physai.errors import InputError

BENCHMARKS = ROOT / "benchmarks" / "run.py"

# the course's commands first, as --help lists them (each loads the course only when it runs); notebook comes last
app.command()(tour)
app.command()(lesson)
app.command()(exercise)
app.command()(check)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench(ctx: typer.Context) -> None:
    """Run the benchmark suite (benchmarks/run.py; extra arguments are passed to it)."""
    if not BENCHMARKS.exists():
        typer.echo(f"physai: no benchmark suite in this checkout ({BENCHMARKS} is missing)", err=True)
        raise typer.Exit(1)
    raise typer.Exit(subprocess.call([sys.executable, str(BENCHMARKS), *ctx.args], cwd=ROOT))



# ---- one robot's numbers -----------------------------------------------------------------------------

ROBOT = typer.Option("so101", "--robot", "-r", help="a named robot (see `physai robots`) or an MJCF/URDF file")
SITE = typer.Option(None, "--tool", "--site",
                    help="tool frame: a site, an MJCF body or a URDF link (named robots have one)")
Q = typer.Option(None, "--q", help="joint values, rad (m for slides): --q 0 -0.6 0.9 0.4 0.3; default q_ref")
JSON = typer.Option(False, "--json", help="print JSON instead of tables")
MAX_RESTARTS = 10_000  # each restart is a row of starts: 10**9 of them would allocate tens of GiB before failing


def _load(robot: str, site: str | None):
    from physai import robots

    return robots.load(robot, site=site)


def _joint_values(chain, text: str | None, option: str = "--q", inside_limits: bool = False) -> np.ndarray:
    if text is None:  # an IK start must lie inside the limits; qpos0 need not (the Panda's joint4)
        return np.clip(chain.q_ref, chain.lower, chain.upper) if inside_limits else chain.q_ref.copy()
    q = parse_numbers(text, option)
    if q.shape != (chain.n,):
        raise InputError(f"{option}: expected {chain.n} joint values for {chain.name} "
                         f"({', '.join(chain.joint_names)}), got {q.size}")
    return chain.check_q(q, option)


def _robot_at(robot: str, site: str | None, q: str | None, start_inside_limits: bool = False):
    """``(chain, q)`` from the command's options, refusing a model whose kinematics overflow at ``q``
    (a body 1e308 m out: every number printed would be inf or NaN)."""
    from physai.kinematics import jacobian, tool_pose

    chain = _load(robot, site)
    qv = _joint_values(chain, q, inside_limits=start_inside_limits)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.all(np.isfinite(tool_pose(chain, qv))) and np.all(np.isfinite(jacobian(chain, qv)))
    if not finite:
        raise InputError(f"--robot: the kinematics of {chain.name!r} overflow at q = [{_vec(qv).strip()}] "
                         "(non-finite tool pose or Jacobian); the model's positions are too large")
    return chain, qv


def _header(chain) -> str:
    """The chain's summary line, its model-provided names escaped for rich (``[/bold]`` is a name, not markup)."""
    return escape(f"{chain.name}: {chain.n} joints, tool {chain.tool_name!r}, from {chain.source}")


def _vec(v, prec: int = 4) -> str:
    return " ".join(f"{x: .{prec}f}" for x in np.asarray(v, dtype=float).ravel())


def _print_json(payload: dict) -> None:
    typer.echo(json.dumps(payload, indent=2))


@app.command()
def robots(as_json: bool = JSON) -> None:
    """Named robots and where each one's model comes from."""
    from physai import robots as reg

    rows = []
    for name in reg.names():
        info = reg.ROBOTS[name]
        menagerie = f"Menagerie {info.menagerie[0]}/{info.menagerie[1]}.xml" if info.menagerie else ""
        bundled = f"physai/models/{info.bundled}" if info.bundled else ""
        rows.append({"name": name, "site": info.site, "bundled": bundled, "menagerie": menagerie,
                     "builtin": info.builtin is not None, "description": info.description})
    root = os.environ.get("MENAGERIE_ROOT")
    if as_json:
        _print_json({"robots": rows, "MENAGERIE_ROOT": root})
        return
    table = Table("name", "tool site", "bundled model", "source='menagerie'", "built-in", "description",
                  title="named robots")
    for r in rows:
        table.add_row(*map(escape, (r["name"], r["site"] or "", r["bundled"] or "-", r["menagerie"] or "-",
                                    "yes" if r["builtin"] else "no", r["description"])))
    console.print(table)
    console.print(f"Menagerie registry robots load from MENAGERIE_ROOT={root}" if root else
                  "Any Menagerie registry robot downloads through mujoco_menagerie on first use "
                  "(set MENAGERIE_ROOT offline).")
    console.print("Any MJCF/URDF file works too: --robot path/to/model.urdf --tool <site, body or link>.")


@app.command()
def fk(robot: str = ROBOT, q: str | None = Q, site: str | None = SITE, as_json: bool = JSON) -> None:
    """Forward kinematics: joint frames and the tool pose (world frame, m)."""
    from physai.kinematics import fk as chain_fk
    from physai.kinematics import tool_pose
    from physai.transforms import matrix_to_quat

    with bad_input():
        chain, qv = _robot_at(robot, site, q)
    axes, anchors, p = chain_fk(chain, qv)
    T = tool_pose(chain, qv)
    quat = matrix_to_quat(T[:3, :3])
    if as_json:
        _print_json({"robot": chain.name, "source": chain.source, "tool": chain.tool_name,
                     "joints": list(chain.joint_names), "q": qv.tolist(), "position": p.tolist(),
                     "rotation": T[:3, :3].tolist(), "quaternion_wxyz": quat.tolist(), "T_world_tool": T.tolist(),
                     "joint_axes": axes.tolist(), "joint_anchors": anchors.tolist()})
        return
    console.print(_header(chain))
    table = new_table("joint", "q (rad)", "axis (world)", "anchor (world, m)", title="joint frames")
    for i, name in enumerate(chain.joint_names):
        table.add_row(escape(name), f"{qv[i]: .4f}", _vec(axes[i], 3), _vec(anchors[i]))
    console.print(table)
    console.print(f"tool position (world, m):     {_vec(p)}")
    console.print(f"tool quaternion (w, x, y, z): {_vec(quat)}")
    console.print("tool rotation R_world_tool:\n" + "\n".join("  " + _vec(row) for row in T[:3, :3]))


JACOBIAN_ROWS = ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z")


@app.command()
def jacobian(robot: str = ROBOT, q: str | None = Q, site: str | None = SITE, as_json: bool = JSON) -> None:
    """The geometric Jacobian at the tool point: linear rows (m/rad) then angular rows (rad/rad), world axes."""
    from physai.kinematics import jacobian as chain_jacobian

    with bad_input():
        chain, qv = _robot_at(robot, site, q)
    J = chain_jacobian(chain, qv)
    if as_json:
        _print_json({"robot": chain.name, "source": chain.source, "tool": chain.tool_name, "q": qv.tolist(),
                     "rows": list(JACOBIAN_ROWS), "columns": list(chain.joint_names), "jacobian": J.tolist(),
                     "frame": "world axes, tool point; linear rows m/rad, angular rows rad/rad"})
        return
    console.print(_header(chain))
    console.print(f"q (rad): {_vec(qv)}")
    table = new_table("row", *map(escape, chain.joint_names),
                   title="Jacobian (world axes, tool point): v rows m/rad, w rows rad/rad")
    for name, row in zip(JACOBIAN_ROWS, J):
        table.add_row(name, *(f"{x: .4f}" for x in row))
    console.print(table)


def _health_rows(J) -> list[dict]:
    from physai.singularity import health

    rows = []
    for block in ("position", "orientation", "full"):
        h = health(J, block=block)
        rows.append({"block": block, "sigma": np.asarray(h.sigma).tolist(), "sigma_min": h.sigma_min,
                     "kappa": h.kappa, "manipulability": h.manipulability})
    return rows


def _health_table(rows: list[dict], title: str) -> Table:
    table = new_table("block", "singular values", "sigma_min", "kappa", "manipulability", title=title)
    for r in rows:
        table.add_row(r["block"], _vec(r["sigma"]), f"{r['sigma_min']:.4g}", f"{r['kappa']:.4g}",
                      f"{r['manipulability']:.4g}")
    return table


_HEALTH_NOTE = ("position: m/rad, orientation: rad/rad, full: angular rows scaled by 0.3 m so units agree; "
                "kappa = sigma_max / sigma_min, inf at a singularity (and always for the 6-row full block "
                "of an arm with fewer than 6 joints)")


def _json_safe(x):
    """JSON has no inf: write it as the string "inf" (kappa at a singularity)."""
    if isinstance(x, float) and not np.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


@app.command()
def health(robot: str = ROBOT, q: str | None = Q, site: str | None = SITE, as_json: bool = JSON) -> None:
    """Singularity health of the Jacobian: singular values, sigma_min, condition number, manipulability."""
    from physai.kinematics import jacobian as chain_jacobian

    with bad_input():
        chain, qv = _robot_at(robot, site, q)
    rows = _health_rows(chain_jacobian(chain, qv))
    if as_json:
        _print_json(_json_safe({"robot": chain.name, "q": qv.tolist(), "health": rows}))
        return
    console.print(_header(chain))
    console.print(f"q (rad): {_vec(qv)}")
    console.print(_health_table(rows, "Jacobian health"))
    console.print(_HEALTH_NOTE)


@app.command(context_settings={"ignore_unknown_options": True})  # -0.1 is a number here, not an option
def ik(
    words: list[str] | None = typer.Argument(None, metavar="[ROBOT X Y Z [QW QX QY QZ]]", show_default=False,
                                             help="the robot and the target in words: physai ik so101 0.2 0 0.1"),
    target: str | None = typer.Option(None, "--target", help="x y z (m, world): position task; "
                                      "x y z qw qx qy qz: full pose task"),
    robot: str = ROBOT,
    q: str | None = typer.Option(None, "--q", help="initial guess (rad), inside the joint limits; default q_ref "
                                 "(the model's qpos0) clipped into the limits"),
    method: str = typer.Option("lm", "--method", help="transpose | pinv | dls | adaptive | lm"),
    restarts: int | None = typer.Option(None, "--restarts", help=f"random restarts allowed, 0 to {MAX_RESTARTS} "
                                        "(default: the solver's)"),
    seed: int = typer.Option(0, "--seed", help="seed of the random restarts, a whole number >= 0"),
    site: str | None = SITE,
    avoid: bool = typer.Option(False, "--avoid", help="collision-aware: every geom of the model that the chain does "
                               "not move is an obstacle (with the arm's own self-collision pairs); only answers that "
                               "keep --margin count as converged"),
    margin: float = typer.Option(0.01, "--margin", help="clearance (m) every pair keeps with --avoid"),
    as_json: bool = JSON,
) -> None:
    """Inverse kinematics to a target position (or pose): the solution, its errors and its health.

    Exit code 1 when the solver did not converge (the best effort is still printed)."""
    from physai.ik import Solver, solve_ik
    from physai.kinematics import jacobian as chain_jacobian
    from physai.kinematics import tool_pose
    from physai.transforms import make_transform, quat_to_matrix

    with bad_input():
        if words:
            if unknown := next((w for w in words if w.startswith("--")), None):
                raise InputError(f"{unknown}: no such option")
            if target is not None:
                raise InputError(f"--target: the target is given twice (the words {' '.join(words[1:])!r} and "
                                 "--target)")
            robot, target = words[0], " ".join(words[1:])
        if not target:
            raise InputError("--target: missing (physai ik ROBOT X Y Z, or --target X Y Z)")
        seed = count(seed, "--seed", maximum=2**64 - 1)
        restarts = None if restarts is None else count(restarts, "--restarts", maximum=MAX_RESTARTS)
        chain, q0 = _robot_at(robot, site, q, start_inside_limits=True)
        tv = parse_numbers(target, "--target")
        if tv.size == 3:
            task, goal = "position", tv
        elif tv.size == 7:
            task, goal = "pose", make_transform(quat_to_matrix(tv[3:]), tv[:3])
        else:
            raise InputError(f"--target: expected 3 numbers (x y z) or 7 (x y z qw qx qy qz), got {tv.size}")
        world = _world(robot, chain, margin) if avoid else None
        solver = Solver(method=method) if restarts is None else Solver(method=method, restarts=restarts)
        result = solve_ik(chain, goal, q0 if q is not None or world is None else None, task=task, solver=solver,
                          rng=np.random.default_rng(seed), avoid=world)
    reached = tool_pose(chain, result.q)
    rows = _health_rows(chain_jacobian(chain, result.q))
    if as_json:
        _print_json(_json_safe({
            "robot": chain.name, "target": tv.tolist(), "task": task, "method": result.method, "q": result.q.tolist(),
            "joints": list(chain.joint_names), "converged": bool(result.converged), "reason": result.reason,
            "iterations": int(result.iterations), "restarts": int(result.restarts),
            "position_error": float(result.position_error), "orientation_error": float(result.orientation_error),
            "reached_position": reached[:3, 3].tolist(), "health": rows,
            **({} if world is None else {"clearance": world.closest(result.q, "obstacle")[0], "margin": world.margin,
                                         "self_clearance": world.closest(result.q, "self")[0],
                                         "self_margin": world.self_margin})}))
    else:
        console.print(_header(chain))
        console.print(f"target ({task}, world, m): {_vec(tv)}   method {result.method}, seed {seed}")
        table = new_table("joint", "q (rad)", "q (deg)", "lower", "upper", title="solution")
        for i, name in enumerate(chain.joint_names):
            table.add_row(escape(name), f"{result.q[i]: .5f}", f"{np.degrees(result.q[i]): .2f}",
                          f"{chain.lower[i]: .3f}", f"{chain.upper[i]: .3f}")
        console.print(table)
        style = "green" if result.converged else "yellow"
        console.print(f"[{style}]{result.reason}[/] after {result.iterations} iterations, {result.restarts} restarts")
        console.print(f"position error {result.position_error:.3e} m, orientation error "
                      f"{result.orientation_error:.3e} rad; reached {_vec(reached[:3, 3])} m")
        if world is not None:
            for among, margin_of in (("obstacle", world.margin), ("self", world.self_margin)):
                dist, pair = world.closest(result.q, among)
                console.print(f"{among} clearance " + ("none: no such pair" if dist is None else
                              f"{dist:.4f} m ({escape(pair[0])} - {escape(pair[1])})") + f", margin {margin_of} m")
            console.print(f"{len(world.pairs)} pairs checked, {len(world.allowed)} of the robot's own left out")
        console.print(_health_table(rows, "health at the solution"))
        console.print(_HEALTH_NOTE)
    if not result.converged:
        raise typer.Exit(1)


def _world(robot: str, chain, margin: float):
    """The collision world of ``--robot``'s model file for ``--avoid``: the scene's own geoms are the obstacles."""
    from physai.collision import collision_world

    return collision_world(robot, chain, margin=nonnegative(margin, "--margin"))


@app.command()
def view(
    robot: str = ROBOT,
    site: str | None = SITE,
    port: int = typer.Option(8080, "--port", help="port on 127.0.0.1"),
    avoid: bool = typer.Option(False, "--avoid", help="keep the arm clear of the scene's other geoms (and itself): "
                               "obstacles drawn, a pair within --margin painted red"),
    margin: float = typer.Option(0.01, "--margin", help="clearance (m) with --avoid"),
) -> None:
    """Interactive 3-D viewer on http://127.0.0.1:PORT: drag the target, the arm follows through physai's IK."""
    from physai.viewer import Viewer

    with bad_input():
        world = _world(robot, _load(robot, site), margin) if avoid else None
        viewer = Viewer(robot, site=site, port=port, avoid=world)
    console.print(f"physai viewer for {escape(viewer.chain.name)}: open [bold]{viewer.url}[/] (Ctrl-C to stop)")
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()


app.command()(notebook)


def main() -> None:
    app()
