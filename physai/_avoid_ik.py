"""The collision step of :func:`physai.ik.solve_ik_batch` (``avoid=world``): answers checked, then repaired.

Method (per target; an answer counts only once every pair of the world keeps its margin):

1. The plain solve (same options, same restart draws). Its converged answer is checked against the world: most are
   clear, and cost one distance evaluation.
2. Restarts: for a target whose answer collides, one LM attempt from each of its first ``RESTARTS`` restart
   draws in turn, as the plain solve runs its own restarts (a failed attempt's best point is not polished: only a
   converged answer counts), each converged answer checked, until one is clear: the earliest clear draw wins. Its
   first ``CLEAR_STARTS`` draws are replaced by the world's clear postures whose tool poses are nearest the target
   (:func:`_clear_starts_first`): an attempt from a nearby clear posture tends to end clear, in a few steps. Measured
   on the clutter scene of ``benchmarks/collision.py``, this cut the attempts a hard target needs from 6.5 to 2.8 on
   the SO-101 and from 5.0 to 2.4 on the Panda. The compiled engine judges each answer in the same loop
   (:mod:`physai._numba_avoid`: the collision screen, GJK, and MuJoCo for what they leave undecided); elsewhere
   attempts run in batched rounds of plain solves (one draw per target, then two, four, ...). Both give the same
   answers.
   Starts are not screened: a colliding start often converges to a clear answer, and on a cluttered scene most random
   starts collide (measured: screening them cut the Panda's success from 100 % to 95 % on the tests' scene). Another
   IK branch (elbow up instead of down, another self-motion) is often clear, and a plain attempt costs less than a
   distance evaluation.
3. Repair: if none is clear, Levenberg-Marquardt on the task residual stacked with one penalty row per pair closer
   than ``margin + BUFFER``: ``margin + BUFFER - d_i`` with Jacobian ``G_i`` (the contact-normal Jacobian), from each
   colliding answer in turn (up to ``REPAIRS``). This is the quadratic penalty method of constrained least squares
   (Nocedal and Wright, *Numerical Optimization*, 2nd ed. 2006, section 17.1) inside LM's damped step (Marquardt
   1963); the penalty vanishes once every pair is ``BUFFER`` beyond the margin, so a clear answer meets the task's
   own tolerances exactly. A redundant arm slides along its self-motion out of contact.

A target none of whose attempts yields a clear answer is reported ``converged=False`` with reason
``"collision: no answer keeps the margin"`` (``unmet`` led by ``"collision"``), its ``q`` the closest clear point the
repair visited (else the first answer). Every step reads only the target's own draws, so a batch equals a loop of
single solves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from physai import _engine, _ik_solve, collision, kinematics
from physai._threads import in_threads
from physai._ik_record import COLLISION, IKOptions, IKProblem, Rows
from physai._ik_solve import LM_DOWN, LM_MU0, LM_MU_MIN, LM_UP, limit_blocked, task_residual
from physai.singularity import damped_solve_trusted, scale_to_limit_trusted

RESTARTS = 100  # restart draws tried per colliding target, one plain attempt each, answers checked
ROUND = 64  # attempts per batched round of restarts, shared among the targets still colliding
REPAIRS = 2  # colliding answers per target repaired by the penalty LM: the first solve's, then the restarts'
ITERATIONS, PATIENCE = 30, 6  # penalty-LM steps per repair; steps without 1 % progress before it gives up
BUFFER = 0.005  # m beyond the margin where the penalty starts
CLEAR_STARTS = 8  # a colliding target's first restarts: the world's clear postures with tool poses nearest it
NEAREST_ROWS = 256  # targets compared with the clear postures at once (memory: rows x postures x 12 floats)
ROTATION_LENGTH = 0.1  # m per rad: how much the tool's rotation counts against its position in "nearest"
EXHAUSTED, RUN = 3, 4  # a target's restarts: its draws spent, or still to run (beside physai.collision.CLEAR, ASK)


def solve(p: IKProblem, compiled_restarts: bool | None = None) -> Rows:
    """Every target's clear answer or a collision verdict (outcome :data:`physai._ik_record.COLLISION`) for the checked
    problem ``p`` with its world. ``p.uniforms (B, restarts, n)``: the numbers in [0, 1) of the restart draws
    (``physai.ik.restart_draws``' numbers), mapped into the limits only where a restart is tried.
    ``compiled_restarts`` (default ``p.compiled``): the restarts run in compiled code (:mod:`physai._numba_avoid`),
    else in batched rounds of plain solves (their reference: the same answers)."""
    world, chain, T_target, uniforms, o = p.world, p.chain, p.T_target, p.uniforms, p.options

    def plain(T, q0, uniforms, polish=True) -> Rows:  # the plain solve of other targets, starts and draws
        return _ik_solve.solve(p._replace(T_target=T, q0=q0, uniforms=uniforms,
                                          options=replace(o, restarts=uniforms.shape[1], polish=polish)))

    first = _ik_solve.solve(p)
    s = _State.of(first)
    s.clear[s.conv] = world.clear_trusted(first.q[s.conv], world.pair_margin)
    candidates = {b: [first.q[b]] for b in np.flatnonzero(s.conv & ~s.clear)}  # colliding answers, to repair
    tried, rows = min(RESTARTS, uniforms.shape[1]), np.array(list(candidates), dtype=int)
    if len(rows):
        U = _clear_starts_first(world, chain, T_target[rows], uniforms[rows], o)
        if p.compiled if compiled_restarts is None else compiled_restarts:
            _compiled_restarts(world, chain, T_target, rows, U, tried, o, s, candidates)
        else:
            _restart_rounds(world, chain, T_target, rows, U, tried, plain, s, candidates)
    for b, starts in candidates.items():
        if not s.clear[b]:
            _repair(world, chain, T_target[b], starts, o, s, b)
    return Rows(s.q, s.outcome, s.its, s.perr, s.oerr, s.restarts)


def _clear_starts_first(world, chain, T_target, U, o: IKOptions) -> np.ndarray:
    """The restart draws ``U (R, restarts, n)`` of targets ``T_target (R, 4, 4)``, with the first :data:`CLEAR_STARTS`
    replaced by the world's clear postures (``CollisionWorld.clear_postures``, sampled as the world is built) whose tool
    poses are nearest the target, nearest first: a library of clear starts. Distance:
    ``sqrt(|p_t - p|^2 + (ROTATION_LENGTH c)^2)`` with ``c = 2 sin(angle / 2)`` the chordal distance between the
    tool frames (``"pose"``: ``|R_t - R|_F / sqrt(2)``) or the tool axes (``"position+axis"``: ``|a_t - a|``), no
    rotation term for ``"position"``; found by comparing every pair (a few thousand postures: no index pays)."""
    q, T = world.clear_postures
    k = min(CLEAR_STARTS, len(q), U.shape[1])
    if not k:
        return U
    library, targets = _pose_features(T, o), _pose_features(T_target, o)
    near = np.empty((len(U), k), np.intp)
    for start in range(0, len(targets), NEAREST_ROWS):
        rows = slice(start, start + NEAREST_ROWS)
        d2 = np.square(targets[rows, None, :] - library[None, :, :]).sum(axis=2)
        nearest = np.argpartition(d2, k - 1, axis=1)[:, :k]
        near[rows] = np.take_along_axis(nearest, np.argsort(np.take_along_axis(d2, nearest, 1), 1, "stable"), 1)
    low, high = chain.sample_range
    U = np.array(U)
    U[:, :k] = np.clip((q[near] - low) / (high - low), 0.0, np.nextafter(1.0, 0.0))
    return U


def _pose_features(T, o: IKOptions) -> np.ndarray:
    """Points ``(K, d)`` whose Euclidean distances are :func:`_clear_starts_first`'s distances between poses ``T``."""
    if o.task == "pose":  # |R_t - R|_F^2 = 8 sin^2(angle / 2)
        return np.concatenate([T[:, :3, 3], ROTATION_LENGTH / np.sqrt(2.0) * T[:, :3, :3].reshape(-1, 9)], axis=1)
    if o.task == "position+axis":  # |a_t - a|^2 = 4 sin^2(angle / 2)
        return np.concatenate([T[:, :3, 3], ROTATION_LENGTH * np.einsum("kij,j->ki", T[:, :3, :3], o.axis)], axis=1)
    return np.ascontiguousarray(T[:, :3, 3])


def _restart_rounds(world, chain, T_target, rows, U, tried: int, plain, s, candidates) -> None:
    """Step 2 in batched rounds of ``plain`` solves (the reference of :func:`_compiled_restarts`) for the colliding
    targets ``rows`` and their draws ``U (R, restarts, n)``: draws per target one at first (most targets need one),
    then doubling, up to a shared ``ROUND``."""
    a, r = 0, 0
    while a < tried:
        live = np.flatnonzero(~s.clear[rows])
        if not len(live):
            break
        k = min(max(1, ROUND // len(live)), 1 << r, tried - a)
        _restart_round(world, chain, T_target, U[live], rows[live], a, k, plain, s, candidates)
        a, r = a + k, r + 1


def _restart_round(world, chain, T_target, U, rows, a: int, k: int, plain, s, candidates) -> None:
    """One plain attempt from each of draws ``a .. a+k-1`` of every target in ``rows``, in one batched call; a target
    takes its earliest clear answer (the one a round of one draw at a time would stop at), and is charged the steps
    up to it; its colliding answers before that join its repair candidates."""
    starts = _ik_solve.starts_of(chain, U[:, a:a + k].reshape(-1, chain.n))
    r = plain(np.repeat(T_target[rows], k, axis=0), starts, np.empty((len(starts), 0, chain.n)), polish=False)
    converged = r.outcome == 0
    ok = np.zeros(len(starts), bool)
    ok[converged] = world.clear_trusted(r.q[converged], world.pair_margin)
    ok, conv, its = ok.reshape(-1, k), converged.reshape(-1, k), r.iterations.reshape(-1, k)
    for i, b in enumerate(rows.tolist()):
        j = int(np.argmax(ok[i])) if ok[i].any() else k - 1  # the last attempt this target makes this round
        s.its[b] += its[i, :j + 1].sum()
        s.restarts[b] += j + 1
        if ok[i, j]:
            won = i * k + j
            s.q[b], s.perr[b], s.oerr[b] = r.q[won], r.perr[won], r.oerr[won]
            s.clear[b], s.outcome[b] = True, 0
        for jj in np.flatnonzero(conv[i, :j + 1] & ~ok[i, :j + 1]):
            if len(candidates[b]) < REPAIRS:
                candidates[b].append(r.q[i * k + jj])


def _compiled_restarts(world, chain, T_target, rows, U, tried: int, o: IKOptions, s, candidates) -> None:
    """Step 2 in compiled code (:func:`physai._numba_avoid.restarts`): each colliding target's draws in turn, each
    answer judged in the same loop; an answer the screen leaves to MuJoCo comes back here, and the loop resumes
    after it if MuJoCo finds it colliding. Same answers as :func:`_restart_rounds`."""
    R, n = len(rows), chain.n
    st = _Restarts(np.zeros(R, np.int64), np.full(R, RUN, np.int64), np.zeros(R, np.int64),
                   np.ones(R, np.int64), np.empty((R, n + 2)), np.empty((R, REPAIRS, n)))
    st.cand[:, 0] = [candidates[b][0] for b in rows]
    T, U = np.ascontiguousarray(T_target[rows]), np.ascontiguousarray(U)
    settings = _ik_solve.compiled_settings(chain, replace(o, polish=False), 1, 1)
    record = world.kernel_record  # its arrays checked once, by ik_problem

    def chunk(lo: int, hi: int) -> None:
        _engine.kernels.restarts(
            chain.packed, chain.lower, chain.upper, T[lo:hi], o.axis, o.sqrt_weights, U[lo:hi], chain.sample_range,
            settings, tried, *record, *(a[lo:hi] for a in st))

    while (st.status == RUN).any():
        in_threads(chunk, R, per_thread=8)  # few kernel calls: each passes 30 arrays
        for i in np.flatnonzero(st.status == collision.ASK):
            st.settle_ask(i, bool(world.clear_trusted(st.out[i, None, :n], world.pair_margin)[0]), tried)
    for i, b in enumerate(rows.tolist()):
        s.its[b] += st.steps[i]
        s.restarts[b] += st.next_draw[i]
        candidates[b] = list(st.cand[i, :st.ncand[i]])
        if st.status[i] == collision.CLEAR:
            s.q[b], s.perr[b], s.oerr[b] = st.out[i, :n], st.out[i, n], st.out[i, n + 1]
            s.clear[b], s.outcome[b] = True, 0


class _Restarts(NamedTuple):
    """The compiled restarts' state per colliding target (:func:`physai._numba_avoid.restarts`, in its order)."""

    next_draw: np.ndarray  # (R,) the next restart draw to try
    status: np.ndarray  # (R,) RUN, collision.CLEAR, collision.ASK or EXHAUSTED
    steps: np.ndarray  # (R,) LM steps spent
    ncand: np.ndarray  # (R,) colliding answers kept for the repair
    out: np.ndarray  # (R, n + 2) the answer that stopped the loop: q, position and orientation errors
    cand: np.ndarray  # (R, REPAIRS, n) the colliding answers, the first solve's first

    def settle_ask(self, i: int, clear: bool, tried: int) -> None:
        """MuJoCo's verdict on row ``i``'s answer: taken if clear, else kept for the repair and the loop resumes."""
        if clear:
            self.status[i] = collision.CLEAR
            return
        if self.ncand[i] < REPAIRS:
            self.cand[i, self.ncand[i]] = self.out[i, :-2]
            self.ncand[i] += 1
        self.status[i] = RUN if self.next_draw[i] < tried else EXHAUSTED


@dataclass
class _State:
    """Per-target answers as they are found: ``clear`` marks a converged answer that keeps the margin."""

    q: np.ndarray
    conv: np.ndarray
    clear: np.ndarray
    outcome: np.ndarray
    its: np.ndarray
    restarts: np.ndarray
    perr: np.ndarray
    oerr: np.ndarray

    @classmethod
    def of(cls, r: Rows) -> _State:
        conv = r.outcome == 0
        return cls(r.q.copy(), conv, np.zeros(len(conv), bool), np.array(r.outcome, np.int64), np.array(r.iterations),
                   np.array(r.restarts), np.array(r.perr), np.array(r.oerr))

    def settle(self, b: int, found: bool, q, perr, oerr, steps: int) -> None:
        self.its[b] += steps
        self.clear[b], self.outcome[b] = found, 0 if found else COLLISION
        if found or np.isfinite(perr):  # a failed repair reports the closest clear point, if it visited one
            self.q[b], self.perr[b], self.oerr[b] = q, perr, oerr


def _repair(world, chain, T_target, starts, o, s: _State, b: int) -> None:
    """Penalty LM from each colliding answer of target ``b`` in turn, until one ends clear and converged."""
    best, steps = (np.inf, None, np.inf, np.inf), 0
    for q in starts:
        found, q, perr, oerr, k, err = _penalty_lm(world, chain, T_target, q, o)
        steps += k
        if found:
            return s.settle(b, True, q, perr, oerr, steps)
        if err < best[0]:
            best = (err, q, perr, oerr)
    s.settle(b, False, best[1], best[2], best[3], steps)


def _evaluate(world, chain, T_target, q, o):
    """At ``q``: the stacked residual ``r`` and Jacobian ``A`` (task rows, weighted; then penalty rows), the task
    errors, whether ``q`` is a clear answer, and whether it is clear at all."""
    T, J = kinematics.pose_and_jacobian_trusted(chain, q, "compiled")
    e, Jt, perr, oerr = task_residual(o.task, T[None], J[None], T_target[None], o.axis)
    d, G = world.evaluate_trusted(q, True, float(world.pair_margin.max()) + BUFFER)  # pairs farther have no penalty row
    near = d < world.pair_margin + BUFFER
    r = np.concatenate([e[0] * o.sqrt_weights, (world.pair_margin + BUFFER - d)[near]])
    A = np.concatenate([Jt[0] * o.sqrt_weights[:, None], G[near]])
    is_clear = bool(np.all(d >= world.pair_margin))
    done = is_clear and perr[0] <= o.tol_position and oerr[0] <= o.tol_orientation
    return r, A, float(perr[0]), float(oerr[0]), done, is_clear


def _penalty_lm(world, chain, T_target, q, o):
    """``(found, q, perr, oerr, steps, task error)`` of the penalty LM (module docstring, step 3) from ``q``; ``q``
    the last clear point visited when none is an answer (its weighted task error reported, inf if none)."""
    r, A, perr, oerr, done, is_clear = _evaluate(world, chain, T_target, q, o)
    E, mu, E_ref, stalled = 0.5 * r @ r, LM_MU0, np.inf, 0
    clear_q = (q, perr, oerr, E) if is_clear else (q, np.inf, np.inf, np.inf)
    for k in range(1, ITERATIONS + 1):
        if done:
            return True, q, perr, oerr, k - 1, 0.0
        dq = damped_solve_trusted(A, r, np.sqrt(mu))
        blocked = limit_blocked(q, dq, chain.lower, chain.upper)
        if blocked.any():  # a joint resting on its limit loses its column, so the others keep moving (ik's rule)
            dq = damped_solve_trusted(A * ~blocked, r, np.sqrt(mu))
        dq, _ = scale_to_limit_trusted(dq, o.max_step)
        trial = np.clip(q + dq, chain.lower, chain.upper)
        rt, At, pt, ot, done_t, clear_t = _evaluate(world, chain, T_target, trial, o)
        Et = 0.5 * rt @ rt
        if Et < E:
            q, r, A, perr, oerr, done, E = trial, rt, At, pt, ot, done_t, Et
            mu = max(mu * LM_DOWN, LM_MU_MIN)
            if clear_t and Et < clear_q[3]:
                clear_q = (q, perr, oerr, Et)
        else:
            mu *= LM_UP
        if E < 0.99 * E_ref:
            E_ref, stalled = E, 0
        else:
            stalled += 1
        if stalled >= PATIENCE:
            break
    if done:
        return True, q, perr, oerr, ITERATIONS, 0.0
    return False, clear_q[0], clear_q[1], clear_q[2], k, clear_q[3]
