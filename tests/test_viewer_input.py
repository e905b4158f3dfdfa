"""physai.viewer's input: names from a model file reach viser's markdown panel (which renders raw HTML) as text,
and impossible ports or rates are refused before a server starts.

Reference: Python's ``html.unescape`` and markdown's backslash-escape rule undo the escaping exactly.
"""

import html
import re

from hypothesis import given
from hypothesis import strategies as st

import pytest

from physai.errors import InputError
from physai.viewer import Viewer, model_text


def test_html_in_a_joint_name_is_inert():
    name = '<iframe srcdoc="<script>parent.pwned=1</script>"></iframe>'
    out = model_text(name)
    assert "<" not in out and ">" not in out and '"' not in out


@given(st.text(max_size=40))
def test_escaping_round_trips_and_leaves_no_markup(name):
    out = model_text(name)
    assert not set("<>\"'") & set(out)
    assert not re.search(r"(?<!\\)[|\[\]`*_]", out)  # every markdown control character is escaped
    assert html.unescape(re.sub(r"\\(.)", r"\1", out, flags=re.S)) == name


@pytest.mark.parametrize("option, value", [("port", 99999), ("port", -1), ("port", 80.5), ("rate_hz", 0.0),
                                           ("rate_hz", float("nan")), ("mesh_cell", -1.0)])
def test_viewer_refuses_bad_options_naming_them(option, value):
    with pytest.raises(InputError, match=option):
        Viewer("so101", **{option: value})
