"""Serial-chain forward kinematics and the geometric Jacobian (lessons 08 and 09).

Frames and shapes:
- ``q: (..., n)`` joint positions (rad for hinges, m for slides); leading batch dimensions are free.
- Everything returned is in **world** coordinates.
- Jacobians are ``(..., 6, n)``: rows 0-2 linear velocity of the tool point (m/s per joint unit/s),
  rows 3-5 angular velocity (rad/s per joint unit/s), world axes ("linear, then angular", as
  MuJoCo's ``mj_jacSite`` ``[jacp; jacr]`` and Pinocchio's ``LOCAL_WORLD_ALIGNED``).

Engines: :func:`fk`, :func:`tool_pose`, :func:`jacobian` and :func:`tool_pose_and_jacobian` take
``engine="compiled"`` (the default: one compiled walk of the chain per pose, or one per batch)
or ``engine="numpy"`` (the readable code below, which the lessons teach and the compiled engine is
tested equal to, to 1e-13). The answer is the same; only the speed differs.

Batches into the caller's memory: each of them takes ``out=``, a writeable C-contiguous float64 array of the
result's shape (a pair for :func:`tool_pose_and_jacobian`, a triple for :func:`fk`), checked once, written and
returned. A batch larger than memory runs through slices of one such array (a ``numpy.memmap`` on disk, say):
``jacobian(chain, Q[lo:hi], out=J[lo:hi])``; :func:`jacobian_chunks` yields the Jacobians of a batch chunk by chunk
in one reused buffer, for reductions that keep none of them.

A :class:`Chain` is immutable and built once; every function here is a pure function of
``(chain, q)``. There is no cached "current pose" to forget to update, which makes MuJoCo's
stale-data trap impossible here.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from physai import _engine
from physai import transforms as tf
from physai._threads import in_threads
from physai._validate import finite_array, one_of
from physai.chain import (
    JOINT_TYPES,
    BodySpec,
    Chain,
    JointSpec,
    chain_from_bodies,
    chain_from_mujoco,
)
from physai.errors import InputError

__all__ = [
    "ENGINES", "FK", "JOINT_TYPES", "BodySpec", "Chain", "JointSpec", "chain_from_bodies", "chain_from_mujoco",
    "fd_jacobian", "fk", "hinge_column", "jacobian", "jacobian_chunks", "jacobian_from_fk", "joint_frames",
    "joint_motion", "slide_column", "tool_pose", "tool_pose_and_jacobian",
]

ENGINES = ("compiled", "numpy")
"""The values of ``engine=``: ``"compiled"`` (the default) or ``"numpy"`` (the readable reference); same answers."""

# ---- forward kinematics ------------------------------------------------------------------------


class FK(NamedTuple):
    """World joint axes ``(..., n, 3)`` (unit), joint anchors ``(..., n, 3)`` (m) and tool point ``(..., 3)`` (m).

    Row ``i`` of ``axes`` and ``anchors`` is joint ``i`` (root first); all in world coordinates.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m, hinges about world z) with its elbow at 90 degrees:

    >>> axes, anchors, p = physai.fk(physai.load("planar2r"), [0.0, np.pi / 2])
    >>> print(np.round(anchors, 3))
    [[0.  0.  0. ]
     [0.5 0.  0. ]]
    >>> print(np.round(p, 3))
    [0.5 0.3 0. ]
    """

    axes: np.ndarray
    anchors: np.ndarray
    p: np.ndarray


def joint_motion(joint_type: str, axis: np.ndarray, displacement: np.ndarray) -> np.ndarray:
    """Transform of one joint's own motion in its frame: ``displacement: (...)`` -> ``(..., 4, 4)``.

    A hinge rotates by ``displacement`` rad about ``axis`` through the frame origin; a slide
    translates by ``displacement`` m along ``axis``.
    """
    if joint_type == "hinge":
        return tf.make_transform(tf.rotation_about_axis(axis, displacement), np.zeros(3))
    return tf.translation(np.asarray(displacement, dtype=float)[..., None] * axis)


def joint_frames(chain: Chain, q) -> tuple[np.ndarray, np.ndarray]:
    """Walk the chain: ``T_world_joint`` ``(..., n, 4, 4)`` (each after its own motion) and ``T_world_tool`` ``(..., 4, 4)``."""
    return _frames(chain, chain.check_q(q))


def _frames(chain: Chain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`joint_frames` of checked ``q``."""
    T = np.broadcast_to(np.eye(4), q.shape[:-1] + (4, 4))
    frames = []
    for i, jtype in enumerate(chain.joint_types):
        T = T @ chain.T_prev_joint[i] @ joint_motion(jtype, chain.axis_joint[i], q[..., i] - chain.q_ref[i])
        frames.append(T)
    return np.stack(frames, axis=-3), T @ chain.T_last_tool


def fk(chain: Chain, q, engine: str = "compiled", out: FK | None = None) -> FK:
    """Forward kinematics as lesson 09 uses it: ``(axes, anchors, p)`` in world coordinates.

    ``q: (..., n)`` -> ``axes: (..., n, 3)`` unit joint axes, ``anchors: (..., n, 3)`` a point on each
    axis (m), ``p: (..., 3)`` the tool point (m). ``engine``: ``"compiled"`` or ``"numpy"`` (module docs).
    ``out``: three writeable C-contiguous float64 arrays of those shapes (an :class:`FK` or a tuple), written and
    returned (as an :class:`FK`) instead of new ones.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) at ``q = (0, pi/2)``: both axes are world z, the elbow
    sits at the end of the first link, the tip 0.3 m above it.

    >>> result = physai.fk(physai.load("planar2r"), [0.0, np.pi / 2])
    >>> print(np.round(result.axes, 3))
    [[0. 0. 1.]
     [0. 0. 1.]]
    >>> print(np.round(result.anchors[1], 3), np.round(result.p, 3))
    [0.5 0.  0. ] [0.5 0.3 0. ]
    """
    if out is not None:
        return FK(*_into(chain, q, engine, out, ("axes", "anchors", "p"), fk))
    if engine == "compiled":
        TF = _KERNELS.frames(q, chain.packed)  # the fast path of tool_pose
        if TF is None:
            return FK(*_compiled(chain, q, fk=True))
        T, F = TF
        return FK(F[..., :3], F[..., 3:], T[..., :3, 3])
    _check_engine(engine)
    return _fk_from_frames(chain, *joint_frames(chain, q))


def _fk_from_frames(chain: Chain, T_world_joint: np.ndarray, T_world_tool: np.ndarray) -> FK:
    axes = (T_world_joint[..., :3, :3] @ chain.axis_joint[..., None])[..., 0]
    return FK(axes, T_world_joint[..., :3, 3], T_world_tool[..., :3, 3])


def tool_pose(chain: Chain, q, engine: str = "compiled", out: np.ndarray | None = None) -> np.ndarray:
    """``T_world_tool``: the tool frame's pose in the world, ``q: (..., n)`` -> ``(..., 4, 4)``.

    Rotation block: the tool axes in world coordinates (columns); translation: the tool point (m).
    ``out``: a writeable C-contiguous float64 array of shape ``(..., 4, 4)``, written and returned instead of a new
    one (a batch larger than memory runs in slices of it: module docs).

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) at ``q = (0, pi/2)``: the tool's x axis points along
    world y, its origin at ``(L1, L2, 0)``.

    >>> chain = physai.load("planar2r")
    >>> print(np.round(physai.tool_pose(chain, [0.0, np.pi / 2]), 3))
    [[ 0.  -1.   0.   0.5]
     [ 1.   0.   0.   0.3]
     [ 0.   0.   1.   0. ]
     [ 0.   0.   0.   1. ]]

    A batch ``(2, n)`` gives ``(2, 4, 4)``; ``engine="numpy"`` runs the readable reference:

    >>> T = physai.tool_pose(chain, [[0.0, np.pi / 2], [np.pi / 2, 0.0]], engine="numpy")
    >>> T.shape
    (2, 4, 4)
    >>> print(np.round(T[:, :3, 3], 3))
    [[0.5 0.3 0. ]
     [0.  0.8 0. ]]
    """
    if out is not None:
        return _into(chain, q, engine, (out,), ("",), tool_pose)[0]
    if engine == "compiled":
        # One plain finite float64 vector of the chain's length is served by the one-pose call; it declines
        # (None) anything else (a batch, a list, another dtype or byte order, a NaN, constants edited after
        # construction), which _compiled validates.
        T = _KERNELS.pose(q, chain.packed)
        return T if T is not None else _compiled(chain, q, T=True)[0]
    _check_engine(engine)
    return joint_frames(chain, q)[1]


def hinge_column(axis: np.ndarray, o: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Tool twist per 1 rad/s of one hinge: linear part ``a x (p - o)``, angular part ``a``.

    ``axis: (..., 3)`` unit axis, ``o: (..., 3)`` any point on it, ``p: (..., 3)`` tool point -> ``(..., 6)``.
    """
    axis, o, p = np.broadcast_arrays(axis, o, p)
    return np.concatenate([np.cross(axis, p - o), axis], axis=-1)


def slide_column(axis: np.ndarray) -> np.ndarray:
    """Tool twist per 1 m/s of one slide joint: linear part ``a``, angular part 0. ``(..., 3)`` -> ``(..., 6)``."""
    axis = np.asarray(axis, dtype=float)
    return np.concatenate([axis, np.zeros_like(axis)], axis=-1)


def jacobian(chain: Chain, q, engine: str = "compiled", out: np.ndarray | None = None) -> np.ndarray:
    """Geometric Jacobian of the tool point: ``q: (..., n)`` -> ``(..., 6, n)``.

    Rows 0-2 linear velocity of the tool point (m/s per rad/s of a hinge, or per m/s of a slide), rows 3-5
    angular velocity (rad/s per rad/s), world axes; one column per joint, root first.
    ``engine``: ``"compiled"`` or ``"numpy"`` (module docs). ``out``: a writeable C-contiguous float64 array of
    shape ``(..., 6, n)``, written and returned instead of a new one (a batch larger than memory runs in slices of
    it: module docs).

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m) at ``q = (0, pi/2)``: column ``i`` is
    ``z x (p - anchor_i)`` over ``z``, with the tip at ``p = (0.5, 0.3, 0)``.

    >>> chain = physai.load("planar2r")
    >>> print(np.round(physai.jacobian(chain, [0.0, np.pi / 2]), 3))
    [[-0.3 -0.3]
     [ 0.5  0. ]
     [ 0.   0. ]
     [ 0.   0. ]
     [ 0.   0. ]
     [ 1.   1. ]]
    """
    if out is not None:
        return _into(chain, q, engine, (out,), ("",), jacobian)[0]
    if engine == "compiled":
        J = _KERNELS.jacobian(q, chain.packed)  # the fast path of tool_pose
        return J if J is not None else _compiled(chain, q, J=True)[0]
    _check_engine(engine)
    return jacobian_from_fk(chain, fk(chain, q, engine))


def jacobian_from_fk(chain: Chain, fk_result: FK) -> np.ndarray:
    """Stack one column per joint from FK's world axes, anchors and tool point -> ``(..., 6, n)``."""
    axes, anchors, p = fk_result
    cols = [
        hinge_column(axes[..., i, :], anchors[..., i, :], p) if t == "hinge" else slide_column(axes[..., i, :])
        for i, t in enumerate(chain.joint_types)
    ]
    return np.stack(cols, axis=-1)


def tool_pose_and_jacobian(chain: Chain, q, engine: str = "compiled",
                           out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``T_world_tool`` ``(..., 4, 4)`` and the geometric Jacobian ``(..., 6, n)`` from one walk of the chain.

    This is the pair every solver and controller iteration needs. ``engine``: ``"compiled"`` or ``"numpy"``.
    The same numbers as :func:`tool_pose` and :func:`jacobian` (world frame; Jacobian rows linear, then angular).
    ``out``: a pair of writeable C-contiguous float64 arrays of those shapes, written and returned instead of new
    ones.

    Examples
    --------
    >>> chain = physai.load("so101")
    >>> T_world_tool, J_world = physai.tool_pose_and_jacobian(chain, [0.0, -0.6, 0.9, 0.4, 0.3])
    >>> T_world_tool.shape, J_world.shape
    ((4, 4), (6, 5))
    >>> print(np.round(T_world_tool[:3, 3], 3))
    [0.288 0.003 0.097]
    """
    if out is not None:
        return _into(chain, q, engine, out, ("[0]", "[1]"), tool_pose_and_jacobian)
    if engine == "compiled":
        TJ = _KERNELS.pose_jacobian(q, chain.packed)  # the fast path of tool_pose
        return TJ if TJ is not None else _compiled(chain, q, T=True, J=True)
    _check_engine(engine)
    T_world_joint, T_world_tool = joint_frames(chain, q)
    return T_world_tool, jacobian_from_fk(chain, _fk_from_frames(chain, T_world_joint, T_world_tool))


def jacobian_chunks(chain: Chain, q, chunk: int = 65_536,
                    progress: bool | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Jacobians of a batch too large to hold at once, a chunk at a time: yields ``(start, J_world)``.

    ``q``: ``(B, n)`` joint positions (an array or a memory map, read a chunk at a time), or an iterable of
    ``(b, n)`` arrays (made as they are asked for). Each ``J_world (b, 6, n)`` holds the Jacobians of rows
    ``start .. start + b`` (world axes, linear rows then angular, as :func:`jacobian`), in order, at most ``chunk``
    rows each. ``J_world`` is a view of one buffer that the next chunk overwrites: reduce it or copy what you keep.
    Memory: that buffer (``chunk * 48 n`` bytes: 22 MB for 7 joints at the default) and one chunk of ``q``. To keep
    every Jacobian instead, write them into an array of your own (a memory map for more than fits in memory) with
    ``jacobian(chain, q[lo:hi], out=J[lo:hi])``, which is what this does into its buffer.
    ``progress``: a progress bar on stderr (with ``rich``): True always, False never, None (the default) once the
    run has taken 2 s, on a terminal.

    Examples
    --------
    The most manipulable of 5 poses of the planar 2R arm, in chunks of 2:

    >>> chain = physai.load("planar2r")
    >>> Q = np.array([[0.0, a] for a in np.linspace(0.2, 3.0, 5)])
    >>> best = 0.0
    >>> for start, J in physai.kinematics.jacobian_chunks(chain, Q, chunk=2):
    ...     best = max(best, np.abs(np.linalg.det(J[:, :2, :])).max())
    >>> print(round(best, 3))  # L1 L2 |sin q2|, largest at q2 = 1.6 rad
    0.15
    """
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise InputError(f"chunk: expected a positive number of rows, got {chunk!r}")
    total = len(q) if hasattr(q, "shape") else None
    chunks = (q[lo:lo + chunk] for lo in range(0, total, chunk)) if total is not None else iter(q)
    buffer = np.empty((int(chunk), 6, chain.n))
    bar, began, start = None, time.monotonic(), 0
    try:
        for part in chunks:
            part = chain.check_q(part, "q")
            if part.ndim != 2:
                raise InputError(f"q: expected chunks of shape (b, {chain.n}), got {part.shape}")
            for lo in range(0, len(part), chunk):  # an iterable's chunk larger than the buffer: in pieces
                rows = part[lo:lo + chunk]
                yield start, jacobian(chain, rows, out=buffer[:len(rows)])
                start += len(rows)
                if bar is None and _show_progress(progress, time.monotonic() - began):
                    bar = _progress_bar(total)
                if bar is not None:
                    bar[0].update(bar[1], completed=start)
    finally:
        if bar is not None:
            bar[0].stop()


def _show_progress(progress: bool | None, elapsed: float) -> bool:
    if progress is None:
        return elapsed >= 2.0 and sys.stderr.isatty()
    return bool(progress)


def _progress_bar(total: int | None):
    """A started ``rich`` progress bar on stderr and its task, or None where ``rich`` is not installed."""
    try:
        from rich.console import Console
        from rich.progress import Progress
    except ImportError:
        return None
    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task("Jacobians", total=total)
    bar.start()
    return bar, task


def pose_and_jacobian_trusted(chain: Chain, q: np.ndarray, engine: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tool_pose_and_jacobian` of checked ``q: (..., n)`` and ``engine``: the solvers' per-iteration call,
    which trusts what their public entry checked once."""
    if engine == "compiled":
        return _walk(chain, q, T=True, J=True)
    T_world_joint, T_world_tool = _frames(chain, q)
    return T_world_tool, jacobian_from_fk(chain, _fk_from_frames(chain, T_world_joint, T_world_tool))


def _check_engine(engine) -> None:
    one_of(engine, "engine", ENGINES)


# ---- the compiled engine ------------------------------------------------------------------------


_KERNELS = _engine.kernels  # loads the kernels on first use
# Rows per thread below which a batch runs on one thread: starting threads costs what a thousand or so poses do
# (two threads broke even at about 2,000 Panda poses on a loaded 2-core machine, and won by a quarter at 4,000).
THREAD_MIN_ROWS = 2048
_NOT_WANTED = {3: np.empty((0, 0, 0)), 2: np.empty((0, 0))}  # an output the batch kernel leaves out


def _compiled(chain: Chain, q, **wanted) -> tuple[np.ndarray, ...]:
    """:func:`_walk` of validated ``q``: invalid ``q`` raises :meth:`Chain.check_q`'s error, constants edited after
    construction :meth:`Chain.check_engine_arrays`'."""
    chain.check_engine_arrays(("packed",))
    return _walk(chain, chain.check_q(q), **wanted)


def _walk(chain: Chain, q: np.ndarray, T=None, J=None, fk=None) -> tuple[np.ndarray, ...]:
    """The batch kernel on checked ``q (..., n)`` and chain arrays: the wanted outputs, in the order ``T (..., 4, 4)``,
    ``J (..., 6, n)``, then FK's ``axes (..., n, 3)``, ``anchors (..., n, 3)``, ``p (..., 3)``. Each of ``T``, ``J``
    is None (not wanted), True (a new array) or a checked array to write; ``fk`` likewise, its arrays a triple.
    Batches of at least :data:`THREAD_MIN_ROWS` rows per core are shared among threads (the kernel releases the GIL).
    """
    n, lead = chain.n, q.shape[:-1]
    B = int(np.prod(lead))
    shapes = ((4, 4), (6, n), (n, 3), (n, 3), (3,))
    given = (T, J, *(fk if isinstance(fk, tuple) else (fk,) * 3))
    outs = [np.empty(lead + shape) if g is True else g for g, shape in zip(given, shapes)]
    flat = [_NOT_WANTED[len(shape) + 1] if o is None else o.reshape((B,) + shape) for o, shape in zip(outs, shapes)]
    Q, P, kernel = q.reshape(B, n), chain.packed, _KERNELS.batch

    def rows(lo: int, hi: int) -> None:
        kernel(Q[lo:hi], P, *(a[lo:hi] for a in flat))

    in_threads(rows, B, per_thread=4, min_rows=THREAD_MIN_ROWS)
    return tuple(o for o in outs if o is not None)


def _into(chain: Chain, q, engine: str, out, names: tuple[str, ...], f: Callable) -> tuple[np.ndarray, ...]:
    """``f(chain, q, engine)`` written into the caller's arrays ``out`` (checked once: each a writeable, aligned,
    C-contiguous float64 array of the shape ``f`` returns, sharing no memory with ``q`` or another of them)."""
    _check_engine(engine)
    q = chain.check_q(q)
    n, lead = chain.n, q.shape[:-1]
    shapes = {tool_pose: ((4, 4),), jacobian: ((6, n),), tool_pose_and_jacobian: ((4, 4), (6, n)),
              fk: ((n, 3), (n, 3), (3,))}[f]
    if not isinstance(out, tuple) or len(out) != len(shapes):
        raise InputError(f"out: expected {len(shapes)} arrays, got {type(out).__name__}")
    for k, (a, shape, name) in enumerate(zip(out, shapes, names)):
        check_out(a, lead + shape, "out" + (f".{name}" if name.isidentifier() else name), (q, *out[:k]))
    if engine == "numpy":
        result = f(chain, q, engine="numpy")
        for a, r in zip(out, result if isinstance(result, tuple) else (result,)):
            np.copyto(a, r)
        return out
    chain.check_engine_arrays(("packed",))
    if f is fk:
        return _walk(chain, q, fk=out)
    return _walk(chain, q, T=out[0] if f is not jacobian else None, J=out[-1] if f is not tool_pose else None)


def check_out(a, shape: tuple[int, ...], name: str, others: tuple[np.ndarray, ...]) -> None:
    """Raise one :class:`InputError` naming ``name`` unless ``a`` can take a result of ``shape``: a writeable, aligned,
    C-contiguous float64 array that shares no memory with ``others`` (the inputs and the other outputs)."""
    if not isinstance(a, np.ndarray) or isinstance(a, np.ma.MaskedArray):
        raise InputError(f"{name}: expected a NumPy float64 array of shape {shape}, got {type(a).__name__}")
    flags = a.flags
    why = ("" if a.dtype == np.float64 else f"dtype {a.dtype}") or \
          ("" if a.shape == shape else f"shape {a.shape}") or \
          ("" if flags.c_contiguous else "an array that is not C-contiguous (a strided view?)") or \
          ("" if flags.writeable else "a read-only array") or \
          ("" if flags.aligned else "an unaligned array") or \
          ("" if not any(np.may_share_memory(a, o) for o in others) else "an array that overlaps q or another output")
    if why:
        raise InputError(f"{name}: expected a writeable, C-contiguous float64 array of shape {shape}, got {why}")


def fd_jacobian(tool_pos: Callable[[np.ndarray], np.ndarray], q, eps: float = 1e-5) -> np.ndarray:
    """Jacobian of any function ``q -> x`` by central differences: ``q: (n,)`` -> ``(m, n)``.

    Column ``i`` is ``(x(q + eps e_i) - x(q - eps e_i)) / (2 eps)``, error ``O(eps^2)`` plus round-off
    ``~ eps_mach |x| / eps``; the best step is near ``cbrt(eps_mach) ~ 6e-6``.

    Examples
    --------
    The planar 2R arm's tip position ``(x, y)`` differentiated numerically agrees with the linear rows of
    :func:`jacobian`:

    >>> chain = physai.load("planar2r")
    >>> J_xy = physai.fd_jacobian(lambda q: physai.tool_pose(chain, q)[:2, 3], [0.0, np.pi / 2])
    >>> print(np.round(J_xy, 3))
    [[-0.3 -0.3]
     [ 0.5  0. ]]
    """
    q = finite_array(q, "q")
    if q.ndim != 1:
        raise InputError(f"q: expected shape (n,), got {q.shape}")
    if not (np.isfinite(eps) and eps > 0):
        raise InputError(f"eps: expected a positive step, got {eps}")
    cols = []
    for i in range(len(q)):
        dq = np.zeros(len(q))
        dq[i] = eps
        cols.append((np.asarray(tool_pos(q + dq)) - np.asarray(tool_pos(q - dq))) / (2 * eps))
    return np.stack(cols, axis=-1)
