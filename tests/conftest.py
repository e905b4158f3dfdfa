"""Shared fixtures: the SO-101 MuJoCo model (the independent reference) and physai's chains of it."""

import numpy as np
import pytest

from physai.robots import model_path

# The model files physai ships (the Trossen file unchanged, the Panda without meshes): MuJoCo compiles them
# independently of physai's chain code, so they serve as the reference.
PANDA_XML = model_path("panda")
WXAI_XML = model_path("wxai")


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
