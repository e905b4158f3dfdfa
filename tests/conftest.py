"""Shared fixtures: the SO-101 MuJoCo model (the independent reference) and physai's chains of it."""

from pathlib import Path

import numpy as np
import pytest

SHARED_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
PANDA_XML = SHARED_MODELS / "franka_panda_nomesh" / "panda.xml"
WXAI_XML = SHARED_MODELS / "trossen_wxai" / "wxai_follower.xml"


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


@pytest.fixture(scope="session")
def panda_model():
    from physai import robots

    return robots.mujoco_model(PANDA_XML)


@pytest.fixture(scope="session")
def panda(panda_model):
    from physai.kinematics import chain_from_mujoco

    return chain_from_mujoco(panda_model, "tcp")
