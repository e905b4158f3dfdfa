"""Shared fixtures: the SO-101 MuJoCo model (the independent reference) and physai's chains of it."""

from pathlib import Path

import numpy as np
import pytest

SHARED_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


@pytest.fixture(scope="session")
def so101_model():
    from physai import robots

    return robots.mujoco_model("so101")


@pytest.fixture(scope="session")
def so101(so101_model):
    from physai.kinematics import chain_from_mujoco

    return chain_from_mujoco(so101_model, "gripperframe")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
