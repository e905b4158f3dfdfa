"""physai.viewer.model_text: names from a model file reach viser's markdown panel (which renders raw HTML) as text.

Reference: Python's ``html.unescape`` and markdown's backslash-escape rule undo the escaping exactly.
"""

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from physai.viewer import model_text


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
