"""Lesson 08, the robot: the SO-101 at Q0 rendered from its model, each joint's axis and name drawn on it, and the
path the tool takes as shoulder_lift turns alone.

Run: uv run python experiments/08-forward-kinematics/scene.py   (writes scene_output.txt, results.json and
scene_axes.png)
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from physai import robots
from physai.kinematics import joint_frames, tool_pose
from physai.course.lesson import Claim, Figure, fmt_row, full_run, out_dir, run_script, save_figure, save_results
from physai.course.pictures import PIXEL_DENSITY, Arrow, Ellipsoid, Polyline, Pose, View, picture

HERE = out_dir(__file__)  # where this run writes its transcript, results and figure
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # rad: Build it's pose
SWEEP = 0.3  # rad either side of Q0 that shoulder_lift turns through for the drawn tool path
DOT = 0.007  # m: the radius of the dot drawn at the tool point
REACH = 0.055  # m: each axis arrow runs this far either side of its anchor
SIZE = (360, 300)  # layout pixels: a small canvas, so the labels stay legible when a phone shrinks the picture
FONT = 9.5  # pt, at the picture's own scale
BLUE = (0.05, 0.3, 0.75)  # the labels' blue: a darker shade of the arrows'
AXIS_RGBA = (0.1, 0.45, 0.95, 1.0)
# Where each label sits, in layout pixels from the point it names (its arrow's tail, the middle of its shaft's
# head half, or the tool point), and which side of the text faces that point: every label clear of every arrowhead,
# joined to its point by a leader line.
PLACES = {"shoulder_pan": ("shaft", (-30, 12), "right"), "shoulder_lift": ("tail", (-16, -24), "right"),
          "elbow_flex": ("tail", (6, -26), "right"), "wrist_flex": ("tail", (30, -50), "left"),
          "wrist_roll": ("tail", (-6, -50), "left"), "tool point": ("tool", (10, 30), "left"),
          "tool path": ("path", (14, 30), "left")}
SCRIPT, FILE = "scene.py", "scene_axes.png"


def _marks(named: dict, rgba=(0, 0, 0, 0.0)) -> list[Ellipsoid]:
    """Invisible points (3,) m, world, labelled by their keys: a first rendering reports where they land."""
    return [Ellipsoid(np.asarray(p, float), 1e-4 * np.eye(3), rgba=rgba, label=name) for name, p in named.items()]


def _labelled(path: Path, pixels: dict) -> None:
    """Write the labels onto the rendered ``path``, each offset from its point with a leader line back to it."""
    image = plt.imread(path)
    fig = plt.figure(figsize=(SIZE[0] / 100, SIZE[1] / 100))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(image)
    ax.set_axis_off()
    for text, (point, (dx, dy), side) in PLACES.items():
        colour = "0.1" if point == "tool" else (0.6, 0.05, 0.4) if point == "path" else BLUE
        xy = pixels[f"{text} {point}" if point in ("tail", "shaft") else point]
        ax.annotate(text, xy, xytext=(dx * 72 / 100, -dy * 72 / 100), textcoords="offset points", fontsize=FONT,
                    color=colour, ha=side, va="center",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
                    arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.8, "shrinkA": 0, "shrinkB": 2})
    save_figure(fig, path, dpi=100 * PIXEL_DENSITY)
    plt.close(fig)


def main(full: bool = False) -> list[Claim]:
    """Render the picture, print which backend drew it, save its record; no claims. ``full``: no larger size."""
    chain = robots.load("so101")
    lift = chain.joint_index("shoulder_lift")
    q_path = np.repeat(Q0[None], 25, axis=0)
    q_path[:, lift] += np.linspace(-SWEEP, SWEEP, len(q_path))
    path = tool_pose(chain, q_path)[:, :3, 3]
    tool = tool_pose(chain, Q0)[:3, 3]  # the arc's centre: the middle of the sweep
    T_world_joint, _ = joint_frames(chain, Q0)
    axes = [T[:3, :3] @ a for T, a in zip(T_world_joint, chain.axis_joint)]
    arrows = [Arrow(T[:3, 3] - REACH * a, T[:3, 3] + REACH * a, AXIS_RGBA) for T, a in zip(T_world_joint, axes)]
    drawn = arrows + [Polyline(path), Ellipsoid(tool, DOT * np.eye(3), rgba=(0.1, 0.1, 0.1, 1.0))]
    points = {f"{name} tail": arrow.start for name, arrow in zip(chain.joint_names, arrows)}
    points |= {f"{name} shaft": (T[:3, 3] + arrow.end) / 2
               for name, T, arrow in zip(chain.joint_names, T_world_joint, arrows)}
    points |= {"tool": tool, "path": path[-1]}
    kw = dict(view=View(azimuth=120, elevation=-15), title="SO-101 at Q0: joint axes (blue)", size=SIZE)
    with tempfile.TemporaryDirectory() as tmp:  # the first rendering only reports where the points land
        probe = picture("so101", Pose(Q0), Path(tmp) / FILE, overlays=drawn + _marks(points), **kw)
    hidden = [Ellipsoid(m.center, m.axes, rgba=m.rgba) for m in _marks(points)]  # the same framing, no labels
    if probe.rendered:
        pic = picture("so101", Pose(Q0), HERE / FILE, overlays=drawn + hidden, **kw)
        _labelled(pic.path, probe.pixels)
    else:  # the drawing from the chain labels the joints itself
        pic = picture("so101", Pose(Q0), HERE / FILE, overlays=drawn, joint_names=True, **kw)
    print(f"SO-101 at q = {fmt_row(Q0, 5, 1)} rad; tool path over shoulder_lift +-{SWEEP} rad, "
          f"{1000 * np.linalg.norm(path[-1] - path[0]):.0f} mm end to end\n{pic.drawn_by}")
    figure = Figure(FILE, pic.caption("The SO-101 at Q0: each joint's positive axis as a blue arrow, its name joined "
                                      "to it by a leader line "
                                      "(shoulder_pan's points down, so a positive pan turns clockwise seen from "
                                      "above), the tool point at Q0 as a black dot, and the tool's arc as "
                                      "shoulder_lift alone turns either way from there."),
                    pic.alt("at the pose Q0, standing on the floor",
                            "a blue arrow along each joint's positive axis through its anchor, labelled shoulder_pan, "
                            "shoulder_lift, elbow_flex, wrist_flex and wrist_roll (the pan axis vertical and pointing "
                            "down, the three "
                            "flex axes parallel and horizontal, the roll axis along the wrist and gripper), a black "
                            "dot labelled "
                            "tool point, and a magenta arc through it of the tool point's path as shoulder_lift "
                            "turns"))
    save_results(HERE, SCRIPT, {"q": Q0, "sweep": SWEEP, "path_chord": float(np.linalg.norm(path[-1] - path[0])),
                                "tool": tool,
                                "picture": pic.record()}, figures=[figure])
    return []


if __name__ == "__main__":
    run_script(main, __file__, full_run())
