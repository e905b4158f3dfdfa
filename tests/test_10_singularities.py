"""Lesson 10 (singularities and conditioning): every claim of experiment.py and build.py, asserted against
MuJoCo's mj_jacSite, closed forms and NumPy's SVD at small sizes."""

import importlib.util
import re
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from conftest import WXAI_XML, mj_site

from physai.course.lesson import fmt_row, verdict

LESSON = "10-singularities"


PLANAR2R_XML = """<mujoco><worldbody>
  <body><joint name="q1" type="hinge" axis="0 0 1"/><geom size="0.01" pos="0.25 0 0"/>
    <body pos="0.5 0 0"><joint name="q2" type="hinge" axis="0 0 1"/><geom size="0.01"/><site name="tip" pos="0.3 0 0"/>
    </body>
  </body>
</worldbody></mujoco>"""


@pytest.fixture(scope="module")
def wxai_model():
    return mujoco.MjModel.from_xml_path(str(WXAI_XML))


@pytest.fixture(scope="module")
def wxai():
    from physai import robots

    return robots.load("wxai")


@pytest.fixture(scope="module")
def sweep(ex):
    return ex.extension_sweep(n=40)


def _mj_position_jacobians(model, chain, qs):
    return np.array([mj_site(model, chain, q)[2][:3] for q in qs])


def _by_claim(claims):
    return {c.claim: c for c in claims}


# ---- 1. the 2-DoF example ----


def _planar2r_jacobian_from_mujoco(q):
    m = mujoco.MjModel.from_xml_string(PLANAR2R_XML)
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    jp = np.zeros((3, 2))
    mujoco.mj_jacSite(m, d, jp, None, 0)
    return d.site_xpos[0][:2].copy(), jp[:2]


def test_two_link_matches_mj_jacSite_and_closed_form_svd(ex):
    r = ex.two_link()
    tip, J = _planar2r_jacobian_from_mujoco([0.0, np.pi / 2])
    np.testing.assert_allclose(r.tip, tip, atol=1e-15)
    np.testing.assert_allclose(r.J, J, atol=1e-15)
    # eig(J J^T) of a 2 x 2 from its trace and determinant
    A = J @ J.T
    tr, det = np.trace(A), np.linalg.det(A)
    eig = np.array([tr + np.sqrt(tr**2 - 4 * det), tr - np.sqrt(tr**2 - 4 * det)]) / 2
    np.testing.assert_allclose(r.sigma, np.sqrt(eig), atol=1e-15)
    np.testing.assert_allclose(r.kappa, np.sqrt(eig[0] / eig[1]), rtol=1e-14)
    v = np.array([0.0, 0.1])
    np.testing.assert_allclose(r.qdot, [v[1] / J[1, 0], -v[1] / J[1, 0]], atol=1e-15)  # J = [[a, a], [b, 0]]
    damped = J.T @ np.linalg.solve(J @ J.T + 0.01 * np.eye(2), v)
    np.testing.assert_allclose(r.qdot_damped, damped, atol=1e-15)
    np.testing.assert_allclose(r.speed_damped, np.linalg.norm(J @ damped), atol=1e-15)


def test_two_link_damped_tip_velocity_turns_off_the_request_by_the_closed_form(ex):
    """Damping scales each singular direction by its own factor, so the tip's velocity leaves the request's line:
    pinned to the planar 2R's closed-form Jacobian (L1 = 0.5, L2 = 0.3) times the damped rates."""
    r = ex.two_link()
    q1, q12 = 0.0, np.pi / 2
    J = np.array([[-0.5 * np.sin(q1) - 0.3 * np.sin(q12), -0.3 * np.sin(q12)],
                  [0.5 * np.cos(q1) + 0.3 * np.cos(q12), 0.3 * np.cos(q12)]])
    v = np.array([0.0, 0.1])
    damped = np.linalg.solve(J.T @ J + 0.01 * np.eye(2), J.T @ v)  # the normal equations of the ridge problem
    np.testing.assert_allclose(r.velocity_damped, J @ damped, atol=1e-14)
    np.testing.assert_allclose(r.sideways_mm, 1000 * abs((J @ damped)[0]), atol=1e-11)  # v is along y: x is across
    assert r.sideways_mm > 1.0  # a visible turn, not round-off


def test_two_link_claims_follow_the_mujoco_jacobian(ex):
    tip, J = _planar2r_jacobian_from_mujoco([0.0, np.pi / 2])
    claims = _by_claim(ex.two_link_claims(ex.two_link()))
    s = np.linalg.svd(J, compute_uv=False)
    qd = np.linalg.solve(J, [0.0, 0.1])
    damped = J.T @ np.linalg.solve(J @ J.T + 0.01 * np.eye(2), [0.0, 0.1])
    expect = {
        "2-DoF q = [0, pi/2] is 'fully extended vertically'": abs(np.linalg.norm(tip) - 0.8) < 1e-3,
        "2-DoF Jacobian": np.allclose(J, [[-0.3, -0.3], [0.8, 0.0]], atol=5e-4, rtol=0),
        "2-DoF singular values (m/rad)": np.allclose(s, [0.85, 0.32], atol=5e-3, rtol=0),
        "2-DoF condition number": abs(s[0] / s[1] - 2.66) < 5e-3,
        "2-DoF qdot = J^-1 [0, 0.1] (rad/s)": np.allclose(qd, [0.125, -0.333], atol=5e-4, rtol=0),
        "2-DoF damping lambda = 0.1 reduces the joint rates slightly":
            0.8 < np.linalg.norm(damped) / np.linalg.norm(qd) < 1.0,
    }
    assert {k: c.verdict for k, c in claims.items()} == {k: verdict(ok) for k, ok in expect.items()}
    assert J[1, 0] == pytest.approx(0.5, abs=1e-15)  # the course source's 0.8 is L1 + L2; cos(q1 + q2) = 0 leaves L1


# ---- 2. typical singular values ----


def test_typical_sigmas_match_svd_of_mj_jacSite(ex, wxai, wxai_model):
    r = ex.typical_sigmas(n_poses=40, seed=3)
    qs = wxai.random_q(np.random.default_rng(3), 40)
    S = np.linalg.svd(_mj_position_jacobians(wxai_model, wxai, qs), compute_uv=False)
    np.testing.assert_allclose(r.sigmas, S, atol=1e-13)
    U, S0, _ = np.linalg.svd(mj_site(wxai_model, wxai, r.q)[2][:3])
    np.testing.assert_allclose(r.radii, S0, atol=1e-13)
    np.testing.assert_allclose(np.abs(np.sum(r.directions * U, axis=0)), 1.0, atol=1e-12)  # same axes up to sign
    lo, hi = np.percentile(S, [10, 90], axis=0)
    np.testing.assert_allclose([r.p10, r.p90], [lo, hi], atol=1e-13)
    seed = np.array([0.5, 0.3, 0.08])
    assert ex.typical_claims(r)[0].verdict == verdict(bool(np.all((lo <= seed) & (seed <= hi))))


# ---- 3. rank loss on the SO-101 ----


def test_rank_loss_map_matches_mj_jacSite(ex, so101, so101_model):
    r = ex.rank_loss_map(n=21)
    for i, j in [(0, 0), (5, 17), (20, 20)]:
        q = np.array([0.0, r.lift_grid[i], r.elbow_grid[j], 0.0, 0.0])
        S = np.linalg.svd(mj_site(so101_model, so101, q)[2][:3], compute_uv=False)
        np.testing.assert_allclose([r.sigma_min[i, j], r.sigma_max_grid[i, j]], [S[-1], S[0]], atol=1e-14)
    S = np.linalg.svd(mj_site(so101_model, so101, r.q_cross)[2][:3], compute_uv=False)
    np.testing.assert_allclose(r.sigma_cross, S, atol=1e-14)
    assert r.sigma_min_min == pytest.approx(r.sigma_min.min(), abs=1e-14)
    np.testing.assert_allclose([r.sigma_max, r.ratio, r.exact_norm], [S[0], S[-1] / S[0], 0.05 / r.sigma_min_min],
                               rtol=1e-12)
    assert ex.rank_loss_claims(r)[0].verdict == verdict(S[-1] / S[0] < 0.02 and S[0] > 0.1)


def test_rank_map_cross_sits_on_the_straight_arm_band_alone(ex, so101, so101_model):
    """The cross: the smallest sigma_min's column (the straight-arm band) at lift 0, where MuJoCo puts the tool far
    from the pan axis (off the dashed bands); along the band sigma_min is flat to the spread the page prints."""
    r = ex.rank_loss_map(n=61)
    j = int(np.argmin(r.sigma_min.min(axis=0)))
    assert r.elbow == r.elbow_grid[j] and abs(r.lift) < 1e-12
    band = np.array([np.linalg.svd(mj_site(so101_model, so101, np.array([0.0, lift, r.elbow, 0.0, 0.0]))[2][:3],
                                   compute_uv=False)[-1] for lift in r.lift_grid])
    np.testing.assert_allclose(r.band_spread, np.ptp(band) / band.min(), rtol=1e-6)
    assert r.band_spread < 1e-3  # the band is flat: where the cross sits along it does not matter
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = r.q_cross
    mujoco.mj_kinematics(so101_model, d)
    pan = so101_model.joint(so101.joint_names[0]).id
    tool = d.site_xpos[so101_model.site(so101.tool_name).id] - d.xanchor[pan]
    assert np.linalg.norm(np.cross(tool, d.xaxis[pan])) > 0.1  # more than 10 cm from the pan axis
    # "one direction is gone; the others move": sigma_2 is tens of times sigma_3 at the cross, in MuJoCo's Jacobian
    S = np.linalg.svd(mj_site(so101_model, so101, r.q_cross)[2][:3], compute_uv=False)
    assert S[1] > 20 * S[2] and S[1] > 0.1


def test_rank_map_pan_band_is_the_tool_over_mujocos_pan_axis(ex, so101, so101_model):
    """The map's dashed line: the tool's signed distance from the shoulder_pan axis within the arm's plane, from
    MuJoCo's joint axes and anchor; where it is zero the pan joint barely moves the tool, and sigma_min is small."""
    r = ex.rank_loss_map(n=21)
    d = mujoco.MjData(so101_model)
    pan = so101_model.joint(so101.joint_names[0]).id
    for i, j in [(0, 0), (5, 17), (20, 20), (10, 3)]:
        q = np.array([0.0, r.lift_grid[i], r.elbow_grid[j], 0.0, 0.0])
        p = mj_site(so101_model, so101, q)[0]
        d.qpos[list(so101.qpos_adr)] = q
        mujoco.mj_kinematics(so101_model, d)
        axis, anchor, lift = d.xaxis[pan], d.xanchor[pan], d.xaxis[pan + 1]
        in_plane = np.cross(lift, axis) / np.linalg.norm(np.cross(lift, axis))  # the arm's plane, horizontal
        assert r.pan_offset[i, j] == pytest.approx((p - anchor) @ in_plane, abs=1e-12)
    # sigma_min <= |J^T n| for the arm plane's normal n (the lift axis); over the pan axis only the pan joint and
    # the wrist roll's short lever move the tool across the plane, so that bound, and sigma_min, are small
    near_axis = np.argwhere(np.abs(r.pan_offset) < 0.005)
    assert len(near_axis)
    for i, j in near_axis:
        p, _, J = mj_site(so101_model, so101, np.array([0.0, r.lift_grid[i], r.elbow_grid[j], 0.0, 0.0]))
        across = np.linalg.norm(J[:3].T @ d.xaxis[pan + 1])
        assert r.sigma_min[i, j] <= across + 1e-12 and across < 0.015


def test_rank_loss_claim_holds_at_the_lesson_grid(ex, so101, so101_model):
    r = ex.rank_loss_map(n=61)
    S = np.linalg.svd(mj_site(so101_model, so101, r.q_cross)[2][:3], compute_uv=False)
    assert S[-1] / S[0] < 0.02 and S[0] > 0.1  # a direction lost, the others still move
    assert ex.rank_loss_claims(r)[0].verdict == "agree"


# ---- 4. to full extension ----


def test_stretch_poses_reach_farthest_and_are_level_in_mujoco(ex, wxai, wxai_model):
    d = mujoco.MjData(wxai_model)
    elbow = np.array([1.5, 2.9])
    for q in ex.stretch_poses(wxai, elbow):
        d.qpos[list(wxai.qpos_adr)] = q
        mujoco.mj_kinematics(wxai_model, d)
        r = d.site_xpos[wxai_model.site(wxai.tool_name).id] - d.xanchor[wxai_model.joint("joint_1").id]
        assert abs(r[2]) < 1e-12  # level with the shoulder
        # no wrist angle on a fine grid reaches farther: the search refined the coarse grid to the optimum
        w = np.linspace(wxai.lower[3], wxai.upper[3], 2001)
        reach = []
        for wi in w:
            d.qpos[list(wxai.qpos_adr)] = np.r_[q[:3], wi, q[4:]]
            mujoco.mj_kinematics(wxai_model, d)
            reach.append(np.linalg.norm(d.site_xpos[wxai_model.site(wxai.tool_name).id]
                                        - d.xanchor[wxai_model.joint("joint_1").id]))
        assert np.max(reach) <= np.linalg.norm(r) + 1e-12


def test_extension_sweep_rates_match_mj_jacSite_and_closed_forms(ex, sweep, wxai, wxai_model):
    r = sweep
    Jp = _mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, r.elbow))
    U, S, _ = np.linalg.svd(Jp)
    np.testing.assert_allclose(r.sigma_min, S[:, -1], atol=1e-13)
    np.testing.assert_allclose(r.sigma_max, S[:, 0], atol=1e-13)
    np.testing.assert_allclose(r.exact_norm, 0.05 / S[:, -1], rtol=1e-9)  # |pinv v| = |v| / sigma_min
    v = 0.05 * U[..., -1]
    fixed = np.array([J.T @ np.linalg.solve(J @ J.T + 0.05**2 * np.eye(3), vi) for J, vi in zip(Jp, v)])
    np.testing.assert_allclose(r.fixed_norm, np.linalg.norm(fixed, axis=1), rtol=1e-9)
    np.testing.assert_allclose(r.fixed_peak, np.abs(fixed).max(axis=1), rtol=1e-9)  # a joint's speed, not the norm
    np.testing.assert_allclose(r.fixed_weak, np.einsum("kij,kj,ki->k", Jp, fixed, U[..., -1]), atol=1e-12)
    assert np.all(r.fixed_norm <= 0.05 / (2 * 0.05) + 1e-12)  # the 1/(2 lambda) bound
    assert np.all(r.adaptive_peaks <= 6.28 + 1e-12)
    exact = np.array([np.linalg.lstsq(J, vi, rcond=None)[0] for J, vi in zip(Jp, v)])
    np.testing.assert_allclose(r.exact_peak, np.abs(exact).max(axis=1), rtol=1e-8)
    tool = np.einsum("kij,kj->ki", Jp, np.clip(exact, -6.28, 6.28))
    np.testing.assert_allclose(r.cos_clip, np.sum(tool * v, 1) / np.linalg.norm(tool, axis=1) / 0.05, atol=1e-9)
    np.testing.assert_allclose(r.cos_scaled, 1.0, atol=1e-12)
    # adaptive damping (Nakamura ramp, closed form) from the normal equations, before any uniform scaling
    lam = 0.05 * np.sqrt(1 - np.clip(S[:, -1] / 0.03, 0, 1) ** 2)
    adaptive = np.array([J.T @ np.linalg.solve(J @ J.T + li**2 * np.eye(3), vi) for J, li, vi in zip(Jp, lam, v)])
    np.testing.assert_allclose(r.adaptive_lam, lam, atol=1e-12)
    np.testing.assert_allclose(r.adaptive_peaks, np.minimum(np.abs(adaptive).max(axis=1), 6.28), rtol=1e-9)
    assert np.all(np.abs(adaptive).max(axis=1) <= 6.28)  # no uniform scaling on this walk: the norms are the solve's
    np.testing.assert_allclose(r.adaptive_norms, np.linalg.norm(adaptive, axis=1), rtol=1e-9)
    assert r.adaptive_norm_max == r.adaptive_norms.max()
    assert r.adaptive_peak == r.adaptive_peaks.max() > 0.05 / (2 * 0.05)  # the printed point: the ramp gives up the fixed-lambda bound


def test_sweep_claims_follow_the_mujoco_numbers(ex, sweep, wxai, wxai_model):
    r = sweep
    assert r.elbow_limit == wxai_model.jnt_range[wxai_model.joint("joint_2").id, 1]
    Jp = _mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, r.elbow))
    U, S, _ = np.linalg.svd(Jp)
    inside = np.flatnonzero(r.elbow <= r.elbow_limit)
    lim, near = inside[-1], int(np.argmax(S[:, -1] < 0.005))
    v = 0.05 * U[..., -1]
    exact = np.linalg.lstsq(Jp[near], v[near], rcond=None)[0]
    tool = Jp[near] @ np.clip(exact, -6.28, 6.28)
    fixed = [J.T @ np.linalg.solve(J @ J.T + 0.05**2 * np.eye(3), vi) for J, vi in zip(Jp, v)]
    expect = [S[lim, -1] < 0.005, S[near, -1] < 0.005, np.linalg.norm(exact) > 10, np.abs(exact).max() > 6.28,
              tool @ v[near] / np.linalg.norm(tool) / 0.05 < 0.99, max(np.linalg.norm(fixed, axis=1)) <= 0.5 + 1e-12,
              (Jp[near] @ fixed[near]) @ U[near, :, -1] < 0.025]
    assert [c.verdict for c in ex.sweep_claims(r)] == [verdict(ok) for ok in expect]


def test_the_straight_wxai_is_singular_in_mujoco(ex, sweep, wxai, wxai_model):
    """The sweep's straight arm (its farthest reach, found by golden-section search) is singular in MuJoCo's
    Jacobian to the search's precision; the sweep stops one step short of it, where sigma_min is small but not 0."""
    J = _mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, np.array([sweep.straight])))[0]
    S = np.linalg.svd(J, compute_uv=False)
    assert S[-1] < 1e-5 and S[0] > 0.5
    assert sweep.elbow[-1] < sweep.straight and 0 < sweep.sigma_min[-1] < sweep.sigma_min[-2]
    assert np.all(np.diff(sweep.sigma_min) < 0)  # no kinks: sigma_min falls at every step toward straight


# ---- 5.-7. duality, units, damping tax ----


def test_force_duality_is_J_transpose_of_mj_jacSite(ex, sweep, wxai, wxai_model):
    d = ex.force_duality(sweep)
    near = int(np.argmax(sweep.sigma_min < 0.005))
    J = _mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, sweep.elbow[near:near + 1]))[0]
    U, S, _ = np.linalg.svd(J)
    np.testing.assert_allclose(d.torque, np.linalg.norm(J.T @ U, axis=0), atol=1e-13)
    np.testing.assert_allclose(d.torque, S, atol=1e-13)  # |J^T u_i| = sigma_i
    np.testing.assert_allclose(np.abs(np.sum(d.directions * U, axis=0)), 1.0, atol=1e-12)  # same axes up to sign
    assert ex.duality_claims(d)[0].verdict == verdict(S[-1] / S[0] < 0.02)


def test_units_condition_numbers_from_mj_jacSite(ex, wxai, wxai_model):
    q = np.array([0.3, 1.0, 0.9, 0.4, -0.5, 0.2])
    u = ex.units(q)
    J = mj_site(wxai_model, wxai, q)[2]
    cond = lambda A: (s := np.linalg.svd(A, compute_uv=False))[0] / s[-1]
    np.testing.assert_allclose(u.m, cond(J), rtol=1e-12)
    np.testing.assert_allclose(u.mm, cond(np.r_[1000 * J[:3], J[3:]]), rtol=1e-12)
    np.testing.assert_allclose(u.scaled, cond(np.r_[J[:3], 0.3 * J[3:]]), rtol=1e-12)
    np.testing.assert_allclose(u.position_mm, u.position, rtol=1e-12)  # a block is unit-free
    assert ex.units_claims(u)[0].verdict == verdict(cond(np.r_[1000 * J[:3], J[3:]]) / cond(J) > 10)


def test_damping_tax_matches_normal_equations_on_mj_jacSite(ex, wxai, wxai_model):
    q = np.array([0.3, 1.0, 0.9, 0.4, -0.5, 0.2])
    t = ex.damping_tax(q, n_directions=20, seed=5)
    Jp = mj_site(wxai_model, wxai, q)[2][:3]
    d = np.random.default_rng(5).normal(size=(20, 3))
    v = 0.05 * d / np.linalg.norm(d, axis=1, keepdims=True)
    qd = (Jp.T @ np.linalg.solve(Jp @ Jp.T + 0.05**2 * np.eye(3), v.T)).T
    np.testing.assert_allclose(t.fixed, np.linalg.norm(qd @ Jp.T - v, axis=1) / 0.05, atol=1e-12)
    assert np.linalg.svd(Jp, compute_uv=False)[-1] > 0.03  # healthy: adaptive lambda is 0, so J qdot = v
    assert t.adaptive.max() < 1e-12
    ramp = 0.05 * np.sqrt(1 - np.clip(t.ramp_sigma / 0.03, 0, 1) ** 2)
    np.testing.assert_allclose(t.lam_ramp, ramp, atol=1e-15)
    steps = np.abs(np.diff(ramp)).max()
    expect = [0 < np.median(np.linalg.norm(qd @ Jp.T - v, axis=1) / 0.05) < 0.1,
              t.adaptive.max() < 1e-12 and ramp[0] == 0.05 and steps < 0.01]
    assert [c.verdict for c in ex.tax_claims(t)] == [verdict(ok) for ok in expect]


def test_main_writes_one_claim_row_per_claim_function(ex, tmp_path, monkeypatch, run_lesson):
    monkeypatch.setattr(ex, "extension_sweep", lambda n=40, f=ex.extension_sweep, **kw: f(40, **kw))
    monkeypatch.setattr(ex, "rank_loss_map", lambda n=21, wrist=0.0, f=ex.rank_loss_map: f(21, wrist))
    claims, _ = run_lesson(ex, False)
    assert len(claims) == 19
    assert {p.name for p in tmp_path.glob("*.png")} == {"sigma_spread.png", "ellipsoids.png", "rank_loss_map.png",
                                                       "extension_sweep.png"}


# ---- build.py ----


def test_svd_by_hand_matches_numpy_svd_of_mj_jacSite(build, wxai, wxai_model):
    for q in wxai.random_q(np.random.default_rng(7), 10):
        J = mj_site(wxai_model, wxai, q)[2][:3]
        U, S, V = build.svd_by_hand(J)
        U0, S0, Vt0 = np.linalg.svd(J, full_matrices=False)
        # eigenvalues of J J^T carry an absolute error ~ eps sigma_max^2, so sigma_min ~ eps sigma_max^2 / sigma_min
        np.testing.assert_allclose(S, S0, atol=1e-14)
        np.testing.assert_allclose(np.abs(np.sum(U * U0, axis=0)), 1.0, atol=1e-12)
        np.testing.assert_allclose(np.abs(np.sum(V * Vt0.T, axis=0)), 1.0, atol=1e-12)
        np.testing.assert_allclose(build.manipulability(J), np.prod(S0), rtol=1e-12)


def test_dls_by_hand_matches_scipy_lstsq_of_the_stacked_system(build, so101, so101_model):
    from scipy.linalg import lstsq

    J = mj_site(so101_model, so101, np.array([0.1, -0.6, 0.9, 0.4, 0.3]))[2][:3]
    v = np.array([0.02, -0.01, 0.03])
    ref = lstsq(np.r_[J, 0.05 * np.eye(5)], np.r_[v, np.zeros(5)])[0]  # min |J qd - v|^2 + lam^2 |qd|^2
    np.testing.assert_allclose(build.dls_by_hand(J, v, 0.05), ref, atol=1e-14)


def test_build_checks_and_claim_from_mj_jacSite(build, audit, so101, so101_model):
    c = build.check_robot("so101", n_poses=8, seed=2)
    assert c.jacobian_vs_mujoco < 1e-14 and c.sigma_vs_numpy < 1e-13 and c.reconstruction < 1e-13
    assert c.sigma_vs_library < 1e-13 and c.manipulability_vs_library < 1e-12 and c.dls_vs_library < 1e-12
    rng = np.random.default_rng(2)
    gains = []
    for q in so101.random_q(rng, 8):
        s = np.linalg.svd(mj_site(so101_model, so101, q)[2][:3], compute_uv=False)[-1]
        rng.normal(size=3)  # the build draws one request per pose from the same generator
        gains.append(s / (s**2 + 0.05**2))  # the filter factor of the weakest direction
    np.testing.assert_allclose(c.peak_gain, max(gains), rtol=1e-12)
    assert audit.build_claims({"checks": [c], "lambda": build.LAMBDA})[0].verdict == verdict(max(gains) <= 10 + 1e-12)


def test_condition_number_is_numpys_cond_of_mj_jacSite_and_inf_at_a_rank_loss(build, wxai, wxai_model):
    for q in wxai.random_q(np.random.default_rng(5), 5):
        J = mj_site(wxai_model, wxai, q)[2][:3]
        np.testing.assert_allclose(build.condition_number(J), np.linalg.cond(J), rtol=1e-13)
    assert build.condition_number(np.array([[1.0, 0.0], [2.0, 0.0]])) == np.inf  # a zero column: sigma_min exactly 0


def test_build_pose_results_follow_the_filter_factor_closed_form(build, so101, so101_model):
    pose = build.one_pose()
    S = np.linalg.svd(mj_site(so101_model, so101, build.Q0)[2][:3], compute_uv=False)
    np.testing.assert_allclose(pose.sigma, S, rtol=1e-13)
    np.testing.assert_allclose(pose.kappa, S[0] / S[-1], rtol=1e-13)
    np.testing.assert_allclose(pose.manipulability, np.prod(S), rtol=1e-12)
    np.testing.assert_allclose(pose.gain_weak, S[-1] / (S[-1] ** 2 + build.LAMBDA**2), rtol=1e-12)
    np.testing.assert_allclose(pose.gain_weak_exact, 1 / S[-1], rtol=1e-13)


def test_two_link_fields_of_the_sources_matrix_match_the_2x2_closed_forms(ex):
    r = ex.two_link()
    # the source's J = [[-0.3, -0.3], [0.8, 0]]: J J^T = [[0.18, -0.24], [-0.24, 0.64]], eigenvalues 0.41 +- sqrt(0.1105)
    eig = 0.41 + np.array([1, -1]) * np.sqrt(0.41**2 - (0.18 * 0.64 - 0.24**2))
    np.testing.assert_allclose(r.source_J_sigma, np.sqrt(eig), rtol=1e-13)
    # Cramer's rule with v = (0, 0.1): det J = 0.24, J^-1 = [[0, 0.3], [-0.8, -0.3]] / det, qdot = [0.03, -0.03] / det
    np.testing.assert_allclose(r.source_J_qdot, [0.03 / 0.24, -0.03 / 0.24], rtol=1e-13)
    np.testing.assert_allclose(r.reach, np.hypot(0.5, 0.3), rtol=1e-14)
    np.testing.assert_allclose(r.extended, 0.5 + 0.3, rtol=1e-14)  # L1 + L2, the arm straight
    tip, J_mj = _planar2r_jacobian_from_mujoco([0.0, np.pi / 2])
    np.testing.assert_allclose(r.J, J_mj, atol=1e-15)
    np.testing.assert_allclose(r.sigma, np.linalg.svd(J_mj, compute_uv=False), rtol=1e-13)


def test_sweep_fields_the_page_reads_obey_the_closed_form_bounds(ex, sweep):
    r = sweep
    near = r.near
    assert near.sigma_min < 0.005 <= r.at_limit.sigma_min and r.at_limit.elbow <= r.elbow_limit
    # along u_min the exact rate is |v| / sigma_min; the solve's relative error is ~eps_mach kappa, kappa ~ 1e2 here
    np.testing.assert_allclose(near.exact_norm, ex.V_WEAK / near.sigma_min, rtol=1e-12)
    assert r.fixed_max <= r.bound + 1e-12
    # adaptive damping's norm stays under its own bound (here |v| / sigma_h) and above fixed damping's
    assert r.bound < r.adaptive_peak <= r.adaptive_norm_max <= r.adaptive_gain_bound + 1e-12
    np.testing.assert_allclose(r.adaptive_gain_bound, ex.V_WEAK / ex.SIGMA_HEALTHY, rtol=1e-15)  # sigma_h < sqrt2 lam
    np.testing.assert_allclose(r.sqrt2_lam, np.sqrt(2) * ex.LAMBDA, rtol=1e-15)



def _adaptive_gain(sigma, sigma_h, lam_max):
    """The damped gain sigma / (sigma^2 + lambda^2) under the ramp lambda^2 = lam_max^2 (1 - (sigma/sigma_h)^2)
    below sigma_h, 0 above (Nakamura and Hanafusa's adaptive damping), written out here as the reference."""
    lam2 = np.where(sigma < sigma_h, lam_max**2 * (1 - (sigma / sigma_h) ** 2), 0.0)
    return sigma / (sigma**2 + lam2)


@pytest.mark.parametrize("sigma_h", [0.02, 0.03, 0.05, 0.0707, 0.0708, 0.1, 0.2, 1.0])
def test_adaptive_peak_gain_is_the_dense_maximum_of_the_ramps_gain(ex, sigma_h):
    """The closed form the page's Break it, Hard exercise and Math details state equals a dense numerical maximum
    of the gain over sigma (a grid of 2 million points up to 4 sigma_h and sigma_h itself, refined by a bounded
    scalar search), and is
    above the fixed-damping bound 1/(2 lam_max) at every threshold."""
    from scipy.optimize import minimize_scalar

    lam = ex.LAMBDA
    sigma = np.sort(np.r_[np.linspace(1e-9, 4 * sigma_h, 2_000_001), sigma_h])  # the threshold itself included
    g = _adaptive_gain(sigma, sigma_h, lam)
    k = int(np.argmax(g))
    lo, hi = sigma[max(k - 1, 0)], sigma[min(k + 1, len(sigma) - 1)]
    best = max(g[k], -minimize_scalar(lambda s: -_adaptive_gain(s, sigma_h, lam), bounds=(lo, hi),
                                      method="bounded", options={"xatol": 1e-15}).fun)
    np.testing.assert_allclose(ex.adaptive_peak_gain(sigma_h, lam), best, rtol=1e-9)
    assert ex.adaptive_peak_gain(sigma_h, lam) > 1 / (2 * lam)


def test_adaptive_damping_with_the_threshold_at_twice_lambda_max_still_exceeds_the_bound(ex, sweep):
    """At sigma_h = 2 lam_max the ramp's gain peaks at 1 / (sqrt(3) lam_max) (a = 3/4): for 5 cm/s and
    lam_max = 0.05 m/rad that is 0.577 rad/s, over fixed damping's 0.5."""
    np.testing.assert_allclose(sweep.adaptive_at_2lam, 0.05 / (np.sqrt(3) * 0.05), rtol=1e-14)
    assert sweep.adaptive_at_2lam > sweep.bound


def test_scene_pictures_ellipsoids_flattened_along_the_stretched_arm(run_lesson, tmp_path, so101_model, so101):
    """scene.py: the picture exists; the singular values are those of MuJoCo's site Jacobian, and stretched out the
    smallest axis (the one the caption says nearly closed) is under a fifth of Q0's and lies along the forearm."""
    from conftest import check_picture, load_lesson

    _, saved = run_lesson(load_lesson(LESSON, "scene.py"), False)
    check_picture(tmp_path, saved["picture"], "so101")
    check_picture(tmp_path, saved["picture_stretched"], "so101")
    for q, s in ((saved["q"], saved["sigma"]), (saved["q_stretched"], saved["sigma_stretched"])):
        J = mj_site(so101_model, so101, np.array(q))[2]
        np.testing.assert_allclose(s, np.linalg.svd(J[:3], compute_uv=False), atol=1e-12)
    s0, s1 = saved["sigma"], saved["sigma_stretched"]
    np.testing.assert_allclose([saved["ratio"], saved["ratio_stretched"]], [s0[0] / s0[2], s1[0] / s1[2]], rtol=1e-12)
    assert s1[-1] < 0.2 * s0[-1]
    assert s1[1] > 0.5 * s1[0] and s1[1] > 50 * s1[2]  # a flat disc: two axes open, one closed (not a needle)
    import mujoco

    p_tool, _, J = mj_site(so101_model, so101, np.array(saved["q_stretched"]))
    d = mujoco.MjData(so101_model)
    d.qpos[list(so101.qpos_adr)] = saved["q_stretched"]
    mujoco.mj_kinematics(so101_model, d)
    U = np.linalg.svd(J[:3])[0]
    forearm = p_tool - d.xpos[so101_model.joint("elbow_flex").bodyid[0]]
    assert abs(U[:, -1] @ forearm) / np.linalg.norm(forearm) > 0.9
    pan = so101_model.joint("shoulder_pan").id
    assert np.linalg.norm(np.cross(p_tool - d.xanchor[pan], d.xaxis[pan])) > 0.3  # the tool far from the pan axis


def test_ellipsoid_panels_share_one_scale_that_holds_both_ellipsoids(ex, sweep, monkeypatch, wxai, wxai_model):
    """Compared panels on one scale: the same limits -L..L and the same labelled ticks -L, 0, L on x, y and z in
    both, L wide enough for either ellipsoid's reach along every axis and no more than 0.1 wider (the ellipsoid
    {J qdot : |qdot| <= 1} reaches |J[i]| along base axis i, J from MuJoCo at the two poses), and each box a cube."""
    import matplotlib.pyplot as plt

    figs = []
    monkeypatch.setattr(ex, "_save", lambda fig, name, **_: figs.append(fig))
    spread, dual = ex.typical_sigmas(200), ex.force_duality(sweep)
    ex.plot_ellipsoids(spread, dual)
    axes = figs[0].axes
    plt.close(figs[0])
    assert len(axes) == 2 and len({(ax.get_xlim(), ax.get_ylim(), ax.get_zlim()) for ax in axes}) == 1
    near = sweep.elbow[int(np.argmax(sweep.sigma_min < ex.NEAR_SIGMA))]
    Js = [mj_site(wxai_model, wxai, spread.q)[2][:3],
          _mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, np.array([near])))[0]]
    reach = np.max([np.linalg.norm(J, axis=1) for J in Js], axis=0)
    half = axes[0].get_xlim()[1]
    assert all(lim == (-half, half) for lim in (axes[0].get_xlim(), axes[0].get_ylim(), axes[0].get_zlim()))
    assert reach.max() <= half < reach.max() + 0.1
    for ax in axes:
        for ticks in (ax.get_xticks(), ax.get_yticks(), ax.get_zticks()):
            np.testing.assert_array_equal(ticks, [-half, 0.0, half])
        np.testing.assert_allclose(ax.get_box_aspect(), ax.get_box_aspect()[0], rtol=1e-9)


# ---- what the page's text says, each held to MuJoCo or to the edit it describes ----


def test_the_table_shows_fixed_dampings_peak_where_sigma_min_is_nearest_lambda(ex, sweep, wxai, wxai_model):
    """The page says the walk reaches the 1/(2 lambda) bound where sigma_min ~ lambda: that pose is a table row, the
    row with the largest fixed-damping norm, and in MuJoCo's Jacobians it is the walk's pose nearest lambda."""
    assert sweep.at_lambda in sweep.rows
    assert max(row.fixed_norm for row in sweep.rows) == sweep.at_lambda.fixed_norm == sweep.fixed_max
    S = np.linalg.svd(_mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, sweep.elbow)), compute_uv=False)
    nearest = np.argsort(np.abs(S[:, -1] - 0.05))[:2]  # the gain is flat at its peak: one of the two closest poses
    assert sweep.at_lambda.elbow in sweep.elbow[nearest]


def test_the_walk_samples_the_elbow_limit_exactly(ex, sweep, wxai, wxai_model):
    """'sigma_min at the limit' is taken at the limit itself (MuJoCo's joint range), not at a grid pose short of it."""
    limit = wxai_model.jnt_range[wxai_model.joint("joint_2").id, 1]
    assert sweep.at_limit.elbow == limit and sweep.at_limit in sweep.rows and sweep.at_limit.inside
    J = _mj_position_jacobians(wxai_model, wxai, ex.stretch_poses(wxai, np.array([limit])))[0]
    assert sweep.at_limit.sigma_min == pytest.approx(np.linalg.svd(J, compute_uv=False)[-1], abs=1e-13)


def test_pinv_drops_the_lost_direction_only_at_the_exact_straight_arm(ex):
    """J^-1 does not exist at the straight planar arm; NumPy's pinv of MuJoCo's Jacobian returns 0 for a request along
    the arm there, and |v| / sigma_min a step short: the answer jumps as the rank changes."""
    r = ex.two_link()
    _, J0 = _planar2r_jacobian_from_mujoco([0.0, 0.0])
    _, J1 = _planar2r_jacobian_from_mujoco([0.0, r.step])
    np.testing.assert_allclose(r.sigma_straight, np.linalg.svd(J0, compute_uv=False), atol=1e-15)
    assert r.sigma_straight[1] == 0.0 and np.linalg.matrix_rank(J0) == 1
    v = np.array([0.05, 0.0])
    assert r.pinv_straight == np.linalg.norm(np.linalg.pinv(J0) @ v) == 0.0
    assert r.pinv_short == pytest.approx(np.linalg.norm(np.linalg.solve(J1, v)), rel=1e-9)
    assert r.pinv_short > 100


def _mj_pan_offset(model, chain, d, q):
    pan = model.joint(chain.joint_names[0]).id
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(model, d)
    in_plane = np.cross(d.xaxis[pan + 1], d.xaxis[pan])
    return (d.site_xpos[model.site(chain.tool_name).id] - d.xanchor[pan]) @ in_plane / np.linalg.norm(in_plane)


def test_the_pan_bands_are_nearly_lost_on_the_wrist_rolls_lever(ex, so101, so101_model):
    """The dashed bands lose no rank: with the tool exactly over MuJoCo's pan axis (bisected in MuJoCo), sigma_min is
    the tool's offset from the wrist-roll axis (MuJoCo's site and joint axis), several times the straight band's."""
    r = ex.rank_loss_map(n=61)
    d = mujoco.MjData(so101_model)
    sigmas = []
    for lift in r.lift_grid:
        off = [_mj_pan_offset(so101_model, so101, d, np.array([0.0, lift, e, 0.0, 0.0])) for e in r.elbow_grid]
        for j in np.flatnonzero(np.sign(off[:-1]) != np.sign(off[1:])):
            lo, hi, s_lo = r.elbow_grid[j], r.elbow_grid[j + 1], np.sign(off[j])
            for _ in range(50):
                mid = (lo + hi) / 2
                if np.sign(_mj_pan_offset(so101_model, so101, d, np.array([0.0, lift, mid, 0.0, 0.0]))) == s_lo:
                    lo = mid
                else:
                    hi = mid
            J = mj_site(so101_model, so101, np.array([0.0, lift, (lo + hi) / 2, 0.0, 0.0]))[2][:3]
            sigmas.append(np.linalg.svd(J, compute_uv=False)[-1])
    assert r.pan_band_sigma == pytest.approx(np.median(sigmas), rel=1e-9)
    d.qpos[:] = 0
    mujoco.mj_kinematics(so101_model, d)
    roll = so101_model.joint(so101.joint_names[4]).id
    tool = d.site_xpos[so101_model.site(so101.tool_name).id]
    lever = np.linalg.norm(np.cross(d.xaxis[roll], tool - d.xanchor[roll]))
    assert r.roll_offset == pytest.approx(lever, abs=1e-12)
    assert r.pan_band_sigma == pytest.approx(lever, rel=0.01)  # "sigma_min ~ the offset", as the page pairs them
    assert r.pan_band_sigma > 4 * r.sigma_min_min  # small, but far from the straight band's lost direction


def test_the_intro_stretched_pose_shares_the_crosss_sigma_min_not_its_sigma_2(ex, so101, so101_model):
    """The page: the introduction's stretched pose is on the cross's band at another lift; sigma_min depends on the
    elbow alone (the same to the page's four decimals in MuJoCo), sigma_2 does not."""
    from conftest import load_lesson

    scene, r = load_lesson(LESSON, "scene.py"), ex.rank_loss_map(n=61)
    assert abs(scene.Q_STRETCHED[2] - r.elbow) < r.elbow_grid[1] - r.elbow_grid[0]
    S_intro = np.linalg.svd(mj_site(so101_model, so101, scene.Q_STRETCHED)[2][:3], compute_uv=False)
    S_cross = np.linalg.svd(mj_site(so101_model, so101, r.q_cross)[2][:3], compute_uv=False)
    assert f"{S_intro[-1]:.4f}" == f"{S_cross[-1]:.4f}" and abs(S_intro[1] - S_cross[1]) > 0.1


def _quizzes(text):
    for block in re.findall(r"\{% call quiz\(.*?%\}(.*?)\{% endcall %\}", text, re.S):
        yield ([line[2:] for line in block.splitlines() if line.startswith("+ ")],
               [line[2:] for line in block.splitlines() if line.startswith("- ")])


def test_no_quiz_gives_its_answer_away_by_length():
    """The correct option is never strictly the longest, or all options are within 30 % of each other's length."""
    text = (Path(__file__).resolve().parent.parent / "experiments" / LESSON / "lesson.md").read_text()
    quizzes = list(_quizzes(text))
    assert len(quizzes) == 5
    for right, wrong in quizzes:
        assert len(right) == 1 and wrong
        lengths = [len(o) for o in right + wrong]
        assert len(right[0]) <= max(map(len, wrong)) or max(lengths) <= 1.3 * min(lengths), (right, wrong)


def _load_copy(path):
    """Import an edited copy of a lesson script under its own module name (dataclasses look their module up)."""
    name = "lesson_10_edited_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def test_the_clip_edit_the_page_names_changes_steps_last_printed_line(ex, tmp_path, capsys):
    """Break it's edit, applied word for word to a copy of experiment.py: Step 4's last printed line, which said the
    command keeps the direction, now says it turns off it, with the unedited walk's smallest clip cosine."""
    folder = Path(__file__).resolve().parent.parent / "experiments" / LESSON
    old, new = "scaled, _ = singularity.scale_to_limit(exact, QDOT_LIMIT)", "scaled = clipped"
    page = " ".join((folder / "lesson.md").read_text().split())
    assert f"replace `{old}` with `{new}`" in page and '"turns the tool off the requested direction"' in page
    source = (folder / "experiment.py").read_text()
    assert source.count(old) == 1
    (tmp_path / "experiment.py").write_text(source.replace(old, new))
    edited = _load_copy(tmp_path / "experiment.py")

    def last_line(module):
        r = module.extension_sweep(n=40)
        module.print_sweep(r)
        return r, capsys.readouterr().out.strip().splitlines()[-1]

    try:
        (r0, before), (r1, after) = last_line(ex), last_line(edited)
    finally:
        del sys.modules[edited.__name__]
    assert "keeps the requested direction" in before and "turns" not in before
    assert "turns the tool off the requested direction" in after and "keeps" not in after
    assert r1.cos_scaled_min == pytest.approx(r0.cos_clip_min, abs=1e-12) and r0.cos_clip_min < 0.1
    assert f"min cos {r0.cos_clip_min:.12f}" in after


def test_the_scene_draws_each_semi_axis_at_the_scale_the_page_states(so101, so101_model):
    """The page says each semi-axis is drawn SCALE m long per m/rad: the drawn axes are SCALE times MuJoCo's singular
    values, along its left singular vectors, centred on MuJoCo's tool site."""
    from conftest import load_lesson

    scene = load_lesson(LESSON, "scene.py")
    for q in (scene.Q0, scene.Q_STRETCHED):
        e, _ = scene.ellipsoid(scene.robots.load("so101"), q)
        p, _, J = mj_site(so101_model, so101, q)
        U, S, _ = np.linalg.svd(J[:3])
        np.testing.assert_allclose(np.linalg.norm(e.axes, axis=0), scene.SCALE * S, atol=1e-12)
        np.testing.assert_allclose(np.abs(np.sum(e.axes / np.linalg.norm(e.axes, axis=0) * U, axis=0)), 1, atol=1e-9)
        np.testing.assert_allclose(e.center, p, atol=1e-12)


def test_the_q0_picture_shows_the_lens_edge_on_with_the_ratio_the_page_states(so101, so101_model):
    """The caption and page say Q0's ellipsoid is a thin lens seen edge-on along its middle axis, sigma_1 about
    `ratio` times sigma_3, and the two pictures at one camera distance: the saved ratio is MuJoCo's; the camera's line
    of sight (MuJoCo's free camera: azimuth about +z from +x, elevation up from the xy plane) runs along u_2 to within
    a few degrees, so u_1 and u_3 lie across the view."""
    from conftest import load_lesson

    scene = load_lesson(LESSON, "scene.py")
    U, S, _ = np.linalg.svd(mj_site(so101_model, so101, scene.Q0)[2][:3])
    az, el = np.radians(scene.VIEW["azimuth"]), np.radians(scene.VIEW["elevation"])
    sight = np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
    assert abs(sight @ U[:, 1]) > np.cos(np.radians(10)) and abs(sight @ U[:, 0]) < 0.2 and abs(sight @ U[:, 2]) < 0.2
    assert scene.VIEW["distance"] == scene.VIEW_STRETCHED["distance"]
    assert 4 < S[0] / S[2] < 6  # thin, but not closed as the stretched pose's is


def test_the_sweep_figures_legends_are_large_and_below_the_panels(ex, sweep, monkeypatch):
    """Legible when the figure is shrunk to the page: legend text at 11 pt or more, each legend under its panel."""
    import matplotlib.pyplot as plt

    figs = []
    monkeypatch.setattr(ex, "_save", lambda fig, name: figs.append(fig))
    ex.plot_sweep(sweep)
    fig = figs[0]
    fig.canvas.draw()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert all(t.get_fontsize() >= 11 for t in legend.get_texts())
        assert legend.get_window_extent().y1 <= ax.get_window_extent().y0  # below the axes, off the curves
    plt.close(fig)


def test_the_damp_harder_edit_reproduces_the_measured_ahead_numbers_the_page_reads(ex, tmp_path, monkeypatch, wxai,
                                                                                  wxai_model, capsys):
    """Break it's `LAMBDA = 0.2`, applied word for word to a copy of experiment.py: the walk's bound, its largest norm
    and the tool's speed along the weak direction are the filter factors' closed forms at the walk's sigma_min
    (pinned to MuJoCo above), the tax at the healthy pose the normal equations on MuJoCo's Jacobian; and they are
    the numbers the unedited run measured ahead (``retuned``), which the page reads."""
    folder = Path(__file__).resolve().parent.parent / "experiments" / LESSON
    page = " ".join((folder / "lesson.md").read_text().split())
    assert "Set `LAMBDA = 0.2` at the top" in page and "R.experiment.retuned.tax_median" in page
    source = (folder / "experiment.py").read_text()
    line = re.search(r"^LAMBDA = [0-9.]+", source, re.M)
    assert line and source.count(line.group()) == 1
    (tmp_path / "experiment.py").write_text(source.replace(line.group(), "LAMBDA = 0.2"))
    edited = _load_copy(tmp_path / "experiment.py")
    spread = ex.typical_sigmas(300)
    try:
        monkeypatch.setattr(edited, "_save", lambda fig, name: None)
        r = edited.extension_sweep(n=40)
        edited.plot_sweep(r)
        capsys.readouterr()
        edited.print_sweep(r)
        printed = capsys.readouterr().out
        tax = edited.damping_tax(spread.q)
    finally:
        del sys.modules[edited.__name__]
    ahead = ex.retuned(spread, n=40)
    lam, s = 0.2, r.sigma_min
    assert ahead.lam == lam and r.bound == ahead.bound == pytest.approx(0.05 / (2 * lam), rel=1e-15)
    assert f"bound |v|/(2 lambda): {0.05 / (2 * lam):.3f} rad/s" in printed  # as the page states it, 3 decimals
    # sigma_min stays below lam over the whole walk, so the gain only falls: the peak is the first, most bent pose,
    # and the row of the unedited walk's peak leaves the printed table
    assert s.max() < lam and ahead.walk_sigma_max == pytest.approx(s.max(), rel=1e-12)
    assert ahead.fixed_max_elbow == r.elbow[0] == r.rows[0].elbow and r.rows[0].fixed_norm == r.fixed_max
    old_peak = ex.extension_sweep(n=40).at_lambda.elbow
    assert f"{old_peak:11.3f}" not in printed and old_peak not in [row.elbow for row in r.rows]
    np.testing.assert_allclose(r.fixed_norm, 0.05 * s / (s**2 + lam**2), rtol=1e-9)
    np.testing.assert_allclose(r.fixed_weak, 0.05 * s**2 / (s**2 + lam**2), rtol=1e-7, atol=1e-15)
    assert ahead.fixed_max == pytest.approx(r.fixed_max, rel=1e-12) and r.fixed_max <= r.bound
    # adaptive damping's bound does not tighten with lambda_max = 0.2 at the unchanged threshold: its largest gain
    # stays |v| / sigma_h (reference: a brute-force maximum over a fine grid of sigma), the number the page reads
    grid = np.linspace(1e-6, 1.0, 2_000_001)
    lam2 = np.where(grid < ex.SIGMA_HEALTHY, lam**2 * (1 - (grid / ex.SIGMA_HEALTHY) ** 2), 0.0)
    brute = 0.05 * np.max(grid / (grid**2 + lam2))
    # rtol: the grid step over sigma_h, 5e-7 / 0.03, twice
    np.testing.assert_allclose([r.adaptive_gain_bound, ex.extension_sweep(n=40).adaptive_gain_bound], brute, rtol=4e-5)
    assert r.adaptive_norm_max <= r.adaptive_gain_bound + 1e-12
    assert ahead.near_fixed_weak_mm == pytest.approx(1000 * r.near.fixed_weak, rel=1e-12)
    # LAMBDA is also adaptive damping's lambda_max: the summary's closed-form bound with the threshold at 2 lambda,
    # 1 / (sqrt(3) lambda) x 5 cm/s, moves with it
    assert ahead.adaptive_at_2lam == r.adaptive_at_2lam == pytest.approx(0.05 / (np.sqrt(3) * lam), rel=1e-14)
    assert f"{0.05 / (np.sqrt(3) * lam):.3f} with the threshold at 2 lambda" in printed
    Jp = mj_site(wxai_model, wxai, spread.q)[2][:3]
    d = np.random.default_rng(0).normal(size=(20_000, 3))
    v = 0.05 * d / np.linalg.norm(d, axis=1, keepdims=True)
    qd = (Jp.T @ np.linalg.solve(Jp @ Jp.T + lam**2 * np.eye(3), v.T)).T
    miss = np.median(np.linalg.norm(qd @ Jp.T - v, axis=1) / 0.05)
    assert tax.fixed_median == pytest.approx(miss, rel=1e-9) and ahead.tax_median == pytest.approx(miss, rel=1e-9)
    assert ahead.tax_median > 5 * ex.damping_tax(spread.q).fixed_median  # the page: the miss grows


def test_raising_the_threshold_lowers_the_peak_to_the_closed_form_and_turns_damping_on_more_often(ex, wxai, wxai_model):
    """Break it's SIGMA_HEALTHY = 2 lambda_max: the walk's largest adaptive norm does not exceed the ramp's closed-form
    peak 1/(sqrt(3) lambda_max) x 5 cm/s, and on the page's walk comes within 1 % of it; the share of random poses
    the damping switches on at is the share whose smallest singular value of MuJoCo's Jacobian lies below each
    threshold."""
    spread = ex.typical_sigmas(300)
    ahead = ex.retuned(spread)
    peak = 0.05 / (np.sqrt(3) * 0.05)
    assert ahead.sigma_healthy == 0.1 and peak * 0.99 < ahead.adaptive_norm_max <= peak + 1e-12
    assert ahead.adaptive_norm_max > 0.05 / (2 * 0.05)  # still above fixed damping's bound, as the page says
    q = wxai.random_q(np.random.default_rng(0), 300)
    weakest = np.array([np.linalg.svd(mj_site(wxai_model, wxai, qi)[2][:3], compute_uv=False)[-1] for qi in q])
    assert ahead.on_before == pytest.approx(np.mean(weakest < 0.03), abs=1e-12)
    assert ahead.on_after == pytest.approx(np.mean(weakest < 0.1), abs=1e-12)
    assert ahead.on_after > ahead.on_before


def test_where_a_dashed_line_crosses_the_straight_band_two_directions_are_weak(ex, so101, so101_model):
    """The page explains the dashed line's missing stripe near the vertical band: at the crossing the tool is over
    MuJoCo's pan axis on the straight-arm band, and MuJoCo's Jacobian has two small singular values, the smaller along
    the arm, the other across the arm's plane (along the lift axis): the map, showing only the smallest, hides it."""
    r = ex.rank_loss_map(n=61)
    d = mujoco.MjData(so101_model)
    assert abs(_mj_pan_offset(so101_model, so101, d, r.crossing_q)) < 1e-9
    assert abs(r.crossing_q[2] - r.elbow) <= r.elbow_grid[1] - r.elbow_grid[0]
    p, _, J = mj_site(so101_model, so101, r.crossing_q)
    U, S, _ = np.linalg.svd(J[:3])
    np.testing.assert_allclose(r.crossing_sigma, S, atol=1e-14)
    assert S[2] < S[1] < 1.5 * r.pan_band_sigma and S[0] > 20 * S[1]
    d.qpos[list(so101.qpos_adr)] = r.crossing_q
    mujoco.mj_kinematics(so101_model, d)
    lift_axis = d.xaxis[so101_model.joint(so101.joint_names[1]).id]
    forearm = p - d.xanchor[so101_model.joint(so101.joint_names[2]).id]
    assert abs(U[:, 1] @ lift_axis) > 0.9 and abs(U[:, 2] @ forearm) / np.linalg.norm(forearm) > 0.9


def test_step_4_prints_the_tables_adaptive_norm_under_the_pages_label(ex, sweep, capsys):
    """The page's "adaptive norm" column is |qdot| of damped_step, not its largest joint: the transcript prints the
    same quantity (adaptive_norms, pinned to the normal equations on mj_jacSite in the sweep test above)."""
    ex.print_sweep(sweep)
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, s in enumerate(lines) if s.lstrip().startswith("elbow (rad)"))
    assert "|qd| adaptive" in lines[header] and "adaptive max" not in lines[header]
    for row, text in zip(sweep.rows, lines[header + 1:]):
        i = int(np.argmin(np.abs(sweep.elbow - row.elbow)))
        assert float(text.split()[6]) == pytest.approx(sweep.adaptive_norms[i], abs=6e-4)
        assert sweep.adaptive_norms[i] >= sweep.adaptive_peaks[i]


def test_both_kinds_of_band_are_nearly_lost_not_lost_in_mujoco(ex, so101, so101_model):
    """The page calls the straight-arm band and the pan bands "nearly lost": MuJoCo's sigma_min at the cross and the
    pan band's median are both far above round-off and within a factor ten of each other."""
    page = (Path(__file__).resolve().parent.parent / "experiments" / LESSON / "lesson.md").read_text()
    assert "one direction nearly lost, two still moving" in page and "gone" not in page
    r = ex.rank_loss_map(n=61)
    cross = np.linalg.svd(mj_site(so101_model, so101, r.q_cross)[2][:3], compute_uv=False)[-1]
    assert 1e-3 < cross < r.pan_band_sigma < 10 * cross


def test_the_elbow_limits_sigma_min_is_far_from_zero_yet_in_the_bottom_tenth(ex, sweep, wxai, wxai_model):
    """The Predict answer and "On the real robot": at the elbow limit MuJoCo's sigma_min is far from the straight arm's
    (over ten times the nearly straight pose's) yet below the 10th percentile of the page's random in-limit poses."""
    page = " ".join((Path(__file__).resolve().parent.parent / "experiments" / LESSON / "lesson.md").read_text().split())
    assert "Far from zero, though in the bottom tenth of random poses" in page
    J = mj_site(wxai_model, wxai, ex.stretch_poses(wxai, np.array([wxai.upper[2]]))[0])[2][:3]
    at_limit = np.linalg.svd(J, compute_uv=False)[-1]
    assert at_limit > 10 * sweep.near.sigma_min
    assert at_limit < ex.typical_sigmas(5000).p10[2]  # the page's sample size and seed


def test_the_typical_poses_four_printed_decimals_reproduce_steps_6_and_7(ex, wxai, wxai_model):
    """The page prints the typical pose to four decimals and says that is enough to reproduce Steps 6 and 7: from
    that rounded pose, MuJoCo's Jacobian gives the same condition numbers, radii and damping tax to the digits the
    page prints (the tax from the normal equations, 20000 seeded directions as the run draws them)."""
    spread = ex.typical_sigmas(5000)
    q = np.round(spread.q, 4)
    J = mj_site(wxai_model, wxai, q)[2]
    cond = np.linalg.cond
    exact, tax = ex.units(spread.q), ex.damping_tax(spread.q)
    assert f"{cond(J):.2f}" == f"{exact.m:.2f}" and f"{cond(np.r_[1000 * J[:3], J[3:]]):.0f}" == f"{exact.mm:.0f}"
    assert f"{cond(J[:3]):.3f}" == f"{exact.position:.3f}"
    assert f"{cond(np.r_[J[:3], 0.3 * J[3:]]):.2f}" == f"{exact.scaled:.2f}"
    S = np.linalg.svd(J[:3], compute_uv=False)
    assert [f"{s:.3f}" for s in S] == [f"{s:.3f}" for s in spread.radii]
    d = np.random.default_rng(0).normal(size=(20_000, 3))
    v = 0.05 * d / np.linalg.norm(d, axis=1, keepdims=True)
    Jp = J[:3]
    miss = np.linalg.norm((Jp @ (Jp.T @ np.linalg.solve(Jp @ Jp.T + 0.05**2 * np.eye(3), v.T))).T - v, axis=1) / 0.05
    assert f"{np.median(miss):.1%}" == f"{tax.fixed_median:.1%}" and f"{miss.max():.1%}" == f"{tax.fixed_max:.1%}"
    assert f"{S[-1]:.3f}" == f"{tax.sigma_min:.3f}"


def _fibonacci_sphere(n: int) -> np.ndarray:
    """``n`` unit vectors spread evenly over the sphere (the golden-angle spiral): equal-area quadrature nodes."""
    z = 1 - (2 * np.arange(n) + 1) / n
    phi = np.pi * (3 - np.sqrt(5)) * np.arange(n)
    r = np.sqrt(1 - z**2)
    return np.c_[r * np.cos(phi), r * np.sin(phi), z]


@pytest.mark.parametrize("lam", [0.05, 0.2])
def test_the_median_tax_is_the_spheres_median_of_the_filter_factors_closed_form(ex, wxai, wxai_model, lam):
    """Step 7's and Break it's median miss over the run's random directions against the median over the whole sphere
    of the closed form: along u_i the miss is lam^2 / (sigma_i^2 + lam^2) of the request (SVD of MuJoCo's Jacobian),
    evaluated on 400000 evenly spread directions. The sample median is within four of its standard errors,
    1 / (2 f(m) sqrt(n)) with f the density of the miss at the median; for Step 7, two standard errors are under the
    tenth of a percent the page says the sample pins it to. The worst miss is the closed form along u_3."""
    spread = ex.typical_sigmas(5000)
    t = ex.damping_tax(spread.q, lam=lam)
    U, S, _ = np.linalg.svd(mj_site(wxai_model, wxai, spread.q)[2][:3])
    factor = lam**2 / (S**2 + lam**2)
    miss = np.sort(np.linalg.norm((_fibonacci_sphere(400_000) @ U) * factor, axis=1))
    m = np.median(miss)
    width = 0.01 * m  # the density at the median from the share of the sphere within +-1 % of it
    f = np.mean(np.abs(miss - m) < width) / (2 * width)
    se = 1 / (2 * f * np.sqrt(t.n))
    assert abs(t.fixed_median - m) < 4 * se
    if lam == ex.LAMBDA:  # the page: this many directions pin Step 7's median to about a tenth of a percent (2 SE)
        assert 2 * se < 1e-3
    assert t.fixed_max <= factor[-1] + 1e-12 and t.fixed_max > 0.99 * factor[-1]


def test_the_walks_printed_poses_reproduce_its_sigmas_in_mujoco(ex, sweep, wxai, wxai_model, capsys):
    """Step 4 prints the walk's first pose, the pose at the elbow's limit and the nearly straight pose Step 5 studies;
    from those printed digits MuJoCo's Jacobian gives the singular values the page quotes to the digits it prints,
    and the nearly straight pose is the first of the walk with sigma_min below 0.005."""
    ex.print_sweep(sweep)
    printed = capsys.readouterr().out
    d = ex.force_duality(sweep)
    for q, row, sigma in ((sweep.q_first, sweep.rows[0], None), (sweep.q_limit, sweep.at_limit, None),
                          (sweep.q_near, sweep.near, d.sigma)):
        line = fmt_row(q, 8, 5)
        assert line in printed
        S = np.linalg.svd(mj_site(wxai_model, wxai, np.array([float(x) for x in line.split()]))[2][:3],
                          compute_uv=False)
        assert f"{S[-1]:.4f}" == f"{row.sigma_min:.4f}" and q[2] == row.elbow
        if sigma is not None:
            assert [f"{s:.5f}" for s in S] == [f"{s:.5f}" for s in sigma]
    assert sweep.near.sigma_min < 0.005 <= sweep.sigma_min[np.searchsorted(sweep.elbow, sweep.near.elbow) - 1]
