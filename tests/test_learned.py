"""physai.learned: datasets pinned to MuJoCo, the FK-consistency gradient pinned to central differences,
training beats the mean pose, the hybrid never loses to its guess, save/load is lossless plain NumPy."""

import json

import jax
import numpy as np
import pytest

from physai import mj, robots
from physai.errors import InputError
from physai.kinematics import fk
from physai.learned import (
    dls_refine, fk_loss, init_model, load, position_error, predict, sample_dataset, save, train,
)


def test_dataset_inside_limits_reproducible_and_targets_match_mujoco_site(so101, so101_model):
    a = sample_dataset(so101, 500, np.random.default_rng(5), seed=5)
    b = sample_dataset(so101, 500, np.random.default_rng(5), seed=5)
    c = sample_dataset(so101, 500, np.random.default_rng(6), seed=6)
    assert np.all((a.q >= so101.lower) & (a.q <= so101.upper))
    assert np.array_equal(a.q, b.q) and np.array_equal(a.x, b.x)
    assert not np.array_equal(a.q, c.q)
    for q, x in zip(a.q[:20], a.x[:20]):
        assert np.abs(mj.site_pose(so101_model, so101, q)[:3, 3] - x).max() <= 1e-12


def test_dataset_region_rejection_keeps_only_targets_inside_it():
    chain = robots.load("planar2r")
    d = sample_dataset(chain, 300, np.random.default_rng(1), region=lambda x: x[:, 0] >= 0.0)
    assert len(d) == 300 and np.all(d.x[:, 0] >= 0.0)
    with pytest.raises(InputError, match="region"):
        sample_dataset(chain, 10, np.random.default_rng(1), region=lambda x: x[:, 0] > 1.0, max_draws=3)


@pytest.mark.usefixtures("x64")
def test_fk_loss_gradient_equals_central_differences_and_value_equals_numpy_fk(so101):
    rng = np.random.default_rng(3)
    data = sample_dataset(so101, 16, rng)
    model = init_model(so101, data.x, rng, hidden=(8,), head="bounded")
    loss = jax.jit(lambda params: fk_loss(params, model, so101, data.x))
    value, grad = jax.value_and_grad(loss)(model.params)
    # The loss value is the NumPy FK reference's mean squared miss.
    ref = np.mean(np.sum((fk(so101, predict(model, data.x)).p - data.x) ** 2, axis=1))
    assert abs(float(value) - ref) <= 1e-14
    # Directional derivative along random directions and single weights, central differences with eps = 1e-6:
    # truncation ~ eps^2 * |L'''| and round-off ~ 1e-16 |L| / eps stay below 1e-8 of the derivative here.
    eps = 1e-6
    directions = [{k: rng.standard_normal(v.shape) for k, v in model.params.items()} for _ in range(3)]
    for key in ("W0", "b0", "W1", "b1"):
        d = {k: np.zeros_like(v) for k, v in model.params.items()}
        d[key].flat[0] = 1.0
        directions.append(d)
    for d in directions:
        plus = {k: v + eps * d[k] for k, v in model.params.items()}
        minus = {k: v - eps * d[k] for k, v in model.params.items()}
        fd = (float(loss(plus)) - float(loss(minus))) / (2 * eps)
        analytic = sum(float(np.sum(np.asarray(grad[k]) * d[k])) for k in d)
        assert abs(fd - analytic) <= 1e-6 * abs(analytic)


def test_tiny_trained_model_beats_mean_pose_by_a_factor_of_five(so101):
    data = sample_dataset(so101, 4000, np.random.default_rng(0))
    test = sample_dataset(so101, 300, np.random.default_rng(1))
    model = init_model(so101, data.x, np.random.default_rng(2), hidden=(32, 32), head="bounded")
    result = train(model, so101, data, loss="fk", steps=400, learning_rate=1e-2, seed=3)
    assert result.reason == "completed"
    net = np.median(position_error(so101, predict(result.model, test.x), test.x))
    mean_pose = np.median(position_error(so101, np.broadcast_to(data.q.mean(0), test.q.shape), test.x))
    assert net < 0.2 * mean_pose


def test_joint_regression_learns_the_mean_of_the_two_elbows_closed_form_symmetry(so101):
    # Uniform joints put equal density on elbow-up and elbow-down (|det J| = l1 l2 |sin q2| is even in q2),
    # so the conditional mean of q2 given the target is 0: the straight arm, whatever the true elbow angle.
    chain = robots.load("planar2r")
    half = lambda x: x[:, 0] >= 0.0  # noqa: E731  (q1 then never wraps around +-pi)
    data = sample_dataset(chain, 4000, np.random.default_rng(0), region=half)
    test = sample_dataset(chain, 300, np.random.default_rng(1), region=half)
    model = init_model(chain, data.x, np.random.default_rng(2), hidden=(32, 32))
    result = train(model, chain, data, loss="joint", steps=600, learning_rate=1e-2, seed=3)
    q = predict(result.model, test.x)
    assert np.median(np.abs(q[:, 1])) < 0.25 * np.median(np.abs(test.q[:, 1]))
    with pytest.raises(InputError, match="does not match"):
        train(model, chain, sample_dataset(so101, 10, np.random.default_rng(0)), steps=100)


def _numpy_mlp(model, x):
    """Independent reference for predict: the documented network written out in NumPy float64."""
    h = (x - model.x_mean) / model.x_scale
    for i in range(model.n_layers):
        h = h @ model.params[f"W{i}"] + model.params[f"b{i}"]
        h = np.tanh(h) if i < model.n_layers - 1 or model.head == "bounded" else h
    return model.q_mid + model.q_half * h


def test_train_and_predict_run_in_float64_whatever_the_callers_jax_setting_and_leave_it(so101):
    data = sample_dataset(so101, 256, np.random.default_rng(5))
    model = init_model(so101, data.x, np.random.default_rng(6), hidden=(16,), head="bounded")
    runs = {}
    for flag in (False, True, False):
        with jax.enable_x64(flag):
            result = train(model, so101, data, loss="fk", steps=200, seed=7)
            runs[flag] = result.loss_history, predict(result.model, data.x)
            assert jax.config.jax_enable_x64 is flag
    history, q = runs[False]
    assert np.array_equal(history, runs[True][0]) and np.array_equal(q, runs[True][1])
    assert q.dtype == np.float64 and result.model.params["W0"].dtype == np.float64
    assert np.abs(q - _numpy_mlp(result.model, data.x)).max() <= 1e-13


@pytest.mark.parametrize("chain_name", ["planar2r", "so101"])
def test_hybrid_never_worse_than_its_initial_guess_and_reports_true_errors(chain_name, so101):
    chain = robots.load("planar2r") if chain_name == "planar2r" else so101
    rng = np.random.default_rng(9)
    reachable = fk(chain, chain.random_q(rng, 200)).p
    # Out-of-reach and near-singular targets are where DLS steps can make things worse.
    far = reachable * rng.uniform(1.0, 2.0, (200, 1))
    targets = np.concatenate([reachable, far])
    guesses = chain.random_q(rng, len(targets))
    previous = None
    for k in (1, 3, 5):
        with pytest.warns(DeprecationWarning, match="use physai.solve_ik_batch"):  # the warning names the replacement
            res = dls_refine(chain, targets, guesses, k, damping=0.01)
        assert np.all(res.position_error <= res.initial_error)
        assert np.allclose(res.position_error, position_error(chain, res.q, targets), rtol=0, atol=1e-15)
        assert np.allclose(res.initial_error, position_error(chain, guesses, targets), rtol=0, atol=1e-15)
        assert np.all((res.q >= chain.lower) & (res.q <= chain.upper))
        assert np.median(res.position_error[:200]) < np.median(res.initial_error[:200])
        if previous is not None:  # more iterations extend the same run, so the best error cannot grow
            assert np.all(res.position_error <= previous)
        previous = res.position_error


def test_save_load_roundtrip_is_plain_numpy_and_predicts_identically(so101, tmp_path):
    rng = np.random.default_rng(4)
    data = sample_dataset(so101, 64, rng)
    model = init_model(so101, data.x, rng, hidden=(8, 8), head="bounded")
    path = save(model, tmp_path / "ik.npz")
    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(str(f["metadata"]))
        assert meta["layers"] == [3, 8, 8, so101.n] and meta["joint_names"] == list(so101.joint_names)
        assert set(f.files) >= {"W0", "b0", "W2", "b2", "x_mean", "x_scale", "q_mid", "q_half"}
    again = load(path)
    assert np.array_equal(predict(again, data.x), predict(model, data.x))
    bad = tmp_path / "bad.npz"
    np.savez(bad, metadata=np.array(json.dumps({"format": "other"})))
    with pytest.raises(InputError, match="not a physai inverse model"):
        load(bad)


def _tampered(model_path, tmp_path, meta_change=None, **arrays):
    """A copy of a saved model file with some arrays replaced and metadata fields changed."""
    with np.load(model_path, allow_pickle=False) as f:
        content = {k: f[k] for k in f.files}
    meta = json.loads(str(content.pop("metadata")))
    meta.update(meta_change or {})
    path = tmp_path / "tampered.npz"
    np.savez(path, metadata=np.array(json.dumps(meta)), **{**content, **arrays})
    return path


@pytest.fixture(scope="module")
def saved_model(so101, tmp_path_factory):
    rng = np.random.default_rng(4)
    model = init_model(so101, sample_dataset(so101, 64, rng).x, rng, hidden=(8,), head="linear")
    return model, save(model, tmp_path_factory.mktemp("model") / "ik.npz")


@pytest.mark.parametrize("meta_change, arrays, field", [
    (None, {"W1": np.full((8, 5), np.nan)}, "W1"),
    (None, {"b0": np.zeros(8, dtype=complex)}, "b0"),
    (None, {"W0": np.array([["1.0"] * 8] * 3)}, "W0"),
    (None, {"x_scale": np.array([1.0, 0.0, 1.0])}, "x_scale"),
    (None, {"q_half": -np.ones(5)}, "q_half"),
    (None, {"x_mean": np.array([0.0, np.inf, 0.0])}, "x_mean"),
    (None, {"W1": np.zeros((8, 4))}, "W1"),
    (None, {"W9": np.zeros((2, 2))}, "W9"),
    ({"head": "softmax"}, {}, "head"),
    ({"joint_names": ["a", "b"]}, {}, "W1"),
    ({"joint_names": "shoulder_pan"}, {}, "joint_names"),
])
def test_load_refuses_a_tampered_file_naming_the_file_and_the_field(saved_model, tmp_path, meta_change, arrays, field):
    path = _tampered(saved_model[1], tmp_path, meta_change, **arrays)
    with pytest.raises(InputError) as info:
        load(path)
    assert str(path) in str(info.value) and f"{field}:" in str(info.value), str(info.value)


def test_load_refuses_a_model_of_another_robot(saved_model, so101):
    wxai = robots.load("wxai")
    with pytest.raises(InputError, match="joint_names: the model is for 'so101'"):
        load(saved_model[1], chain=wxai)
    assert load(saved_model[1], chain=so101).joint_names == so101.joint_names
