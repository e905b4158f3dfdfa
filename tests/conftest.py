"""Shared fixtures: the SO-101 MuJoCo model (the independent reference) and physai's chains of it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physai import mj
from physai.robots import model_path

# The course (lessons, pages, exercises, notebooks, the tour) and the package as built and installed: marked by file,
# so `pytest -m "not course and not packaging"` is the library's loop. Lesson NN's tests are tests/test_NN_*.py.
COURSE_FILES = {"test_course.py", "test_lesson.py", "test_lesson_skeleton.py", "test_report.py", "test_notebook.py",
                "test_exercise.py", "test_robustness_commands.py"}
PACKAGING_FILES = {"test_installed.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        name = item.path.name
        if name in COURSE_FILES or name[5:7].isdigit():
            item.add_marker(pytest.mark.course)
        elif name in PACKAGING_FILES:
            item.add_marker(pytest.mark.packaging)


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
def x64():
    """JAX float64 for a test that calls physai.jaxkin directly (it refuses float32), restored afterwards."""
    import jax

    with jax.enable_x64(True):
        yield


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


# ---- independent references shared by several test modules ----


def mj_site(m, chain, q):
    """Independent reference: MuJoCo's site pose and [jacp; jacr] computed from scratch for q."""
    d = mujoco.MjData(m)
    d.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    sid = m.site(chain.tool_name).id
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    mujoco.mj_jacSite(m, d, jp, jr, sid)
    return d.site_xpos[sid].copy(), d.site_xmat[sid].reshape(3, 3).copy(), np.r_[jp, jr][:, list(chain.dof_adr)]


def mujoco_errors(m, chain, q, T_target, task):
    """Position / orientation error of the MuJoCo site pose at q (independent of physai's FK)."""
    T = mj.site_pose(m, chain, q)
    perr = np.linalg.norm(T[:3, 3] - T_target[:3, 3])
    if task == "position":
        return perr, 0.0
    if task == "pose":
        return perr, Rotation.from_matrix(T_target[:3, :3] @ T[:3, :3].T).magnitude()
    return perr, np.arccos(np.clip(T[:3, 2] @ T_target[:3, 2], -1, 1))


def load_lesson(folder: str, script: str):
    """Import a lesson script (``experiments/<folder>/<script>``) as a module, without running its ``main()``."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "experiments" / folder / script
    name = f"lesson_{folder.replace('-', '_')}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses (with postponed annotations) look their module up while being built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build(request):
    """The test module's lesson's ``build.py`` (its folder is the module's ``LESSON``), imported, ``main()`` not run."""
    return load_lesson(request.module.LESSON, "build.py")


@pytest.fixture(scope="module")
def audit(request):
    """The test module's lesson's private ``_audit.py`` (the claims made on its scripts' steps), imported."""
    return load_lesson(request.module.LESSON, "_audit.py")


@pytest.fixture(scope="module")
def ex(request):
    """The test module's lesson's ``experiment.py`` (its folder is the module's ``LESSON``), imported, not run."""
    return load_lesson(request.module.LESSON, "experiment.py")


@pytest.fixture
def run_lesson(tmp_path, monkeypatch):
    """``run(script, *args) -> (claims, results)``: the loaded lesson ``script``'s ``main(*args)`` run with its outputs
    in ``tmp_path`` (its ``HERE``), then, as ``run_script`` does, the claims of the lesson's ``_audit.py`` on what it
    returned written there; a script the audit does not name returns the claims it wrote (checked to be those in
    ``claims.json``). ``results`` is what it saved for the page (its entry of ``results.json``)."""
    from physai.course.lesson import publish_audit, read_claims, read_results

    def run(script, *args):
        monkeypatch.setattr(script, "HERE", tmp_path)
        path = Path(script.__file__)
        returned = script.main(*args)
        claims = publish_audit(tmp_path, path, returned)
        claims = returned if claims is None else claims
        assert read_claims(tmp_path) == claims
        return claims, read_results(tmp_path)[path.stem]

    return run


@pytest.fixture(scope="session")
def chromium():
    """``(path, sync_api)``: the system Chromium and Playwright's sync API, which the browser tests drive; a test
    that asks for them is skipped where either is missing (CI installs both)."""
    path = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if path is None:
        pytest.skip("no system Chromium (Debian: apt-get install chromium chromium-driver); CI installs it")
    return path, pytest.importorskip("playwright.sync_api", reason="playwright (dev dependency) not installed")


def mujoco_distances(world, q, cap=None):
    """Every pair's mj_geomDistance at q, on a fresh MjData posed by MuJoCo alone (no bounding test);
    ``cap`` (m) defaults to the world's ``distmax``."""
    m, d = world.model, mujoco.MjData(world.model)
    d.qpos[world.qpos_adr] = q
    mujoco.mj_kinematics(m, d)
    cap = world.distmax if cap is None else cap
    return np.array([mujoco.mj_geomDistance(m, d, int(a), int(b), cap, None) for a, b in world.pairs])


@pytest.fixture
def small_fs(tmp_path):
    """``mount(options) -> folder``: a 64 KiB file system mounted for the test (``"ro"``: read-only), unmounted after
    it; the test is skipped where none can be mounted (not root, not Linux). Root writes through permission bits,
    so a read-only or a full file system is the one place nobody can write."""
    mounted = []

    def mount(options: str = "") -> Path:
        folder = tmp_path / f"fs{len(mounted)}"
        folder.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(filter(None, (options, "size=64k"))), "tmpfs",
                           str(folder)], capture_output=True).returncode != 0:
            pytest.skip("cannot mount a small file system here")
        mounted.append(folder)
        return folder

    yield mount
    os.chdir(tmp_path)  # a test may be working in one (monkeypatch puts the working folder back afterwards)
    for folder in mounted:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """``physai tour`` once for the session, its lesson outputs kept out of the source tree -> the course folder
    (the pages, each lesson's results and notebook under ``NN-name/``)."""
    from typer.testing import CliRunner

    from physai import cli

    out = tmp_path_factory.mktemp("course") / "out"
    with pytest.MonkeyPatch.context() as env:  # session-scoped: the function-scoped monkeypatch is not available
        env.setenv("PHYSAI_LESSON_OUT", str(out.parent / "runs"))
        res = CliRunner().invoke(cli.app, ["tour", "--out", str(out)])
    assert res.exit_code == 0, res.output[-3000:]
    return out


def check_picture(folder, record, robot: str):
    """A lesson's picture exists, is an image with more than a handful of colours, and says how it was made:
    rendered by MuJoCo, or drawn from the chain (the fallback) with its reason given, in its record and its alt
    text."""
    import matplotlib.image as mpimg

    from physai.course.lesson import read_figures
    from physai.course.pictures import ARM_NAMES, FALLBACK

    path = Path(folder) / record["file"]
    image = mpimg.imread(path)
    assert image.ndim == 3 and len(np.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 100
    assert record["robot"] == robot
    alt = read_figures(folder)[record["file"]].alt
    assert ARM_NAMES[robot] in alt
    if record["rendered"]:
        assert record["backend"].startswith("mujoco-") and alt.startswith("MuJoCo rendering")
    else:
        assert record["backend"] == FALLBACK and record["why"] and "no OpenGL backend" in alt
