"""Grader for lesson 10's Build it (``physai check 10 DIR``): the learner's SVD by hand, manipulability, condition
number and damped least-squares solve against NumPy's SVD of MuJoCo's ``mj_jacSite``, closed forms, and SciPy's
least squares of the stacked system. A failure names the likely mistake."""

from __future__ import annotations

import numpy as np
from scipy.linalg import lstsq

from physai import mj, robots
from physai.exercise import Hint

Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # lesson 09's SO-101 pose
LAM = 0.05  # m/rad, the lesson's damping
TOL = 1e-10  # relative; everything here is a few dozen flops on well-scaled 3 x 5 matrices

MUTATIONS = [
    ("return U, sigma, J.T @ U / sigma", "return U, sigma, -J.T @ U / sigma", "sign"),
    ("eig, U = eig[::-1], U[:, ::-1]", "eig, U = eig, U", "descending"),
    ("np.sqrt(max(np.linalg.det(J @ J.T), 0.0))", "max(np.linalg.det(J @ J.T), 0.0)", "square root"),
    ("float(sigma[0] / sigma[-1])", "float(sigma[-1] / sigma[0])", "inverted"),
    ("J @ J.T + lam**2 * np.eye(len(J))", "J @ J.T - lam**2 * np.eye(len(J))", "sign"),
    ("J @ J.T + lam**2 * np.eye(len(J))", "J @ J.T + lam * np.eye(len(J))", "lam^2"),
    ("J @ J.T + lam**2 * np.eye(len(J))", "J @ J.T", "undamped"),
]


def _jacobians() -> list[np.ndarray]:
    """Position blocks of mj_jacSite: the SO-101 at the lesson's pose and at two random poses, and the WidowX AI."""
    out = []
    for name, qs in (("so101", [Q0]), ("wxai", None)):
        chain, m = robots.load(name), robots.mujoco_model(name)
        qs = qs if qs is not None else chain.random_q(np.random.default_rng(10), 2)
        out += [mj.site_jacobian(m, chain, q)[:3] for q in qs]
    return out


def _singular() -> np.ndarray:
    """A 3 x 5 position block with one direction lost exactly: the SO-101's with its smallest singular value 0."""
    chain, m = robots.load("so101"), robots.mujoco_model("so101")
    U, S, Vt = np.linalg.svd(mj.site_jacobian(m, chain, Q0)[:3], full_matrices=False)
    return U @ np.diag([S[0], S[1], 0.0]) @ Vt


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


def check_svd_by_hand(build, rng) -> None:
    for J in _jacobians():
        U, S, V = (np.asarray(x, dtype=float) for x in build.svd_by_hand(J))
        S0 = np.linalg.svd(J, compute_uv=False)
        m, n = J.shape
        if U.shape != (m, m) or S.shape != (m,) or V.shape != (n, m):
            raise Hint(f"shapes U {U.shape}, sigma {S.shape}, V {V.shape}; expected ({m}, {m}), ({m},), ({n}, {m}): "
                       "eigen-decompose J J^T (m x m), not J^T J")
        if np.allclose(S, S0[::-1], rtol=TOL):
            raise Hint("sigma is ascending (np.linalg.eigh sorts eigenvalues up): reverse to descending, U with it")
        if np.allclose(S, S0**2, rtol=TOL):
            raise Hint("these are the eigenvalues of J J^T, sigma^2: take the square root")
        if _rel(S, S0) > TOL:
            raise Hint(f"sigma {np.round(S, 5)} differs from NumPy's SVD {np.round(S0, 5)}: the square roots of the "
                       "eigenvalues of J J^T, descending")
        if _rel(U.T @ U, np.eye(m)) > TOL:
            raise Hint("the columns of U should be orthonormal: the unit eigenvectors of J J^T")
        rebuilt = U @ np.diag(S) @ V.T
        if _rel(rebuilt, -J) < TOL:
            raise Hint("U diag(sigma) V^T gives -J: a sign is flipped in v_i = J^T u_i / sigma_i")
        if _rel(V, J.T @ U) < TOL:
            raise Hint("V = J^T U is not unit length: divide each column by its sigma_i, v_i = J^T u_i / sigma_i")
        if _rel(rebuilt, J) > TOL:
            raise Hint("U diag(sigma) V^T does not rebuild J: each v_i should be J^T u_i / sigma_i, in the same order")


def check_manipulability(build, rng) -> None:
    for J in _jacobians():
        w, w0 = build.manipulability(J), float(np.prod(np.linalg.svd(J, compute_uv=False)))
        if abs(w - w0**2) <= TOL * w0**2:
            raise Hint("that is det(J J^T), the square of the volume: take the square root")
        if abs(w) <= 1e-12 and w0 > 1e-6:
            raise Hint("zero for a healthy 3 x n block: J^T J is n x n and singular when n > 3; use det(J J^T)")
        if abs(w - w0) > TOL * w0:
            raise Hint(f"{w:.6g} differs from the product of the singular values {w0:.6g}: sqrt(det(J J^T))")
    w = build.manipulability(_singular())
    if not (np.isfinite(w) and abs(w) <= 1e-8):
        raise Hint(f"at a singularity the volume is zero, got {w!r}: clip det(J J^T) at 0 before the square root "
                   "(round-off can make it slightly negative)")


def check_condition_number(build, rng) -> None:
    for J in _jacobians():
        k, k0 = build.condition_number(J), float(np.linalg.cond(J))
        if abs(k * k0 - 1) <= TOL:
            raise Hint("inverted: kappa = sigma_max / sigma_min, at least 1")
        if abs(k - k0**2) <= TOL * k0**2:
            raise Hint("that is kappa of J J^T, kappa^2: use the singular values of J, not the eigenvalues of J J^T")
        if abs(k - k0) > TOL * k0:
            raise Hint(f"{k:.6g} differs from NumPy's cond {k0:.6g}: sigma_max / sigma_min")
    k = build.condition_number(_singular())
    if not (k > 1e12):
        raise Hint(f"at a singularity sigma_min is 0 (or round-off), so kappa is huge or inf, got {k!r}")


def _dls_reference(J, v, lam) -> np.ndarray:
    """min |J qd - v|^2 + lam^2 |qd|^2 as the stacked least-squares problem [J; lam I] qd = [v; 0]."""
    n = J.shape[1]
    return lstsq(np.r_[J, lam * np.eye(n)], np.r_[v, np.zeros(n)])[0]


def check_dls_by_hand(build, rng) -> None:
    J, v = _jacobians()[0], np.array([0.02, -0.01, 0.03])
    qd, ref = np.asarray(build.dls_by_hand(J, v, LAM), dtype=float), _dls_reference(J, v, LAM)
    if qd.shape != ref.shape:
        raise Hint(f"shape {qd.shape}, expected {ref.shape}: one rate per joint, J^T (J J^T + lam^2 I)^-1 v")
    if _rel(qd, ref) > TOL:
        variants = {"the damping is lam^2 I, not lam I": _dls_reference(J, v, np.sqrt(LAM)),
                    "sign of the damping flipped: J J^T + lam^2 I, plus": J.T @ np.linalg.solve(
                        J @ J.T - LAM**2 * np.eye(3), v),
                    "undamped: that is the plain pseudoinverse; add lam^2 I to J J^T": np.linalg.pinv(J) @ v}
        for hint, wrong in variants.items():
            if _rel(qd, wrong) < 1e-8:
                raise Hint(hint)
        raise Hint("should minimise |J qdot - v|^2 + lam^2 |qdot|^2: qdot = J^T (J J^T + lam^2 I)^-1 v")
    u_weak = np.linalg.svd(_singular())[0][:, -1]
    try:
        qd = np.asarray(build.dls_by_hand(_singular(), 0.05 * u_weak, LAM), dtype=float)
    except np.linalg.LinAlgError:
        raise Hint("raised LinAlgError at a singularity: an undamped pseudoinverse; add lam^2 I to J J^T") from None
    if not (np.all(np.isfinite(qd)) and np.linalg.norm(qd) <= 0.05 / (2 * LAM) + 1e-9):
        raise Hint(f"at a singularity |qdot| = {np.linalg.norm(qd):.3g} rad/s for a 5 cm/s request, above the "
                   f"damped bound |v| / (2 lam) = {0.05 / (2 * LAM):g}: an undamped pseudoinverse at a singularity")
