"""Grader for lesson 10's Build it (``physai check 10 DIR``): the learner's SVD by hand, manipulability, condition
number and damped least-squares solve against NumPy's SVD of MuJoCo's ``mj_jacSite``, closed forms, and SciPy's
least squares of the stacked system. A failure names the likely mistake."""

from __future__ import annotations

import numpy as np
from scipy.linalg import lstsq

from physai import mj, robots
from physai.course.exercise import Hint, LearnerError, parts, scalar, shaped

Q0 = np.array([0.0, -0.6, 0.9, 0.4, 0.3])  # lesson 09's SO-101 pose
LAM = 0.05  # m/rad, the lesson's damping
EPS = np.finfo(float).eps
KAPPA_MAX = 1e3  # the random poses are kept below this condition number, so every correct method is accurate
OWN = {"svd_by_hand": ("physai.singularity.health", "physai.singularity.ellipsoid_axes"),
       "manipulability": ("physai.singularity.health",), "condition_number": ("physai.singularity.health",),
       "dls_by_hand": ("physai.singularity.damped_solve", "physai.nullspace.pinv")}

EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "svd_by_hand": "svd_by_hand(np.array([[0.0, 2.0, 0.0], [0.5, 0.0, 0.0]]))",
    "manipulability": "manipulability(np.array([[0.0, 2.0, 0.0], [0.5, 0.0, 0.0]]))",
    "condition_number": "condition_number(np.array([[0.0, 2.0, 0.0], [0.5, 0.0, 0.0]]))",
    "dls_by_hand": "dls_by_hand(np.array([[0.0, 2.0, 0.0], [0.5, 0.0, 0.0]]), np.array([0.1, 0.1]), 0.05)",
}

MUTATIONS = [
    ("return U, sigma, J.T @ U / sigma", "return U, sigma, -J.T @ U / sigma", "sign"),
    ("eig, U = eig[::-1], U[:, ::-1]", "eig, U = eig, U", "descending"),
    ("eig, U = eig[::-1], U[:, ::-1]", "eig, U = eig[::-1], U", "reorder"),
    ("np.sqrt(max(np.linalg.det(J @ J.T), 0.0))", "max(np.linalg.det(J @ J.T), 0.0)", "square root"),
    ("np.sqrt(max(np.linalg.det(J @ J.T), 0.0))", "np.sqrt(np.linalg.det(J @ J.T))", "clip"),
    ("float(sigma[0] / sigma[-1])", "float(sigma[-1] / sigma[0])", "inverted"),
    ("J @ J.T + lam**2 * np.eye(len(J))", "J @ J.T - lam**2 * np.eye(len(J))", "sign"),
    ("J @ J.T + lam**2 * np.eye(len(J))", "J @ J.T + lam * np.eye(len(J))", "lam^2"),
    ("J @ J.T + lam**2 * np.eye(len(J))", "J @ J.T", "undamped"),
]


def _jacobians(rng) -> list[np.ndarray]:
    """Position blocks (m/rad) of mj_jacSite: the SO-101 at the lesson's pose and at two random poses, and the
    WidowX AI at two random poses, each with condition number below KAPPA_MAX."""
    out = []
    for name, k in (("so101", 2), ("wxai", 2)):
        chain, m = robots.load(name), robots.mujoco_model(name)
        Js = [mj.site_jacobian(m, chain, q)[:3] for q in chain.random_q(rng, 8 * k)]
        out += ([mj.site_jacobian(m, chain, Q0)[:3]] if name == "so101" else []) + [
            J for J in Js if np.linalg.cond(J) < KAPPA_MAX][:k]
    return out


def _singular() -> np.ndarray:
    """A 3 x 5 position block with one direction lost exactly: the SO-101's with its smallest singular value 0."""
    chain, m = robots.load("so101"), robots.mujoco_model("so101")
    U, S, Vt = np.linalg.svd(mj.site_jacobian(m, chain, Q0)[:3], full_matrices=False)
    return U @ np.diag([S[0], S[1], 0.0]) @ Vt


def _rank_deficient(rng, k: int = 3) -> list[np.ndarray]:
    """:func:`_singular`, then ``k`` random 3 x 5 blocks of rank 2 for which NumPy's ``det(J J^T)`` comes out
    negative (round-off: about 4 in 10 do), so a square root without the clip at 0 gives NaN."""
    out = [_singular()]
    for _ in range(100 * k):
        U, Vt = np.linalg.qr(rng.normal(size=(3, 3)))[0], np.linalg.qr(rng.normal(size=(5, 5)))[0][:3]
        J = U @ np.diag([*rng.uniform(0.05, 0.5, 2), 0.0]) @ Vt
        if np.linalg.det(J @ J.T) < 0:
            out.append(J)
        if len(out) > k:
            break
    return out


def _tol(J) -> float:
    """Relative round-off of a method that squares J (eigenvalues of J J^T): eps kappa^2, with room."""
    return 1e3 * EPS * np.linalg.cond(J) ** 2


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


def _svd_shape_advice(got, m: int, n: int) -> str:
    """Why a part of svd_by_hand's answer for an ``(m, n)`` J has the wrong shape, where the shape tells."""
    square = {(n, n): "eigen-decompose J J^T (m x m), not J^T J (n x n)", (n,): "eigen-decompose J J^T (m x m), "
              "not J^T J (n x n): one sigma per row of J"}
    return square.get(getattr(got, "shape", None), f"U (m, m), sigma (m,), V (n, m) for J of shape (m, n) = {(m, n)}")


def check_svd_by_hand(build, rng) -> None:
    for J in _jacobians(rng):
        out = parts(build.svd_by_hand(J), 3, "svd_by_hand", "three arrays (U, sigma, V)")
        m, n = J.shape
        U, S, V = (shaped(x, shape, f"svd_by_hand's {what}", _svd_shape_advice(x, m, n))
                   for x, shape, what in zip(out, ((m, m), (m,), (n, m)), ("U", "sigma", "V")))
        S0, tol = np.linalg.svd(J, compute_uv=False), _tol(J)
        if np.allclose(S, S0[::-1], rtol=tol):
            raise Hint("sigma is ascending (np.linalg.eigh sorts eigenvalues up): reverse to descending, U with it")
        if np.allclose(S, S0**2, rtol=tol):
            raise Hint("these are the eigenvalues of J J^T, sigma^2: take the square root")
        if _rel(np.sort(S)[::-1], S0) <= tol and not np.all(np.diff(S) <= 0):
            raise Hint(f"sigma {np.round(S, 5)} is not in descending order: sort it, and U's columns with it")
        if _rel(S, S0) > tol:
            raise Hint(f"sigma {np.round(S, 5)} differs from NumPy's SVD {np.round(S0, 5)}: the square roots of the "
                       "eigenvalues of J J^T, descending")
        if _rel(U.T @ U, np.eye(m)) > tol:
            raise Hint("the columns of U should be orthonormal: the unit eigenvectors of J J^T")
        if _rel(J @ V, -U * S) < tol:
            raise Hint("J V gives -U diag(sigma): a sign is flipped in v_i = J^T u_i / sigma_i")
        if _rel(V, J.T @ U) < tol:
            raise Hint("V = J^T U is not unit length: divide each column by its sigma_i, v_i = J^T u_i / sigma_i")
        if _rel(V.T @ V, np.eye(m)) > tol:
            norms = np.round(np.sum(V**2, axis=0), 3)
            raise Hint(f"the columns of V are not orthonormal (squared norms {norms}): sigma was reordered without "
                       "its column of U? Sort sigma and U together, then v_i = J^T u_i / sigma_i")
        if _rel(J @ V, U * S) > tol:
            raise Hint("J V != U diag(sigma): each v_i should be J^T u_i / sigma_i, with u_i and sigma_i of the same "
                       "eigenvalue")


def check_manipulability(build, rng) -> None:
    for J in _jacobians(rng):
        w, w0 = scalar(build.manipulability(J), "manipulability"), float(np.prod(np.linalg.svd(J, compute_uv=False)))
        tol = _tol(J)
        if abs(w - w0**2) <= tol * w0**2:
            raise Hint("that is det(J J^T), the square of the volume: take the square root")
        if abs(w) <= 1e-12 and w0 > 1e-6:
            raise Hint("zero for a healthy 3 x n block: J^T J is n x n and singular when n > 3; use det(J J^T)")
        if abs(w - w0) > tol * w0:
            raise Hint(f"{w:.6g} differs from the product of the singular values {w0:.6g}: sqrt(det(J J^T))")
    for J in _rank_deficient(rng):
        w = scalar(build.manipulability(J), "manipulability")
        if not (np.isfinite(w) and abs(w) <= 1e-8):
            raise Hint(f"at a singularity the volume is zero, got {w!r}: clip det(J J^T) at 0 before the square "
                       "root (round-off can make it slightly negative)")


def check_condition_number(build, rng) -> None:
    for J in _jacobians(rng):
        k, k0 = scalar(build.condition_number(J), "condition_number"), float(np.linalg.cond(J))
        tol = _tol(J)
        if abs(k * k0 - 1) <= tol:
            raise Hint("inverted: kappa = sigma_max / sigma_min, at least 1")
        if abs(k - k0**2) <= tol * k0**2:
            raise Hint("that is kappa of J J^T, kappa^2: use the singular values of J, not the eigenvalues of J J^T")
        if abs(k - k0) > tol * k0:
            raise Hint(f"{k:.6g} differs from NumPy's cond {k0:.6g}: sigma_max / sigma_min")
    k = scalar(build.condition_number(_singular()), "condition_number")
    if np.isnan(k):
        raise Hint("NaN at a singularity: round-off can make the smallest eigenvalue of J J^T slightly negative; "
                   "clip it at 0 before the square root (kappa is then inf)")
    # sigma_min is 0 here; computed from the eigenvalues of J J^T it is round-off, about sqrt(eps) sigma_max, so
    # kappa reaches about 1 / sqrt(eps) ~ 7e7: every correct method lands above 1e6 (or at inf)
    if not k > 1e6:
        raise Hint(f"at a singularity sigma_min is 0, so kappa is inf (or above 1e6 from round-off), got {k:.3g}: "
                   "sigma_max / sigma_min, with the singular values of J")


def _dls_reference(J, v, lam) -> np.ndarray:
    """min |J qd - v|^2 + lam^2 |qd|^2 as the stacked least-squares problem [J; lam I] qd = [v; 0]."""
    n = J.shape[1]
    return lstsq(np.r_[J, lam * np.eye(n)], np.r_[v, np.zeros(n)])[0]


def check_dls_by_hand(build, rng) -> None:
    J, v = _jacobians(rng)[int(rng.integers(3))], rng.normal(scale=0.03, size=3)
    ref = _dls_reference(J, v, LAM)
    qd = shaped(build.dls_by_hand(J, v, LAM), ref.shape, "dls_by_hand",
                "one rate per joint, J^T (J J^T + lam^2 I)^-1 v")
    if _rel(qd, ref) > 1e-10:  # damped: the system's condition is at most (sigma_max / lam)^2 ~ 1e2
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
        qd = shaped(build.dls_by_hand(_singular(), 0.05 * u_weak, LAM), ref.shape, "dls_by_hand")
    except LearnerError as exc:
        if exc.type_name != "LinAlgError":
            raise
        raise Hint("raised LinAlgError at a singularity: an undamped pseudoinverse; add lam^2 I to J J^T") from None
    if not (np.all(np.isfinite(qd)) and np.linalg.norm(qd) <= 0.05 / (2 * LAM) + 1e-9):
        raise Hint(f"at a singularity |qdot| = {np.linalg.norm(qd):.3g} rad/s for a 5 cm/s request, above the "
                   f"damped bound |v| / (2 lam) = {0.05 / (2 * LAM):g}: an undamped pseudoinverse at a singularity")
