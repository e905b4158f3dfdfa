"""Learned inverse kinematics (lesson 13): datasets from FK, a small JAX MLP, two losses, the hybrid.

``sample_dataset`` draws joints inside the limits and their tool points; ``init_model`` / ``train``
fit an MLP ``x -> q`` with the supervised ``joint_loss`` or the label-free ``fk_loss`` (through
:mod:`physai.jaxkin`); ``predict`` runs it batched; ``save`` / ``load`` use a plain ``.npz``;
``physai.solve_ik_batch`` from the network's guesses (``q0``) makes the hybrid controller.

``train`` and ``predict`` run JAX in float64 and leave the caller's JAX setting as it was; the JAX building blocks
``forward``, ``joint_loss`` and ``fk_loss`` run in the caller's precision (``fk_loss`` refuses float32, as
:mod:`physai.jaxkin` does).
"""

from physai._extras import require

require("jax", "physai.learned")

from physai.learned.data import Dataset, sample_dataset  # noqa: E402
from physai.learned.hybrid import RefineResult, dls_refine, limit_violation, position_error  # noqa: E402
from physai.learned.model import InverseModel, forward, init_model, load, predict, save  # noqa: E402
from physai.learned.train import TrainResult, fk_loss, joint_loss, train  # noqa: E402

__all__ = [
    "Dataset", "InverseModel", "RefineResult", "TrainResult", "dls_refine", "fk_loss", "forward", "init_model",
    "joint_loss", "limit_violation", "load", "position_error", "predict", "sample_dataset", "save",
    "train",
]
