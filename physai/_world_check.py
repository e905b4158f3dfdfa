"""The one check of an ``avoid=`` argument (private): a :class:`physai.collision.CollisionWorld` of the chain, and a
start that does not penetrate. Apart from the collision code, so that the solvers and controllers import no MuJoCo
until a world is given."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from physai.errors import InputError

if TYPE_CHECKING:
    from physai.collision import CollisionWorld


def checked_world(avoid, chain, q0=None) -> CollisionWorld | None:
    """``avoid`` checked as a collision world of ``chain`` (None passes: no world), and a start ``q0`` (``(n,)`` or
    ``(B, n)``; None: not checked) refused if it penetrates."""
    if avoid is None:
        return None
    world = check_world(avoid, chain)
    if q0 is not None:
        check_start(world, q0)
    return world


def check_world(world, chain=None, name: str = "avoid") -> CollisionWorld:
    """``world`` must be a :class:`CollisionWorld` (of ``chain``, when given: the same joints and kinematics)."""
    from physai.collision import CollisionWorld  # a world was given: its module, and MuJoCo, are loaded already

    if not isinstance(world, CollisionWorld):
        raise InputError(f"{name}: expected a physai.collision.CollisionWorld, got {type(world).__name__}")
    same = chain is None or world.chain is chain or (world.chain.joint_names == chain.joint_names
                                                     and np.array_equal(world.chain.packed, chain.packed))
    if not same:
        raise InputError(f"{name}: the world was built for chain {world.chain.name!r} with joints "
                         f"{list(world.chain.joint_names)}, not this chain {chain.name!r}")
    return world


def check_start(world: CollisionWorld, q0) -> None:
    """A given start (``(n,)`` or ``(B, n)``) must not penetrate: refused, naming the pair and its depth."""
    for q in np.asarray(q0).reshape(-1, world.chain.n):
        if not (world.evaluate_trusted(q, False)[0] < 0).any():
            continue
        dist, pair = world.closest(q)
        if dist < 0:
            raise InputError(f"q0: the start configuration is in collision: {pair[0]!r} and {pair[1]!r} overlap by "
                             f"{-dist:.4g} m")
