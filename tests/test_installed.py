"""The package as a user installs it: a wheel built from this checkout (``uv build --wheel``), installed into a fresh
virtual environment outside the checkout, site-packages made read-only and HOME a temporary folder.

It must carry the lessons and the compiled engine: ``physai tour`` and ``physai lesson`` run every lesson script
from the install, ``physai ik`` answers from the wheel's prebuilt modules (no compiler, no numba), and no file
appears inside the environment. On Linux the wheel is tagged manylinux for the glibc its modules need, as
``auditwheel show`` reads them, so a package index accepts it. Slow (a wheel build compiles the engine): marked
``slow``, run by ``uv run pytest``.

``PHYSAI_TEST_PYTHON`` names the interpreter the wheel is built for and installed with (default: the one running the
tests), so CI runs these tests for Python 3.13 too.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from physai import cli
from physai.course import course

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
UV = shutil.which("uv")
PYTHON = os.environ.get("PHYSAI_TEST_PYTHON") or sys.executable
CLEAN = {k: v for k, v in os.environ.items()
         if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV", "XDG_CACHE_HOME", "PHYSAI_LESSON_OUT")}


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=1200, **kwargs)
    assert out.returncode == 0, f"{args}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def listing(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


def writable(folder: Path, on: bool) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode | stat.S_IWUSR if on else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel ``uv build --wheel`` makes from this checkout for :data:`PYTHON`."""
    if UV is None:
        pytest.skip("needs uv to build and install the wheel")
    tmp = tmp_path_factory.mktemp("wheel")
    run(UV, "build", "--wheel", "--python", PYTHON, "-o", tmp, ROOT, env=CLEAN, cwd=tmp)
    (built,) = tmp.glob("physai_kinematics-*.whl")
    return built


def install(tmp, wheel, extras: tuple[str, ...], *more: str):
    """``(env, venv, work)``: a fresh environment holding ``wheel`` with ``extras`` (the versions uv.lock pins), made
    read-only; the environment of its user, and a folder to work in."""
    run(UV, "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-q", "-o", tmp / "req.txt",
        *(f"--extra={extra}" for extra in extras), env=CLEAN, cwd=ROOT)
    venv = tmp / "venv"
    run(UV, "venv", "-q", "--python", PYTHON, venv, env=CLEAN, cwd=tmp)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    target = f"{wheel}[{','.join(extras)}]" if extras else wheel
    run(UV, "pip", "install", "-q", "--python", python, "-r", tmp / "req.txt", target, *more, env=CLEAN, cwd=tmp)
    (tmp / "home").mkdir()
    (tmp / "work").mkdir()
    env = {**CLEAN, "HOME": str(tmp / "home"), "PATH": f"{python.parent}{os.pathsep}{CLEAN['PATH']}",
           "PYTHONDONTWRITEBYTECODE": "1"}  # Python's own .pyc files: pip writes them at install time
    writable(venv, False)
    return env, venv, tmp / "work"


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel):
    """The wheel with the course extra (``physai-kinematics[course]``), and nbclient and ipykernel: a lesson's
    notebook is run on a kernel of this environment, as Jupyter would."""
    env, venv, work = install(tmp_path_factory.mktemp("installed"), wheel, ("course",), "nbclient", "ipykernel")
    yield env, venv, work
    writable(venv, True)


@pytest.fixture(scope="module")
def core(tmp_path_factory, wheel):
    """The wheel alone: the library without any extra."""
    env, venv, work = install(tmp_path_factory.mktemp("core"), wheel, ())
    yield env, venv, work
    writable(venv, True)


def test_the_core_install_solves_and_answers_ik_and_names_the_course_extra_for_the_tour(core):
    env, venv, work = core
    absent = run("python", "-c", "import importlib.util as u; print([m for m in ('numba', 'scipy', 'jax', "
                 "'matplotlib', 'jinja2', 'viser', 'pinocchio') if u.find_spec(m)])", env=env, cwd=work).stdout
    assert absent.strip() == "[]"
    out = run("physai", "ik", "so101", "0.2", "0", "0.1", "--json", env=env, cwd=work)
    assert json.loads(out.stdout)["converged"]
    tour = subprocess.run(["physai", "tour"], env=env, cwd=work, capture_output=True, text=True, timeout=600)
    assert tour.returncode == 2 and tour.stdout == "" and tour.stderr.count("\n") == 1, tour.stderr
    assert tour.stderr.endswith('pip install "physai-kinematics[course]"\n')
    assert not list(work.iterdir())  # the tour wrote nothing before it stopped
    batch = ("import numpy as np, physai; c = physai.load('panda'); Q = c.random_q(np.random.default_rng(0), 300); "
             "print(np.abs(physai.tool_pose(c, Q) - physai.tool_pose(c, Q, engine='numpy')).max() < 1e-12)")
    assert run("python", "-c", batch, env=env, cwd=work).stdout.strip() == "True"  # a batch, without numba


def package(venv: Path) -> Path:
    (folder,) = venv.glob("lib/python*/site-packages/physai")
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="manylinux tags are Linux's")
def test_the_wheel_is_tagged_manylinux_for_the_newest_glibc_symbols_auditwheel_finds(wheel):
    tag = re.fullmatch(r"physai_kinematics-[^-]+-(cp\d+)-(cp\d+t?)-manylinux_2_(\d+)_(\w+)\.whl", wheel.name)
    assert tag, wheel.name
    python = run(PYTHON, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')").stdout.strip()
    assert tag.group(1) == python
    shown = " ".join(run(sys.executable, "-m", "auditwheel", "show", wheel).stdout.split())
    assert "external shared libraries" not in shown  # nothing that auditwheel repair would have to graft in
    assert re.search(rf'consistent with the following platform tag: "manylinux_2_\d+_{tag.group(4)}"', shown), shown
    glibc = [int(minor) for minor in re.findall(r"GLIBC_2\.(\d+)", shown)]
    assert glibc and int(tag.group(3)) == max(17, *glibc), shown


def test_without_a_c_compiler_the_wheel_builds_without_the_engine_and_says_so(tmp_path):
    if UV is None:
        pytest.skip("needs uv to build the wheel")
    no_compiler = {**CLEAN, "CC": str(tmp_path / "no-cc")}  # setuptools runs $CC: here, a file that does not exist
    out = run(UV, "build", "--wheel", "--python", PYTHON, "-o", tmp_path, ROOT, env=no_compiler, cwd=tmp_path)
    (wheel,) = tmp_path.glob("physai_kinematics-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")  # pure Python: the engine is compiled on first use instead
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if re.search(r"physai_(kernels|walk)_", n)]
    said = [line for line in (out.stdout + out.stderr).splitlines() if "compiled engine was not built" in line]
    assert len(said) == 1 and "no-cc" in said[0], out.stderr
    assert "numba" in requirements(wheel)  # what physai's first use needs to compile the engine


def requirements(wheel: Path) -> set[str]:
    """The distributions ``wheel`` requires whatever extras are asked for (its METADATA's unconditional
    ``Requires-Dist``)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(name).decode().splitlines()
    return {re.split(r"[<>=!~ ;\[]", line.split(":", 1)[1].strip())[0].lower() for line in lines
            if line.startswith("Requires-Dist:") and "extra ==" not in line}


def test_a_wheel_with_the_engine_requires_no_numba_scipy_or_course_package(wheel):
    assert requirements(wheel) == {"numpy", "mujoco", "mujoco-menagerie", "typer", "rich", "platformdirs", "filelock"}


def test_the_wheel_carries_every_lesson_file_and_both_prebuilt_modules(installed):
    _, venv, _ = installed
    physai = package(venv)
    # every file of experiments/ but those git ignores (what the lessons write): scripts, pages, checks, the track
    listed = run("git", "ls-files", "--cached", "--others", "--exclude-standard", "experiments", cwd=ROOT).stdout
    sources = [ROOT / line for line in listed.splitlines() if (ROOT / line).is_file()]
    assert sources
    for source in sources:
        copy = physai / "course" / "_lessons" / source.relative_to(ROOT / "experiments")
        assert copy.read_bytes() == source.read_bytes(), copy
    assert len(list(physai.glob("physai_kernels_*")) + list(physai.glob("physai_walk_*"))) == 2


ORIGIN = ("import sys, physai; from physai import _engine; c = physai.load('panda'); "
          "r = physai.solve_ik(c, physai.tool_pose(c, c.q_ref)); "
          "print(r.converged, 'numba' in sys.modules, _engine.kernels.origin)")


def test_physai_ik_answers_from_the_wheels_prebuilt_modules_without_numba(installed):
    env, venv, work = installed
    out = run("physai", "ik", "--robot", "so101", "--target", "0.2", "0", "0.1", env=env, cwd=work)
    assert "converged" in out.stdout
    converged, numba, origin = run("python", "-c", ORIGIN, env=env, cwd=work).stdout.split(maxsplit=2)
    assert (converged, numba) == ("True", "False")
    assert origin.startswith(f"prebuilt module {package(venv)}")


def test_the_tour_and_a_lesson_run_from_the_install_and_write_nothing_inside_it(installed):
    env, venv, work = installed
    before = listing(venv)
    scripts = sum(len(cli.lesson_scripts(d)) for d in cli.lesson_dirs())
    out = run("physai", "tour", env=env, cwd=work)
    assert f"{scripts}/{scripts} scripts ok" in out.stdout
    assert (work / "physai-out" / "index.html").is_file()
    assert (work / "physai-out" / course.FONTS / course.MATH_FONT).is_file()  # the maths font, from the wheel
    run("physai", "lesson", "09", "--build", "--out", work / "lesson-09", env=env, cwd=work)
    assert (work / "lesson-09" / "09-jacobians" / "build_output.txt").is_file()
    assert listing(venv) == before


@pytest.mark.skipif(not (ROOT / "experiments" / "09-jacobians" / "_check.py").is_file(),
                    reason="lesson 09 has no graded exercise in this checkout")
def test_an_exercise_written_and_checked_from_the_install(installed):
    env, venv, work = installed
    before, mine = listing(venv), work / "my-09"
    run("physai", "exercise", "09", mine, env=env, cwd=work)
    blank = subprocess.run(["physai", "check", "09", str(mine)], env=env, cwd=work, capture_output=True, text=True)
    assert blank.returncode == 1 and re.search(r"\b0/\d+ functions pass", blank.stdout)  # nothing written yet
    shutil.copy(ROOT / "experiments" / "09-jacobians" / "build.py", mine / "build.py")  # the lesson's own answer
    passed, total = re.search(r"(\d+)/(\d+) functions pass", run("physai", "check", "09", mine, env=env,
                                                                  cwd=work).stdout).groups()
    assert passed == total
    assert listing(venv) == before


NOTEBOOK_RUN = """
import sys, nbclient, nbformat
book = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(book, timeout=600, kernel_name="python3", allow_errors=True,
                        resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(book, sys.argv[1])
"""


def test_a_lessons_notebook_written_and_run_from_the_install(installed):
    env, venv, work = installed
    before, folder = listing(venv), work / "notebooks"
    run("physai", "notebook", "11", folder, env=env, cwd=work)
    path = folder / "11-inverse-kinematics.ipynb"
    run("python", "-c", NOTEBOOK_RUN, path, folder, env=env, cwd=work)
    book = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in book["cells"] if c["cell_type"] == "code"]
    grades = run("python", "-c", "import physai; print(hasattr(physai, 'check'))", env=env, cwd=work).stdout.strip()
    grades = grades == "True"  # where physai grades in notebooks, the grading cells must not fail either
    failed = [(c["source"], o["ename"]) for c in code for o in c["outputs"] if o["output_type"] == "error"
              and ("grade" not in c["metadata"]["tags"] or grades)]
    assert not failed
    assert any("image/png" in o.get("data", {}) for c in code for o in c["outputs"])  # the figures, inline
    assert (folder / "physai-out" / "11-inverse-kinematics" / "results.json").is_file()  # written beside it
    assert listing(venv) == before
