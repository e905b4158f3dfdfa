"""The extras of physai-kinematics (``course``, ``jax``, ``viewer``, ``jit``): a part that needs one this install
lacks stops with one line naming the extra and the command that installs it (:mod:`physai._extras`). The reference
for what each extra brings is pyproject.toml and the installed distributions' own records
(``importlib.metadata.packages_distributions``)."""

import importlib.metadata
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from typer.testing import CliRunner

import physai
from physai import _extras, cli
from physai.errors import MissingExtraError, PhysaiError

PYPROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements_of(extra: str) -> set[str]:
    """The distributions ``physai-kinematics[extra]`` installs, the extras it names of itself included."""
    out = set()
    for line in EXTRAS[extra]:
        req = Requirement(line)
        if canonical(req.name) == _extras.DISTRIBUTION:
            out |= set().union(*(requirements_of(e) for e in req.extras))
        else:
            out.add(canonical(req.name))
    return out


@pytest.mark.parametrize("extra", sorted(_extras.EXTRAS))
def test_each_module_a_part_checks_for_comes_with_its_extra(extra):
    owners = importlib.metadata.packages_distributions()
    for module in _extras.EXTRAS[extra]:
        assert {canonical(d) for d in owners[module]} & requirements_of(extra), (extra, module)
    assert _extras.require(extra, "this test") is None  # a clone's environment has every extra


def test_all_is_every_extra():
    assert requirements_of("all") == set().union(*(requirements_of(e) for e in EXTRAS if e != "all"))


def hide(monkeypatch, *modules):
    """As if ``modules`` were not installed (for :func:`physai._extras.require`)."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in modules else find_spec(name, *a))


def test_a_missing_extra_is_one_line_naming_it_and_the_install_command(monkeypatch):
    hide(monkeypatch, "viser")
    with pytest.raises(MissingExtraError) as info:
        _extras.require("viewer", "physai's viewer")
    assert str(info.value) == ("physai's viewer needs physai-kinematics[viewer] (viser not installed): "
                               'pip install "physai-kinematics[viewer]"')
    assert isinstance(info.value, PhysaiError) and isinstance(info.value, ImportError)


@pytest.mark.parametrize("command", [["tour"], ["lesson", "09"], ["exercise", "09", "x"], ["check", "09", "x"],
                                     ["notebook", "09"], ["view"]])
def test_each_command_without_its_extra_stops_with_one_line(command, monkeypatch, tmp_path):
    hide(monkeypatch, "jinja2", "viser")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli.app, command)
    extra = "viewer" if command == ["view"] else "course"
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert res.stderr.endswith(f'[{extra}] (' + ("viser" if extra == "viewer" else "jinja2")
                               + f' not installed): pip install "physai-kinematics[{extra}]"\n')
    assert res.stderr.count("\n") == 1 and not list(tmp_path.iterdir())  # nothing ran before the check


def test_the_jax_parts_without_jax_say_so_in_one_line(monkeypatch):
    hide(monkeypatch, "jax")
    chain = physai.load("so101")
    with pytest.raises(MissingExtraError, match=r'backend=\'jax\' needs physai-kinematics\[jax\] \(jax not installed\)'
                                                 r': pip install "physai-kinematics\[jax\]"$'):
        physai.solve_ik_batch(chain, [[0.2, 0.0, 0.1]], task="position",
                              solver=physai.ik.Solver(method="dls", backend="jax"))
