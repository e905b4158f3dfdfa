"""benchmarks/ik_peers.py's core-dependency parts: the chain's URDF (pinned to Pinocchio's URDF parser) and the
success judgement every solver is held to. The peers themselves need the ``bench`` group and are not run here."""

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from physai import kinematics

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "ik_peers.py"
_spec = importlib.util.spec_from_file_location("ik_peers", _PATH)
ik_peers = sys.modules.setdefault("ik_peers", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(ik_peers)


@pytest.fixture(scope="module", params=sorted(ik_peers.ROBOTS))
def chain(request):
    return ik_peers.load(request.param)


def _pinocchio_tool_poses(urdf: str, Q: np.ndarray) -> np.ndarray:
    model = pin.buildModelFromXML(urdf)
    data, fid = model.createData(), model.getFrameId("tool", pin.FrameType.BODY)
    out = []
    for q in Q:
        pin.framesForwardKinematics(model, data, q)
        out.append(data.oMf[fid].homogeneous.copy())
    return np.array(out)


def test_chain_urdf_fk_equals_pinocchio_urdf_parser(chain, rng):
    Q = chain.random_q(rng, 50)
    np.testing.assert_allclose(_pinocchio_tool_poses(ik_peers.chain_to_urdf(chain), Q),
                               kinematics.tool_pose(chain, Q), rtol=0, atol=1e-12)
    model = pin.buildModelFromXML(ik_peers.chain_to_urdf(chain))
    np.testing.assert_array_equal(model.lowerPositionLimit, chain.lower)
    np.testing.assert_array_equal(model.upperPositionLimit, chain.upper)


def test_chain_urdf_folds_nonzero_q_ref_pinocchio(chain, rng):
    """URDF joints move by q from their origin; physai's by q - q_ref: the origin must absorb -q_ref."""
    shifted = replace(chain, q_ref=rng.uniform(-0.5, 0.5, chain.n))
    Q = chain.random_q(rng, 20)
    np.testing.assert_allclose(_pinocchio_tool_poses(ik_peers.chain_to_urdf(shifted), Q),
                               kinematics.tool_pose(shifted, Q), rtol=0, atol=1e-12)


@pytest.mark.parametrize("task", ["pose", "position", "position+axis"])
def test_success_judgement_by_closed_form_offsets(chain, task, rng):
    """The true joints succeed; a tool moved 2e-4 m fails; a spin about the tool z fails only the pose task."""
    q = chain.random_q(rng, 10, inset=0.1)
    T = kinematics.tool_pose(chain, q)
    assert ik_peers.succeeded(chain, task, T, q).all()
    moved = T.copy()
    moved[:, :3, 3] += 2e-4 * np.array([0.6, 0.0, 0.8])
    assert not ik_peers.succeeded(chain, task, moved, q).any()
    spun = T @ kinematics.joint_motion("hinge", np.array([0.0, 0.0, 1.0]), np.full(10, 0.01))
    assert (ik_peers.succeeded(chain, task, spun, q) == (task != "pose")).all()


def test_success_requires_joints_inside_limits(chain):
    """A joint 1e-9 beyond its limit fails even when the pose is (to round-off) the target's."""
    q = np.where(np.isfinite(chain.upper), chain.upper, 0.0)[None]
    T = kinematics.tool_pose(chain, q)
    assert ik_peers.succeeded(chain, "position", T, q).all()
    assert not ik_peers.succeeded(chain, "position", T, q + 1e-9).any()
