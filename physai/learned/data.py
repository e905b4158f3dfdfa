"""Training data for learned inverse kinematics: joint samples inside the limits and their FK targets.

A dataset is ``q: (N, n)`` joint positions drawn uniformly inside the chain's joint limits (rad) and
``x: (N, 3)`` the tool point each one reaches, in world coordinates (m), computed with physai's
NumPy forward kinematics. The FK direction is exact and unique, so labels are free and noise-less;
the inverse direction the network is asked to learn is neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from physai._validate import count, generator, nonnegative
from physai.errors import InputError
from physai.kinematics import Chain, fk


@dataclass(frozen=True)
class Dataset:
    """Joint samples ``q: (N, n)`` (rad) and their tool points ``x: (N, 3)`` (m, world), with provenance."""

    q: np.ndarray
    x: np.ndarray
    chain_name: str
    seed: int | None
    margin: float

    def __len__(self) -> int:
        return len(self.q)


def sample_dataset(
    chain: Chain,
    n_samples: int,
    rng: np.random.Generator,
    *,
    margin: float = 0.0,
    region: Callable[[np.ndarray], np.ndarray] | None = None,
    seed: int | None = None,
    max_draws: int = 100,
) -> Dataset:
    """Draw ``n_samples`` joint vectors uniformly inside the limits shrunk by ``margin``, and their FK.

    ``rng`` is a seeded ``numpy.random.Generator`` (the same generator state gives the same dataset);
    ``seed`` is only recorded as provenance. ``region`` restricts the *task* workspace: a function
    ``x: (m, 3) -> (m,) bool``; samples whose tool point falls outside are rejected and redrawn (up to
    ``max_draws`` rounds), so the joint distribution is the uniform one conditioned on the region.
    """
    n_samples = count(n_samples, "n_samples", minimum=1)
    rng = generator(rng)
    margin, max_draws = nonnegative(margin, "margin"), count(max_draws, "max_draws", minimum=1, maximum=10_000)
    if seed is not None:
        count(seed, "seed", maximum=2**64 - 1)
    if region is not None and not callable(region):
        raise InputError(f"region: expected a function x (m, 3) -> (m,) bool, got {type(region).__name__}")
    qs, kept = [], 0
    for _ in range(max_draws):
        q = chain.random_q(rng, n_samples, inset=margin)
        if region is not None:
            q = q[np.asarray(region(fk(chain, q).p), dtype=bool)]
        qs.append(q)
        kept += len(q)
        if kept >= n_samples:
            break
    else:
        raise InputError(f"region: only {kept} of {n_samples} samples fell inside it after {max_draws} rounds")
    q = np.concatenate(qs)[:n_samples]
    return Dataset(q=q, x=fk(chain, q).p, chain_name=chain.name, seed=seed, margin=float(margin))

