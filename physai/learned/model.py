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

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from physai import _files
from physai._validate import count, finite_array, generator, one_of
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
    one_of(head, "head", HEADS)
    rng = generator(rng)
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, (tuple, list)):
        raise InputError(f"hidden: expected a tuple of layer widths, got {type(hidden).__name__} {hidden!r}")
    hidden = tuple(count(h, "hidden", minimum=1, maximum=100_000) for h in hidden)
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
    # written aside, then renamed: a training killed mid-write leaves no cut-short file for the next run to load;
    # a file handle keeps numpy from appending a second ".npz"
    with _files.replacing(path, binary=True) as fh:
        np.savez(fh, metadata=np.array(json.dumps(meta, indent=1)), **arrays)
    return path


def load(path: str | Path, chain: Chain | None = None) -> InverseModel:
    """Read a model written by :func:`save` (no pickle: plain arrays and a JSON string).

    Everything is checked before use: the format, the head, every array real, finite and of the shape
    the layer sizes imply, the scales ``> 0``; with ``chain`` given, the model must be for that chain
    (same name and joint names, in order). A failed check names the file and the field.
    """
    path = Path(path)
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    meta = _metadata(path, arrays.pop("metadata", None))
    joints = tuple(meta["joint_names"])
    if chain is not None and (meta["chain"], joints) != (chain.name, chain.joint_names):
        raise InputError(f"{path}: joint_names: the model is for {meta['chain']!r} ({', '.join(joints)}), "
                         f"not {chain.name!r} ({', '.join(chain.joint_names)})")
    checked = _weights(path, arrays, len(joints))
    params = {k: checked.pop(k) for k in list(checked) if k[0] in "Wb" and k[1:].isdigit()}
    return InverseModel(params, checked["x_mean"], checked["x_scale"], checked["q_mid"], checked["q_half"],
                        meta["head"], meta["chain"], joints, meta["info"])


def _weights(path: Path, arrays: dict, n: int) -> dict:
    """Every array of a model file, real, finite and shaped as the layer widths imply; the scales ``> 0``."""
    n_layers = sum(1 for k in arrays if k[0] == "W" and k[1:].isdigit())
    widths = []
    for i in range(n_layers - 1):  # hidden widths, read off the biases
        b = arrays.get(f"b{i}")
        if b is None or np.ndim(b) != 1:
            raise InputError(f"{path}: b{i}: expected a 1-d bias array, got {None if b is None else np.shape(b)}")
        widths.append(b.shape[0])
    sizes = [3, *widths, n]
    shapes = {f"W{i}": (a, b) for i, (a, b) in enumerate(itertools.pairwise(sizes))}
    shapes |= {f"b{i}": (b,) for i, b in enumerate(sizes[1:])}
    shapes |= {"x_mean": (3,), "x_scale": (3,), "q_mid": (n,), "q_half": (n,)}
    extra = sorted(set(arrays) - set(shapes))
    if extra:
        raise InputError(f"{path}: {', '.join(extra)}: arrays this model format does not have")
    checked = {}
    for key, shape in shapes.items():
        if key not in arrays:
            raise InputError(f"{path}: {key}: missing (the file holds {', '.join(sorted(arrays)) or 'no arrays'})")
        checked[key] = finite_array(arrays[key], f"{path}: {key}")
        if checked[key].shape != shape:
            raise InputError(f"{path}: {key}: expected shape {shape}, got {checked[key].shape}")
    for key in ("x_scale", "q_half"):
        if not np.all(checked[key] > 0):
            raise InputError(f"{path}: {key}: scales must be > 0, got {checked[key]}")
    return checked


def _metadata(path: Path, text) -> dict:
    """The JSON ``metadata`` of a model file, its fields present and of the right kind."""
    try:
        meta = json.loads(str(text)) if text is not None else None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: metadata: not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise InputError(f"{path}: not a physai inverse model (format {found!r}, expected {FORMAT!r})")
    if meta.get("head") not in HEADS:
        raise InputError(f"{path}: head: expected one of {HEADS}, got {meta.get('head')!r}")
    names = meta.get("joint_names")
    if not isinstance(names, list) or not names or not all(isinstance(j, str) for j in names):
        raise InputError(f"{path}: joint_names: expected a list of joint names, got {names!r}")
    if not isinstance(meta.get("chain"), str) or not isinstance(meta.get("info", {}), dict):
        raise InputError(f"{path}: chain / info: expected a chain name and a dict, got {meta.get('chain')!r}, "
                         f"{meta.get('info')!r}")
    return {**meta, "info": meta.get("info", {})}
