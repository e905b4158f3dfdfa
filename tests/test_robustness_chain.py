"""A Chain stays frozen for good: copies and pickles are rebuilt through the constructor, and an array edited or
replaced after construction is refused, naming it, by every entry to the compiled engine instead of reaching a kernel.

References: the chain the copy was made from (the constructor is deterministic, so a rebuilt chain's arrays equal
the original's bit for bit), the readable NumPy engine, and the chain's own joint limits.
"""

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import physai
from physai.errors import PhysaiError


ARRAYS = ("T_prev_joint", "axis_joint", "q_ref", "T_last_tool", "lower", "upper", "packed", "q_middle")
COPIES = {"pickle": lambda c: pickle.loads(pickle.dumps(c)), "deepcopy": copy.deepcopy, "copy": copy.copy}


def assert_frozen(chain):
    for name in ARRAYS:
        a = getattr(chain, name)
        assert not a.flags.writeable, name
        with pytest.raises(ValueError):
            a.flags.writeable = True  # immutable memory, as the constructor makes it


@pytest.mark.parametrize("how", list(COPIES))
def test_copied_or_pickled_chain_is_rebuilt_read_only_and_equal_to_the_original(how):
    chain = physai.load("panda")
    twin = COPIES[how](chain)
    assert twin is not chain
    assert_frozen(twin)
    for name in ARRAYS:  # bitwise: the same constructor on the same fields
        np.testing.assert_array_equal(getattr(twin, name), getattr(chain, name))
    assert (twin.joint_names, twin.qpos_adr, twin.reach) == (chain.joint_names, chain.qpos_adr, chain.reach)
    q = chain.random_q(np.random.default_rng(0))
    np.testing.assert_allclose(physai.tool_pose(twin, q), physai.tool_pose(chain, q, engine="numpy"), atol=1e-13)


def test_unpickling_recomputes_packed_from_the_fields_instead_of_trusting_the_stream():
    chain = physai.load("so101")
    object.__setattr__(chain, "packed", np.zeros((2, 17)))  # a forged field travels in the pickle...
    twin = pickle.loads(pickle.dumps(chain))
    np.testing.assert_array_equal(twin.packed, physai.load("so101").packed)  # ...and is rebuilt from the fields
    twin.check_engine_arrays()


def _answer_in_worker(chain, q):
    return [getattr(chain, name).flags.writeable for name in ARRAYS], physai.jacobian(chain, q), physai.solve_ik(
        chain, physai.tool_pose(chain, q)).q


def test_spawned_worker_receives_a_frozen_chain_that_answers_as_the_parents():
    chain = physai.load("wxai")
    q = chain.random_q(np.random.default_rng(1))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        writeable, J, q_ik = pool.submit(_answer_in_worker, chain, q).result(timeout=300)
    assert not any(writeable)
    # bitwise: the same compiled engine on the same constants and input in both processes
    np.testing.assert_array_equal(J, physai.jacobian(chain, q))
    np.testing.assert_array_equal(q_ik, physai.solve_ik(chain, physai.tool_pose(chain, q)).q)


def _reshape(name, shape):
    def edit(chain):
        getattr(chain, name).shape = shape  # NumPy allows this on a read-only array

    return edit


def _replace(name, value):
    def edit(chain):
        object.__setattr__(chain, name, value(getattr(chain, name)))  # past the frozen dataclass

    return edit


EDITS = {
    "upper (5, 1)": ("upper", _reshape("upper", (5, 1))),
    "lower (1, 1, 1, 5)": ("lower", _reshape("lower", (1, 1, 1, 5))),
    "packed flat": ("packed", _reshape("packed", (102,))),
    "packed shorter": ("packed", _replace("packed", lambda a: a[:-1].copy())),
    "packed float32": ("packed", _replace("packed", lambda a: a.astype(np.float32))),
    "packed strided": ("packed", _replace("packed", lambda a: np.repeat(a, 2, axis=0)[::2])),
    "lower big-endian": ("lower", _replace("lower", lambda a: a.astype(">f8"))),
    "upper a list": ("upper", _replace("upper", lambda a: a.tolist())),
    "q_middle shorter": ("q_middle", _replace("q_middle", lambda a: a[:-1].copy())),
    "n": ("n", _replace("n", lambda n: n - 1)),
}
CALLS = {
    "tool_pose": lambda c, Q, T: physai.tool_pose(c, Q[0]),
    "jacobian": lambda c, Q, T: physai.jacobian(c, Q[0]),
    "fk": lambda c, Q, T: physai.fk(c, Q[0]),
    "tool_pose_and_jacobian": lambda c, Q, T: physai.tool_pose_and_jacobian(c, Q[0]),
    "jacobian batch": lambda c, Q, T: physai.jacobian(c, Q),
    "jacobian batch of 300": lambda c, Q, T: physai.jacobian(c, np.repeat(Q, 6, axis=0)),  # several blocks
    "solve_ik": lambda c, Q, T: physai.solve_ik(c, T[0], task="position"),
    "solve_ik_batch": lambda c, Q, T: physai.solve_ik_batch(c, T, task="position"),
    "solve_ik_batch numpy": lambda c, Q, T: physai.solve_ik_batch(c, T[:2], task="position", solver=physai.ik.Solver(backend="numpy")),
}
# Every call reads the packed constants; the batch calls also size their outputs by the joint count, and the IK
# solver reads the limits and seeds. (A one-pose call takes the count from the packed constants themselves.)
ONE_POSE = ("tool_pose", "jacobian", "fk", "tool_pose_and_jacobian")
CASES = [(edit, call) for edit, (field, _) in EDITS.items() for call in CALLS
         if field == "packed" or call.startswith("solve_ik") or (field == "n" and call not in ONE_POSE)]


@pytest.mark.parametrize(("edit", "call"), CASES)
def test_an_edited_chain_array_is_refused_by_name_before_any_kernel_reads_it(edit, call):
    """Unchecked, a reshaped limit let the IK kernel read the limits with a wrong stride (targets reported
    unconverged, joint values outside the true limits, no error) and a shorter packed made the batch kernel
    read past it and return a finite Jacobian."""
    chain = physai.load("so101")
    Q = chain.random_q(np.random.default_rng(2), 50)
    T = physai.tool_pose(chain, Q)
    field, apply = EDITS[edit]
    apply(chain)
    with pytest.raises(PhysaiError, match=f"Chain 'so101': {field} is"):
        CALLS[call](chain, Q, T)


def test_a_shorter_packed_is_refused_even_for_a_q_of_its_length():
    """The one-pose walk declines constants whose row count disagrees with the joint count they recorded (-n in
    the tool row), so a q of the shortened length reaches the readable check too, instead of a walk of 4 joints."""
    chain = physai.load("so101")
    object.__setattr__(chain, "packed", chain.packed[1:].copy())
    with pytest.raises(PhysaiError, match="packed is float64 \\(5, 17\\)"):
        physai.jacobian(chain, np.zeros(4))


@pytest.mark.parametrize("size", [3, 5000])  # below and above the size where the check sums instead
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_one_non_finite_entry_anywhere_in_q_is_refused_and_huge_finite_entries_pass(size, bad):
    # the reference: np.isfinite on every entry, entry by entry
    chain = physai.load("panda")
    q = np.zeros((size, chain.n))
    q[-1, -1] = bad
    with pytest.raises(PhysaiError, match=r"q: entries must be finite"):
        chain.check_q(q)
    huge = np.full((size, chain.n), 1e308)  # finite entries whose sum overflows: accepted, no warning
    assert np.isfinite(huge).all() and chain.check_q(huge) is huge
