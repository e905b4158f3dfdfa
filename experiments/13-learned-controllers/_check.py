"""Grader for lesson 13's Build it (``physai check 13 DIR``): each function the learner types, against
physai.learned's JAX network, physai's forward kinematics, the planar 2R's closed forms,
physai.singularity.damped_solve and, for the training step, central finite differences of the loss, with hints
that name the likely mistake."""

from __future__ import annotations

import numpy as np

from physai import robots
from physai.course.exercise import Hint, LearnerError, close, parts, scalar, shaped
from physai.jaxkin import float64
from physai.kinematics import fk, jacobian
from physai.learned import init_model
from physai.learned.model import forward
from physai.example_robots import PLANAR2R_LINKS
from physai.singularity import damped_solve

OWN = {"dls_step": ("physai.singularity.damped_solve",), "tip": ("physai.kinematics.fk", "physai.kinematics.tool_pose"),
       "mlp_forward": ("physai.learned.model.forward", "physai.learned.predict"),
       "fk_loss_by_hand": ("physai.learned.fk_loss",), "joint_loss_by_hand": ("physai.learned.joint_loss",)}


def _targets(rng, k: int = 40) -> np.ndarray:
    """Reachable planar 2R targets ``(k, 3)`` m (z = 0), drawn from ``rng``."""
    r, phi = rng.uniform(0.25, 0.75, k), rng.uniform(-np.pi, np.pi, k)
    return np.c_[r * np.cos(phi), r * np.sin(phi), np.zeros(k)]


def _joints(rng, k: int = 40) -> np.ndarray:
    return rng.uniform(-np.pi, np.pi, (k, 2))


def _tip(q: np.ndarray) -> np.ndarray:
    """The library's planar 2R tool point ``(k, 2)``."""
    return fk(robots.load("planar2r"), q).p[:, :2]


@float64
def _network(model, x, head: str) -> np.ndarray:
    """physai.learned's JAX network, run eagerly in float64 (no compilation: fast for a few calls)."""
    return np.asarray(forward(model.params, model.norm(), x, head))


def check_mlp_forward(build, rng) -> None:
    x = _targets(rng)
    model = init_model(robots.load("planar2r"), x, rng, hidden=(8, 8))
    params = {k: np.asarray(v) for k, v in model.params.items()}
    norm = {k: np.asarray(v) for k, v in model.norm().items()}
    for head in ("bounded", "linear"):
        ref = _network(model, x, head)
        out = shaped(build.mlp_forward(params, norm, x, head), ref.shape, "mlp_forward",
                     "one row of joints per target")
        if close(out, ref, 1e-12):
            continue
        h = (x - model.x_mean) / model.x_scale
        for i in range(model.n_layers - 1):
            h = np.tanh(h @ model.params[f"W{i}"] + model.params[f"b{i}"])
        z = h @ model.params[f"W{model.n_layers - 1}"] + model.params[f"b{model.n_layers - 1}"]
        if close(out, model.q_mid + model.q_half * (z if head == "bounded" else np.tanh(z)), 1e-12):
            raise Hint(f"the output head: '{head}' means {'q_mid + q_half tanh(z)' if head == 'bounded' else 'no tanh'}"
                       " on the last layer")
        if close(out, np.tanh(z) if head == "bounded" else z, 1e-12):
            raise Hint("the last layer's z is returned as is: the joints are q_mid + q_half * z (scaled to the limits)")
        raise Hint(f"differs from physai.learned's network by {np.abs(out - ref).max():.1e} rad: normalise x by "
                   "x_mean and x_scale first, tanh after every hidden layer (not after the last)")


def check_tip(build, rng) -> None:
    q = _joints(rng)
    out = shaped(build.tip(q), (len(q), 2), "tip", "one (x, y) row per pose")
    if close(out, _tip(q), 1e-12):
        return
    L1, L2 = PLANAR2R_LINKS
    relative = np.c_[L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 1]), L1 * np.sin(q[:, 0]) + L2 * np.sin(q[:, 1])]
    if close(out, relative, 1e-12):
        raise Hint("the second link points along q1 + q2 (angles add along the chain), not along q2 alone")
    raise Hint("tip = L1 (cos q1, sin q1) + L2 (cos(q1 + q2), sin(q1 + q2)): check the signs and cos/sin order")


def _tip_is_wrong(build, q: np.ndarray) -> bool:
    """Whether the learner's ``tip`` misses the library's tool point at joints ``q``."""
    try:
        got = build.tip(q)
    except LearnerError:
        return True
    return not (isinstance(got, np.ndarray) and got.shape == (len(q), 2) and close(got, _tip(q), 1e-12))


def _blame_tip(check):
    """``check`` judged on its own; where it fails while the learner's ``tip``, which the function uses, is wrong,
    the hint says to fix ``tip`` first, and whether the function itself follows the formula with the learner's
    ``tip`` (then only ``tip`` is wrong)."""

    def checked(build, rng) -> None:
        state = rng.bit_generator.state
        try:
            check(build, rng)
        except Hint as hint:
            rng.bit_generator.state = state  # the same draw the check made
            q, x = _joints(rng), _targets(rng)
            if not _tip_is_wrong(build, q):
                raise
            try:
                follows = close(scalar(build.fk_loss_by_hand(q, x), "fk_loss_by_hand"),
                                np.mean(np.sum((build.tip(q) - x[:, :2]) ** 2, axis=1)), 1e-12)
            except (LearnerError, Hint, TypeError, ValueError):  # a tip that cannot enter the formula
                follows = False
            if follows:
                raise Hint("fk_loss_by_hand follows the formula; tip, which it uses, is wrong: fix tip first") from None
            raise Hint(f"tip is wrong, and fk_loss_by_hand is built from it: fix tip first; then: {hint}") from None

    return checked


@_blame_tip
def check_fk_loss_by_hand(build, rng) -> None:
    q, x = _joints(rng), _targets(rng)
    miss2 = np.sum((_tip(q) - x[:, :2]) ** 2, axis=1)
    out = scalar(build.fk_loss_by_hand(q, x), "fk_loss_by_hand")
    if close(out, np.mean(miss2), 1e-12):
        return
    if close(out, np.mean(np.sqrt(miss2)), 1e-12):
        raise Hint("the loss is the mean squared miss (m^2), not the mean distance: do not take the square root")
    if close(out, np.mean(miss2) / 2, 1e-12) or close(out, np.sum(miss2), 1e-9):
        raise Hint("average over targets the sum over x and y: mean(sum((tip - x)^2, axis=1))")
    raise Hint(f"expected {np.mean(miss2):.6f} m^2, got {float(out):.6f}: tip(q_pred) minus the target's x, y")


def check_joint_loss_by_hand(build, rng) -> None:
    q_pred, q_label, q_half = rng.normal(size=(30, 5)), rng.normal(size=(30, 5)), rng.uniform(0.5, 3.0, 5)
    d = q_pred - q_label
    ref = np.mean(np.sum((d / q_half) ** 2, axis=1))
    out = scalar(build.joint_loss_by_hand(q_pred, q_label, q_half), "joint_loss_by_hand")
    if close(out, ref, 1e-12):
        return
    if close(out, np.mean(np.sum(d**2, axis=1)), 1e-12):
        raise Hint("each joint's error must be divided by its half range q_half before squaring")
    if close(out, np.mean((d / q_half) ** 2), 1e-12):
        raise Hint("sum over the joints, then average over the targets (not the mean of every entry)")
    raise Hint(f"expected {ref:.6f}, got {float(out):.6f}: mean over targets of sum(((q_pred - q_label) / q_half)^2)")


def check_elbows(build, rng) -> None:
    x = _targets(rng)
    out = parts(build.elbows(x), 2, "elbows", "a pair of arrays (elbow up, elbow down)")
    up, down = (shaped(q, (len(x), 2), f"elbows' {name}") for q, name in zip(out, ("elbow up", "elbow down")))
    for name, q in (("elbow up", up), ("elbow down", down)):
        miss = np.linalg.norm(_tip(q) - x[:, :2], axis=1).max()
        if miss > 1e-9:
            raise Hint(f"{name} misses its targets by up to {miss:.2e} m: q1 = atan2(y, x) - atan2(L2 sin q2, "
                       "L1 + L2 cos q2), with the q2 of the same elbow")
    if np.all(up[:, 1] < 0) and np.all(down[:, 1] > 0):
        raise Hint("elbow up and elbow down are swapped: return the q2 > 0 answer first")
    if not (np.all(up[:, 1] > 0) and np.all(down[:, 1] < 0)):
        raise Hint("the two answers must differ in the sign of q2 (law of cosines: q2 = +-acos(...))")


def check_dls_step(build, rng) -> None:
    chain = robots.load("planar2r")
    q = np.r_[_joints(rng, 20), [[0.3, 0.0]]]  # the last arm is straight: a singular J
    J = jacobian(chain, q)[:, :2]
    e = rng.normal(scale=0.05, size=(len(q), 2))
    for damping in (0.01, 0.1):
        ref = damped_solve(J, e, damping)
        out = shaped(build.dls_step(J, e, damping), ref.shape, "dls_step", "one joint change (n,) per target")
        if close(out, ref, 1e-9):
            continue
        if close(out, -ref, 1e-9):
            raise Hint("sign: e is target minus tool, and the step J^T (J J^T + damping^2 I)^-1 e moves toward it")
        if close(out[:-1], damped_solve(J[:-1], e[:-1], 0.0), 1e-6):
            raise Hint("the damping is missing: at the straight arm (a singularity) J J^T is singular; add "
                       "damping^2 I")
        if close(out, damped_solve(J, e, np.sqrt(damping)), 1e-9):
            raise Hint("add damping^2 I (the damping squared), not damping I")
        raise Hint(f"differs from J^T (J J^T + damping^2 I)^-1 e by {np.abs(out - ref).max():.1e} rad")


def _tiny_loss(params: dict, x: np.ndarray, q: np.ndarray) -> float:
    """The training step's loss, written out: mean over rows of sum((tanh(x W0 + b0) W1 + b1 - q)^2)."""
    d = np.tanh(x @ params["W0"] + params["b0"]) @ params["W1"] + params["b1"] - q
    return float(np.mean(np.sum(d**2, axis=1)))


def _fd_gradient(params: dict, x: np.ndarray, q: np.ndarray, h: float = 1e-6) -> dict:
    """Central finite differences of ``_tiny_loss`` in every parameter entry (error ~h^2, round-off ~1e-16 / h)."""
    grads = {}
    for name, value in params.items():
        g = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            plus, minus = ({**params, name: value.copy()} for _ in range(2))
            plus[name][i] += h
            minus[name][i] -= h
            g[i] = (_tiny_loss(plus, x, q) - _tiny_loss(minus, x, q)) / (2 * h)
        grads[name] = g
    return grads


def check_regression_step(build, rng) -> None:
    hidden, lr = 5, 0.1
    params = {"W0": rng.normal(size=(2, hidden)), "b0": rng.normal(size=hidden),
              "W1": rng.normal(size=(hidden, 2)), "b1": rng.normal(size=2)}
    x, q = _targets(rng, 12)[:, :2], _joints(rng, 12)
    given = {k: v.copy() for k, v in params.items()}
    out = parts(build.regression_step(given, x, q, lr), 2, "regression_step", "a pair (new params, loss)")
    new, loss = out[0], scalar(out[1], "regression_step's loss")
    if not isinstance(new, dict) or set(new) != set(params):
        raise Hint(f"regression_step's new params must be a dict with the keys {sorted(params)}")
    if any(not np.array_equal(given[k], params[k]) for k in params):
        raise Hint("regression_step changed the params it was given in place: build a new dict "
                   "{k: params[k] - learning_rate * grad[k]}")
    ref_loss = _tiny_loss(params, x, q)
    if not close(loss, ref_loss, 1e-12):
        shapes = all(np.shape(new[k]) == params[k].shape for k in params)
        if shapes and close(loss, _tiny_loss({k: np.asarray(new[k]) for k in params}, x, q), 1e-12):
            raise Hint("the loss returned is the one after the step: return the loss at the params given, before "
                       "updating them")
        raise Hint(f"the loss returned is {loss:.6f}, expected {ref_loss:.6f} rad^2: the loss before the step, "
                   "mean over rows of the sum over the two joints of (q_hat - q)^2")
    fd = _fd_gradient(params, x, q)
    got = {k: (params[k] - shaped(new[k], params[k].shape, f"new {k}")) / lr for k in params}
    err = {k: np.abs(got[k] - fd[k]).max() for k in params}
    if max(err.values()) <= 1e-6:  # finite differences agree to ~1e-9 here; 1e-6 leaves room on any CPU
        return
    if all(close(got[k], -fd[k], 1e-6) for k in params):
        raise Hint("sign: gradient descent subtracts, new = old - learning_rate * gradient")
    if all(close(got[k], 0.5 * fd[k], 1e-6) for k in params):
        raise Hint("the gradient of (q_hat - q)^2 is 2 (q_hat - q): the factor 2 is missing")
    if all(close(got[k], fd[k] * len(x), 1e-5) for k in params):
        raise Hint("the loss is a mean over rows: divide the output gradient by k, the number of rows")
    worst = max(err, key=err.get)
    wrong = [k for k in ("b0", "b1") if err[k] > 1e-6]
    if all(err[k] <= 1e-6 for k in ("W0", "W1")) and all(close(got[k], fd[k] / len(x), 1e-6) for k in wrong):
        raise Hint("the biases: each bias is added to every row, so its gradient sums the rows' output gradients "
                   "(the 1/k of the mean is already in them), not their mean")
    hint = " (through the tanh: multiply by 1 - h^2)" if worst in ("W0", "b0") and err["W1"] <= 1e-6 else ""
    raise Hint(f"the gradient in {worst} (old - new) / learning_rate differs from finite differences of the loss "
               f"by {err[worst]:.1e}{hint}")


EXAMPLES = {  # the worked call each stub shows, with the lesson's own answer (physai exercise computes it)
    "mlp_forward": "mlp_forward({\"W0\": np.full((3, 2), 0.5), \"b0\": np.zeros(2), \"W1\": np.eye(2), "
                   "\"b1\": np.zeros(2)}, {\"x_mean\": np.zeros(3), \"x_scale\": np.ones(3), \"q_mid\": "
                   "np.zeros(2), \"q_half\": np.full(2, np.pi)}, np.array([[0.3, 0.2, 0.0]]), \"bounded\")",
    "tip": "tip(np.array([[0.0, np.pi / 2]]))",
    "fk_loss_by_hand": "fk_loss_by_hand(np.array([[0.0, 0.0], [0.0, np.pi / 2]]), "
                       "np.array([[0.7, 0.1, 0.0], [0.5, 0.3, 0.0]]))",
    "joint_loss_by_hand": "joint_loss_by_hand(np.array([[0.1, 0.2]]), np.array([[0.0, 0.0]]), np.array([1.0, 2.0]))",
    "elbows": "elbows(np.array([[0.5, 0.3, 0.0]]))",
    "dls_step": "dls_step(np.array([[[0.0, -0.3], [0.8, 0.3]]]), np.array([[0.01, 0.02]]), 0.01)",
    "regression_step": "regression_step({\"W0\": np.ones((2, 1)), \"b0\": np.zeros(1), \"W1\": np.ones((1, 2)), "
                       "\"b1\": np.zeros(2)}, np.array([[0.5, 0.0]]), np.array([[0.0, 1.0]]), 0.1)",
}

MUTATIONS = [
    ("    return float(np.mean(np.sum((tip(q_pred) - x[:, :2]) ** 2, axis=1)))",
     "    return np.sum((tip(q_pred) - x[:, :2]) ** 2, axis=1)", "one number"),
    ("    return (np.swapaxes(J, -1, -2) @ np.linalg.solve(JJt, e[..., None]))[..., 0]",
     "    return -(np.swapaxes(J, -1, -2) @ np.linalg.solve(JJt, e[..., None]))[..., 0]", "sign"),
    ('(np.tanh(z) if head == "bounded" else z)', '(z if head == "bounded" else np.tanh(z))', "head"),
    ("L1 * np.sin(q[:, 0]) + L2 * np.sin(q[:, 0] + q[:, 1])", "L1 * np.sin(q[:, 0]) - L2 * np.sin(q[:, 0] + q[:, 1])",
     "q1 + q2"),
    ("L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 0] + q[:, 1])", "L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 1])",
     "fix tip first"),
    ("for s in (q2, -q2))", "for s in (-q2, q2))", "swapped"),
    ("    g_hidden = (g_out @ params[\"W1\"].T) * (1 - h**2)", "    g_hidden = g_out @ params[\"W1\"].T", "tanh"),
    ("    g_out = 2 * d / len(x)", "    g_out = d / len(x)", "factor 2"),
    ('"b0": g_hidden.sum(axis=0)', '"b0": g_hidden.mean(axis=0)', "the biases"),
    ("float(np.mean(np.sum(d**2, axis=1)))",
     "float(np.mean(np.sum((tiny_net({k: params[k] - learning_rate * grads[k] for k in params}, x) - q) ** 2, "
     "axis=1)))",
     "after the step"),
]
