"""physai._engine: the compiled engine's kernels from the ahead-of-time module equal numba's JIT kernels bit for bit.

References: the numba JIT functions the module is compiled from (``_engine.jit_kernels()``), and the readable NumPy
engine through the public functions (tests/test_kinematics.py pins those to 1e-13 and to MuJoCo).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import physai
from physai import _engine, _ik_record

AOT = _engine.kernels.origin.startswith("ahead-of-time")
needs_aot = pytest.mark.skipif(not AOT, reason=f"no ahead-of-time module here: {_engine.kernels.origin}")


@pytest.fixture(scope="module")
def jit():
    return _engine.jit_kernels()


@needs_aot
@pytest.mark.parametrize("name", ["so101", "wxai", "panda"])
def test_ahead_of_time_single_kernels_equal_numba_jit_bit_for_bit(name, jit):
    chain = physai.load(name)
    for q in chain.random_q(np.random.default_rng(1), 200):
        for kernel, outs in (("single_pose", [(4, 4)]), ("single_jacobian", [(6, chain.n)]),
                             ("single_pose_jacobian", [(4, 4), (6, chain.n)]), ("single_frames", [(4, 4), (chain.n, 6)])):
            got, want = [np.empty(s) for s in outs], [np.empty(s) for s in outs]
            assert getattr(_engine.kernels, kernel)(q, chain.packed, *got)
            assert jit[kernel](q, chain.packed, *want)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
    bad = np.full(chain.n, np.nan)
    assert not _engine.kernels.single_pose(bad, chain.packed, np.empty((4, 4)))
    assert not _engine.kernels.single_pose(np.zeros(chain.n + 1), chain.packed, np.empty((4, 4)))


@needs_aot
@pytest.mark.parametrize("task", ["pose", "position", "position+axis"])
def test_ahead_of_time_ik_kernel_equals_numba_jit_bit_for_bit(task, jit):
    chain = physai.load("panda")
    rng = np.random.default_rng(2)
    T = physai.tool_pose(chain, chain.random_q(rng, 30))
    T[-1, :3, 3] += 5.0  # one unreachable target
    draws = chain.random_q(rng, (30, 20))
    q0 = ((chain.lower + chain.upper) / 2)[None]
    m = 3 if task == "position" else 6
    settings = _ik_record.settings(task=task, iterations=50, patience=5, attempts=21, attempts_far=4, tol_position=1e-4,
                                   tol_orientation=1e-3, max_step=0.5, mu0=1e-2, mu_down=0.5, mu_up=4.0, mu_min=1e-9,
                                   reach=1.2, base=np.zeros(3))
    outs = []
    for solve in (_engine.kernels.solve_batch, jit["solve_batch"]):
        out, out_int = np.empty((30, chain.n + 2)), np.empty((30, 3), np.int64)
        solve(chain.packed, chain.lower, chain.upper, T, np.array([0.0, 0.0, 1.0]), np.ones(m), q0, draws, settings,
              out, out_int)
        outs.append((out, out_int))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][1][:-1, 2].tolist().count(_ik_record.CONVERGED) >= 25  # the solves did real work
    for pose in (True, False):
        assert _engine.kernels.targets_ok(T, pose, 1e-12) == jit["targets_ok"](T, pose, 1e-12)


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


def test_a_failed_build_is_remembered_and_the_jit_serves(tmp_path, monkeypatch, jit):
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
    T, T_ref = np.empty((4, 4)), np.empty((4, 4))
    assert kernels.single_pose(q, chain.packed, T) and jit["single_pose"](q, chain.packed, T_ref)
    np.testing.assert_array_equal(T, T_ref)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".build-")]  # the build folder is gone


def test_unknown_kernel_names_the_problem():
    with pytest.raises(AttributeError, match="no kernel 'nope'"):
        _engine.kernels.nope  # noqa: B018


def test_the_cache_directory_follows_numba_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert _engine.cache_dir() == tmp_path
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert _engine.cache_dir() == _engine._HERE / "__pycache__"
    assert os.path.isdir(_engine.cache_dir())
