"""Shared fixtures: the SO-101 MuJoCo model (the independent reference) and physai's chains of it."""

import os
from pathlib import Path

import numpy as np
import pytest

_SHARED_MENAGERIE = Path(__file__).resolve().parents[2] / "shared" / "menagerie"
if "MENAGERIE_ROOT" not in os.environ and _SHARED_MENAGERIE.is_dir():
    os.environ["MENAGERIE_ROOT"] = str(_SHARED_MENAGERIE)

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
