"""The JAX kinematics equal the NumPy reference; jax.jacfwd of the tool position equals the geometric linear rows;
physai leaves JAX's process-wide float64 switch alone and jaxkin refuses to run in float32."""

import subprocess
import sys

import jax
import numpy as np
import pytest

from physai import jaxkin, robots
from physai.errors import InputError
from physai.kinematics import jacobian, tool_pose


@pytest.mark.usefixtures("x64")
def test_jax_kinematics_equal_numpy_reference_to_1e_12():
    chain = robots.load("so101", source="builtin")
    qs = chain.random_q(np.random.default_rng(7), 64)
    J = np.asarray(jax.jit(jax.vmap(lambda q: jaxkin.jacobian(chain, q)))(qs))
    T = np.asarray(jax.vmap(lambda q: jaxkin.tool_pose(chain, q))(qs))
    assert np.abs(J - jacobian(chain, qs)).max() <= 1e-12
    assert np.abs(T - tool_pose(chain, qs)).max() <= 1e-12


@pytest.mark.usefixtures("x64")
def test_jacfwd_of_tool_position_equals_geometric_linear_rows(so101):
    qs = so101.random_q(np.random.default_rng(8), 32)
    Jp = np.asarray(jax.vmap(jax.jacfwd(lambda q: jaxkin.tool_position(so101, q)))(qs))
    assert np.abs(Jp - jacobian(so101, qs)[:, :3]).max() <= 1e-12


def test_importing_every_physai_module_leaves_jax_float64_off():
    # A fresh process: the switch is process-wide, and this test process may have touched it.
    code = ("import importlib, pkgutil, jax, physai\n"
            "names = [m.name for m in pkgutil.walk_packages(physai.__path__, 'physai.')]\n"
            "for name in names: importlib.import_module(name)\n"
            "print(len(names), 'physai.jaxkin' in names, 'physai.learned.train' in names, jax.config.jax_enable_x64)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    count, *flags = out.stdout.split()
    assert int(count) > 20 and flags == ["True", "True", "False"]


@pytest.mark.parametrize("f", [jaxkin.joint_frames, jaxkin.tool_pose, jaxkin.jacobian, jaxkin.tool_position_rpy])
def test_jaxkin_refuses_float32_and_names_both_remedies(so101, f):
    q = np.zeros(so101.n)
    with jax.enable_x64(False):
        for call in (f, jax.jit(f, static_argnums=0)):
            with pytest.raises(InputError, match="float64") as err:
                call(so101, q)
            assert 'jax.config.update("jax_enable_x64", True)' in str(err.value)
            assert "with jax.enable_x64(True):" in str(err.value)
        assert not jax.config.jax_enable_x64
