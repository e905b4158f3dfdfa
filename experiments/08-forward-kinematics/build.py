"""Lesson 08, Build it: forward kinematics by walking the chain, checked against MuJoCo body by body and, the same
walk, on two more arms; the WidowX AI's reach from its shoulder (its largest Jacobian entry is lesson 09's).

The three functions in EXERCISE are written here from scratch (``physai exercise 08 DIR`` blanks them for you to
type; ``physai check 08 DIR`` grades them); Step 1 uses them.

Run: uv run python experiments/08-forward-kinematics/build.py   (writes build_output.txt and
results.json beside it)
"""

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.optimize import minimize

from physai import mj, robots
from physai import transforms as tf
from physai.chain import chain_from_mujoco, reach_bound
from physai.kinematics import jacobian, joint_frames, tool_pose
from physai.course.lesson import fmt_row, full_run, out_dir, run_script, save_results

HERE = out_dir(__file__)  # where this run writes its transcript, results and figures
Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])
SEED = 0
N_POSES = 50
N_REACH = 2000
N_STARTS = 10  # the farthest random poses the optimiser of the Hard exercise starts from
ROLL_TURN = 0.5  # rad added to wrist_roll at Q0 (an exercise)
NUDGE = 0.1  # rad added to each joint alone at Q0 (an exercise)
REF = 0.3  # rad: the joint ref given to every SO-101 joint to show what q_ref does
SCRIPT = "build.py"

EXERCISE = ("joint_transform", "walk_chain", "axes_and_anchors")


# ---- the functions you type -----------------------------------------------------------------------------------


def joint_transform(T_prev_joint, axis, angle):
    """``T_prev_this (4, 4)``: joint i's frame in the previous joint's frame after the joint has turned.

    ``T_prev_joint (4, 4)`` places the joint frame at ``q = q_ref``; the hinge then turns by ``angle = q_i - q_ref_i``
    (rad) about its unit ``axis (3,)``, given in its own frame: ``T_prev_joint @ [[Rot(axis, angle), 0], [0, 1]]``.
    """
    M = np.eye(4)
    M[:3, :3] = tf.rotation_about_axis(axis, angle)
    return T_prev_joint @ M


def walk_chain(chain, q):
    """Walk a chain of hinges from the world: ``q (n,)`` rad -> ``T_world_joint (n, 4, 4)``, each joint's frame after
    its own motion, and ``T_world_tool (4, 4)`` (translations in m).

    ``chain`` is a physai chain (``physai.load("so101")``; the grader also walks the WidowX AI, whose axes include
    y, -y and x, and a chain with nonzero ``q_ref``). Its arrays: ``chain.T_prev_joint (n, 4, 4)`` places joint i's
    frame in the previous joint's frame (the world's for i = 0) at ``q = q_ref``; ``chain.axis_joint (n, 3)`` is
    each unit axis in its own joint frame; joint i turns by ``q[i] - chain.q_ref[i]`` (``q_ref (n,)`` rad); and
    ``chain.T_last_tool (4, 4)`` places the tool in the last joint frame. ``q`` is left unchanged."""
    T, frames = np.eye(4), []
    for i in range(chain.n):
        T = T @ joint_transform(chain.T_prev_joint[i], chain.axis_joint[i], q[i] - chain.q_ref[i])
        frames.append(T)
    return np.array(frames), T @ chain.T_last_tool


def axes_and_anchors(chain, T_world_joint):
    """World joint axes ``(n, 3)`` (unit) and anchors ``(n, 3)`` (m) from the frames ``T_world_joint (n, 4, 4)``:
    axis i is ``axis_joint[i]`` turned into world axes by frame i's rotation; anchor i is frame i's origin."""
    axes = np.array([T[:3, :3] @ a for T, a in zip(T_world_joint, chain.axis_joint)])
    return axes, T_world_joint[:, :3, 3].copy()


# ---- the steps ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WalkRow:
    """One joint body: its name, its frame's origin at Q0 (m, world) and its worst difference from MuJoCo over the
    poses, each the largest absolute difference of one coordinate or entry: the frame's position (m), its rotation
    matrix (unitless), the joint's axis (unit vector, unitless) and its anchor (m)."""

    body: str
    p: np.ndarray
    err_p: float
    err_R: float
    err_axis: float
    err_anchor: float


@dataclass(frozen=True)
class Walk:
    """Step 1 over ``n`` poses: the body rows, the worst difference anywhere, the tool point at Q0 (m), the tool
    pose's worst differences from MuJoCo's site (its position, m, and its rotation matrix, largest entry) and from
    physai's ``tool_pose`` (whole 4x4), and the tool point at q = 0."""

    n: int
    rows: tuple[WalkRow, ...]
    worst: float
    tool_q0: np.ndarray
    tool_err_p: float
    tool_err_R: float
    lib_err: float
    home: np.ndarray


def walk_step(m, chain, n_poses=N_POSES) -> Walk:
    """Step 1: your walk at Q0 and random poses: every joint body's frame vs MuJoCo's ``xpos``/``xmat``, axes and
    anchors vs ``xaxis``/``xanchor``, the tool vs the site, and the library's ``tool_pose``."""
    poses = np.vstack([Q0, chain.random_q(np.random.default_rng(SEED), n_poses)])
    d = mujoco.MjData(m)
    jids = [m.joint(name).id for name in chain.joint_names]
    bodies = m.jnt_bodyid[jids]
    err_p, err_R, err_axis, err_anchor = (np.zeros((len(poses), chain.n)) for _ in range(4))
    tool_err_p = tool_err_R = lib_err = 0.0
    for k, q in enumerate(poses):
        frames, T_tool = walk_chain(chain, q)
        axes, anchors = axes_and_anchors(chain, frames)
        d.qpos[list(chain.qpos_adr)] = q
        mujoco.mj_kinematics(m, d)
        err_p[k] = np.abs(frames[:, :3, 3] - d.xpos[bodies]).max(axis=1)
        err_R[k] = np.abs(frames[:, :3, :3] - d.xmat[bodies].reshape(-1, 3, 3)).max(axis=(1, 2))
        err_axis[k] = np.abs(axes - d.xaxis[jids]).max(axis=1)
        err_anchor[k] = np.abs(anchors - d.xanchor[jids]).max(axis=1)
        dT = np.abs(T_tool - mj.site_pose(m, chain, q))
        tool_err_p, tool_err_R = max(tool_err_p, dT[:3, 3].max()), max(tool_err_R, dT[:3, :3].max())
        lib_err = max(lib_err, np.abs(T_tool - tool_pose(chain, q)).max())
        if k == 0:
            p_q0, T_tool_q0 = frames[:, :3, 3], T_tool
    errs = (err_p, err_R, err_axis, err_anchor)
    rows = tuple(WalkRow(m.body(b).name, p, *(float(e) for e in worst)) for b, p, *worst in
                 zip(bodies, p_q0, *(e.max(axis=0) for e in errs)))
    return Walk(len(poses), rows, float(max(e.max() for e in errs)), T_tool_q0[:3, 3], float(tool_err_p),
                float(tool_err_R), float(lib_err), walk_chain(chain, np.zeros(chain.n))[1][:3, 3])


@dataclass(frozen=True)
class ArmCheck:
    """Step 2: one arm loaded by path, its tool site and joint count, and the worst difference of your walk from
    MuJoCo, each the largest absolute difference of one coordinate or entry: the tool's position (m) and rotation
    matrix (unitless), the joint axes (unitless) and anchors (m) (``xaxis``, ``xanchor``); its largest |q_ref| (rad,
    the model's joint ``ref``)."""

    model: str
    site: str
    n: int
    dp: float
    dR: float
    d_axis: float
    d_anchor: float
    q_ref: float


def other_arms_step(n_poses=N_POSES) -> list[ArmCheck]:
    """Step 2: your walk_chain and axes_and_anchors on the WidowX AI and the Panda loaded by path, against MuJoCo's
    site pose, joint axes and anchors."""
    rng, out = np.random.default_rng(SEED + 1), []
    for name, site in [("wxai", "ee_site"), ("panda", "tcp")]:
        path = robots.model_path(name)
        c, mm = robots.load(path, site=site), robots.mujoco_model(path)
        d, jids = mujoco.MjData(mm), [mm.joint(n).id for n in c.joint_names]
        dp = dR = d_axis = d_anchor = 0.0
        for q in c.random_q(rng, n_poses):
            frames, T_tool = walk_chain(c, q)
            axes, anchors = axes_and_anchors(c, frames)
            d.qpos[list(c.qpos_adr)] = q
            mujoco.mj_kinematics(mm, d)
            dT = np.abs(T_tool - mj.site_pose(mm, c, q))
            dp, dR = max(dp, dT[:3, 3].max()), max(dR, dT[:3, :3].max())
            d_axis = max(d_axis, np.abs(axes - d.xaxis[jids]).max())
            d_anchor = max(d_anchor, np.abs(anchors - d.xanchor[jids]).max())
        errs = (float(e) for e in (dp, dR, d_axis, d_anchor))
        out.append(ArmCheck(f"{path.parent.name}/{path.name}", site, c.n, *errs, float(np.abs(c.q_ref).max())))
    return out


@dataclass(frozen=True)
class Reach:
    """Step 3: one arm's largest distance (m) from the anchor of its shoulder joint (``joint``, its second) to the
    tool and, for the illustrative chain, its largest linear Jacobian entry (m/rad; None for the real arm, whose
    entry is lesson 09's)."""

    joint: str
    reach: float
    top: float | None = None


def reach_step(n_poses=N_REACH) -> dict[str, Reach]:
    """Step 3: shoulder-to-tool reach of the illustrative chain and the real arm, and the illustrative chain's
    largest linear Jacobian entry; the real arm's largest entry is lesson 09's (wxai.py)."""
    rng, out = np.random.default_rng(SEED + 2), {}
    for name in ("wxai_illustrative", "wxai"):
        c = robots.load(name)
        qs = c.random_q(rng, n_poses)
        shoulder = joint_frames(c, qs)[0][:, 1, :3, 3]
        top = float(np.abs(jacobian(c, qs)[:, :3]).max()) if name == "wxai_illustrative" else None
        out[name] = Reach(c.joint_names[1], float(np.linalg.norm(tool_pose(c, qs)[:, :3, 3] - shoulder, axis=1).max()),
                          top)
    return out


@dataclass(frozen=True)
class Broken:
    """Break it: how far (m) each slip puts the tool point at Q0 from the right one."""

    order: float
    sign: float
    no_tool_offset: float


def break_step(chain, q=Q0) -> Broken:
    """Break it, at Q0: the joint's motion applied before its placement (M @ T_prev_joint), every angle's sign flipped
    (transposed rotations), the tool offset forgotten; how far each puts the tool point from the right one (m)."""
    frames, T_tool = walk_chain(chain, q)
    right, no_tool = T_tool[:3, 3], frames[-1, :3, 3]
    T = np.eye(4)
    for i in range(chain.n):
        T = T @ joint_transform(np.eye(4), chain.axis_joint[i], q[i] - chain.q_ref[i]) @ chain.T_prev_joint[i]
    swapped = (T @ chain.T_last_tool)[:3, 3]
    flipped = walk_chain(chain, 2 * chain.q_ref - q)[1][:3, 3]
    return Broken(*(float(np.linalg.norm(p - right)) for p in (swapped, flipped, no_tool)))


@dataclass(frozen=True)
class Nudge:
    """One joint turned alone by NUDGE at Q0: its name, the distances from the tool point to its anchor and to its
    axis line (the lever), and how far the walk moves the tool point (m)."""

    joint: str
    anchor_dist: float
    lever: float
    move: float


@dataclass(frozen=True)
class Exercises:
    """The page's exercises: the tool's move (m) when wrist_roll turns by ``roll_turn`` (rad) and the roll axis's
    distance from the tool point (m); each joint turned alone by ``nudge_turn`` (rad) at Q0 and the one that moves
    the tool point most; the SO-101's shoulder-to-tool bound, the farthest sampled pose and the farthest
    point L-BFGS-B finds within the limits (``optimum``, at ``q_optimum``, rad) (m), and the shoulder_pan anchor, which
    those are measured from (m, world; the same at every pose), and its distance from the world origin (m)."""

    roll_move: float
    roll_lever: float
    roll_turn: float
    nudge_turn: float
    nudges: tuple[Nudge, ...]
    top: Nudge  # the nudge that moves the tool point most
    bound: float
    sampled: float
    optimum: float
    q_optimum: np.ndarray
    pan_anchor: np.ndarray
    pan_offset: float


def exercises_step(chain) -> Exercises:
    """The page's exercises: the tool's move when wrist_roll turns by ROLL_TURN at Q0 and the roll axis's distance
    from the tool point; each joint turned alone by NUDGE at Q0 (Nudge); the SO-101's shoulder-to-tool bound, the
    farthest of N_REACH random in-limit poses and, by scipy's bounded L-BFGS-B from the N_STARTS farthest of them,
    the farthest point within the limits."""
    roll = chain.joint_index("wrist_roll")
    q = Q0.copy()
    q[roll] += ROLL_TURN
    frames, T_tool = walk_chain(chain, Q0)
    axes, anchors = axes_and_anchors(chain, frames)
    to_tool = T_tool[:3, 3] - anchors
    levers = np.linalg.norm(np.cross(axes, to_tool), axis=1)
    nudges = []
    for i, name in enumerate(chain.joint_names):
        q_i = Q0.copy()
        q_i[i] += NUDGE
        move = np.linalg.norm(walk_chain(chain, q_i)[1][:3, 3] - T_tool[:3, 3])
        nudges.append(Nudge(name, float(np.linalg.norm(to_tool[i])), float(levers[i]), float(move)))
    qs = chain.random_q(np.random.default_rng(SEED + 3), N_REACH)
    F, P = joint_frames(chain, qs)
    r = np.linalg.norm(P[:, :3, 3] - F[:, 0, :3, 3], axis=1)

    def minus_distance(x):  # -|p_tool - o_pan| and its gradient -(d/|d|) J_v; the pan anchor never moves
        dist = tool_pose(chain, x)[:3, 3] - anchors[0]
        return -np.linalg.norm(dist), -(dist / np.linalg.norm(dist)) @ jacobian(chain, x)[:3]

    best = min((minimize(minus_distance, q0, jac=True, method="L-BFGS-B", bounds=list(zip(chain.lower, chain.upper)))
                for q0 in qs[np.argsort(r)[-N_STARTS:]]), key=lambda res: res.fun)
    return Exercises(float(np.linalg.norm(walk_chain(chain, q)[1][:3, 3] - T_tool[:3, 3])), float(levers[roll]),
                     ROLL_TURN, NUDGE, tuple(nudges), max(nudges, key=lambda n: n.move),
                     reach_bound(chain), float(r.max()), float(-best.fun), best.x,
                     anchors[0], float(np.linalg.norm(anchors[0])))


def hard_mm(ex) -> dict[str, float]:
    """The Hard exercise's bound, farthest sample and optimum in mm, rounded to the 0.1 mm the page prints, and the
    gap between bound and sample split into geometry (bound - optimum) and sampling (optimum - sample), each the
    difference of the rounded values, so the page's arithmetic adds up."""
    bound, sampled, optimum = (round(1000 * x, 1) for x in (ex.bound, ex.sampled, ex.optimum))
    return {"bound": bound, "sampled": sampled, "optimum": optimum, "gap": round(bound - sampled, 1),
            "geometry": round(bound - optimum, 1), "sampling": round(optimum - sampled, 1)}


@dataclass(frozen=True)
class SlipRow:
    """The off-by-one frame on the SO-101 at Q0: joint ``joint``'s axis and anchor read from the next joint's frame
    (``next``): how far its world axis turns (deg) and how far its anchor moves (m); the tool pose is unchanged."""

    joint: str
    next: str
    axis_deg: float
    anchor_m: float


def slip_step(chain, q=Q0) -> list[SlipRow]:
    """Break it, the off-by-one frame on the SO-101 at Q0: each joint's axis and anchor read from the next joint's
    frame (your axes_and_anchors with frames[i + 1] for frames[i])."""
    axes, anchors = axes_and_anchors(chain, walk_chain(chain, q)[0])
    return [SlipRow(chain.joint_names[k], chain.joint_names[k + 1],
                    float(np.degrees(np.arccos(np.clip(axes[k] @ axes[k + 1], -1.0, 1.0)))),
                    float(np.linalg.norm(anchors[k + 1] - anchors[k]))) for k in range(chain.n - 1)]


@dataclass(frozen=True)
class QRef:
    """The SO-101 compiled with a joint ``ref`` of ``ref`` rad on every joint (so ``q_ref = ref``): at Q0, your walk's
    tool pose against MuJoCo's site (max entry), and the tool point's distance (m) from MuJoCo's when q_ref is ignored
    (each joint turned by ``q_i`` instead of ``q_i - q_ref_i``)."""

    ref: float
    err: float
    ignored: float


def so101_with_ref(ref=REF):
    """The SO-101 with every joint's MJCF ``ref`` set to ``ref`` (rad): MuJoCo's compiled model and physai's chain."""
    spec = mujoco.MjSpec.from_file(str(robots.model_path("so101")))
    names = robots.load("so101").joint_names
    for name in names:
        spec.joint(name).ref = ref
    model = spec.compile()
    return model, chain_from_mujoco(model, "gripperframe", joints=list(names))


def qref_step(q=Q0, ref=REF) -> QRef:
    """What q_ref is for: the walk on an SO-101 whose file declares ``ref``, with q_ref and without it."""
    model, chain = so101_with_ref(ref)
    site = mj.site_pose(model, chain, q)
    T = np.eye(4)
    for i in range(chain.n):  # the slip: every joint turned by q_i, its reference angle forgotten
        T = T @ joint_transform(chain.T_prev_joint[i], chain.axis_joint[i], q[i])
    ignored = (T @ chain.T_last_tool)[:3, 3]
    return QRef(ref, float(np.abs(walk_chain(chain, q)[1] - site).max()), float(np.linalg.norm(ignored - site[:3, 3])))


# ---- printing -------------------------------------------------------------------------------------------------


def print_slips(slips, qref) -> None:
    print("\n== Break it: the off-by-one frame on the SO-101 at Q0 (joint k's axis and anchor from joint k+1's "
          "frame) ==")
    print(f"{'joint':>13s} {'read from':>13s} {'axis turned (deg)':>18s} {'anchor moved (m)':>17s}")
    for r in slips:
        print(f"{r.joint:>13s} {r.next:>13s} {r.axis_deg:18.1f} {r.anchor_m:17.4f}")
    print(f"\n== q_ref: the SO-101 with ref = {qref.ref} rad on every joint, at Q0 ==")
    print(f"your walk vs MuJoCo's site: {qref.err:.1e}; with q_ref ignored the tool point is {qref.ignored:.4f} m off")


def print_steps(walk, arms, reach, br, ex) -> None:
    print(f"\n== Step 1. Walk the chain: every body frame vs MuJoCo (Q0, then worst of {walk.n} poses) ==")
    print(f"{'body':>10s} {'position at Q0 (m)':>27s} {'dp (m)':>9s} {'dR':>9s} {'axis':>9s} {'anchor (m)':>10s}")
    for r in walk.rows:
        print(f"{r.body:>10s} {fmt_row(r.p)} {r.err_p:9.1e} {r.err_R:9.1e} {r.err_axis:9.1e} {r.err_anchor:10.1e}")
    print(f"{'tool site':>10s} {fmt_row(walk.tool_q0)} {walk.tool_err_p:9.1e} {walk.tool_err_R:9.1e}")
    print(f"your walk vs physai's tool_pose: {walk.lib_err:.1e}; tool at q = 0: {fmt_row(walk.home)}")
    print(f"\n== Step 2. Your walk on other arms loaded by path vs MuJoCo at {N_POSES} random in-limit poses ==")
    print(f"{'model':36s} {'site':>8s} {'joints':>6s} {'dp (m)':>9s} {'dR':>9s} {'axis':>9s} {'anchor (m)':>10s}")
    for a in arms:
        print(f"{a.model:36s} {a.site:>8s} {a.n:6d} {a.dp:9.1e} {a.dR:9.1e} {a.d_axis:9.1e} {a.d_anchor:10.1e}")
    print(f"\n== Step 3. Reach from the shoulder ({N_REACH} random poses) ==")
    for name, r in reach.items():
        top = f"; largest |linear entry| of J {r.top:.3f} m/rad" if r.top is not None else ""
        print(f"{name:18s}: max distance shoulder ({r.joint}, the second joint) anchor -> tool {r.reach:.3f} m{top}")
    print("An entry is bounded by the distance from its own joint's axis to the tool (lesson 09 computes the real "
          "arm's);\nthe illustrative chain reaches further than the real arm.")
    print("\n== Break it: the tool point at Q0 when the walk goes wrong ==")
    print(f"motion before placement (M @ T_prev_joint): {br.order:.4f} m off; every angle's sign flipped: "
          f"{br.sign:.4f} m off; tool offset forgotten: {br.no_tool_offset:.4f} m off")
    print("\n== Exercises ==")
    print(f"wrist_roll + {ex.roll_turn} rad at Q0 moves the tool point {ex.roll_move * 1000:.2f} mm "
          f"(the roll axis passes {ex.roll_lever * 1000:.2f} mm from it)")
    print(f"each joint alone + {ex.nudge_turn} rad at Q0: " + ", ".join(
        f"{n.joint} {n.move * 1000:.2f} mm (lever {n.lever:.4f} m, anchor {n.anchor_dist:.4f} m)" for n in ex.nudges))
    print(f"SO-101 shoulder_pan anchor -> tool: at most {ex.bound:.4f} m (the links); farthest of {N_REACH} random "
          f"poses {ex.sampled:.4f} m; L-BFGS-B from the {N_STARTS} farthest: {ex.optimum:.4f} m at q = "
          f"{fmt_row(ex.q_optimum, 7, 3)};\nthe anchor sits at {fmt_row(ex.pan_anchor)} m, {ex.pan_offset:.4f} m from "
          "the world origin")


def main(full: bool = False) -> dict:
    """The lesson's build steps, printed; their numbers saved and returned. ``full``: no larger size
    here."""
    m = robots.mujoco_model("so101")
    chain = robots.load("so101")
    print(f"SO-101 from {chain.source}; random seed {SEED}")
    walk, arms, reach = walk_step(m, chain), other_arms_step(), reach_step()
    br, ex, slips, qref = break_step(chain), exercises_step(chain), slip_step(chain), qref_step()
    print_steps(walk, arms, reach, br, ex)
    print_slips(slips, qref)
    return save_results(HERE, SCRIPT, {"q0": Q0, "machine_eps": float(np.finfo(float).eps), "n_arm_poses": N_POSES, "n_reach": N_REACH, "n_starts": N_STARTS, "walk": walk, "arms": arms,
                                       "reach": reach, "break": br, "exercises": ex, "slips": slips,
                                       "qref": qref, "hard_mm": hard_mm(ex),
                                       "max_q_ref": max(float(np.abs(chain.q_ref).max()), *(a.q_ref for a in arms))})


if __name__ == "__main__":
    run_script(main, __file__, full_run())
