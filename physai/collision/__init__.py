"""Signed distances between an arm and its surroundings, through MuJoCo's own geometry.

A :class:`CollisionWorld` is built once from a MuJoCo scene holding the arm (the chain's joints, by name) and
whatever surrounds it (:func:`collision_world`). It pairs every geom the chain moves with every geom it does not
move (the table, a shelf, the robot's own base) and with every other arm geom that moves relative to it
(self-collision), filtered as MuJoCo's collision detection filters them: ``contype``/``conaffinity``, ``<exclude>``
and the parent-child rule (plus every explicit ``<pair>``).

Obstacle pairs (the arm against anything that is not the robot) are all checked, each against ``margin``. The
robot's own pairs are classified once, as MoveIt's Allowed Collision Matrix does, by sampling the arm inside its
limits: adjacent (MuJoCo's parent-child filter), always in contact (never checked), in contact at rest (the middle
of the joint ranges: geoms that overlap by construction, MoveIt's "collision by default"), never closer than
``self_margin + NEVER_GAP`` (not worth checking), and default (checked, against their own padding ``self_margin``,
0 by default: no interpenetration). ``world.allowed`` lists every pair left out and why; ``keep=`` and ``drop=``
override the choice. The robot's fixed bodies (its base: no joint above them) never move against the surface they
rest on; the world's ``repr`` names them.

Distances are MuJoCo's ``mj_geomDistance`` (convex hulls for meshes), signed (negative: penetration depth), capped
at ``world.distmax``: a pair farther apart reports ``distmax``. A screen (:class:`~physai.collision._screen.Screen`,
compiled in :mod:`physai._numba_collision`) bounds every pair from below first, from the geoms' poses along the
chain: bounding spheres, then boxes, then each geom's core shape (a segment with a radius, or a box), exact for
spheres, capsules and boxes against each other (box pairs excepted). MuJoCo is called only for pairs the screen
leaves below the cap, so a clear verdict usually costs no MuJoCo call at all, and the bound never hides a closer pair.
Gradients with respect to ``q`` are the contact-normal Jacobian ``n^T (J_2(p_2) - J_1(p_1))``
with ``n`` the unit normal from geom 1 to geom 2 and ``p_1, p_2`` the nearest (or deepest) points
(``mj_geomDistance``'s ``fromto``), the linear point Jacobians built from MuJoCo's joint axes and anchors.

One concern a file: :mod:`~physai.collision._world` (the world and its queries), :mod:`~physai.collision._build`
(building it, and the robot's own pairs' statistics, stored and read back), :mod:`~physai.collision._screen` (the lower
bounds) and :mod:`~physai.collision._gjk` (the GJK bracket).
"""

from physai.collision._build import (ALWAYS_TOUCHING, DISTMAX_BEYOND_MARGIN, NEVER_GAP, SAMPLES, SELF_PAIRS_FILE,
                                     collision_world, self_pairs_record, write_stored_self_pairs)
from physai.collision._gjk import GJK_CONVERGED, GJK_FLAT, GJK_TOUCH, gjk_bracket
from physai.collision._screen import ASK, BOX, CLEAR, ENGINES, HIT, SEGMENT, SPHERE_ONLY, segment_distance
from physai.collision._world import ALLOWED, CLEAR_SET_DRAWS, CollisionWorld, KernelRecord, Obstacle, scene

__all__ = [
    "DISTMAX_BEYOND_MARGIN", "ALWAYS_TOUCHING", "NEVER_GAP", "SAMPLES", "ALLOWED", "Obstacle", "scene", "KernelRecord",
    "CollisionWorld", "SEGMENT", "BOX", "SPHERE_ONLY", "ENGINES", "CLEAR_SET_DRAWS", "CLEAR", "HIT", "ASK",
    "segment_distance", "collision_world", "SELF_PAIRS_FILE", "self_pairs_record", "write_stored_self_pairs",
    "GJK_CONVERGED", "GJK_TOUCH", "GJK_FLAT", "gjk_bracket",
]
