"""Input checks at the public boundary. Internal code trusts what passes through here."""

from __future__ import annotations

import numpy as np

from physai.errors import InputError


def finite_array(x, name: str, shape_tail: tuple[int, ...] | None = None, what: str = "") -> np.ndarray:
    """Return ``x`` as a float64 array, checking its trailing shape and that every entry is finite.

    ``shape_tail`` is the required trailing shape (leading batch dimensions are free).
    """
    try:
        raw = np.asarray(x)
        if not np.iscomplexobj(raw):  # a float64 cast would drop the imaginary part with only a warning
            a = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: expected an array of numbers, got {type(x).__name__} ({exc})") from None
    if np.iscomplexobj(raw):
        raise InputError(f"{name}: expected real numbers, got complex values")
    if shape_tail is not None:
        k = len(shape_tail)
        if a.ndim < k or a.shape[a.ndim - k :] != tuple(shape_tail):
            want = "(..., " + ", ".join(map(str, shape_tail)) + ")" if k else "()"
            raise InputError(f"{name}: expected shape {want}{what}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise InputError(f"{name}: entries must be finite, got {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    return a



# ---- numeric options: one helper per kind, so every public function refuses bad options the same way ----


def _real(value, name: str) -> float:
    """``value`` as a finite Python float; bool, strings, arrays and complex numbers are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name}: expected a real number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not np.isfinite(x):
        raise InputError(f"{name}: expected a finite number, got {x}")
    return x


def positive(value, name: str) -> float:
    """A finite number ``> 0`` (a step, a time, a tolerance)."""
    x = _real(value, name)
    if x <= 0:
        raise InputError(f"{name}: expected a number > 0, got {x}")
    return x


def nonnegative(value, name: str) -> float:
    """A finite number ``>= 0`` (a damping, a weight, a margin)."""
    x = _real(value, name)
    if x < 0:
        raise InputError(f"{name}: expected a number >= 0, got {x}")
    return x


def in_range(value, name: str, low: float, high: float) -> float:
    """A finite number in the closed interval ``[low, high]``."""
    x = _real(value, name)
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
