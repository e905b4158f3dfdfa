"""One root error for physai, so callers can catch everything physai raises with one clause."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PhysaiError(Exception):
    """Root of every error physai raises.

    Examples
    --------
    One clause catches whatever physai refuses:

    >>> try:
    ...     physai.load("so100")
    ... except physai.PhysaiError as error:
    ...     print(type(error).__name__)
    UnknownNameError
    """


class InputError(PhysaiError, ValueError):
    """The caller's input is at fault: wrong shape, NaN, out of range, not a rotation. Also a ``ValueError``.

    Examples
    --------
    >>> physai.tool_pose(physai.load("planar2r"), [0.0, np.nan])
    Traceback (most recent call last):
        ...
    physai.errors.InputError: q: entries must be finite, got nan at index (1,)
    """


class UnknownNameError(PhysaiError, KeyError):
    """A robot, site, body or joint name that does not exist; the message lists the valid ones. Also a ``KeyError``.

    Examples
    --------
    >>> physai.load("so100")
    Traceback (most recent call last):
        ...
    physai.errors.UnknownNameError: unknown robot 'so100'. Did you mean 'so101'? Valid robot names: ...
    """

    def __init__(self, kind: str, name: str, valid: Iterable[str]):
        valid = sorted(valid)
        close = difflib.get_close_matches(str(name), valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.message = f"unknown {kind} {name!r}.{hint} Valid {kind} names: {', '.join(valid) or '(none)'}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise print the message in quotes
        return self.message


class UnsupportedJointError(InputError):
    """A joint type physai's serial-chain kinematics cannot represent (ball, free). Also an :class:`InputError`.

    Examples
    --------
    >>> ball = physai.JointSpec("wrist", "ball", axis=(0, 0, 1))
    >>> hand = physai.BodySpec("hand", (0, 0, 0), joints=(ball,))
    >>> physai.chain_from_bodies("arm", [hand], tool_pos=(0, 0, 0))
    Traceback (most recent call last):
        ...
    physai.errors.UnsupportedJointError: joint 'wrist' in body 'hand' has type 'ball'; physai chains support ...
    """


class ModelNotFoundError(PhysaiError, FileNotFoundError):
    """A robot model that cannot be found or compiled: the message says where physai looked. Also a
    ``FileNotFoundError``.

    Examples
    --------
    >>> physai.load("no_such_arm.xml")
    Traceback (most recent call last):
        ...
    physai.errors.ModelNotFoundError: model file 'no_such_arm.xml' does not exist
    """


class MissingExtraError(PhysaiError, ImportError):
    """A part of physai that needs an extra this install lacks (``physai tour`` without ``[course]``, the JAX backend
    without ``[jax]``): the message names the extra and the command that installs it. Also an ``ImportError``.

    Examples
    --------
    >>> raise physai.errors.MissingExtraError('physai.viewer needs physai-kinematics[viewer]: pip install ...')
    Traceback (most recent call last):
        ...
    physai.errors.MissingExtraError: physai.viewer needs physai-kinematics[viewer]: pip install ...
    """
