"""Every lesson script has the one skeleton: ``main(full: bool = False)``, run by
``run_script(main, __file__, full_run())``; no module-level ``FULL`` flag and no copy of ``full_run``. A script the
lesson's private ``_audit.py`` names in ``CLAIMS`` returns its steps (the audit's claims are made on them) and names
no claim itself; another returns the claims it wrote (``list[Claim]``)."""

import ast
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
SCRIPTS = sorted(p for p in EXPERIMENTS.glob("[0-9][0-9]-*/*.py") if not p.name.startswith("_"))


def _main(tree: ast.Module) -> ast.FunctionDef:
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert len(found) == 1, "one top-level main()"
    return found[0]


def _audited(folder: Path) -> set[str]:
    """The script names the keys of ``CLAIMS = {...}`` in ``folder/_audit.py`` hold (none without the file)."""
    path = folder / "_audit.py"
    if not path.is_file():
        return set()
    found = [n.value for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.Assign)
             and [ast.unparse(t) for t in n.targets] == ["CLAIMS"]]
    assert len(found) == 1 and isinstance(found[0], ast.Dict), f"{path}: one CLAIMS = {{script name: function}}"
    return {ast.literal_eval(k) for k in found[0].keys}


def test_every_lesson_folder_has_scripts():
    assert {p.parent.name for p in SCRIPTS} == {p.name for p in EXPERIMENTS.glob("[0-9][0-9]-*") if p.is_dir()}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_main_has_the_one_signature(script):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    main = _main(tree)
    assert ast.unparse(main.args) == "full: bool=False" and main.returns is not None
    if script.name in _audited(script.parent):  # its steps returned, the claims made on them in _audit.py
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert ast.unparse(main.returns) != "list[Claim]" and not names & {"Claim", "publish_claims", "verdict"}
    else:
        assert ast.unparse(main.returns) == "list[Claim]"
    runs = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "run_script"]
    assert runs == ["run_script(main, __file__, full_run())"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_full_flag_and_no_copy_of_full_run(script):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "FULL" not in assigned and "full_run" not in defined


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_figures_are_recorded_through_save_results_never_printed_for_a_parser(script):
    """A script that saves a figure passes its caption and alt text to ``save_results(..., figures=...)``; no line
    it prints is read back (the pages take captions from results.json, not from transcripts)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    saves = [n for n in calls if ast.unparse(n.func) == "save_results"]
    if any(ast.unparse(n.func) == "save_figure" for n in calls):
        assert saves and all(any(k.arg == "figures" for k in n.keywords) for n in saves)
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not [t for t in texts if t.lstrip("\n").startswith("figure: ")]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_step_returns_a_dict(script):
    """Steps return frozen dataclasses (their fields are what results.json stores), not dicts built by hand."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    steps = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_step")]
    assert [n.name for n in steps if n.returns is None or ast.unparse(n.returns) == "dict"] == []
