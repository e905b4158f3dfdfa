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


def rigid_transform(T, name: str, atol: float = 1e-9) -> np.ndarray:
    """Return ``T: (..., 4, 4)`` as float64 after checking it is a rigid transform (a pose).

    The rotation block must be orthonormal with determinant +1 and the bottom row ``[0, 0, 0, 1]``,
    each within ``atol``: a scaled or reflected "rotation" would otherwise give silently wrong
    inverses and pose errors.
    """
    T = finite_array(T, name, (4, 4))
    R = T[..., :3, :3]
    ortho = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(axis=(-2, -1))
    det_err = np.abs(np.linalg.det(R) - 1.0)
    bottom = np.abs(T[..., 3, :] - [0.0, 0.0, 0.0, 1.0]).max(axis=-1)
    for err, what in (
        (ortho, "its rotation block is not orthonormal: |R^T R - I| = {:.3g}"),
        (det_err, "its rotation block has |det R - 1| = {:.3g} (a reflection or a scale)"),
        (bottom, "its bottom row is not [0, 0, 0, 1]: deviation {:.3g}"),
    ):
        if np.any(err > atol):
            idx = np.unravel_index(np.argmax(err), err.shape)
            at = f" at batch index {tuple(int(i) for i in idx)}" if err.ndim else ""
            raise InputError(f"{name}: not a rigid transform{at}: " + what.format(float(err[idx])) + f" > atol {atol:g}")
    return T
