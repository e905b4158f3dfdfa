"""physai._engine: the compiled engine's ahead-of-time modules equal numba's JIT kernels bit for bit.

References: the numba JIT functions the kernels module is compiled from (``_engine.jit_kernels()``), numba's walk for
the one-pose calls in C, and the readable NumPy engine through the public functions (tests/test_kinematics.py pins
those to 1e-13 and to MuJoCo).
"""

import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from test_kinematics import SLIDE_XML

import physai
from physai import _engine, _ik_record, kinematics
from physai.chain import MAX_JOINTS
from physai.errors import InputError

AOT = _engine.kernels.origin.startswith("ahead-of-time")
needs_aot = pytest.mark.skipif(not AOT, reason=f"no ahead-of-time module here: {_engine.kernels.origin}")


@pytest.fixture(scope="module")
def jit():
    return _engine.jit_kernels()


def numba_walk(chain, Q, want_j, want_f):
    """numba's batch kernel (the JIT) on the rows of ``Q``: ``T (B, 4, 4)``, ``J (B, 6, n)`` or None, ``F (B, n, 6)``
    (world axes, anchors) or None."""
    B, n = Q.shape
    T, J, A, O = np.empty((B, 4, 4)), np.empty((B, 6, n)), np.empty((B, n, 3)), np.empty((B, n, 3))
    none3 = np.empty((0, 0, 0))
    _engine.jit_kernel("batch")(Q, chain.packed, T, J if want_j else none3, A if want_f else none3,
                                O if want_f else none3, np.empty((0, 0)))
    return T, J if want_j else None, np.concatenate([A, O], axis=-1) if want_f else None


@needs_aot
@pytest.mark.parametrize("name", ["so101", "wxai", "panda", "slides"])
def test_one_pose_calls_in_c_equal_the_numba_walk_bit_for_bit(name):
    chain = kinematics.chain_from_mujoco(mujoco.MjModel.from_xml_string(SLIDE_XML), "tip") if name == "slides" else physai.load(name)
    Q = chain.random_q(np.random.default_rng(1), 200)
    T, J, F = numba_walk(chain, Q, want_j=True, want_f=True)
    k = _engine.kernels
    for b, q in enumerate(Q):
        np.testing.assert_array_equal(k.pose(q, chain.packed), T[b])
        np.testing.assert_array_equal(k.jacobian(q, chain.packed), J[b])
        for (got_T, got), want in ((k.pose_jacobian(q, chain.packed), J[b]),
                                   (k.frames(q, chain.packed), F[b])):
            np.testing.assert_array_equal(got_T, T[b])
            np.testing.assert_array_equal(got, want)
    strided = np.repeat(Q[0], 2)[::2]  # every other element: a view with a stride of two doubles
    np.testing.assert_array_equal(k.pose(strided, chain.packed), T[0])
    backwards = Q[1, ::-1].copy()[::-1]  # Q[1] again, read through a negative stride
    np.testing.assert_array_equal(k.jacobian(backwards, chain.packed), J[1])


@needs_aot
@pytest.mark.parametrize("rows", [300, 5000])  # one thread; shared among threads
def test_without_numba_batches_go_row_by_row_through_the_walk_and_equal_numbas_batch_bit_for_bit(rows, monkeypatch):
    chain = physai.load("panda")
    Q = chain.random_q(np.random.default_rng(2), rows)
    T, J, F = numba_walk(chain, Q, want_j=True, want_f=True)
    monkeypatch.setattr(_engine, "_numba_installed", lambda: False)  # as a core install of a wheel has it
    monkeypatch.setattr(_engine, "_numba_module", None)  # and no path back to numba
    monkeypatch.setattr(kinematics, "_KERNELS", _engine.Kernels())
    assert kinematics._KERNELS.batch is _engine._rows_through_walk
    np.testing.assert_array_equal(kinematics.tool_pose(chain, Q), T)
    np.testing.assert_array_equal(kinematics.jacobian(chain, Q), J)
    T2, J2 = kinematics.tool_pose_and_jacobian(chain, Q)
    np.testing.assert_array_equal(T2, T)
    np.testing.assert_array_equal(J2, J)
    axes, anchors, p = kinematics.fk(chain, Q)
    np.testing.assert_array_equal(np.concatenate([axes, anchors], axis=-1), F)
    np.testing.assert_array_equal(p, T[:, :3, 3])


@needs_aot
@pytest.mark.parametrize("q", [
    np.array([0.1, np.nan, 0.0, 0.0, 0.0]), np.array([0.1, 0.0, np.inf, 0.0, 0.0]), np.zeros(6), np.zeros(4),
    np.zeros((1, 5)), np.zeros(5, np.float32), np.zeros(5, ">f8"), np.ma.zeros(5), [0.0] * 5, 0.0,
    np.frombuffer(bytes(41), np.float64, 5, offset=1),  # unaligned
], ids=["nan", "inf", "long", "short", "2-d", "float32", "big-endian", "masked", "list", "scalar", "unaligned"])
def test_one_pose_calls_decline_anything_but_a_plain_finite_vector_of_the_chains_length(q):
    chain = physai.load("so101")
    for call in _engine.WALK:
        assert getattr(_engine.kernels, call)(q, chain.packed) is None


@needs_aot
def test_one_pose_calls_decline_constants_that_are_not_a_chains_as_built():
    """Constants of another layout, or cut short or padded after construction (their row count no longer the -n the
    chain packed), send the call to the readable validation, which names the field (tests/test_robustness_chain.py)."""
    q = np.zeros(5)
    packed = physai.load("so101").packed
    padded = np.vstack([packed[:1], packed])
    for P, m in ((packed[:, :16], 5), (packed[:0], 5), (packed.T.copy().T, 5), (packed.astype(np.float32), 5),
                 (packed.tolist(), 5), (packed[:-1].copy(), 4), (packed[1:].copy(), 4), (padded, 6), (packed[:1], 0)):
        for call in _engine.WALK:
            assert getattr(_engine.kernels, call)(np.zeros(m), P) is None
    with pytest.raises(TypeError, match="expected \\(q, P\\), got 1"):
        _engine.kernels.pose(q)


def _claiming(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(q, P)`` that claim ``n`` joints without the memory behind them (as_strided over a few rows, so a read past
    those would crash): P's layout checks pass; only the count can refuse them."""
    backing = np.zeros((2, 17))
    P = np.lib.stride_tricks.as_strided(backing, shape=(n + 1, 17), strides=backing.strides)
    assert P.flags.c_contiguous and P.flags.aligned
    return np.lib.stride_tricks.as_strided(np.zeros(1), shape=(n,), strides=(0,)), P


@needs_aot
@pytest.mark.parametrize("n", [2**31 + 1, 2**32, MAX_JOINTS + 1])
def test_one_pose_calls_refuse_a_joint_count_no_chain_has_instead_of_wrapping_it(n):
    """A count read into a C int once became 0 joints (2^32: the tool row returned as the pose) or a negative one
    (2^31 + 1: a read before the array, a crash)."""
    q, P = _claiming(n)
    for call in _engine.WALK:
        assert getattr(_engine.kernels, call)(q, P) is None


@needs_aot
def test_one_pose_calls_walk_the_most_joints_a_chain_may_have():
    """The C walk's limit is physai.chain.MAX_JOINTS: a chain of that many joints (each a zero-angle hinge about z
    with no offset, so the tool stays at the tool row's offset) is walked, one more is refused above."""
    P = np.zeros((MAX_JOINTS + 1, 17))
    P[:, [0, 4, 8]] = 1.0  # identity placements
    P[:-1, 14] = P[:-1, 16] = 1.0  # hinges about z
    P[-1, 9:12] = (0.1, 0.2, 0.3)
    P[-1, 16] = -MAX_JOINTS  # the count, as physai.chain packs it
    T = _engine.kernels.pose(np.zeros(MAX_JOINTS), P)
    np.testing.assert_array_equal(T[:3, 3], [0.1, 0.2, 0.3])  # exact: every product is with 1.0 or 0.0
    with pytest.raises(InputError, match="more than the 65536"):
        kinematics.Chain("long", ("j",) * (MAX_JOINTS + 1), ("hinge",) * (MAX_JOINTS + 1), np.zeros((1, 4, 4)),
                         np.zeros((1, 3)), np.zeros(1), np.eye(4), np.zeros(1), np.zeros(1))


@needs_aot
@pytest.mark.parametrize("task", ["pose", "position", "position+axis"])
def test_ahead_of_time_ik_kernel_equals_numba_jit_bit_for_bit(task, jit):
    chain = physai.load("panda")
    rng = np.random.default_rng(2)
    T = physai.tool_pose(chain, chain.random_q(rng, 30))
    T[-1, :3, 3] += 5.0  # one unreachable target
    uniforms = rng.random((30, 20, chain.n))
    q0 = ((chain.lower + chain.upper) / 2)[None]
    m = 3 if task == "position" else 6
    settings = _ik_record.settings(task=task, iterations=50, patience=5, attempts=21, attempts_far=4, tol_position=1e-4,
                                   tol_orientation=1e-3, max_step=0.5, mu0=1e-2, mu_down=0.5, mu_up=4.0, mu_min=1e-9,
                                   reach=1.2, base=np.zeros(3))
    outs = []
    for solve in (_engine.kernels.solve_batch, jit["solve_batch"]):
        out, out_int = np.empty((30, chain.n + 2)), np.empty((30, 3), np.int64)
        solve(chain.packed, chain.lower, chain.upper, T, np.array([0.0, 0.0, 1.0]), np.ones(m), q0, uniforms,
              chain.sample_range, settings, out, out_int)
        outs.append((out, out_int))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][1][:-1, 2].tolist().count(_ik_record.CONVERGED) >= 25  # the solves did real work
    for pose in (True, False):
        assert _engine.kernels.targets_ok(T, pose, 1e-12) == jit["targets_ok"](T, pose, 1e-12)


@needs_aot
def test_ahead_of_time_collision_kernels_equal_numba_jit_bit_for_bit(jit, monkeypatch):
    """The screen, the verdicts and the collision step's restarts, served ahead of time and by the JIT: the same
    bounds, verdicts and IK answers, on the Panda (mesh pieces, capsules, boxes) beside a table and a post."""
    from physai import collision

    chain = physai.load("panda")
    world = collision.collision_world(collision.scene("panda", [
        collision.Obstacle("table", "box", (0.8, 0.8, 0.02), (0.0, 0.0, -0.02)),
        collision.Obstacle("post", "capsule", (0.05, 0.3), (0.45, 0.3, 0.3))]), chain)
    rng = np.random.default_rng(4)
    Q = chain.random_q(rng, 100)
    T = physai.tool_pose(chain, Q[world.clear(Q)][:40])

    def run():
        return (world.bounds(Q, world.margin), *world.verdicts(Q, world.margin),
                physai.solve_ik_batch(chain, T, avoid=world, rng=np.random.default_rng(1)))

    aot = run()
    for name in ("screen", "verdicts", "restarts", "solve_batch"):
        monkeypatch.setattr(_engine.kernels, name, jit[name])
    served = run()
    for a, b in zip(aot[:3], served[:3]):  # bounds, verdicts, pairs left to MuJoCo
        np.testing.assert_array_equal(a, b)
    hit = aot[1] == collision.HIT  # a hit's other pairs are left unwritten
    np.testing.assert_array_equal(aot[3][~hit], served[3][~hit])
    np.testing.assert_array_equal(aot[4].q, served[4].q)
    np.testing.assert_array_equal(aot[4].restarts, served[4].restarts)
    plain = physai.solve_ik_batch(chain, T, rng=np.random.default_rng(1))
    assert not world.clear(plain.q[plain.converged]).all()  # some plain answers collide: the restarts ran


@needs_aot
def test_a_fresh_process_reaches_its_first_ik_answer_without_numba_scipy_or_mujoco(tmp_path):
    code = ("import sys, physai; c = physai.load('panda'); r = physai.solve_ik(c, physai.tool_pose(c, c.q_ref)); "
            "print(r.converged, sorted(m for m in ('numba', 'scipy', 'mujoco', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "[]"]


def test_module_name_follows_the_kernels_source(tmp_path, monkeypatch):
    """An edited kernel gets a new module name, so an old build is never served."""
    for source in _engine._SOURCES:
        (tmp_path / source).write_bytes((_engine._HERE / source).read_bytes())
    monkeypatch.setattr(_engine, "_HERE", tmp_path)
    before = _engine.module_name()
    kin = tmp_path / "_numba_kin.py"
    kin.write_text(kin.read_text() + "\n# an edit\n")
    assert _engine.module_name() != before


def test_a_failed_build_is_remembered_and_the_jit_serves(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_engine.sys, "executable", "/bin/false")  # a build that cannot run
    module, why = _engine._ahead_of_time()
    assert module is None and why.startswith("building physai_kernels_") and "exit 1" in why
    failed = tmp_path / f"{_engine.module_name()}.failed"
    assert failed.is_file()
    assert _engine._ahead_of_time() == (None, why)  # remembered: no second attempt
    kernels = _engine.Kernels()
    assert kernels.origin.startswith("numba JIT (building")
    chain = physai.load("so101")
    q = chain.random_q(np.random.default_rng(3))
    assert kernels.pose(q, chain.packed) is None  # declined: the public functions run the batch kernel
    monkeypatch.setattr(kinematics, "_KERNELS", kernels)
    T, J, F = numba_walk(chain, q[None], want_j=True, want_f=True)
    np.testing.assert_array_equal(physai.tool_pose(chain, q), T[0])
    np.testing.assert_array_equal(physai.jacobian(chain, q), J[0])
    np.testing.assert_array_equal(physai.fk(chain, q).anchors, F[0, :, 3:])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".build-")]  # the build folder is gone


def test_unknown_kernel_names_the_problem():
    with pytest.raises(AttributeError, match="no kernel 'nope'"):
        _engine.kernels.nope  # noqa: B018


def test_the_cache_directory_follows_numba_cache_dir_else_the_users_cache_never_the_package(tmp_path, monkeypatch):
    import platformdirs

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert _engine.cache_dir() == tmp_path
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert _engine.cache_dir() == Path(platformdirs.user_cache_dir("physai", appauthor=False))
    assert _engine._HERE not in _engine.cache_dir().parents
