"""Lesson 11, the robot: one SO-101 target just above the table, the plain IK answer that sinks deepest into the
table and the answer with ``avoid=`` that keeps clear, rendered from the model; and a side view to scale of where the
plain answer dips into the table.

Run: uv run python experiments/11-inverse-kinematics/scene.py   (writes scene_output.txt, results.json,
scene_table.png and scene_contact.png)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial import ConvexHull  # noqa: E402

from physai import collision, robots  # noqa: E402
from physai.ik import solve_ik_batch  # noqa: E402
from physai.kinematics import tool_pose  # noqa: E402
from physai.course.lesson import (Claim, Figure, fmt_row, full_run, out_dir, run_script, save_figure,  # noqa: E402
                                  save_results)
from physai.course.pictures import Box, Pose, View, picture  # noqa: E402

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
TABLE = (0.5, 0.5, 0.02), (0.0, 0.0, -0.02)  # half-sizes and centre (m), as Break it's table: its top at z = 0
LOW, MARGIN = 0.06, 0.01  # m: targets no higher than this above the table; the clearance avoid= keeps
TABLE_SEED, RESTART_SEED, N_TARGETS = 3, 2, 40  # as Break it: the postures whose tool points are the targets
SCRIPT, FILE = "scene.py", "scene_table.png"
# From above the table's far side, a little above its top: the arm, the target and the see-through top in one view.
VIEW_AZIMUTH, VIEW_ELEVATION, VIEW_DISTANCE = 200.0, -35.0, 0.8
LABEL_AT = np.array([0.3, -0.2, 0.0])  # m, where the table's label sits on its top, clear of the arm
TOP_RGBA, WOOD_RGBA = (0.8, 0.62, 0.4, 0.45), (0.45, 0.28, 0.12, 1.0)  # see-through top; opaque rim
# The close view of the contact: a side view drawn to scale (orthographic, along the world y axis) of the arm's
# collision boxes within CLOSE_REACH of the deepest point, against the table top.
CLOSE_FILE, CLOSE_REACH = "scene_contact.png", 0.04  # m
LEFT, RIGHT, BELOW, ABOVE = 20.0, 35.0, 8.0, 22.0  # mm: the frame around the deepest point and the table top
DIM_X = 6.0  # mm left of the deepest point: where the side view draws the depth


def table_boxes(half, centre, rim: float = 0.004) -> list[Box]:
    """Break it's table drawn as a slab on the floor: its see-through top (``half``, ``centre``, m), a dark rim
    along the top's four edges, and its label on the top at ``LABEL_AT``. No legs: seen through the top they would
    look like posts standing on it."""
    half, centre = np.asarray(half, float), np.asarray(centre, float)
    boxes = [Box(centre, half, TOP_RGBA)]
    for s in (-1, 1):  # the rim: the top's thickness, drawn opaque along each edge
        boxes.append(Box(centre + [s * (half[0] - rim), 0, 0], np.array([rim, half[1], half[2] + 5e-4]), WOOD_RGBA))
        boxes.append(Box(centre + [0, s * (half[1] - rim), 0], np.array([half[0], rim, half[2] + 5e-4]), WOOD_RGBA))
    # A Box's label sits at the middle of its top face: a box of no size on the table top carries it.
    return boxes + [Box(LABEL_AT, np.zeros(3), WOOD_RGBA, "table")]


def deepest_point(world, q, pair: int) -> np.ndarray:
    """The point (3,) m, world frame, of pair ``pair``'s two nearest points that lies lower: for an overlap with the
    table, the arm's deepest point below the table top (MuJoCo's ``mj_geomDistance``)."""
    fromto = np.zeros(6)
    g1, g2 = (int(g) for g in world.pairs[pair])
    mujoco.mj_geomDistance(world.model, world.posed(q), g1, g2, world.distmax, fromto)
    return fromto[:3] if fromto[2] < fromto[5] else fromto[3:]


@plt.rc_context({"font.size": 12})  # and larger text, for a phone's width
def contact_view(world, q, point, depth_mm: float, other: str, pair: int) -> None:
    """A side view, to scale, of the plain answer ``q`` at its ``point`` (3,) m of deepest overlap with the table:
    the arm's collision boxes within ``CLOSE_REACH`` projected along the world y axis onto the x-z plane (mm, the
    point at x = 0) as outlines, the box of ``pair`` that overlaps filled and named, and the table below its top z = 0."""
    model, data = world.model, world.posed(q)
    deepest = next(int(g) for g in world.pairs[pair] if model.geom_bodyid[g] != 0)  # the table hangs on the world
    fig, ax = plt.subplots(figsize=(5.2, 3.7))  # narrow: the text stays legible at a phone's width
    ax.axhspan(-BELOW - 5, 0, color=WOOD_RGBA[:3], alpha=0.35, lw=0)
    ax.axhline(0, color=WOOD_RGBA[:3], lw=1.5)
    ax.text(RIGHT - 1, -BELOW + 1, "table", ha="right", va="bottom", color=WOOD_RGBA[:3])
    signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T  # (8, 3) a box's corners
    for g in range(model.ngeom):
        if (model.geom_type[g] != mujoco.mjtGeom.mjGEOM_BOX or model.geom_bodyid[g] == 0
                or np.linalg.norm(data.geom_xpos[g] - point) > CLOSE_REACH):
            continue
        corners = data.geom_xpos[g] + (signs * model.geom_size[g]) @ data.geom_xmat[g].reshape(3, 3).T
        xz = 1000 * (corners[:, [0, 2]] - point[[0, 2]] * [1, 0])  # mm: x from the point, z from the table top
        hull = ConvexHull(xz)
        if g == deepest:  # the one box filled and named, over the rest drawn as outlines, which make no darker patches
            ax.fill(*xz[hull.vertices].T, color=(0.9, 0.15, 0.1), ec=(0.5, 0.05, 0.05), lw=0.8, zorder=3)
            low, high = xz[:, 1].min(), xz[:, 1].max()  # the name low in the box, above the outlines crossing it
            ax.text(xz[:, 0].mean(), low + 0.25 * (high - low), other, ha="center", va="center", color="white",
                    fontsize=11, zorder=5, bbox={"fc": (0.9, 0.15, 0.1), "ec": "none", "pad": 1})
        else:
            ax.fill(*xz[hull.vertices].T, fill=False, ec=(0.5, 0.05, 0.05), lw=0.8, zorder=2)
    # the depth as a dimension line left of the box, where no outline crosses it: a millimetre or two is too short
    # for arrowheads, so the bar's end ticks mark the table top and the deepest point
    ax.plot(0, -depth_mm, "k.", ms=7, zorder=4)
    ax.plot([-DIM_X, 0], [-depth_mm, -depth_mm], "k:", lw=1, zorder=4)
    ax.annotate("", (-DIM_X, -depth_mm), (-DIM_X, 0),
                arrowprops={"arrowstyle": "|-|", "lw": 1.5, "mutation_scale": 8}, zorder=4)
    ax.text(-DIM_X - 2.5, -depth_mm / 2, f"{depth_mm:.1f} mm", ha="right", va="center", zorder=4)
    ax.set_xlim(-LEFT, RIGHT)
    ax.set_ylim(-BELOW, ABOVE)
    ax.set_aspect("equal")
    ax.set_xlabel("world x from the deepest point (mm)")
    ax.set_ylabel("height above table (mm)")
    ax.set_title(f"Side view: {other} {depth_mm:.1f} mm into the table")
    fig.tight_layout()
    save_figure(fig, HERE / CLOSE_FILE, dpi=110)
    plt.close(fig)


def part(geom: str) -> str:
    """A collision shape's part of the arm, as the page names it: ``"fixed_jaw_box1"`` -> ``"fixed jaw"``."""
    return geom.split("#")[0].removesuffix("_box" + geom.rpartition("_box")[2]).replace("_", " ")


def main(full: bool = False) -> list[Claim]:
    """Solve Through the table's targets plain and with avoid=, picture the plain answer that sinks deepest into the
    table beside its avoid= answer, then that answer's contact from the side (:func:`contact_view`); no claims.
    ``full``: no larger size."""
    chain = robots.load("so101")
    world = collision.collision_world(collision.scene("so101", [collision.Obstacle("table", "box", *TABLE)]), chain,
                                      margin=MARGIN, self_margin=MARGIN)
    q = chain.random_q(np.random.default_rng(TABLE_SEED), 40 * N_TARGETS)
    p = tool_pose(chain, q)[:, :3, 3]
    targets = p[(p[:, 2] < LOW) & world.clear(q)][:N_TARGETS]
    plain = solve_ik_batch(chain, targets, task="position", rng=np.random.default_rng(RESTART_SEED))
    avoid = solve_ik_batch(chain, targets, task="position", rng=np.random.default_rng(RESTART_SEED), avoid=world)
    table = np.array(["table" in (part(a), part(b)) for a, b in world.pair_names])  # the pairs with the table
    d_table = world.distances(plain.q)[:, table]  # (k, table pairs) m, negative: overlapping
    clear_plain, clear_avoid = d_table.min(axis=1), world.distances(avoid.q).min(axis=1)
    k = int(np.argmin(np.where(plain.converged & avoid.converged, clear_plain, np.inf)))
    pair = int(np.flatnonzero(table)[int(np.argmin(d_table[k]))])
    a, b = (part(g) for g in world.pair_names[pair])
    other, what = (b if a == "table" else a), "the table"
    depth = -1000 * clear_plain[k]
    half, centre = TABLE
    pic = picture("so101", [Pose(avoid.q[k]), Pose(plain.q[k], alpha=0.55, rgba=(0.9, 0.15, 0.1, 1))], HERE / FILE,
                  overlays=[*table_boxes(half, centre), Box(targets[k], np.full(3, 0.006), (0.1, 0.7, 0.2, 1),
                                                            "target")],
                  view=View(VIEW_AZIMUTH, VIEW_ELEVATION, (*(0.5 * targets[k][:2]), 0.0), VIEW_DISTANCE),
                  size=(720, 480), floor_z=centre[2] - half[2],
                  title=f"SO-101: plain IK (red), its {other} {depth:.1f} mm into {what}; avoid= (yellow) clear")
    print(f"target {k} of {len(targets)} at {fmt_row(targets[k])} m: plain answer's {other} {depth:.1f} mm into "
          f"{what}, avoid= answer {1000 * clear_avoid[k]:.1f} mm from everything")
    print(pic.drawn_by)
    point = deepest_point(world, plain.q[k], pair)
    contact_view(world, plain.q[k], point, depth, other, pair)
    print(f"deepest point of the {other} at {fmt_row(point)} m")
    # The caption names what is drawn; the page's text beside it quotes the depth from this run's results.
    figure = Figure(FILE, pic.caption(f"The same target seen from above: the plain answer in see-through red, the "
                                      "avoid= answer in solid yellow, every part of it at least the margin from "
                                      f"everything. The {other}'s dip into {what} is too shallow to see from here; "
                                      "the side view above shows it."),
                    pic.alt(f"looking down at two IK answers for one target just above a table: the plain "
                            f"answer, its {other} {depth:.1f} mm inside {what}, and the avoid= answer",
                            "the table as a see-through light-brown top with a dark rim, the target as a small "
                            f"green cube, the plain answer in see-through red with its {other} sunk into {what}, "
                            "and the avoid= answer in solid yellow clear of the table and of itself"))
    close_figure = Figure(CLOSE_FILE,
        f"Plain IK's answer for a target just above the table, from the side, to scale: the collision boxes within "
        f"{CLOSE_REACH * 100:.0f} cm of the {other}'s deepest point (the dot), seen along the world y axis, the "
        f"overlapping {other} filled and named, the rest outlined; the table top is at height 0.",
        f"Side view in millimetres: red outlines of the gripper's collision boxes above a brown band for "
        f"the table; the filled {other} box, labelled, reaches {depth:.1f} mm below the table top, marked by a dot and a "
        "dimension bar beside it.")
    save_results(HERE, SCRIPT, {"target": targets[k], "q_plain": plain.q[k], "q_avoid": avoid.q[k],
                                "clear_plain_mm": 1000 * clear_plain[k], "clear_avoid_mm": 1000 * clear_avoid[k],
                                "depth_mm": depth, "into": what, "part": other, "margin_mm": 1000 * MARGIN,
                                "table_label": LABEL_AT, "picture": pic.record(), "deepest_point": point},
                 figures=[figure, close_figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
