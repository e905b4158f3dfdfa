"""A small MLP inverse model ``x -> q`` in plain JAX (parameters are a dict of arrays: a pytree).

Shapes: ``x: (..., 3)`` target tool points (m, world) -> ``q: (..., n)`` joint positions (rad).
The network sees the target normalised by the training set's mean and spread and outputs a
joint vector relative to the middle of the joint limits, in units of their half-range:
``q = q_mid + q_half * z`` (``head="linear"``) or ``q = q_mid + q_half * tanh(z)``
(``head="bounded"``: inside the limits by construction).

Saved models are a single ``.npz`` file a user can inspect with ``numpy.load`` alone: one named
array per weight (``W0``, ``b0``, ...), the normalisation arrays, and ``metadata``, a JSON string
(chain, joints, layer sizes, head, training settings and seed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from physai._validate import finite_array
from physai.errors import InputError
from physai.jaxkin import float64
from physai.kinematics import Chain

HEADS = ("linear", "bounded")
FORMAT = "physai.learned.InverseModel/1"


@dataclass(frozen=True, eq=False)
class InverseModel:
    """An MLP inverse model and everything needed to run it without the training code.

    ``params``: ``{"W0": (3, h0), "b0": (h0,), ..., "WL": (h_last, n), "bL": (n,)}``;
    ``x_mean``, ``x_scale``: ``(3,)`` input normalisation (m); ``q_mid``, ``q_half``: ``(n,)`` output
    scaling (rad); ``head``: ``"linear"`` or ``"bounded"``; ``info``: JSON-able provenance.
    """

    params: dict
    x_mean: np.ndarray
    x_scale: np.ndarray
    q_mid: np.ndarray
    q_half: np.ndarray
    head: str
    chain_name: str
    joint_names: tuple[str, ...]
    info: dict = field(default_factory=dict)

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(int(self.params[f"b{i}"].shape[0]) for i in range(self.n_layers - 1))

    @property
    def n_layers(self) -> int:
        return len(self.params) // 2

    def norm(self) -> dict:
        """The fixed (not trained) arrays :func:`forward` needs."""
        return {"x_mean": self.x_mean, "x_scale": self.x_scale, "q_mid": self.q_mid, "q_half": self.q_half}

    def with_params(self, params: dict, **info) -> InverseModel:
        """The same model with new weights (as NumPy arrays) and ``info`` entries added."""
        return InverseModel(
            {k: np.asarray(v) for k, v in params.items()}, self.x_mean, self.x_scale, self.q_mid, self.q_half,
            self.head, self.chain_name, self.joint_names, {**self.info, **info},
        )


def init_model(
    chain: Chain,
    x_train: np.ndarray,
    rng: np.random.Generator,
    hidden: tuple[int, ...] = (64, 64),
    head: str = "linear",
) -> InverseModel:
    """A freshly initialised model for ``chain`` (Glorot-uniform weights, zero biases, from ``rng``).

    ``x_train: (N, 3)`` sets the input normalisation; the output scaling is the joint limits
    (``[-pi, pi]`` for an unlimited joint).
    """
    if head not in HEADS:
        raise InputError(f"head: expected one of {HEADS}, got {head!r}")
    x_train = finite_array(x_train, "x_train", (3,))
    std = x_train.reshape(-1, 3).std(axis=0)
    # A coordinate the data never varies (z of a planar arm) is passed through unscaled.
    x_scale = np.where(std > 1e-9, std, 1.0)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    sizes = (3, *hidden, chain.n)
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        bound = np.sqrt(6.0 / (a + b))
        params[f"W{i}"] = rng.uniform(-bound, bound, size=(a, b))
        params[f"b{i}"] = np.zeros(b)
    return InverseModel(params, x_train.reshape(-1, 3).mean(axis=0), x_scale, (lo + hi) / 2, (hi - lo) / 2,
                        head, chain.name, chain.joint_names)


def forward(params: dict, norm: dict, x, head: str):
    """The network: ``x: (..., 3)`` -> ``q: (..., n)`` (JAX; differentiable in ``params`` and ``x``)."""
    h = (x - norm["x_mean"]) / norm["x_scale"]
    n_layers = len(params) // 2
    for i in range(n_layers - 1):
        h = jnp.tanh(h @ params[f"W{i}"] + params[f"b{i}"])
    z = h @ params[f"W{n_layers - 1}"] + params[f"b{n_layers - 1}"]
    if head == "bounded":
        z = jnp.tanh(z)
    return norm["q_mid"] + norm["q_half"] * z


_forward_jit = jax.jit(forward, static_argnames="head")


@float64
def predict(model: InverseModel, x) -> np.ndarray:
    """Batched inference: ``x: (..., 3)`` targets (m) -> ``(..., n)`` joint positions (rad), NumPy, in float64."""
    x = finite_array(x, "x", (3,))
    return np.asarray(_forward_jit(model.params, model.norm(), x, model.head))


def save(model: InverseModel, path: str | Path) -> Path:
    """Write ``model`` to one ``.npz`` file (named arrays plus a JSON ``metadata`` string); returns the path."""
    path = Path(path)
    meta = {
        "format": FORMAT,
        "chain": model.chain_name,
        "joint_names": list(model.joint_names),
        "layers": [3, *model.hidden, len(model.joint_names)],
        "activation": "tanh",
        "head": model.head,
        "info": model.info,
    }
    arrays = {**model.params, **model.norm()}
    with open(path, "wb") as fh:  # a file handle keeps numpy from appending a second ".npz"
        np.savez(fh, metadata=np.array(json.dumps(meta, indent=1)), **arrays)
    return path


def load(path: str | Path) -> InverseModel:
    """Read a model written by :func:`save` (no pickle: plain arrays and a JSON string)."""
    with np.load(Path(path), allow_pickle=False) as f:
        meta = json.loads(str(f["metadata"]))
        if meta.get("format") != FORMAT:
            raise InputError(f"{path}: not a physai inverse model (format {meta.get('format')!r}, expected {FORMAT!r})")
        params = {k: f[k] for k in f.files if k[0] in "Wb" and k[1:].isdigit()}
        return InverseModel(params, f["x_mean"], f["x_scale"], f["q_mid"], f["q_half"], meta["head"],
                            meta["chain"], tuple(meta["joint_names"]), meta["info"])
