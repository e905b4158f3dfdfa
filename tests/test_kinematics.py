"""physai.kinematics: the compiled engine (the default) equals the readable NumPy engine, which is pinned to
MuJoCo; both validate the same way; chains are immutable for good."""

import dataclasses
import re

import mujoco
import numpy as np
import pytest
from conftest import PANDA_XML, WXAI_XML

from physai import kinematics, mj, robots
from physai.errors import InputError


# Slides and hinges mixed, tilted non-unit axes, joint refs and anchors off the body origin: every
# branch of the kernel's walk.
SLIDE_XML = """
<mujoco>
  <worldbody>
    <body name="carriage" pos="0.1 -0.2 0.3" quat="0.9 0.1 -0.3 0.2">
      <joint name="rail" type="slide" axis="1 0.2 0" range="-0.5 0.5" ref="0.05"/>
      <geom size="0.02"/>
      <body name="column" pos="0 0.1 0.2">
        <joint name="turn" type="hinge" axis="0 0.3 1" pos="0.01 0.02 0.03" range="-2 2" ref="0.2"/>
        <geom size="0.02"/>
        <body name="lift" pos="0.05 0 0.1" quat="0.7 0 0.7 0">
          <joint name="lift" type="slide" axis="0 0 1" range="0 0.3"/>
          <joint name="wrist" type="hinge" axis="1 0 0" pos="0 0.04 0" range="-3 3"/>
          <geom size="0.02"/>
          <site name="tip" pos="0.02 0.03 0.15" quat="0.5 0.5 -0.5 0.5"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _slide_model():
    return mujoco.MjModel.from_xml_string(SLIDE_XML)


ROBOTS = {
    "so101": lambda: (robots.mujoco_model("so101"), "gripperframe"),
    "slides": lambda: (_slide_model(), "tip"),
    "panda": lambda: (mujoco.MjModel.from_xml_path(str(PANDA_XML)), "tcp"),
    "wxai": lambda: (mujoco.MjModel.from_xml_path(str(WXAI_XML)), "ee_site"),
}


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def model_chain(request):
    m, site = ROBOTS[request.param]()
    return m, kinematics.chain_from_mujoco(m, site)


def test_slide_model_has_both_joint_types(model_chain):
    _, chain = model_chain
    if chain.tool_name == "tip":
        assert chain.joint_types == ("slide", "hinge", "slide", "hinge")


def _numpy(f):
    return lambda chain, q: f(chain, q, engine="numpy")


def test_compiled_single_equals_numpy_engine_to_1e_13(model_chain):
    _, chain = model_chain
    for q in chain.random_q(np.random.default_rng(1), 100):
        T, J = kinematics.tool_pose_and_jacobian(chain, q)
        T_ref, J_ref = kinematics.tool_pose_and_jacobian(chain, q, engine="numpy")
        assert T.shape == (4, 4) and J.shape == (6, chain.n)
        assert np.abs(T - T_ref).max() <= 1e-13
        assert np.abs(J - J_ref).max() <= 1e-13
        assert np.abs(kinematics.tool_pose(chain, q) - T_ref).max() <= 1e-13
        assert np.abs(kinematics.jacobian(chain, q) - J_ref).max() <= 1e-13
        for got, ref in zip(kinematics.fk(chain, q), kinematics.fk(chain, q, engine="numpy")):
            assert got.shape == ref.shape and np.abs(got - ref).max() <= 1e-13


@pytest.mark.parametrize("lead", [(), (1,), (3,), (300,), (2, 150), (5000,)])
def test_compiled_batch_equals_numpy_engine_to_1e_13(model_chain, lead):
    """Every batch shape, in one block of poses or many, on one thread or shared among threads (5000 rows)."""
    _, chain = model_chain
    qs = chain.random_q(np.random.default_rng(9), lead)
    for f in (kinematics.tool_pose, kinematics.jacobian, kinematics.tool_pose_and_jacobian, kinematics.fk):
        got, ref = f(chain, qs), _numpy(f)(chain, qs)
        for a, b in zip(*((got, ref) if isinstance(got, tuple) else ((got,), (ref,)))):
            assert a.shape == b.shape and np.abs(a - b).max() <= 1e-13


def test_compiled_equals_mujoco_site_jacobian_and_pose(model_chain):
    m, chain = model_chain
    for q in chain.random_q(np.random.default_rng(2), 20):
        T, J = kinematics.tool_pose_and_jacobian(chain, q)
        assert np.abs(J - mj.site_jacobian(m, chain, q)).max() <= 1e-12
        assert np.abs(T - mj.site_pose(m, chain, q)).max() <= 1e-12


def test_compiled_batch_equals_looped_single_calls(model_chain):
    _, chain = model_chain
    qs = chain.random_q(np.random.default_rng(3), (4, 25))
    T, J = kinematics.tool_pose_and_jacobian(chain, qs)
    assert T.shape == (4, 25, 4, 4) and J.shape == (4, 25, 6, chain.n)
    for idx in np.ndindex(4, 25):
        T1, J1 = kinematics.tool_pose_and_jacobian(chain, qs[idx])
        np.testing.assert_array_equal(T[idx], T1)
        np.testing.assert_array_equal(J[idx], J1)
    T_ref, J_ref = kinematics.tool_pose_and_jacobian(chain, qs, engine="numpy")
    assert np.abs(T - T_ref).max() <= 1e-13 and np.abs(J - J_ref).max() <= 1e-13


def test_compiled_tool_pose_and_jacobian_helpers_match_the_pair(so101):
    q = so101.random_q(np.random.default_rng(4))
    T, J = kinematics.tool_pose_and_jacobian(so101, q)
    np.testing.assert_array_equal(kinematics.tool_pose(so101, q), T)
    np.testing.assert_array_equal(kinematics.jacobian(so101, q), J)


def test_compiled_accepts_what_the_reference_accepts(so101):
    q = so101.random_q(np.random.default_rng(5))
    T, J = kinematics.tool_pose_and_jacobian(so101, q)
    strided = np.zeros((so101.n, 2))
    strided[:, 0] = q
    readonly = q.copy()
    readonly.flags.writeable = False
    # Each memory layout has its own compiled variant; they may round differently in the last bit.
    big_endian = q.astype(">f8")
    unaligned = np.frombuffer(b"\0" + q.tobytes(), dtype=np.float64, offset=1)
    assert not unaligned.flags.aligned
    for same in (list(q), tuple(q), strided[:, 0], readonly, q[None, :], big_endian, unaligned):
        T2, J2 = kinematics.tool_pose_and_jacobian(so101, same)
        assert np.abs(T2.reshape(4, 4) - T).max() <= 1e-15
        assert np.abs(J2.reshape(6, so101.n) - J).max() <= 1e-15
    qi = np.array([0, 1, -1, 0, 1])
    assert np.abs(kinematics.jacobian(so101, qi) - kinematics.jacobian(so101, qi, engine="numpy")).max() <= 1e-13
    q32 = q.astype(np.float32)
    assert np.abs(kinematics.jacobian(so101, q32) - kinematics.jacobian(so101, q32, engine="numpy")).max() <= 1e-13


def test_compiled_outputs_are_fresh_arrays(so101):
    q = so101.random_q(np.random.default_rng(6), 2)
    T0, J0 = kinematics.tool_pose_and_jacobian(so101, q[0])
    keep = T0.copy(), J0.copy()
    kinematics.tool_pose_and_jacobian(so101, q[1])
    np.testing.assert_array_equal(T0, keep[0])
    np.testing.assert_array_equal(J0, keep[1])


@pytest.mark.parametrize(
    "bad",
    [np.zeros(4), np.zeros(6), np.zeros((3, 4)), np.array([0.0, np.nan, 0, 0, 0]), np.array([[0.0, 0, 0, np.inf, 0]]),
     "abc", [0.0, 1.0], None],
)
@pytest.mark.parametrize("f", [kinematics.fk, kinematics.tool_pose, kinematics.jacobian, kinematics.tool_pose_and_jacobian])
def test_compiled_rejects_bad_q_with_the_numpy_engine_message(so101, bad, f):
    with pytest.raises(InputError) as ref:
        f(so101, bad, engine="numpy")
    with pytest.raises(InputError) as got:
        f(so101, bad)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("engine", ["jax", "fast", None, 1])
def test_unknown_engine_is_refused_by_name(so101, engine):
    for f in (kinematics.fk, kinematics.tool_pose, kinematics.jacobian, kinematics.tool_pose_and_jacobian):
        with pytest.raises(InputError, match="engine: expected one of 'compiled', 'numpy'"):
            f(so101, so101.q_ref, engine=engine)


def test_packed_constants_are_built_once_and_immutable(so101):
    assert so101.packed is so101.packed
    assert so101.packed.shape == (so101.n + 1, 17)
    other = dataclasses.replace(so101, q_ref=so101.q_ref + 0.1)
    q = so101.random_q(np.random.default_rng(10))
    # A chain derived from another packs its own constants: its answers follow its own q_ref.
    np.testing.assert_allclose(kinematics.jacobian(other, q), kinematics.jacobian(other, q, engine="numpy"),
                               rtol=0, atol=1e-13)


@pytest.mark.parametrize("attr", ["T_prev_joint", "axis_joint", "q_ref", "T_last_tool", "lower", "upper", "packed"])
def test_chain_arrays_cannot_be_made_writable(so101, attr):
    a = getattr(so101, attr)
    with pytest.raises(ValueError):
        a.flags.writeable = True
    with pytest.raises(ValueError):
        a[...] = 0.0
    base = a
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    with pytest.raises((ValueError, AttributeError)):
        base.flags.writeable = True


@pytest.mark.parametrize("task", ["pose", "position", "position+axis"])
def test_solve_ik_default_fast_path_solves_what_the_reference_path_solves(model_chain, task):
    """Same targets, same seeds: the same targets converge, and every solution reaches its target (reference FK).

    The q themselves are not compared: LM's accept/reject tests and restarts amplify the paths' 1e-16
    differences, so the two may stop at different points within tolerance (or of a redundant chain's
    solution manifold), e.g. after a different number of restarts.
    """
    from physai import ik

    _, chain = model_chain
    rng = np.random.default_rng(7)
    targets = kinematics.tool_pose(chain, chain.random_q(rng, 12))
    task = ik.Task(task, axis=(1.0, 0.0, 0.0)) if chain.tool_name == "tip" else task
    fast_res = ik.solve_ik_batch(chain, targets, task=task, rng=np.random.default_rng(8))
    ref_res = ik.solve_ik_batch(chain, targets, task=task, solver=ik.Solver(backend="numpy"),
                                rng=np.random.default_rng(8))
    np.testing.assert_array_equal(fast_res.converged, ref_res.converged)
    ok = fast_res.converged
    T = kinematics.tool_pose(chain, fast_res.q[ok])
    assert np.linalg.norm(T[:, :3, 3] - targets[ok, :3, 3], axis=-1).max(initial=0.0) <= 1e-4
    with pytest.raises(InputError, match="^backend: "):
        ik.Solver(backend="numba")


FORK_AFTER_BATCH = """
import multiprocessing as mp
import numpy as np
from physai import kinematics, robots

chain = robots.load("so101")
Q = chain.random_q(np.random.default_rng(0), 4 * kinematics.THREAD_MIN_ROWS)
parent = kinematics.jacobian(chain, Q)  # shared among threads in the parent


def child(seed):
    return float(np.abs(kinematics.jacobian(chain, Q) - parent).max())


with mp.get_context("fork").Pool(2) as pool:
    print(max(pool.map(child, range(4), chunksize=1)))
"""


def test_fork_workers_run_after_a_threaded_batch():
    """multiprocessing's fork workers once aborted (GNU OpenMP) after a batched call; now they answer, equal."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FORK_AFTER_BATCH], capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip()) == 0.0  # bitwise: the workers' answers equal the serial ones


def test_a_batch_shared_among_threads_equals_one_thread_bit_for_bit(model_chain, monkeypatch):
    """Chunks of a few rows on three threads (forced, whatever this machine's cores): each row is its own walk."""
    from physai import _threads

    _, chain = model_chain
    Q = chain.random_q(np.random.default_rng(11), 1000)
    T1, J1 = kinematics.tool_pose_and_jacobian(chain, Q)  # 1000 rows: one thread
    monkeypatch.setattr(kinematics, "THREAD_MIN_ROWS", 8)
    monkeypatch.setattr(_threads, "cores", lambda: 3)
    threads = []
    monkeypatch.setattr(kinematics, "in_threads", lambda rows, B, **kw: (
        threads.append(min(_threads.cores(), B // kw["min_rows"])), _threads.in_threads(rows, B, **kw)))
    T3, J3 = kinematics.tool_pose_and_jacobian(chain, Q)
    assert threads == [3]
    np.testing.assert_array_equal(T3, T1)
    np.testing.assert_array_equal(J3, J1)


# ---- out=: the caller's arrays ----------------------------------------------------------------------------------

OUT_SHAPES = {kinematics.tool_pose: lambda n: ((4, 4),), kinematics.jacobian: lambda n: ((6, n),),
              kinematics.tool_pose_and_jacobian: lambda n: ((4, 4), (6, n)),
              kinematics.fk: lambda n: ((n, 3), (n, 3), (3,))}


def _outs(f, lead, n):
    return tuple(np.full(lead + shape, np.nan) for shape in OUT_SHAPES[f](n))


def _pass(f, out):
    return out if len(out) > 1 else out[0]


@pytest.mark.parametrize("engine", ["compiled", "numpy"])
@pytest.mark.parametrize("lead", [(), (1,), (3,), (2, 150)])
def test_out_is_written_returned_and_equals_the_numpy_engine_to_1e_13(model_chain, lead, engine):
    _, chain = model_chain
    qs = chain.random_q(np.random.default_rng(12), lead)
    for f in OUT_SHAPES:
        out = _outs(f, lead, chain.n)
        got = f(chain, qs, engine=engine, out=_pass(f, out))
        got = got if isinstance(got, tuple) else (got,)
        ref = f(chain, qs, engine="numpy")
        ref = ref if isinstance(ref, tuple) else (ref,)
        assert all(g is o for g, o in zip(got, out))  # the caller's arrays, no copies
        for o, r in zip(out, ref):
            assert o.shape == r.shape and np.abs(o - r).max() <= 1e-13


def test_out_jacobians_equal_mujoco_site_jacobians(model_chain):
    m, chain = model_chain
    qs = chain.random_q(np.random.default_rng(13), 20)
    T, J = np.empty((20, 4, 4)), np.empty((20, 6, chain.n))
    kinematics.tool_pose_and_jacobian(chain, qs, out=(T, J))
    for b, q in enumerate(qs):
        assert np.abs(J[b] - mj.site_jacobian(m, chain, q)).max() <= 1e-12
        assert np.abs(T[b] - mj.site_pose(m, chain, q)).max() <= 1e-12


def test_slices_of_one_out_array_equal_the_whole_batch_bit_for_bit(panda):
    """A batch streamed through slices of one buffer, in uneven chunks, gives the one-call answer."""
    Q = panda.random_q(np.random.default_rng(14), 1000)
    whole = kinematics.jacobian(panda, Q)
    buffer = np.empty((1000, 6, 7))
    for lo in range(0, 1000, 333):
        kinematics.jacobian(panda, Q[lo:lo + 333], out=buffer[lo:lo + 333])
    np.testing.assert_array_equal(buffer, whole)


def test_out_with_one_pose_equals_the_one_pose_call_bit_for_bit(so101):
    q = so101.random_q(np.random.default_rng(15))
    J = np.empty((6, so101.n))
    assert kinematics.jacobian(so101, q, out=J) is J
    np.testing.assert_array_equal(J, kinematics.jacobian(so101, q))


def _bad_outs(n):
    good = np.zeros((4, 6, n))
    readonly = np.empty((4, 6, n))
    readonly.flags.writeable = False
    unaligned = np.frombuffer(bytearray(4 * 6 * n * 8 + 1), np.float64, 4 * 6 * n, offset=1).reshape(4, 6, n)
    return {
        "a list": ([[[0.0] * n] * 6] * 4, "got list"), "float32": (good.astype(np.float32), "dtype float32"),
        "wrong shape": (np.empty((4, 6, n + 1)), "shape (4, 6, 6)"),
        "missing batch": (np.empty((6, n)), "shape (6, 5)"),
        "strided": (np.empty((4, 6, 2 * n))[..., ::2], "not C-contiguous"), "read-only": (readonly, "read-only"),
        "big-endian": (good.astype(">f8"), "dtype >f8"), "unaligned": (unaligned, "unaligned"),
        "masked": (np.ma.zeros((4, 6, n)), "got MaskedArray"),
    }


@pytest.mark.parametrize("case", sorted(_bad_outs(5)))
def test_a_bad_out_is_refused_in_one_line_naming_out(so101, case):
    Q = so101.random_q(np.random.default_rng(16), 4)
    bad, why = _bad_outs(so101.n)[case]
    for engine in ("compiled", "numpy"):
        with pytest.raises(InputError, match=r"^out: expected .*" + re.escape(why)) as err:
            kinematics.jacobian(so101, Q, engine=engine, out=bad)
        assert "\n" not in str(err.value)


def test_out_sharing_memory_with_q_or_another_output_is_refused(so101):
    Q = so101.random_q(np.random.default_rng(17), 4)
    buffer = np.zeros(4 * 4 * 4 + 4 * 6 * 5)
    T, J = buffer[:64].reshape(4, 4, 4), buffer[64:].reshape(4, 6, 5)
    kinematics.tool_pose_and_jacobian(so101, Q, out=(T, J))  # side by side: fine
    with pytest.raises(InputError, match=r"^out\[1\]: .*overlaps q or another output"):
        kinematics.tool_pose_and_jacobian(so101, Q, out=(T, buffer[:120].reshape(4, 6, 5)))
    inside_q = np.zeros(4 * 5 + 4 * 6 * 5)
    inside_q[:20] = Q.ravel()
    with pytest.raises(InputError, match=r"^out: .*overlaps q"):
        kinematics.jacobian(so101, inside_q[:20].reshape(4, 5), out=inside_q[:120].reshape(4, 6, 5))


def test_out_of_the_wrong_count_is_refused(so101):
    q = so101.random_q(np.random.default_rng(18))
    with pytest.raises(InputError, match=r"^out: expected 2 arrays, got ndarray"):
        kinematics.tool_pose_and_jacobian(so101, q, out=np.empty((6, 5)))
    with pytest.raises(InputError, match=r"^out\.p: expected .*shape \(3,\)"):
        kinematics.fk(so101, q, out=(np.empty((5, 3)), np.empty((5, 3)), np.empty(4)))


def test_engine_rodrigues_equals_transforms_rotation_about_axis_to_1e_15():
    """The compiled engine's private Rodrigues is pinned to the readable one (one home per formula)."""
    from physai import _numba_kin
    from physai import transforms as tf

    rng = np.random.default_rng(15)
    for _ in range(50):
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        angle = rng.uniform(-2 * np.pi, 2 * np.pi)
        got = np.array(_numba_kin.rodrigues((u[0], u[1], u[2]), angle)).reshape(3, 3)
        assert np.abs(got - tf.rotation_about_axis(u, angle)).max() <= 1e-15


def test_engine_sin_cos_is_within_one_ulp_of_the_c_librarys():
    """The compiled engine's own sin and cos (vectorisable) against NumPy's, which call the C library: every value
    within one unit in the last place, at quadrant boundaries, tiny and signed-zero arguments, up to the end of the
    reduced range; beyond it the library's own values."""
    from physai import _numba_kin

    rng = np.random.default_rng(19)
    x = np.concatenate([rng.uniform(-7.0, 7.0, 20_000), rng.uniform(-1e5, 1e5, 2000), rng.uniform(-1e-6, 1e-6, 500),
                        np.arange(-40, 41) * np.pi / 4, np.nextafter(np.arange(-8, 9) * np.pi / 2, np.inf),
                        [0.0, -0.0, 5e-324, _numba_kin.REDUCED_MAX, -_numba_kin.REDUCED_MAX]])
    got = np.array([_numba_kin.sin_cos(v) for v in x])
    for k, ref in enumerate((np.sin(x), np.cos(x))):
        assert np.all(np.abs(got[:, k] - ref) <= np.spacing(np.abs(ref)))
    assert np.signbit(got[-4, 0]) and not np.signbit(got[-5, 0])  # sin(-0) = -0
    far = np.array([1e6, -3e7, 1e300])
    np.testing.assert_array_equal([_numba_kin.sin_cos(v) for v in far], np.stack([np.sin(far), np.cos(far)], -1))


# ---- streaming: jacobian_chunks ------------------------------------------------------------------------------


def test_jacobian_chunks_cover_the_batch_in_order_equal_to_the_numpy_engine(panda):
    """An array in chunks of 300 (a short last one), and an iterable whose pieces are larger than a chunk."""
    Q = panda.random_q(np.random.default_rng(20), 1000)
    ref = kinematics.jacobian(panda, Q, engine="numpy")
    whole = kinematics.jacobian(panda, Q)
    for source in (Q, (Q[lo:lo + 450] for lo in range(0, 1000, 450))):
        starts, parts = zip(*((start, J.copy()) for start, J in kinematics.jacobian_chunks(panda, source, chunk=300)))
        got = np.concatenate(parts)
        assert np.abs(got - ref).max() <= 1e-13
        np.testing.assert_array_equal(got, whole)
        assert starts == tuple(np.cumsum([0] + [len(p) for p in parts])[:-1])
        assert max(len(p) for p in parts) == 300


def test_jacobian_chunks_hold_one_chunk_in_memory(panda):
    """200,000 poses (67 MB of Jacobians) in chunks of 1000: the peak is the buffer and a chunk, not the batch."""
    import tracemalloc

    Q = panda.random_q(np.random.default_rng(21), 200_000)
    tracemalloc.start()
    try:
        for _, J in kinematics.jacobian_chunks(panda, Q, chunk=1000):
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1000 * 6 * 7 * 8  # the buffer (336 kB), a checked chunk of q, the kernel's scratch


def test_jacobian_chunks_draw_a_progress_bar_when_asked(so101, capsys):
    Q = so101.random_q(np.random.default_rng(22), 50)
    assert len(list(kinematics.jacobian_chunks(so101, Q, chunk=10, progress=True))) == 5


@pytest.mark.parametrize("chunk", [0, -5, 2.5, True, "10"])
def test_jacobian_chunks_refuse_a_chunk_that_is_no_positive_count(so101, chunk):
    with pytest.raises(InputError, match=r"^chunk: expected a positive number of rows"):
        next(kinematics.jacobian_chunks(so101, np.zeros((4, so101.n)), chunk=chunk))


def test_jacobian_chunks_refuse_pieces_that_are_not_batches(so101):
    with pytest.raises(InputError, match=r"^q: expected chunks of shape \(b, 5\), got \(5,\)"):
        list(kinematics.jacobian_chunks(so101, [np.zeros(so101.n)]))
    with pytest.raises(InputError, match=r"^q: entries must be finite"):
        list(kinematics.jacobian_chunks(so101, np.full((3, so101.n), np.nan)))
