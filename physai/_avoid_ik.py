"""The collision step of :func:`physai.ik.solve_ik_batch` (``avoid=world``): answers checked, then repaired.

Method (per target, in order; an answer counts only once every pair of the world keeps its margin):

1. The plain solve (same options, same restart draws). Its converged answer is checked against the world: most are
   clear, and cost one distance evaluation.
2. A colliding answer is repaired by Levenberg-Marquardt on the task residual stacked with one penalty row per pair
   closer than ``margin + BUFFER``: ``w (margin + BUFFER - d_i)`` with Jacobian ``w G_i`` (the contact-normal
   Jacobian). This is the quadratic penalty method of constrained least squares (Nocedal and Wright, *Numerical
   Optimization*, 2nd ed. 2006, section 17.1) inside LM's damped step (Marquardt 1963); the penalty vanishes once
   every pair is ``BUFFER`` beyond the margin, so a clear answer meets the task's own tolerances exactly. A redundant
   arm slides along its self-motion out of contact; an arm with no redundancy needs another IK branch:
3. Restarts that reject colliding seeds: the restart draws of the target that are clear are used in turn as ``q0``
   of a plain solve, each answer checked and, if it collides, repaired as in 2.

A target none of whose attempts yields a clear answer is reported ``converged=False`` with reason
``"collision: no answer keeps the margin"`` (``unmet`` holds ``"collision"``), its ``q`` the closest clear point
found (or the plain answer when none was clear). Every step reads only the target's own draws, so a batch equals a
loop of single solves.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from physai import ik, kinematics
from physai.collision import CollisionWorld
from physai.errors import InputError
from physai.singularity import damped_solve, scale_to_limit

ATTEMPTS = 8  # repaired answers per target: the plain answer, then up to 7 from clear restart draws
ITERATIONS, PATIENCE = 40, 8  # penalty-LM steps per repair; steps without 1 % progress before it gives up
BUFFER = 0.005  # m beyond the margin where the penalty starts
COLLISION = ik.REASONS.index("collision: no answer keeps the margin")


def check_world(world, chain) -> CollisionWorld:
    """``world`` must be a :class:`CollisionWorld` of this chain (the same joints and kinematics)."""
    if not isinstance(world, CollisionWorld):
        raise InputError(f"avoid: expected a physai.collision.CollisionWorld, got {type(world).__name__}")
    same = world.chain is chain or (world.chain.joint_names == chain.joint_names
                                    and np.array_equal(world.chain.packed, chain.packed))
    if not same:
        raise InputError(f"avoid: the world was built for chain {world.chain.name!r} with joints "
                         f"{list(world.chain.joint_names)}, not this chain {chain.name!r}")
    return world


def check_start(world: CollisionWorld, q0) -> None:
    """A given start (``(n,)`` or ``(B, n)``) must not penetrate: refused, naming the pair and its depth."""
    for q in np.asarray(q0).reshape(-1, world.chain.n):
        dist, pair = world.closest(q)
        if dist < 0:
            raise InputError(f"q0: the start configuration is in collision: {pair[0]!r} and {pair[1]!r} overlap by "
                             f"{-dist:.4g} m")


def solve(world: CollisionWorld, chain, T_target, q0, draws, o: ik.IKOptions, plain) -> ik.IKBatchResult:
    """Every target's clear answer or a collision verdict; ``plain(T (B, 4, 4), q0 (B, n), draws (B, A, n))`` is the
    plain solve. ``q0 (n,)`` or ``(B, n)``; ``draws (B, restarts, n)``."""
    B, n = len(T_target), chain.n
    first = plain(T_target, np.broadcast_to(q0, (B, n)), draws)
    q, conv = first.q.copy(), first.converged.copy()
    outcome = np.where(conv, 0, [ik.REASONS.index(str(r)) for r in first.reason])
    its, restarts = first.iterations.copy(), first.restarts.copy()
    perr, oerr = first.position_error.copy(), first.orientation_error.copy()
    clear = np.zeros(B, bool)
    clear[conv] = world.clear(q[conv])
    for b in np.flatnonzero(conv & ~clear):
        found, qb, pb, ob, extra_its, extra_restarts = _repair(world, chain, T_target[b], q[b], draws[b], o, plain)
        q[b], perr[b], oerr[b] = qb, pb, ob
        outcome[b] = 0 if found else COLLISION
        its[b] += extra_its
        restarts[b] += extra_restarts
    result = ik.batch_result(q, outcome, its, perr, oerr, restarts, o.method, o.task, o.tol_position,
                             o.tol_orientation)
    unmet = tuple(("collision",) + u if k == COLLISION else u for k, u in zip(outcome.tolist(), result.unmet))
    return replace(result, unmet=unmet)


def _repair(world, chain, T_target, q, draws, o, plain):
    """``(found, q, perr, oerr, iterations, attempts)`` of one target whose plain answer ``q`` collides."""
    best = (np.inf, q, np.inf, np.inf)  # (weighted error, q, perr, oerr) of the best clear point
    its, attempts, seeds = 0, 0, iter(draws)
    for attempt in range(ATTEMPTS):
        if attempt:
            seed = next((s for s in seeds if world.clear(s)), None)
            if seed is None:
                break
            r = plain(T_target[None], seed[None], np.roll(draws, -attempt, axis=0)[None])[0]
            its, attempts, q = its + r.iterations, attempts + 1, r.q
            if r.converged and world.clear(q):
                return True, q, r.position_error, r.orientation_error, its, attempts
        found, q, perr, oerr, k, err = _penalty_lm(world, chain, T_target, q, o)
        its += k
        if found:
            return True, q, perr, oerr, its, attempts
        if err < best[0]:
            best = (err, q, perr, oerr)
    return False, best[1], best[2], best[3], its, attempts


def _evaluate(world, chain, T_target, q, o):
    """At ``q``: the stacked residual ``r`` and Jacobian ``A`` (task rows, weighted; then penalty rows), the task
    errors, whether ``q`` is a clear answer, and whether it is clear at all."""
    T, J = kinematics.tool_pose_and_jacobian(chain, q)
    e, Jt, perr, oerr = ik.task_residual(o.task, T[None], J[None], T_target[None], o.axis)
    d, G = world.distances_and_gradients(q)
    near = d < world.margin + BUFFER
    r = np.concatenate([e[0] * o.sqrt_weights, world.margin + BUFFER - d[near]])
    A = np.concatenate([Jt[0] * o.sqrt_weights[:, None], G[near]])
    is_clear = bool(np.all(d >= world.margin))
    done = is_clear and perr[0] <= o.tol_position and oerr[0] <= o.tol_orientation
    return r, A, float(perr[0]), float(oerr[0]), done, is_clear


def _penalty_lm(world, chain, T_target, q, o):
    """``(found, q, perr, oerr, steps, task error)`` of the penalty LM (module docstring, step 2) from ``q``; ``q``
    the last clear point visited when none is an answer (its weighted task error reported, inf if none)."""
    r, A, perr, oerr, done, is_clear = _evaluate(world, chain, T_target, q, o)
    E, mu, E_ref, stalled = 0.5 * r @ r, ik._LM_MU0, np.inf, 0
    clear_q = (q, perr, oerr, E) if is_clear else (q, np.inf, np.inf, np.inf)
    for k in range(1, ITERATIONS + 1):
        if done:
            return True, q, perr, oerr, k - 1, 0.0
        dq, _ = scale_to_limit(damped_solve(A, r, np.sqrt(mu)), o.max_step)
        trial = np.clip(q + dq, chain.lower, chain.upper)
        rt, At, pt, ot, done_t, clear_t = _evaluate(world, chain, T_target, trial, o)
        Et = 0.5 * rt @ rt
        if Et < E:
            q, r, A, perr, oerr, done, E = trial, rt, At, pt, ot, done_t, Et
            mu = max(mu * ik._LM_DOWN, ik._LM_MU_MIN)
            if clear_t and Et < clear_q[3]:
                clear_q = (q, perr, oerr, Et)
        else:
            mu *= ik._LM_UP
        if E < 0.99 * E_ref:
            E_ref, stalled = E, 0
        else:
            stalled += 1
        if stalled >= PATIENCE:
            break
    if done:
        return True, q, perr, oerr, ITERATIONS, 0.0
    return False, clear_q[0], clear_q[1], clear_q[2], k, clear_q[3]
