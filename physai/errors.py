"""One root error for physai, so callers can catch everything physai raises with one clause."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PhysaiError(Exception):
    """Root of every error physai raises."""


class InputError(PhysaiError, ValueError):
    """The caller's input is at fault: wrong shape, NaN, out of range, not a rotation."""


class UnknownNameError(PhysaiError, KeyError):
    """A robot, site, body or joint name that does not exist; the message lists the valid ones."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]):
        valid = sorted(valid)
        close = difflib.get_close_matches(str(name), valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.message = f"unknown {kind} {name!r}.{hint} Valid {kind} names: {', '.join(valid) or '(none)'}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise print the message in quotes
        return self.message


class UnsupportedJointError(InputError):
    """A joint type physai's serial-chain kinematics cannot represent (ball, free)."""


class ModelNotFoundError(PhysaiError, FileNotFoundError):
    """A robot model that cannot be found or compiled: the message says where physai looked."""
