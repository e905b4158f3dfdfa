"""A hostile model file and a hostile web page against the viewer: nothing from the model runs in the page,
and the viewer's websocket talks only to the viewer's own page.

References: the HTTP status of the websocket handshake (RFC 6455: 101 accepted, anything else refused) and
what headless Chromium reports (a script flag on ``window``, dialogs, the text the page shows).
"""

from xml.sax.saxutils import quoteattr

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from physai.viewer import Viewer, origin_allowed

IMG = '<img src=x onerror="window.__pwned=1;alert(1)">'
IFRAME = '<iframe srcdoc="<script>parent.__pwned=2;alert(2)</script>"></iframe>'
BRACKETS = "finger[left] [/bold] **x** |y|"


def _hostile_arm(folder) -> str:
    """A two-joint MJCF arm whose model, body, joint and site names are HTML (and markdown)."""
    xml = f"""<mujoco model={quoteattr(IMG)}>
  <worldbody>
    <body name={quoteattr("b" + IMG)}>
      <joint name={quoteattr(IMG)} type="hinge" axis="0 0 1" range="-2 2"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      <body name={quoteattr("c" + IFRAME)} pos="0.2 0 0">
        <joint name={quoteattr(IFRAME + BRACKETS)} type="hinge" axis="0 1 0" range="-2 2"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
        <site name={quoteattr("tool" + IFRAME)} pos="0.2 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""
    path = folder / "arm<b>.xml"
    path.write_text(xml)
    return str(path)


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    v = Viewer(_hostile_arm(tmp_path_factory.mktemp("hostile")), port=0)
    yield v
    v.close()


def _ws_url(viewer) -> str:
    return viewer.url.replace("http://", "ws://")


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "null"])
def test_websocket_handshake_from_a_foreign_origin_is_refused_403(viewer, origin):
    with pytest.raises(InvalidStatus) as info:
        connect(_ws_url(viewer), origin=origin, open_timeout=10).close()
    assert info.value.response.status_code == 403


def test_websocket_handshake_from_the_page_origin_is_accepted_101(viewer):
    with connect(_ws_url(viewer), origin=viewer.url, open_timeout=10) as ws:
        assert ws.response.status_code == 101
    with connect(_ws_url(viewer), open_timeout=10) as ws:  # no Origin: a program on this machine, not a page
        assert ws.response.status_code == 101


@pytest.mark.parametrize("origin, host, allowed", [
    ("http://127.0.0.1:8080", "127.0.0.1:8080", True),
    ("http://localhost:9000", "localhost:9000", True),  # an SSH-forwarded port: the page's own origin
    (None, "127.0.0.1:8080", True),
    ("http://evil.example", "127.0.0.1:8080", False),
    ("http://localhost:3000", "localhost:8080", False),  # another local page
    ("http://evil.example:8080", "evil.example:8080", False),  # DNS rebinding: Host is the attacker's name
    ("https://127.0.0.1:8080", "127.0.0.1:8080", False),
    ("null", "127.0.0.1:8080", False),
    ("http://127.0.0.1:8080", None, False),
])
def test_origin_rule_follows_the_same_origin_policy_for_a_loopback_page(origin, host, allowed):
    """Reference: RFC 6454 origin = scheme://host:port of the page; the page is served over http on loopback."""
    assert origin_allowed(origin, host) is allowed


def test_html_names_in_the_model_run_nothing_in_headless_chromium_and_show_as_text(viewer, chromium):
    chromium, sync_api = chromium
    dialogs = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=[
            "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"])
        try:
            page = browser.new_page(viewport={"width": 640, "height": 480})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(viewer.url)
            page.get_by_text(IMG, exact=True).first.wait_for(timeout=30_000)
            page.wait_for_timeout(1000)  # an onerror handler or an iframe's script would have run by now
            pwned = page.evaluate("() => window.__pwned === undefined ? null : window.__pwned")
            text = page.inner_text("body")
            frames = len(page.frames)
            injected = page.evaluate("() => document.querySelectorAll('img[src=x], iframe').length")
        finally:
            browser.close()
    assert pwned is None and dialogs == [], f"script from the model ran: flag {pwned}, dialogs {dialogs}"
    assert frames == 1 and injected == 0
    for name in (IMG, IFRAME + BRACKETS, "tool" + IFRAME, "arm<b>"):
        assert name in text, f"{name!r} is not shown verbatim"


def test_other_websocket_servers_are_left_alone(viewer):
    """The origin check is scoped to the viewer: after it started, websockets' own ``serve`` is restored."""
    import websockets.asyncio.server as ws_server
    from websockets.asyncio.server import serve

    assert ws_server.serve is serve and serve.__module__ == "websockets.asyncio.server"
