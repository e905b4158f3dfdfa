"""The API reference builds as the README says (``mkdocs build --strict``: warnings are errors), offline, and has an
entry for every name of ``physai.__all__`` and a row for every lesson folder."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import physai

ROOT = Path(__file__).resolve().parents[1]


def _entry_id(name: str) -> str:
    """The HTML id mkdocstrings gives a public name's entry: its path in the module that defines it."""
    obj = getattr(physai, name)
    if inspect.ismodule(obj):
        return obj.__name__
    home = physai._HOME[name]  # where the lazy front door finds it (constants carry no __module__)
    return f"{home}.{name}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # A fetch would fail through this proxy (nothing listens on port 9), so a build that needs the network fails.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HTTP_PROXY": "http://127.0.0.1:9",
           "HTTPS_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
           "https_proxy": "http://127.0.0.1:9", "NO_PROXY": "", "no_proxy": ""}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def _html(site: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html")))


def test_every_public_name_has_an_entry_in_the_reference(site):
    ids = set(re.findall(r'\bid="([^"]+)"', _html(site)))
    missing = [name for name in physai.__all__ if _entry_id(name) not in ids]
    assert not missing, f"names of physai.__all__ without an entry in the built reference: {missing}"


def test_every_lesson_folder_is_on_the_lessons_page(site):
    page = (site / "lessons" / "index.html").read_text(encoding="utf-8")
    folders = sorted(p.name for p in (ROOT / "experiments").iterdir() if re.match(r"\d\d-", p.name))
    assert folders, "no lesson folders found under experiments/"
    missing = [f for f in folders if f"experiments/{f}/" not in page]
    assert not missing, f"lesson folders missing from docs/lessons.md: {missing}"


def test_built_site_loads_nothing_from_the_network(site):
    remote = re.findall(r'(?:<script[^>]+src|<link[^>]+href|<img[^>]+src)="(https?://[^"]+)"', _html(site))
    assert not remote, f"the built pages load remote resources: {sorted(set(remote))}"


def test_readme_names_the_command_that_builds_the_reference():
    assert "uv run mkdocs build --strict" in (ROOT / "README.md").read_text(encoding="utf-8")
