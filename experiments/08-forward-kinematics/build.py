"""Lesson 08, Build it: forward kinematics by walking the chain, checked against MuJoCo body by body and on
two more arms; the WidowX AI seed's reach claim recomputed (its 2-link worked example is lesson 10's).

Run: uv run python experiments/08-forward-kinematics/build.py   (writes build_output.txt and claims.json beside it)
"""


import mujoco
import numpy as np

from physai import mj, robots
from physai.kinematics import jacobian, joint_frames, tool_pose
from physai.lesson import Claim, fmt_row, out_dir, publish_claims, run_script, verdict

HERE = out_dir(__file__)  # where this run writes its transcript, claims, results and figures
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
N_POSES = 50
N_REACH = 2000
LESSON, SCRIPT = "08", "build.py"


def walk_step(m, chain, n_poses=N_POSES) -> dict:
    """Step 1: every joint body's frame vs MuJoCo's ``xpos``/``xmat`` at Q0 and random poses, and the tool site."""
    poses = np.vstack([Q0, chain.random_q(np.random.default_rng(SEED), n_poses)])
    frames = joint_frames(chain, poses)[0]  # (poses, n, 4, 4)
    d = mujoco.MjData(m)
    bodies = [m.jnt_bodyid[m.joint(name).id] for name in chain.joint_names]
    err_p, err_R = np.zeros((len(poses), chain.n)), np.zeros((len(poses), chain.n))
    for k, q in enumerate(poses):
        d.qpos[list(chain.qpos_adr)] = q
        mujoco.mj_kinematics(m, d)
        err_p[k] = np.abs(frames[k, :, :3, 3] - d.xpos[bodies]).max(axis=1)
        err_R[k] = np.abs(frames[k, :, :3, :3] - d.xmat[bodies].reshape(-1, 3, 3)).max(axis=(1, 2))
    return {"bodies": [m.body(b).name for b in bodies], "p_q0": frames[0, :, :3, 3], "err_p": err_p.max(axis=0),
            "err_R": err_R.max(axis=0), "tool_q0": tool_pose(chain, Q0)[:3, 3],
            "tool_err": max(np.abs(tool_pose(chain, q) - mj.site_pose(m, chain, q)).max() for q in poses)}


def other_arms_step(n_poses=N_POSES) -> list[dict]:
    """Step 2: the WidowX AI and the Panda loaded by path; worst FK and Jacobian difference from MuJoCo."""
    rng, out = np.random.default_rng(SEED + 1), []
    for name, site in [("wxai", "ee_site"), ("panda", "tcp")]:
        path = robots.model_path(name)
        c, mm = robots.load(path, site=site), robots.mujoco_model(path)
        qs = c.random_q(rng, n_poses)
        out.append({"model": f"{path.parent.name}/{path.name}", "site": site, "n": c.n,
                    "dT": max(np.abs(tool_pose(c, q) - mj.site_pose(mm, c, q)).max() for q in qs),
                    "dJ": max(np.abs(jacobian(c, q) - mj.site_jacobian(mm, c, q)).max() for q in qs)})
    return out


def reach_step(n_poses=N_REACH) -> dict:
    """Step 3: shoulder-to-tool reach and the largest linear Jacobian entry, seed's chain and the real arm."""
    rng, out = np.random.default_rng(SEED + 2), {}
    for name in ("wxai_illustrative", "wxai"):
        c = robots.load(name)
        qs = c.random_q(rng, n_poses)
        shoulder = joint_frames(c, qs)[0][:, 1, :3, 3]
        out[name] = {"reach": float(np.linalg.norm(tool_pose(c, qs)[:, :3, 3] - shoulder, axis=1).max()),
                     "top": float(np.abs(jacobian(c, qs)[:, :3]).max())}
    return out


def print_steps(walk, arms, reach) -> None:
    print(f"\n== Step 1. Walk the chain: every body frame vs MuJoCo (Q0, then worst of {N_POSES} random poses) ==")
    print(f"{'body':>10s} {'position at Q0 (m)':>27s} {'|dp| max':>9s} {'|dR| max':>9s}")
    for body, p, ep, eR in zip(walk["bodies"], walk["p_q0"], walk["err_p"], walk["err_R"]):
        print(f"{body:>10s} {fmt_row(p)} {ep:9.1e} {eR:9.1e}")
    print(f"{'tool site':>10s} {fmt_row(walk['tool_q0'])} {walk['tool_err']:9.1e}  (whole 4x4)")
    print(f"\n== Step 2. Other arms loaded by path: FK and Jacobian vs MuJoCo at {N_POSES} random in-limit poses ==")
    print(f"{'model':36s} {'site':>8s} {'joints':>6s} {'|dT| max':>9s} {'|dJ| max':>9s}")
    for a in arms:
        print(f"{a['model']:36s} {a['site']:>8s} {a['n']:6d} {a['dT']:9.1e} {a['dJ']:9.1e}")
    print(f"\n== Step 3. Reach and the 'no linear entry exceeds 0.77' bound ({N_REACH} random poses) ==")
    for name, r in reach.items():
        print(f"{name:18s}: max distance shoulder -> tool {r['reach']:.3f} m; largest |linear entry| of J "
              f"{r['top']:.3f} m/rad")
    print("An entry is bounded by the distance from that joint's axis to the tool; the seed's 0.769 m is the real\n"
          "arm's reach, its illustrative chain reaches further.")


def claims(reach) -> list[Claim]:
    ill = reach["wxai_illustrative"]
    return [
        Claim(LESSON, "no linear entry exceeds 0.77 (seed's illustrative chain)", "<= 0.77",
              f"{ill['top']:.3f}", verdict(ill["top"] <= 0.77), f"largest |J_ij|, rows 0-2, {N_REACH} poses", SCRIPT),
    ]


def main() -> None:
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; seed {SEED}")
    walk, arms, reach = walk_step(m, chain), other_arms_step(), reach_step()
    print_steps(walk, arms, reach)
    rows = claims(reach)
    publish_claims(HERE, rows, SCRIPT)


if __name__ == "__main__":
    run_script(main, __file__)
