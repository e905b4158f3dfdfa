"""The front door: ``import physai`` exposes the public API lazily; the pure maths imports without MuJoCo."""

import subprocess
import sys

import numpy as np
import pytest

import physai
from physai import ik, kinematics, robots


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def test_every_name_in_all_resolves_to_its_home_module():
    assert set(physai.__all__) == set(physai._HOME) | set(physai._MODULES)
    for name in physai.__all__:
        assert getattr(physai, name) is not None, name
    assert physai.jacobian is kinematics.jacobian and physai.solve_ik is ik.solve_ik and physai.load is robots.load
    assert set(physai.__all__) <= set(dir(physai))


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'jacobain'"):
        physai.jacobain  # noqa: B018


def test_front_door_answers_equal_the_numpy_engine():
    chain = physai.load("so101")
    q = chain.random_q(np.random.default_rng(0))
    assert np.abs(physai.jacobian(chain, q) - kinematics.jacobian(chain, q, engine="numpy")).max() <= 1e-13


def test_import_physai_loads_no_heavy_dependency():
    out = _run("import sys, physai; print(sorted(m for m in ('numba', 'mujoco', 'jax', 'scipy', 'numpy') "
               "if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["transforms", "chain", "kinematics", "ik", "nullspace", "singularity"])
def test_pure_maths_imports_and_runs_without_mujoco(module):
    code = ("import sys; sys.modules['mujoco'] = None\n"
            f"import physai.{module}\n"
            "from physai import chain, kinematics\n"
            "c = chain.chain_from_bodies('arm', [chain.BodySpec('b', (0, 0, 0.1), joints=("
            "chain.JointSpec('j', 'hinge', (0, 0, 1)),))], (0.1, 0, 0))\n"
            "print(kinematics.jacobian(c, [0.5]).shape)")
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(6, 1)"


def test_package_declares_its_types():
    from importlib.resources import files

    assert files("physai").joinpath("py.typed").is_file()


def test_version_is_the_installed_distributions():
    from importlib.metadata import version  # the reference: the metadata the installer wrote

    assert physai.__version__ == version("physai-kinematics")
