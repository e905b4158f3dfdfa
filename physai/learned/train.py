"""The two training losses and a seeded optax training loop.

- ``joint_loss``: supervised regression onto the sampled joint vectors,
  ``mean_i || (q_hat(x_i) - q_i) / q_half ||^2`` (each joint in units of its half-range). Where a
  target has several solutions it learns their average, which need not reach the target.
- ``fk_loss``: FK-consistency, ``mean_i || FK(q_hat(x_i)) - x_i ||^2`` (m^2), differentiated through
  :mod:`physai.jaxkin`'s forward kinematics. It needs no joint labels and accepts any solution.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from physai import jaxkin
from physai._validate import count, one_of, positive
from physai.errors import InputError
from physai.kinematics import Chain
from physai.learned.data import Dataset
from physai.learned.model import InverseModel, forward

LOSSES = ("joint", "fk")


def joint_loss(params: dict, model: InverseModel, x, q):
    """Supervised joint-space regression: ``x: (B, 3)``, ``q: (B, n)`` labels -> scalar (dimensionless)."""
    q_hat = forward(params, model.norm(), x, model.head)
    return jnp.mean(jnp.sum(((q_hat - q) / model.q_half) ** 2, axis=-1))


def fk_loss(params: dict, model: InverseModel, chain: Chain, x):
    """FK-consistency: ``x: (B, 3)`` targets -> mean squared tool-point miss (m^2); no labels needed."""
    q_hat = forward(params, model.norm(), x, model.head)
    p = jax.vmap(lambda q: jaxkin.tool_position(chain, q))(q_hat)
    return jnp.mean(jnp.sum((p - x) ** 2, axis=-1))


@dataclass(frozen=True)
class TrainResult:
    """The trained model, the loss every ``log_every`` steps, and the settings that produced it."""

    model: InverseModel
    loss_history: np.ndarray
    steps: int
    loss: str
    seed: int
    reason: str


def _check_options(model, chain, data, loss, steps, batch_size, learning_rate, seed, log_every, progress) -> None:
    one_of(loss, "loss", LOSSES)
    for value, name in ((steps, "steps"), (log_every, "log_every"), (batch_size, "batch_size")):
        count(value, name, minimum=1)
    count(seed, "seed", maximum=2**32 - 1)
    positive(learning_rate, "learning_rate")
    if progress is not None and not callable(progress):
        raise InputError(f"progress: expected a function of the steps done, got {type(progress).__name__}")
    if data.chain_name != chain.name or model.chain_name != chain.name:
        raise InputError(f"chain {chain.name!r} does not match data ({data.chain_name!r}) / model ({model.chain_name!r})")
    if steps % log_every:
        raise InputError(f"steps: expected a positive multiple of log_every={log_every}, got {steps}")


@jaxkin.float64
def train(
    model: InverseModel,
    chain: Chain,
    data: Dataset,
    *,
    loss: str = "fk",
    steps: int = 2000,
    batch_size: int = 256,
    learning_rate: float = 3e-3,
    seed: int = 0,
    log_every: int = 100,
    progress: Callable[[int], None] | None = None,
) -> TrainResult:
    """Train ``model`` with Adam and a cosine-decayed learning rate on minibatches of ``data``.

    ``loss`` is ``"joint"`` (uses ``data.q``) or ``"fk"`` (uses only ``data.x``). Minibatch indices
    come from ``seed``, so a run is reproducible. ``progress(steps_done)`` is called after each chunk
    of ``log_every`` steps (the steps of a chunk run inside one compiled ``lax.scan``). Runs in JAX float64
    whatever the caller's setting, which it leaves as it was.
    """
    _check_options(model, chain, data, loss, steps, batch_size, learning_rate, seed, log_every, progress)
    batch_size = min(batch_size, len(data))
    x_all, q_all = jnp.asarray(data.x), jnp.asarray(data.q)

    def objective(params, idx):
        if loss == "joint":
            return joint_loss(params, model, x_all[idx], q_all[idx])
        return fk_loss(params, model, chain, x_all[idx])

    opt = optax.adam(optax.cosine_decay_schedule(learning_rate, steps, alpha=0.01))

    def step(carry, key):
        params, opt_state = carry
        idx = jax.random.randint(key, (batch_size,), 0, len(data))
        value, grads = jax.value_and_grad(objective)(params, idx)
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), value

    @jax.jit
    def chunk(carry, keys):
        carry, values = jax.lax.scan(step, carry, keys)
        return carry, jnp.mean(values)

    params = jax.tree_util.tree_map(jnp.asarray, model.params)
    carry = (params, opt.init(params))
    keys = jax.random.split(jax.random.PRNGKey(seed), steps).reshape(steps // log_every, log_every, -1)
    history = []
    for i, k in enumerate(keys):
        carry, value = chunk(carry, k)
        history.append(float(value))
        if progress is not None:
            progress((i + 1) * log_every)
    history = np.array(history)
    reason = "completed" if np.isfinite(history[-1]) else "diverged (non-finite loss)"
    info = {"loss": loss, "steps": steps, "batch_size": batch_size, "learning_rate": learning_rate,
            "train_seed": seed, "data_seed": data.seed, "n_train": len(data), "final_loss": history[-1]}
    return TrainResult(model.with_params(carry[0], **info), history, steps, loss, seed, reason)
