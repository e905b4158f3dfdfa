"""Lesson 08, Build it: forward kinematics by walking the chain, checked against MuJoCo body by body and on
three more arms; the WidowX AI lesson's worked example and reach claims recomputed.

Run: uv run python experiments/08-forward-kinematics/build.py   (writes build_output.txt beside this file)
"""

from pathlib import Path

import mujoco
import numpy as np

from physai import mj, robots
from physai.kinematics import jacobian, joint_frames, tool_pose
from physai.lesson import fmt_row, transcript

HERE = Path(__file__).resolve().parent
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
N_POSES = 50


def main() -> None:
    rng = np.random.default_rng(SEED)
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; seed {SEED}")

    print(f"\n== Step 1. Walk the chain: every body frame vs MuJoCo (Q0, then worst of {N_POSES} random poses) ==")
    poses = np.vstack([Q0, chain.random_q(rng, N_POSES)])
    frames = joint_frames(chain, poses)[0]  # (poses, n, 4, 4)
    d = mujoco.MjData(m)
    err_p = np.zeros((len(poses), chain.n))
    err_R = np.zeros_like(err_p)
    for k, q in enumerate(poses):
        d.qpos[list(chain.qpos_adr)] = q
        mujoco.mj_kinematics(m, d)
        for i, name in enumerate(chain.joint_names):
            b = m.jnt_bodyid[m.joint(name).id]
            err_p[k, i] = np.abs(frames[k, i, :3, 3] - d.xpos[b]).max()
            err_R[k, i] = np.abs(frames[k, i, :3, :3] - d.xmat[b].reshape(3, 3)).max()
    print(f"{'body':>10s} {'joint':>13s} {'position at Q0 (m)':>27s} {'|dp| max':>9s} {'|dR| max':>9s}")
    for i, name in enumerate(chain.joint_names):
        b = m.jnt_bodyid[m.joint(name).id]
        print(f"{m.body(b).name:>10s} {name:>13s} {fmt_row(frames[0, i, :3, 3])} {err_p[:, i].max():9.1e} {err_R[:, i].max():9.1e}")
    T_err = max(np.abs(tool_pose(chain, q) - mj.site_pose(m, chain, q)).max() for q in poses)
    print(f"{chain.tool_name:>24s} {fmt_row(tool_pose(chain, Q0)[:3, 3])} {T_err:9.1e}  (site, whole 4x4)")

    print(f"\n== Step 2. Other arms loaded by path: FK and Jacobian vs MuJoCo at {N_POSES} random in-limit poses ==")
    print(f"{'model':36s} {'site':>8s} {'joints':>6s} {'|dT| max':>9s} {'|dJ| max':>9s}")
    for name, site in [("wxai", "ee_site"), ("panda", "tcp")]:
        path = robots.model_path(name)
        c, mm = robots.load(path, site=site), robots.mujoco_model(path)
        qs = c.random_q(rng, N_POSES)
        dT = max(np.abs(tool_pose(c, q) - mj.site_pose(mm, c, q)).max() for q in qs)
        dJ = max(np.abs(jacobian(c, q) - mj.site_jacobian(mm, c, q)).max() for q in qs)
        print(f"{path.parent.name + '/' + path.name:36s} {site:>8s} {c.n:6d} {dT:9.1e} {dJ:9.1e}")

    print("\n== Step 3. The WidowX AI lesson's 2-link worked example (planar2r: L1 = 0.5, L2 = 0.3, q = (0, pi/2)) ==")
    p2 = robots.load("planar2r")
    J = jacobian(p2, [0.0, np.pi / 2])[:2]
    J_seed = np.array([[-0.3, -0.3], [0.8, 0.0]])
    print(f"tool point {fmt_row(tool_pose(p2, [0.0, np.pi / 2])[:2, 3])} m: the elbow is bent 90 deg, not 'fully extended'")
    print(f"J (physai)   = [{fmt_row(J[0])} ;{fmt_row(J[1])} ]")
    print(f"J (seed)     = [{fmt_row(J_seed[0])} ;{fmt_row(J_seed[1])} ]   <- d(py)/dq1 = L1 cos q1 + L2 cos(q1+q2) = 0.5, not 0.8")
    v = np.array([0.0, 0.1])
    for label, A in (("physai J", J), ("seed's J", J_seed)):
        s = np.linalg.svd(A, compute_uv=False)
        print(f"{label:9s}: sigma = {fmt_row(s)}, kappa = {s[0] / s[1]:.3f}, qdot for v = (0, 0.1) m/s: "
              f"{fmt_row(np.linalg.solve(A, v))} rad/s")
    print("seed claims: sigma = 0.85, 0.32, kappa = 2.66, qdot = (0.125, -0.333). Its J is wrong (0.8 for 0.5), and\n"
          "even its own matrix does not give its sigmas or qdot (row 'seed's J'): it wrote -0.08 for -0.3 * 0.1 = -0.03.")

    print("\n== Step 4. Reach and the 'no linear entry exceeds the reach' bound ==")
    for name, c in [("wxai_illustrative", robots.load("wxai_illustrative")),
                    ("Trossen WidowX AI", robots.load("wxai"))]:
        qs = c.random_q(rng, 2000)
        Js = jacobian(c, qs)
        shoulder = joint_frames(c, qs)[0][:, 1, :3, 3]
        reach = np.linalg.norm(tool_pose(c, qs)[:, :3, 3] - shoulder, axis=1).max()
        top = np.abs(Js[:, :3]).max()
        print(f"{name:18s}: max distance shoulder -> tool {reach:.3f} m; largest |linear entry| of J {top:.3f} m/rad "
              f"-> 'no entry exceeds 0.77' {'holds' if top <= 0.77 else 'fails'} (2000 poses)")
    print("An entry is bounded by the distance from that joint's axis to the tool, which for the base yaw can exceed\n"
          "the shoulder-to-tool distance; the seed's 0.769 m is the real arm's spec, its illustrative chain reaches further.")


if __name__ == "__main__":
    with transcript(HERE / "build_output.txt"):
        main()
