"""Lesson 11, the robot: one SO-101 target just above the table, the plain IK answer that sinks deepest into the
table and the answer with ``avoid=`` that keeps clear, rendered from the model.

Run: uv run python experiments/11-inverse-kinematics/scene.py   (writes scene_output.txt, results.json and
scene_table.png)
"""

import numpy as np

from physai import collision, robots
from physai.ik import solve_ik_batch
from physai.kinematics import tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_results
from physai.course.pictures import Box, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
TABLE = (0.5, 0.5, 0.02), (0.0, 0.0, -0.02)  # half-sizes and centre (m), as Break it's table: its top at z = 0
LOW, MARGIN = 0.06, 0.01  # m: targets no higher than this above the table; the clearance avoid= keeps
TABLE_SEED, RESTART_SEED, N_TARGETS = 3, 2, 40  # as Break it: the postures whose tool points are the targets
SCRIPT, FILE = "scene.py", "scene_table.png"
# From above the table's far side, a little above its top: the arm, the target and the see-through top in one view.
VIEW_AZIMUTH, VIEW_ELEVATION, VIEW_DISTANCE = 200.0, -35.0, 0.8
LABEL_AT = np.array([0.3, -0.2, 0.0])  # m, where the table's label sits on its top, clear of the arm
TOP_RGBA, WOOD_RGBA = (0.8, 0.62, 0.4, 0.45), (0.45, 0.28, 0.12, 1.0)  # see-through top; opaque rim


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


def part(geom: str) -> str:
    """A collision shape's part of the arm, as the page names it: ``"fixed_jaw_box1"`` -> ``"fixed jaw"``."""
    return geom.split("#")[0].removesuffix("_box" + geom.rpartition("_box")[2]).replace("_", " ")


def main(full: bool = False) -> list[Claim]:
    """Solve Through the table's targets plain and with avoid=, picture the plain answer that sinks deepest into the
    table beside its avoid= answer; no claims. ``full``: no larger size."""
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
    a, b = (part(g) for g in world.pair_names[np.flatnonzero(table)[int(np.argmin(d_table[k]))]])
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
    # The caption names what is drawn; the page's text beside it quotes the depth from this run's results.
    figure = Figure(FILE, pic.caption(f"A preview of the end of Break it: for one target just above a table, the "
                                      f"plain answer (red, see-through) reaches the target with its {other} sunk into "
                                      f"{what}, as deep as the text above says (millimetres: thinner than the table "
                                      "top, so the picture shows where, not how deep); the answer with avoid= (yellow) "
                                      "reaches the same point with every part at least the margin from everything."),
                    pic.alt(f"looking down at two IK answers for one target just above a table: the plain "
                            f"answer, its {other} {depth:.1f} mm inside {what}, and the avoid= answer",
                            "the table as a see-through light-brown top with a dark rim, the target as a small "
                            f"green cube, the plain answer in see-through red with its {other} sunk into {what}, "
                            "and the avoid= answer in solid yellow clear of the table and of itself"))
    save_results(HERE, SCRIPT, {"target": targets[k], "q_plain": plain.q[k], "q_avoid": avoid.q[k],
                                "clear_plain_mm": 1000 * clear_plain[k], "clear_avoid_mm": 1000 * clear_avoid[k],
                                "depth_mm": depth, "into": what, "part": other, "margin_mm": 1000 * MARGIN,
                                "table_label": LABEL_AT, "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
