"""The JAX kinematics equal the NumPy reference; jax.jacfwd of the tool position equals the geometric linear rows."""

import jax
import numpy as np

from physai import jaxkin, robots
from physai.kinematics import jacobian, tool_pose


def test_jax_kinematics_equal_numpy_reference_to_1e_12():
    chain = robots.load("so101", source="builtin")
    qs = chain.random_q(np.random.default_rng(7), 64)
    J = np.asarray(jax.jit(jax.vmap(lambda q: jaxkin.jacobian(chain, q)))(qs))
    T = np.asarray(jax.vmap(lambda q: jaxkin.tool_pose(chain, q))(qs))
    assert np.abs(J - jacobian(chain, qs)).max() <= 1e-12
    assert np.abs(T - tool_pose(chain, qs)).max() <= 1e-12


def test_jacfwd_of_tool_position_equals_geometric_linear_rows(so101):
    qs = so101.random_q(np.random.default_rng(8), 32)
    Jp = np.asarray(jax.vmap(jax.jacfwd(lambda q: jaxkin.tool_position(so101, q)))(qs))
    assert np.abs(Jp - jacobian(so101, qs)[:, :3]).max() <= 1e-12
