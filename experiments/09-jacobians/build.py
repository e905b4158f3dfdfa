"""Lesson 09, Build it: the SO-101 Jacobian from hinge columns, checked step by step against MuJoCo.

Run: uv run python experiments/09-jacobians/build.py   (writes build_output.txt beside this file)
"""

from pathlib import Path

import numpy as np

from physai import mj, robots
from physai.kinematics import fd_jacobian, fk, hinge_column, jacobian
from physai.lesson import fmt_row, transcript

Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
N_POSES = 50
FORCES = [np.array([0, 0, -2.0]), np.array([2.0, 0, 0]), np.array([0, 1.5, 0])]


def main() -> None:
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    rng = np.random.default_rng(SEED)
    poses = chain.random_q(rng, N_POSES)
    print(f"SO-101 from {chain.source}; tool site {chain.tool_name!r}; seed {SEED}")

    print("\n== Step 1. One hinge column at q = (0, -0.6, 0.9, 0.4, 0.3) ==")
    axes, anchors, p = fk(chain, Q0)
    col = hinge_column(axes[1], anchors[1], p)  # shoulder_lift
    col_mj = mj.site_jacobian(m, chain, Q0)[:, 1]
    print(f"shoulder_lift column, ours:   {fmt_row(col)}")
    print(f"shoulder_lift column, MuJoCo: {fmt_row(col_mj)}")
    print(f"lever |a x (p - o)| = {np.linalg.norm(col[:3]):.4f} m, max difference {np.abs(col - col_mj).max():.1e}")

    print(f"\n== Step 2. Jacobian from hinge columns vs mj_jacSite ({N_POSES} poses) ==")
    err = np.array([np.abs(jacobian(chain, q) - mj.site_jacobian(m, chain, q)) for q in poses])
    print(f"max entry error: linear rows {err[:, :3].max():.1e}, angular rows {err[:, 3:].max():.1e}")

    print("\n== Step 3. Use it at q = (0, -0.6, 0.9, 0.4, 0.3) ==")
    J = jacobian(chain, Q0)
    speed = np.linalg.norm(J[:3] @ (np.ones(5) / np.sqrt(5)))
    print(f"tool speed for every joint at 1/sqrt(5) rad/s: {speed:.3f} m/s")
    for F in FORCES:
        label = "[" + ", ".join("0" if v == 0 else f"{v:.1f}" for v in F) + "] N"
        print(f"F = {label:>16s}  ->  J^T F = {fmt_row(J[:3].T @ F)} N m")

    print("\n== Step 4. Central differences of our FK vs our analytic Jacobian (eps = 1e-5) ==")
    errs = [np.abs(fd_jacobian(lambda x: fk(chain, x).p, q, eps=1e-5) - jacobian(chain, q)[:3]).max() for q in poses]
    print(f"median max entry error: {np.median(errs):.1e}")


if __name__ == "__main__":
    with transcript(Path(__file__).with_name("build_output.txt")):
        main()
