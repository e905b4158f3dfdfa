"""Input checks at the public boundary. Internal code trusts what passes through here."""

from __future__ import annotations

import decimal
import numbers

import numpy as np

from physai.errors import InputError


def finite_array(x, name: str, shape_tail: tuple[int, ...] | None = None, what: str = "") -> np.ndarray:
    """Return ``x`` as a float64 array, checking its trailing shape and that every entry is finite.

    ``shape_tail`` is the required trailing shape (leading batch dimensions are free). Only real numbers
    pass: booleans, strings (also numeric ones such as ``"1.0"``), dates, time spans, records, complex
    numbers and object arrays holding anything but real numbers are refused, and so is a masked array
    with masked entries (converting it would silently use the values under the mask).
    """
    if isinstance(x, np.ma.MaskedArray) and np.ma.getmaskarray(x).any():
        raise InputError(f"{name}: a masked array with masked entries (fill or drop them first)")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: expected an array of numbers, got {type(x).__name__} ({exc})") from None
    if raw.dtype.kind not in "fiu":  # the common case (float or int arrays) costs this one test
        raw = _real_objects(raw, x, name)
    a = np.asarray(raw, dtype=np.float64)
    if shape_tail is not None:
        k = len(shape_tail)
        if a.ndim < k or a.shape[a.ndim - k :] != tuple(shape_tail):
            want = "(..., " + ", ".join(map(str, shape_tail)) + ")" if k else "()"
            raise InputError(f"{name}: expected shape {want}{what}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise InputError(f"{name}: entries must be finite, got {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    return a


_KINDS = {"b": "booleans", "c": "complex values", "U": "strings", "S": "bytes", "M": "dates (datetime64)",
          "m": "time spans (timedelta64)", "V": "records (structured dtype)"}


def _real_objects(raw: np.ndarray, x, name: str) -> np.ndarray:
    """An object array whose entries are all real numbers (``Fraction``, ``Decimal``, NumPy scalars) passes;
    every other non-float dtype is refused, naming what came in."""
    if raw.dtype.kind == "O":
        odd = [v for v in raw.flat if isinstance(v, bool) or not isinstance(v, (numbers.Real, decimal.Decimal))][:1]
        if not odd:
            return raw
        odd = odd[0]
        raise InputError(f"{name}: expected an array of numbers, got {type(odd).__name__} {odd!r} in {type(x).__name__}")
    kind = _KINDS.get(raw.dtype.kind, f"dtype {raw.dtype}")
    raise InputError(f"{name}: expected an array of numbers, got {kind} ({raw.dtype})")


# ---- numeric options: one helper per kind, so every public function refuses bad options the same way ----


def real(value, name: str, *, inf_ok: bool = False) -> float:
    """``value`` as a finite Python float (``+inf`` too with ``inf_ok``, for "no limit");
    bool, strings, arrays and complex numbers are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name}: expected a real number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not (np.isfinite(x) or (inf_ok and x == np.inf)):
        raise InputError(f"{name}: expected a finite number{' or inf' if inf_ok else ''}, got {x}")
    return x


def positive(value, name: str, *, inf_ok: bool = False) -> float:
    """A finite number ``> 0`` (a step, a time, a tolerance); ``inf_ok`` also lets ``+inf`` (no limit) through."""
    x = real(value, name, inf_ok=inf_ok)
    if x <= 0:
        raise InputError(f"{name}: expected a number > 0, got {x}")
    return x


def nonnegative(value, name: str) -> float:
    """A finite number ``>= 0`` (a damping, a weight, a margin)."""
    x = real(value, name)
    if x < 0:
        raise InputError(f"{name}: expected a number >= 0, got {x}")
    return x


def in_range(value, name: str, low: float, high: float) -> float:
    """A finite number in the closed interval ``[low, high]``."""
    x = real(value, name)
    if not low <= x <= high:
        raise InputError(f"{name}: expected a number in [{low}, {high}], got {x}")
    return x


def count(value, name: str, minimum: int = 0, maximum: int = 10**7) -> int:
    """A whole number in ``[minimum, maximum]`` (iterations, restarts, substeps); ``2.5`` and ``True`` are refused.

    The upper bound keeps a typo such as ``restarts=10**9`` from allocating gigabytes before failing.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: expected a whole number, got {type(value).__name__} {value!r}")
    k = int(value)
    if not minimum <= k <= maximum:
        raise InputError(f"{name}: expected a whole number in [{minimum}, {maximum}], got {k}")
    return k


def one_of(value, name: str, choices) -> str:
    """One of a fixed set of names; the message lists them."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def generator(rng, name: str = "rng") -> np.random.Generator:
    """A seeded ``numpy.random.Generator`` (an int seed or the legacy global state are refused: results must repeat)."""
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"{name}: expected a numpy.random.Generator (numpy.random.default_rng(seed)), "
                         f"got {type(rng).__name__} {rng!r}")
    return rng
