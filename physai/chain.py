"""The immutable serial chain and its builders (lesson 08): the data every kinematics function reads.

A :class:`Chain` is built once, from body specs (:func:`chain_from_bodies`) or a compiled MuJoCo model
(:func:`chain_from_mujoco`, which imports MuJoCo only when called). Its arrays are read-only for good:
they live in immutable memory, so no later code can edit a chain behind the back of a result computed
from it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from physai import transforms as tf
from physai._validate import finite_array
from physai.errors import InputError, UnknownNameError, UnsupportedJointError

JOINT_TYPES = ("hinge", "slide")


def frozen_array(a, dtype=np.float64) -> np.ndarray:
    """``a`` as ``dtype`` in immutable memory: numpy refuses ``flags.writeable = True`` on a view of ``bytes``."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return np.frombuffer(a.tobytes(), dtype=dtype).reshape(a.shape)


# Packed layout for the compiled engine, one row per joint: T_prev_joint rotation (9, row-major), T_prev_joint
# translation (3), unit axis in the joint frame (3), q_ref (1), 1.0 for a hinge / 0.0 for a slide (1); then one
# final row holding T_last_tool rotation (9) and translation (3) in the same columns, and -n in the last column: the
# one-pose walk (_walk.c) serves only constants whose row count agrees with it, so an array cut short or padded
# after construction never reaches it.
PACKED_ROW = 17
# The most joints a chain may have: far beyond any arm, and small enough that the compiled engine's joint counts and
# offsets cannot overflow (physai/_walk.c refuses a larger count too).
MAX_JOINTS = 1 << 16


_F8 = np.dtype(np.float64)
# The arrays the compiled kernels read (Chain.check_engine_arrays): packed (n + 1, 17), sample_range (2, n), the
# others (n,).
ENGINE_ARRAYS = ("packed", "lower", "upper", "q_middle", "sample_range")


def _pack(chain: Chain) -> np.ndarray:
    """The chain's constants as one immutable ``(n + 1, 17)`` float64 array (layout above)."""
    P = np.zeros((chain.n + 1, PACKED_ROW))
    P[:-1, 0:9] = chain.T_prev_joint[:, :3, :3].reshape(chain.n, 9)
    P[:-1, 9:12] = chain.T_prev_joint[:, :3, 3]
    P[:-1, 12:15] = chain.axis_joint
    P[:-1, 15] = chain.q_ref
    P[:-1, 16] = [t == "hinge" for t in chain.joint_types]
    P[-1, 0:9] = chain.T_last_tool[:3, :3].reshape(9)
    P[-1, 9:12] = chain.T_last_tool[:3, 3]
    P[-1, 16] = -chain.n
    return frozen_array(P)


def middle_of_limits(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The middle of each joint's range ``(n,)`` (0 clipped into the range for a joint with an open side):
    the first start of every IK solve without ``q0`` (``chain.q_middle``)."""
    both = np.isfinite(lower) & np.isfinite(upper)
    return np.where(both, 0.5 * (np.where(both, lower, 0) + np.where(both, upper, 0)), np.clip(0.0, lower, upper))


def reach_bound(chain: Chain) -> float:
    """An upper bound (m) on the distance from the first joint's anchor to the tool point over all ``q``
    (``chain.reach``).

    Consecutive joint anchors are rigidly linked (a hinge moves everything after it rigidly), so the
    distance is at most the sum of the anchor-to-anchor offsets and the last offset to the tool, plus
    the travel of any slide joint. A position farther than this is provably unreachable.
    """
    links = np.linalg.norm(chain.T_prev_joint[1:, :3, 3], axis=-1).sum() + np.linalg.norm(chain.T_last_tool[:3, 3])
    slides = [i for i, t in enumerate(chain.joint_types) if t == "slide"]
    # A slide moves by q - q_ref, and q_ref may lie outside [lower, upper]: the farthest travel is to either end.
    return float(links + sum(max(abs(chain.upper[i] - chain.q_ref[i]), abs(chain.lower[i] - chain.q_ref[i]))
                             for i in slides))



_SUM_CHECK_SIZE = 4096  # from this many entries a sum, which allocates nothing, beats np.isfinite's boolean array


def _all_finite(q: np.ndarray) -> bool:
    """Whether every entry of ``q`` is finite. A large ``q`` is summed: a NaN or an infinity never sums to a finite
    number, and a sum that overflows only sends ``q`` to the full check."""
    if q.size < _SUM_CHECK_SIZE:
        return bool(np.isfinite(q).all())
    with np.errstate(over="ignore", invalid="ignore"):
        return math.isfinite(q.sum())

@dataclass(frozen=True, eq=False)
class Chain:
    """An immutable serial chain from the world to one tool frame.

    Joint ``i`` has its own frame ``J_i`` whose origin lies on the joint axis (the anchor).
    ``T_prev_joint[i]`` places ``J_i`` in the previous joint's frame (the world for ``i = 0``) when
    ``q = q_ref``; the joint then rotates (hinge) about, or translates (slide) along,
    ``axis_joint[i]`` by ``q[i] - q_ref[i]``. ``T_last_tool`` places the tool in the last joint frame.

    Shapes, with ``n`` joints, root first: ``T_prev_joint (n, 4, 4)``, ``axis_joint (n, 3)`` (unit, in ``J_i``),
    ``q_ref``, ``lower``, ``upper`` ``(n,)`` (rad for hinges, m for slides; ``-inf``/``inf`` where unlimited),
    ``T_last_tool (4, 4)``; translations in m. ``q_middle (n,)`` is the middle of the limits (the default IK
    start) and ``reach`` (m) an upper bound on the distance from the first anchor to the tool point.

    Examples
    --------
    >>> chain = physai.load("so101")
    >>> chain.n, chain.tool_name
    (5, 'gripperframe')
    >>> chain.joint_names[:2]
    ('shoulder_pan', 'shoulder_lift')
    >>> print(np.round(chain.upper, 3))
    [1.92  1.745 1.69  1.658 2.744]

    Its arrays cannot be written, so nothing computed from a chain can go stale:

    >>> chain.lower.flags.writeable
    False
    """

    name: str
    joint_names: tuple[str, ...]
    joint_types: tuple[str, ...]
    T_prev_joint: np.ndarray  # (n, 4, 4)
    axis_joint: np.ndarray  # (n, 3), unit
    q_ref: np.ndarray  # (n,)
    T_last_tool: np.ndarray  # (4, 4)
    lower: np.ndarray  # (n,) joint limits; -inf/inf where unlimited
    upper: np.ndarray  # (n,)
    tool_name: str = "tool"
    source: str = ""
    # Addresses of the chain's joints in the MuJoCo model it came from (None for built-ins).
    qpos_adr: tuple[int, ...] | None = field(default=None, repr=False)
    dof_adr: tuple[int, ...] | None = field(default=None, repr=False)
    # The constants packed once for the compiled engine (a chain cannot change, so neither can this).
    packed: np.ndarray = field(init=False, repr=False)
    n: int = field(init=False, repr=False)  # number of joints (columns of the Jacobian)
    # Two numbers every IK solve needs, computed once with the chain (see middle_of_limits and reach_bound).
    q_middle: np.ndarray = field(init=False, repr=False)
    reach: float = field(init=False, repr=False)
    # random_q's ranges (2, n): the limits, with -pi or pi where a side is open
    sample_range: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        n = len(self.joint_names)
        if n > MAX_JOINTS:
            raise InputError(f"Chain {self.name!r}: {n} joints, more than the {MAX_JOINTS} a chain may have")
        object.__setattr__(self, "n", n)  # a field, not a property: read on every one-pose call
        for attr in ("T_prev_joint", "axis_joint", "q_ref", "T_last_tool", "lower", "upper"):
            object.__setattr__(self, attr, frozen_array(getattr(self, attr)))
        shapes = {
            "joint_types": (len(self.joint_types),),
            "T_prev_joint": self.T_prev_joint.shape,
            "axis_joint": self.axis_joint.shape,
            "q_ref": self.q_ref.shape,
            "lower": self.lower.shape,
            "upper": self.upper.shape,
        }
        expected = {"joint_types": (n,), "T_prev_joint": (n, 4, 4), "axis_joint": (n, 3),
                    "q_ref": (n,), "lower": (n,), "upper": (n,)}
        for key, shape in shapes.items():
            if shape != expected[key]:
                raise InputError(f"Chain {self.name!r}: {key} has shape {shape}, expected {expected[key]}")
        if n == 0:
            raise InputError(f"Chain {self.name!r}: no joints between the world and {self.tool_name!r}")
        for jname, jtype in zip(self.joint_names, self.joint_types):
            if jtype not in JOINT_TYPES:
                raise UnsupportedJointError(
                    f"Chain {self.name!r}: joint {jname!r} has type {jtype!r}; physai chains support {', '.join(JOINT_TYPES)}"
                )
        # MuJoCo compiles a model with NaN in it after a warning; refuse it here, naming the joint
        for attr, values in (("T_prev_joint", self.T_prev_joint), ("axis_joint", self.axis_joint),
                             ("q_ref", self.q_ref)):
            bad = ~np.isfinite(values.reshape(n, -1)).all(axis=1)
            if np.any(bad):
                raise InputError(f"Chain {self.name!r}: {attr} of joint {self.joint_names[int(np.argmax(bad))]!r} "
                                 "is not finite (NaN or inf in the model?)")
        if not np.all(np.isfinite(self.T_last_tool)):
            raise InputError(f"Chain {self.name!r}: T_last_tool of {self.tool_name!r} is not finite (NaN or inf in the model?)")
        norms = np.linalg.norm(self.axis_joint, axis=1)
        if not np.allclose(norms, 1.0, atol=1e-12):
            j = int(np.argmax(np.abs(norms - 1.0)))
            raise InputError(f"Chain {self.name!r}: joint {self.joint_names[j]!r} axis must be a unit vector, norm {norms[j]}")
        bad = np.isnan(self.lower) | np.isnan(self.upper) | (self.lower > self.upper)
        if np.any(bad):
            j = int(np.argmax(bad))
            raise InputError(f"Chain {self.name!r}: joint {self.joint_names[j]!r} limits [{self.lower[j]}, "
                             f"{self.upper[j]}] are not an interval")
        object.__setattr__(self, "packed", _pack(self))
        object.__setattr__(self, "q_middle", frozen_array(middle_of_limits(self.lower, self.upper)))
        object.__setattr__(self, "reach", reach_bound(self))
        object.__setattr__(self, "sample_range", frozen_array([np.where(np.isfinite(self.lower), self.lower, -np.pi),
                                                           np.where(np.isfinite(self.upper), self.upper, np.pi)]))

    def __reduce__(self):
        """Pickle and copy (``copy.copy``, ``copy.deepcopy``) rebuild the chain through its constructor from the
        fields it was built from, so the copy's arrays are read-only again and everything derived (``packed``, the
        limits' middle) is recomputed, never taken from the stream."""
        return type(self), tuple(getattr(self, f.name) for f in fields(self) if f.init)

    def check_engine_arrays(self, names: tuple[str, ...] = ENGINE_ARRAYS) -> None:
        """Refuse a chain whose arrays ``names`` (by default every one a compiled kernel reads) no longer have the
        dtype, shape and layout its constructor gave them.

        The arrays are read-only, but NumPy still lets ``a.shape`` or ``a.dtype`` be set on one, and
        ``object.__setattr__`` replaces a field of any frozen dataclass; the kernels trust the layout (and would read
        past an array), so every compiled entry calls this once. Raises :class:`InputError` naming the field.
        """
        n = len(self.joint_names)
        for name in names:
            a = getattr(self, name)
            shape = (n + 1, PACKED_ROW) if name == "packed" else (2, n) if name == "sample_range" else (n,)
            if type(a) is not np.ndarray or a.dtype is not _F8 or a.shape != shape or not a.flags.c_contiguous:
                got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
                raise InputError(f"Chain {self.name!r}: {name} is {got}, not the C-contiguous float64 {shape} its "
                                 "constructor made (edited after construction?); build the chain again")
        if self.n != n:
            raise InputError(f"Chain {self.name!r}: n is {self.n!r}, not its {n} joints (edited after construction?)")

    def joint_index(self, name: str) -> int:
        """Index of a joint by name; unknown names list the valid ones."""
        if name not in self.joint_names:
            raise UnknownNameError("joint", name, self.joint_names)
        return self.joint_names.index(name)

    def check_q(self, q, name: str = "q", within_limits: bool = False) -> np.ndarray:
        """Validate joint positions: float64 array of shape ``(..., n)`` with finite entries.

        Positions outside the joint limits are valid for FK and Jacobians (the arm can be driven
        there); ``within_limits=True`` refuses them, as a solver's start must not lie outside.
        """
        # the usual case costs these tests; anything else the full check
        if not (type(q) is np.ndarray and q.dtype == np.float64 and q.shape[-1:] == (self.n,) and _all_finite(q)):
            q = finite_array(q, name, (self.n,), f" for chain {self.name!r} with joints {list(self.joint_names)}")
        if within_limits:
            outside = (q < self.lower) | (q > self.upper)
            if outside.any():
                idx = tuple(int(i) for i in np.argwhere(outside)[0])
                j = idx[-1]
                raise InputError(
                    f"{name}: joint {self.joint_names[j]!r} = {q[idx]:.6g} is outside its limits "
                    f"[{self.lower[j]:.6g}, {self.upper[j]:.6g}] (entry {idx})"
                )
        return q

    def random_q(self, rng: np.random.Generator, size=(), inset: float = 0.0, *, margin: float | None = None
                 ) -> np.ndarray:
        """Uniform joint positions inside the limits, each side moved in by ``inset`` (rad or m; unlimited joints use
        [-pi, pi]). ``margin`` is the previous release's name of ``inset`` (deprecated: "margin" is a clearance).

        ``rng`` is a seeded ``numpy.random.Generator``; ``size`` is the batch shape -> ``(*size, n)``.
        """
        if margin is not None:
            import warnings

            warnings.warn("Chain.random_q(margin=) is deprecated: pass inset=", DeprecationWarning, stacklevel=2)
            inset = margin
        low, high = self.sample_range
        if inset != 0:  # a solver's restarts (inset 0) skip this check: they are drawn on every call
            if not (np.isfinite(inset) and 0 <= inset <= np.min(high - low) / 2):
                # numpy's uniform(lo, hi) with lo > hi draws outside the limits instead of refusing
                narrowest = self.joint_names[int(np.argmin(high - low))]
                raise InputError(f"inset: expected 0 <= inset <= half the narrowest joint range "
                                 f"(joint {narrowest!r}), got {inset}")
            low, high = low + inset, high - inset
        size = (size,) if np.isscalar(size) else tuple(size)
        # Bit for bit rng.uniform(low, high, size) (numpy computes low + (high - low) * next_double too), without
        # its slow per-element broadcasting of array bounds.
        return low + (high - low) * rng.random(size + (self.n,))


# ---- building chains ---------------------------------------------------------------------------


@dataclass(frozen=True)
class JointSpec:
    """A joint as a MuJoCo body declares it: ``axis`` and anchor ``pos`` (m) in the body frame.

    ``type`` is ``"hinge"`` or ``"slide"``; ``range`` the limits ``(lower, upper)`` (rad or m, default unlimited);
    ``ref`` the position at which the body sits at its declared pose (MuJoCo's ``qpos0``).

    Examples
    --------
    An elbow hinge about the body's z axis, limited to +-2.5 rad:

    >>> elbow = physai.JointSpec("elbow", "hinge", axis=(0, 0, 1), range=(-2.5, 2.5))
    >>> elbow.pos, elbow.ref
    ((0.0, 0.0, 0.0), 0.0)
    """

    name: str
    type: str
    axis: Sequence[float]
    pos: Sequence[float] = (0.0, 0.0, 0.0)
    range: tuple[float, float] = (-np.inf, np.inf)
    ref: float = 0.0


@dataclass(frozen=True)
class BodySpec:
    """A body placed in its parent by ``pos`` (m) and a unit ``(w, x, y, z)`` ``quat``, with its joints.

    Examples
    --------
    The planar 2R arm's second link, 0.5 m along the first link's x axis, with its elbow hinge:

    >>> link2 = physai.BodySpec("link2", pos=(0.5, 0, 0),
    ...                         joints=(physai.JointSpec("elbow", "hinge", axis=(0, 0, 1)),))
    >>> link2.quat
    (1.0, 0.0, 0.0, 0.0)
    """

    name: str
    pos: Sequence[float]
    quat: Sequence[float] = (1.0, 0.0, 0.0, 0.0)
    joints: tuple[JointSpec, ...] = ()


def chain_from_bodies(
    name: str,
    bodies: Sequence[BodySpec],
    tool_pos: Sequence[float],
    tool_quat: Sequence[float] = (1.0, 0.0, 0.0, 0.0),
    tool_name: str = "tool",
    source: str = "",
    **mujoco_addresses,
) -> Chain:
    """Build a :class:`Chain` from the bodies on the path world -> tool body (root first).

    This is MuJoCo's body-tree rule: a body sits at ``pos, quat`` in its parent; each joint rotates
    the body about ``axis`` through the anchor ``pos`` (hinge) or translates it along ``axis`` (slide).
    ``tool_pos`` (m) and ``tool_quat`` ``(w, x, y, z)`` place the tool frame in the last body.

    Examples
    --------
    The planar 2R arm (``L1 = 0.5``, ``L2 = 0.3`` m, hinges about z), its tool at the end of the second link:

    >>> z = (0, 0, 1)
    >>> bodies = [physai.BodySpec("link1", (0, 0, 0), joints=(physai.JointSpec("shoulder", "hinge", z),)),
    ...           physai.BodySpec("link2", (0.5, 0, 0), joints=(physai.JointSpec("elbow", "hinge", z),))]
    >>> chain = physai.chain_from_bodies("2r", bodies, tool_pos=(0.3, 0, 0))
    >>> chain.joint_names, chain.reach
    (('shoulder', 'elbow'), 0.8)
    >>> print(np.round(physai.tool_pose(chain, [0.0, np.pi / 2])[:3, 3], 3))
    [0.5 0.3 0. ]
    """
    T_acc = np.eye(4)  # fixed transform accumulated since the previous joint frame
    names, types, T_prev, axes, refs, lower, upper = [], [], [], [], [], [], []
    for body in bodies:
        T_acc = T_acc @ tf.make_transform(tf.quat_to_matrix(body.quat), body.pos)
        for j in body.joints:
            if j.type not in JOINT_TYPES:
                raise UnsupportedJointError(
                    f"joint {j.name!r} in body {body.name!r} has type {j.type!r}; physai chains support "
                    f"{', '.join(JOINT_TYPES)} (choose the chain's joints with joints=[...] to freeze it)"
                )
            anchor = np.asarray(j.pos, dtype=float)
            axis = np.asarray(j.axis, dtype=float)
            T_prev.append(T_acc @ tf.translation(anchor))
            T_acc = tf.translation(-anchor)
            names.append(j.name)
            types.append(j.type)
            axes.append(axis / np.linalg.norm(axis))
            refs.append(j.ref)
            lower.append(j.range[0])
            upper.append(j.range[1])
    T_acc = T_acc @ tf.make_transform(tf.quat_to_matrix(tool_quat), tool_pos)
    return Chain(
        name=name,
        joint_names=tuple(names),
        joint_types=tuple(types),
        T_prev_joint=np.array(T_prev).reshape(-1, 4, 4),
        axis_joint=np.array(axes).reshape(-1, 3),
        q_ref=np.array(refs, dtype=float),
        T_last_tool=T_acc,
        lower=np.array(lower, dtype=float),
        upper=np.array(upper, dtype=float),
        tool_name=tool_name,
        source=source,
        **mujoco_addresses,
    )


def chain_from_mujoco(m, site_name: str, joints: Sequence[str] | None = None, name: str | None = None,
                      tool_offset=None) -> Chain:
    """The serial chain from the world to the tool frame ``site_name`` of a compiled ``mujoco.MjModel``.

    The tool frame is a site, or else a body (a URDF link): the body's own frame, as ``xpos``/``xmat``.
    ``tool_offset`` (a ``(4, 4)`` transform or an ``(3,)`` xyz offset, m, in the tool frame) is composed on top.

    ``joints`` names the chain's joints, root to tip; by default every joint on the path from the root
    to the site's body. Joints on the path that are not chosen are frozen at their reference position
    (``qpos0``). Hinge and slide joints are supported; a ball or free joint on the path (a floating
    base) must be left out through ``joints`` (it is then frozen at ``qpos0``), else
    :class:`UnsupportedJointError` names it. Joints elsewhere in the model do not matter: the chain
    keeps each joint's ``qpos`` and ``dof`` addresses, which differ once a model has ``nq != nv``.

    Examples
    --------
    The planar 2R arm written as MJCF (``L1 = 0.5``, ``L2 = 0.3`` m), its tool the site ``tip``:

    >>> import mujoco
    >>> m = mujoco.MjModel.from_xml_string('''
    ... <mujoco><compiler angle="radian"/><worldbody>
    ...   <body name="link1"><joint name="shoulder" axis="0 0 1"/><geom size="0.02"/>
    ...     <body name="link2" pos="0.5 0 0"><joint name="elbow" axis="0 0 1" range="-2.5 2.5"/>
    ...       <geom size="0.02"/><site name="tip" pos="0.3 0 0"/></body></body>
    ... </worldbody></mujoco>''')
    >>> chain = physai.chain_from_mujoco(m, "tip", name="2r")
    >>> chain.joint_names, chain.qpos_adr
    (('shoulder', 'elbow'), (0, 1))
    >>> print(chain.upper)
    [inf 2.5]
    >>> print(np.round(physai.tool_pose(chain, [0.0, np.pi / 2])[:3, 3], 3))
    [0.5 0.3 0. ]
    """
    tool_body, tool_pos, tool_quat = _tool_frame(m, site_name)
    path = []
    b = tool_body
    while b != 0:
        path.append(b)
        b = int(m.body_parentid[b])
    path.reverse()
    types = _joint_type_names(m)
    on_path = [j for bid in path for j in range(m.njnt) if m.jnt_bodyid[j] == bid]
    chosen = _chosen_joints(m, site_name, joints, on_path, types)
    bodies, qpos_adr, dof_adr = [], [], []
    for bid in path:
        specs = []
        for j in (j for j in on_path if m.jnt_bodyid[j] == bid):
            if m.joint(j).name not in chosen:
                # MuJoCo moves a body by qpos - qpos0 (hinge, slide), by the quaternion qpos (ball, identity
                # at qpos0) or to the pose qpos (free, top-level bodies only, body_pos/quat at qpos0): frozen
                # at qpos0, every type leaves the body at body_pos/body_quat.
                continue
            rng = tuple(m.jnt_range[j]) if m.jnt_limited[j] else (-np.inf, np.inf)
            specs.append(JointSpec(m.joint(j).name, types[j], tuple(m.jnt_axis[j]), tuple(m.jnt_pos[j]), rng,
                                   float(m.qpos0[m.jnt_qposadr[j]])))
            qpos_adr.append(int(m.jnt_qposadr[j]))
            dof_adr.append(int(m.jnt_dofadr[j]))
        bodies.append(BodySpec(m.body(bid).name, np.array(m.body_pos[bid]), np.array(m.body_quat[bid]), tuple(specs)))
    model_name = name or (m.names[: m.names.index(b"\0")].decode() if m.names else "mujoco")
    T_body_tool = tf.make_transform(tf.quat_to_matrix(tool_quat), tool_pos) @ _offset(tool_offset)
    return chain_from_bodies(model_name, bodies, T_body_tool[:3, 3], tf.matrix_to_quat(T_body_tool[:3, :3]),
                             tool_name=site_name, source="mujoco model", qpos_adr=tuple(qpos_adr),
                             dof_adr=tuple(dof_adr))


def _joint_type_names(m) -> list[str]:
    """Each joint's type as a name: hinge, slide, ball or free."""
    import mujoco

    J = mujoco.mjtJoint
    names = {J.mjJNT_HINGE: "hinge", J.mjJNT_SLIDE: "slide", J.mjJNT_BALL: "ball", J.mjJNT_FREE: "free"}
    return [names[int(t)] for t in m.jnt_type]


def _chosen_joints(m, site_name: str, joints, on_path: list[int], types: list[str]) -> set[str]:
    """The names of the chain's joints: ``joints`` checked against the path (given once, root to tip), or
    every joint on the path, which must then all be hinges or slides."""
    path_names = [m.joint(j).name for j in on_path]
    if joints is None:
        for j in on_path:
            if types[j] in ("ball", "free"):
                movable = [m.joint(k).name for k in on_path if types[k] in JOINT_TYPES]
                raise UnsupportedJointError(
                    f"joint {m.joint(j).name!r} ({types[j]}) on the path to site {site_name!r}: physai chains "
                    f"support {', '.join(JOINT_TYPES)}; pass joints={movable} to freeze it at qpos0"
                )
        return set(path_names)
    if isinstance(joints, str):
        raise InputError(f"joints: expected a sequence of joint names, got the string {joints!r}")
    joints = list(joints)
    all_names = [m.joint(j).name for j in range(m.njnt)]
    for jn in joints:
        if jn not in all_names:
            raise UnknownNameError("joint", jn, all_names)
        if jn not in path_names:
            raise InputError(
                f"joints: {jn!r} is not on the path from the world to site {site_name!r} (joints on that path: {path_names})"
            )
    in_path_order = [jn for jn in path_names if jn in joints]
    if joints != in_path_order:
        # a silently reordered chain would put every Jacobian column on the wrong joint
        raise InputError(f"joints: give each joint once, root to tip: {in_path_order}, got {joints}")
    return set(joints)


def _tool_frame(m, name: str) -> tuple[int, np.ndarray, np.ndarray]:
    """``(body id, pos, quat)`` of the tool frame ``name`` in its body: a site first, else a body's own frame."""
    site_names = [m.site(i).name for i in range(m.nsite)]
    if name in site_names:
        site_id = site_names.index(name)
        return (int(m.site_bodyid[site_id]), *_site_in_body(m, site_id))
    body_names = [m.body(i).name for i in range(1, m.nbody)]
    if name in body_names:
        return body_names.index(name) + 1, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    raise UnknownNameError("tool frame (site or body)", name, site_names + body_names)


def _offset(tool_offset) -> np.ndarray:
    """``tool_offset`` as a ``(4, 4)`` transform: ``None`` -> identity, ``(3,)`` -> a translation."""
    if tool_offset is None:
        return np.eye(4)
    a = finite_array(tool_offset, "tool_offset")
    if a.shape == (3,):
        return tf.translation(a)
    if a.shape != (4, 4):
        raise InputError(f"tool_offset: expected shape (3,) or (4, 4), got {a.shape}")
    return tf.check_transform(a, "tool_offset")


def _site_in_body(m, site_id: int) -> tuple[np.ndarray, np.ndarray]:
    """The site's ``(pos, quat)`` in its body as MuJoCo's kinematics place it.

    The compiler marks a site whose offset from the body (or inertial) frame is below ~1e-6 as the
    same frame (``site_sameframe``) and then ignores the written offset; doing the same keeps the
    chain equal to ``site_xpos``/``site_xmat`` to round-off instead of to 1e-6.
    """
    import mujoco

    SF = mujoco.mjtSameFrame
    ident = np.array([1.0, 0.0, 0.0, 0.0])
    body = int(m.site_bodyid[site_id])
    pos, quat = np.array(m.site_pos[site_id]), np.array(m.site_quat[site_id])
    sameframe = int(m.site_sameframe[site_id])
    if sameframe == SF.mjSAMEFRAME_INERTIA:
        return np.array(m.body_ipos[body]), np.array(m.body_iquat[body])
    if sameframe == SF.mjSAMEFRAME_INERTIAROT:
        return pos, np.array(m.body_iquat[body])
    if sameframe == SF.mjSAMEFRAME_BODY:
        return np.zeros(3), ident
    if sameframe == SF.mjSAMEFRAME_BODYROT:
        return pos, ident
    return pos, quat
