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

