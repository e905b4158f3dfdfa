"""Reading what a learner's child process sends the grader, with every bound a hostile child could break (private).

The child runs the learner's code, which may write anything to its end of the socket: a header and then silence, a
reply of gigabytes, a list that holds itself or lies 5,000 deep, an array reconstruction asking for a terabyte, a
tuple of the wrong shape. So a reply is read whole within one deadline (:func:`read`), refused above
:data:`MAX_BYTES`, unpickled from plain data only with each array's size checked before it is made
(:func:`loads`), and its shape checked (:func:`call_reply`); anything else is a :class:`BadReply`, one line.
"""

from __future__ import annotations

import io
import os
import pickle
import select
import struct
import time
from dataclasses import dataclass

import numpy as np

MAX_BYTES = 64 * 2**20  # the largest reply read: the arrays a graded function returns are kilobytes
MAX_DEPTH = 32  # containers inside containers; the child itself sends no more than 20 levels
OPAQUE = "<physai-opaque>"  # (OPAQUE, type name): a returned object that is not plain data


class BadReply(Exception):
    """The child's reply broke a bound or was not what the grader asked for; the message says which."""


class TooSlow(Exception):
    """No whole reply came within the deadline."""


@dataclass(frozen=True)
class Opaque:
    """What the learner returned when it was not plain data (arrays, numbers, strings, tuples, lists, dicts)."""

    type_name: str


def _exactly(fd: int, n: int, deadline: float) -> bytes:
    chunks, left = [], n
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise TooSlow
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read(fd: int, deadline: float) -> bytes:
    """One message of :mod:`multiprocessing.connection`'s framing (a 4-byte big-endian length, -1 then 8 bytes
    for a long one) from ``fd``, whole by ``deadline`` (:func:`time.monotonic`) -> its bytes; :class:`TooSlow`,
    ``EOFError`` (the child ended) or :class:`BadReply` (over :data:`MAX_BYTES`)."""
    (n,) = struct.unpack("!i", _exactly(fd, 4, deadline))
    if n == -1:
        (n,) = struct.unpack("!Q", _exactly(fd, 8, deadline))
    if not 0 <= n <= MAX_BYTES:
        raise BadReply(f"a reply of {n} bytes (the limit is {MAX_BYTES // 2**20} MiB)")
    return _exactly(fd, n, deadline)


class _Ndarray:
    """Stands for ``numpy.ndarray`` in a reply: accepted only as :func:`_reconstruct`'s first argument, so no
    ``ndarray(shape)`` call can allocate."""


def _reconstruct(subtype, shape, dtype):
    """NumPy's ``_reconstruct`` for a plain array whose size (shape x item size) is within :data:`MAX_BYTES`."""
    dtype = np.dtype(dtype)
    if subtype is not _Ndarray or not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
        raise BadReply("an array reconstruction that is not a plain array")
    if int(np.prod(shape, dtype=object)) * max(dtype.itemsize, 1) > MAX_BYTES:
        raise BadReply(f"an array of shape {shape} and dtype {dtype} (over {MAX_BYTES // 2**20} MiB)")
    return np.ndarray.__new__(np.ndarray, shape, dtype)


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles only arrays, numbers, strings and containers: an ordinary unpickle would run code here."""

    def find_class(self, module, name):
        core = module in ("numpy._core.multiarray", "numpy.core.multiarray")
        if (module, name) == ("numpy", "ndarray"):
            return _Ndarray
        if core and name == "_reconstruct":
            return _reconstruct
        if (core and name == "scalar") or (module, name) in (("numpy", "dtype"), ("builtins", "complex")):
            return super().find_class(module, name)
        raise BadReply(f"refused {module}.{name}")


def _decode(x, depth: int = 0):
    """The plain data ``x`` with its ``(OPAQUE, type name)`` markers as :class:`Opaque`; :class:`BadReply` past
    :data:`MAX_DEPTH` (a list that holds itself never ends)."""
    if depth > MAX_DEPTH:
        raise BadReply(f"containers nested more than {MAX_DEPTH} deep")
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and x[0] == OPAQUE:
        return Opaque(str(x[1])[:200])
    if type(x) in (tuple, list):
        return type(x)(_decode(v, depth + 1) for v in x)
    if type(x) is dict:
        return {k: _decode(v, depth + 1) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return x if x.dtype.kind in "biufc" else Opaque(f"ndarray of dtype {x.dtype}")
    if x is None or type(x) in (bool, int, float, complex, str, bytes) or isinstance(x, np.generic):
        return x
    return Opaque(type(x).__name__)


def loads(data: bytes):
    """The plain data pickled in ``data`` (:func:`_decode`d); :class:`BadReply` for anything else or malformed."""
    try:
        return _decode(_PlainUnpickler(io.BytesIO(data)).load())
    except BadReply:
        raise
    except RecursionError:
        raise BadReply(f"containers nested more than {MAX_DEPTH} deep") from None
    except Exception as exc:  # noqa: BLE001 - a malformed pickle raises any of a dozen types
        raise BadReply(f"a malformed reply ({type(exc).__name__})") from None


def _strings(x, k: int) -> bool:
    return type(x) is tuple and len(x) == k and all(type(s) is str for s in x)


def confined_reply(message) -> tuple:
    """``("confined", how)``: what confines the child's writes ('' for nothing), sent before the learner's code
    runs; else :class:`BadReply`."""
    if type(message) is tuple and len(message) == 2 and message[0] == "confined" and type(message[1]) is str:
        return message
    raise BadReply("a first message that is not (confined, how)")


def import_reply(message) -> tuple:
    """``("ok", [names])`` or ``("raise", (type, message, where))``, checked; else :class:`BadReply`."""
    if type(message) is tuple and len(message) == 2:
        status, value = message
        if status == "ok" and type(value) is list and all(type(n) is str for n in value):
            return message
        if status == "raise" and _strings(value, 3):
            return message
    raise BadReply("a reply to the import that is not (status, names)")


def call_reply(message) -> tuple:
    """``(status, value, after, used, low)`` of a call, checked: ``after`` a list of (input index, array),
    ``used`` a list of names, ``low`` a bool; else :class:`BadReply`."""
    if type(message) is tuple and len(message) == 5:
        status, value, after, used, low = message
        if (status == "ok" or (status == "raise" and _strings(value, 3))) and type(low) is bool and (
                type(used) is list and all(type(n) is str for n in used)) and type(after) is list and all(
                type(a) is tuple and len(a) == 2 and type(a[0]) is int and isinstance(a[1], np.ndarray)
                for a in after):
            return message
    raise BadReply("a reply to a call that is not (status, value, inputs after, names used, float32)")
