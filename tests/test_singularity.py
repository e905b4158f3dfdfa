"""physai.singularity pinned to closed forms: NumPy's SVD/pinv/solve, the source's reference code, the 2-link arm."""

import numpy as np
import pytest

from physai import mj
from physai.errors import InputError
from physai.singularity import (
    adaptive_damping,
    damped_solve,
    damped_step,
    ellipsoid_axes,
    filter_factors,
    health,
    scale_to_limit,
)


def seed_damped_step(J, v_des, dt, sigma_healthy=0.03, lambda_max=0.05, limit=6.28):
    """The WidowX-AI lesson's damped_step, verbatim in substance (the independent reference)."""
    Jp = J[:3, :]
    U, S, Vt = np.linalg.svd(Jp)
    sigma_min = S[-1]
    lam = 0.0 if sigma_min >= sigma_healthy else lambda_max * np.sqrt(1.0 - (sigma_min / sigma_healthy) ** 2)
    qdot = Jp.T @ np.linalg.solve(Jp @ Jp.T + lam * lam * np.eye(3), v_des)
    peak = np.max(np.abs(qdot))
    scale = 1.0 if peak <= limit else limit / peak
    return qdot * scale * dt, dict(sigma_min=sigma_min, kappa=S[0] / S[-1], manipulability=np.prod(S), lam=lam, scale=scale)


def test_damped_solve_equals_normal_equations_closed_form(rng):
    for m, n in [(3, 5), (6, 6), (6, 7), (6, 5)]:
        J = rng.normal(size=(m, n))
        v = rng.normal(size=m)
        for lam in (1e-3, 0.05, 0.7):
            ref = J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(m), v)
            np.testing.assert_allclose(damped_solve(J, v, lam), ref, atol=1e-12 * (1 + np.abs(ref).max()))


def test_damped_solve_lambda_zero_is_numpy_pinv(rng):
    J = rng.normal(size=(4, 6, 5))
    v = rng.normal(size=(4, 6))
    ref = np.einsum("bij,bj->bi", np.linalg.pinv(J), v)
    np.testing.assert_allclose(damped_solve(J, v, 0.0), ref, atol=1e-12)


def test_gain_never_exceeds_one_over_two_lambda_and_is_attained(rng):
    lam = 0.05
    worst = 0.0
    for _ in range(200):
        U, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        V, _ = np.linalg.qr(rng.normal(size=(5, 5)))
        S = np.sort(10.0 ** rng.uniform(-6, 0, 3))[::-1]
        J = U @ np.diag(S) @ V[:3]
        v = rng.normal(size=3)
        worst = max(worst, np.linalg.norm(damped_solve(J, v, lam)) / np.linalg.norm(v))
    assert worst <= 1 / (2 * lam) * (1 + 1e-12)
    # sigma == lam along u_1 attains the bound exactly
    J = np.diag([lam, 1.0, 2.0])
    np.testing.assert_allclose(np.linalg.norm(damped_solve(J, np.array([1.0, 0, 0]), lam)), 1 / (2 * lam), rtol=1e-14)
    s = np.linspace(0, 10, 10001)
    assert filter_factors(s, lam).max() <= 1 / (2 * lam) * (1 + 1e-15)


def test_health_matches_numpy_svd_and_det(rng, so101_model, so101):
    q = so101.random_q(rng, 5)
    for qi in q:
        J = mj.site_jacobian(so101_model, so101, qi)
        h = health(J, "position")
        S = np.linalg.svd(J[:3], compute_uv=False)
        np.testing.assert_allclose(h.sigma, S, rtol=1e-14)
        assert h.sigma_min == pytest.approx(S[-1], rel=1e-14) and h.kappa == pytest.approx(S[0] / S[-1], rel=1e-14)
        assert h.manipulability == pytest.approx(np.sqrt(np.linalg.det(J[:3] @ J[:3].T)), rel=1e-9)
        full = health(J, "full", char_length=0.3)
        np.testing.assert_allclose(full.sigma, np.linalg.svd(np.vstack([J[:3], 0.3 * J[3:]]), compute_uv=False), rtol=1e-14)
        assert full.sigma_min == 0.0 and full.kappa == np.inf  # 5 joints cannot span 6 rows
        np.testing.assert_allclose(health(J, "orientation").sigma, np.linalg.svd(J[3:], compute_uv=False), rtol=1e-14)


def test_health_of_straight_two_link_arm_is_singular_closed_form():
    # planar 2R, L1 = 0.5, L2 = 0.3, q2 = 0 (straight): both columns are parallel (closed form rank 1)
    q1 = 0.4
    c, s = np.cos(q1), np.sin(q1)
    J = np.zeros((6, 2))
    J[:2] = [[-0.8 * s, -0.3 * s], [0.8 * c, 0.3 * c]]
    J[5] = 1.0
    h = health(J, "position")
    assert h.sigma_min == 0.0 and h.kappa == np.inf  # exact: 2 joints cannot span 3 rows
    assert h.sigma[0] == pytest.approx(np.hypot(0.8, 0.3), rel=1e-14)


def test_ellipsoid_axes_are_eigen_decomposition_of_JJt(rng):
    J = rng.normal(size=(6, 7))
    radii, U = ellipsoid_axes(J, "position")
    w, E = np.linalg.eigh(J[:3] @ J[:3].T)
    np.testing.assert_allclose(radii**2, w[::-1], rtol=1e-12)
    for i in range(3):
        assert abs(abs(U[:, i] @ E[:, 2 - i]) - 1) < 1e-12


def test_adaptive_damping_ramp_closed_form():
    # exact: no damping outside the ramp, the full damping at sigma = 0 (sqrt(1) = 1)
    assert adaptive_damping(0.03, 0.03, 0.05) == 0.0
    assert adaptive_damping(0.5, 0.03, 0.05) == 0.0
    assert adaptive_damping(0.0, 0.03, 0.05) == 0.05
    s = np.linspace(0, 0.03, 301)
    lam = adaptive_damping(s, 0.03, 0.05)
    np.testing.assert_allclose(lam, 0.05 * np.sqrt(1 - (s / 0.03) ** 2), rtol=1e-15)
    assert np.all(np.diff(lam) <= 0)


def test_scale_to_limit_preserves_direction(rng):
    qd = rng.normal(size=(10, 6)) * 20
    out, scale = scale_to_limit(qd, 6.28)
    assert np.all(np.abs(out).max(axis=1) <= 6.28 * (1 + 1e-15))
    np.testing.assert_allclose(out, qd * scale[:, None], rtol=1e-15)
    small, s1 = scale_to_limit(np.array([0.1, -0.2]), 6.28)
    assert s1 == 1.0 and np.array_equal(small, [0.1, -0.2])  # exact: within the limit nothing is scaled


def test_damped_step_equals_seed_reference(rng, so101_model, so101):
    # near-singular and healthy poses, velocities large enough to hit the joint-speed limit
    poses = list(so101.random_q(rng, 20)) + [np.array([0.0, 0.0, 1.57, 0.0, 0.0]), np.zeros(5)]
    for q in poses:
        J = mj.site_jacobian(so101_model, so101, q)
        v = rng.normal(size=3) * 0.5
        dq, h = damped_step(J, v, 0.02)
        dq_ref, h_ref = seed_damped_step(J, v, 0.02)
        np.testing.assert_allclose(dq, dq_ref, atol=1e-12)
        assert h.lam == pytest.approx(h_ref["lam"], abs=1e-15)
        assert h.vel_scale == pytest.approx(h_ref["scale"], rel=1e-12)
        assert h.sigma_min == pytest.approx(h_ref["sigma_min"], rel=1e-12)
        assert h.manipulability == pytest.approx(h_ref["manipulability"], rel=1e-12)


def test_bad_inputs_name_the_argument():
    with pytest.raises(InputError, match="block"):
        health(np.zeros((6, 3)), "linear")
    with pytest.raises(InputError, match="J"):
        health(np.zeros((3, 3)))
    with pytest.raises(InputError, match="v_des"):
        damped_step(np.eye(6), np.ones(6), 0.01)


@pytest.mark.parametrize("kw,option", [({"lam": np.nan}, "lam"), ({"lam": -0.1}, "lam"),
                                       ({"lam": np.array([0.1, -0.1])}, "lam"), ({"rcond": np.nan}, "rcond")])
def test_damped_solve_options_are_refused_naming_the_option(kw, option):
    J = np.random.default_rng(14).normal(size=(2, 3, 4))
    v = np.ones((2, 3))
    with pytest.raises(InputError, match=f"^{option}: "):
        damped_solve(J, v, **({"lam": 0.1} | kw))
