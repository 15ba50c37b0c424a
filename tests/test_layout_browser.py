"""The layout pictures as a person sees them: headless Chromium renders the SVG and the HTML
page, a screenshot is taken (kept in the test's temporary folder) and must not be blank,
and moving the mouse over a cell must show its owners.

Chromium is driven over its DevTools protocol through ``--remote-debugging-pipe`` (JSON
messages separated by NUL bytes on file descriptors 3 and 4), so nothing but the Python
standard library is needed. Skipped where no Chromium is installed (Debian:
``apt-get install chromium``)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from simtify.layout import ownership_map, parse_layout
from simtify.layout.picture import html, svg

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (Debian: apt-get install chromium)")

SEED_64x64 = (
    "#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], "
    "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
)
SHARED = "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128]>"  # every element held by two subgroups
TIMEOUT_S = 30


class Browser:
    """One headless Chromium and a page, spoken to over the DevTools pipe."""

    def __init__(self, profile: Path):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds():  # the child reads commands on fd 3 and answers on fd 4
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)  # above 3 and 4, or already there
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds,  # kept open past the preexec dup2
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, session: bool = False, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise TimeoutError(method)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read())
        raise TimeoutError(method)

    def open(self, path: Path) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=path.as_uri())
        self.wait_event("Page.loadEventFired")

    def js(self, expression: str):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def hover(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=x, y=y)

    def screenshot(self, path: Path) -> bytes:
        """The whole page, also what lies beyond the window."""
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call("Page.captureScreenshot", session=True, format="png", clip=clip, captureBeyondViewport=True)
        png = base64.b64decode(shot["data"])
        path.write_bytes(png)
        return png

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


# A histogram of a PNG's colours (every third pixel of every third row), decoded by the
# browser itself: the PNG's bytes come as base64 and become a bitmap, never a file URL.
HISTOGRAM = """(async function (b64) {
  var bytes = Uint8Array.from(atob(b64), function (c) { return c.charCodeAt(0); });
  var bmp = await createImageBitmap(new Blob([bytes], {type: 'image/png'}));
  var cv = new OffscreenCanvas(bmp.width, bmp.height), cx = cv.getContext('2d');
  cx.drawImage(bmp, 0, 0);
  var px = cx.getImageData(0, 0, bmp.width, bmp.height).data, seen = {};
  for (var y = 0; y < bmp.height; y += 3)
    for (var x = 0; x < bmp.width; x += 3) {
      var i = 4 * (y * bmp.width + x), key = px[i] + ',' + px[i + 1] + ',' + px[i + 2];
      seen[key] = (seen[key] || 0) + 1;
    }
  return seen;
})('%s')"""


def colours(b: "Browser", png: bytes) -> dict[tuple[int, ...], int]:
    r = b.call("Runtime.evaluate", session=True, expression=HISTOGRAM % base64.b64encode(png).decode(),
               awaitPromise=True, returnByValue=True)
    assert "exceptionDetails" not in r, r
    return {tuple(map(int, k.split(","))): n for k, n in r["result"]["value"].items()}


def assert_not_blank(b: "Browser", png: bytes, *fills: str) -> None:
    """Several colours, none covering nearly everything, and the cells' own fills among them."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    seen = colours(b, png)
    total = sum(seen.values())
    assert len(seen) >= 8, seen
    assert max(seen.values()) < 0.9 * total
    for fill in fills:
        rgb = tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))
        assert seen.get(rgb, 0) > 0.01 * total, (fill, sorted(seen.items(), key=lambda kv: -kv[1])[:8])


# Client coordinates of the centre of drawn cell k (from the picture's own data and its
# on-screen transform), after scrolling it into view.
CELL_CENTRE = """(function (k) {
  var D = JSON.parse(document.getElementById('d').textContent), pic = document.getElementById('pic');
  var per = D.R * D.C, g = Math.floor(k / per), rc = k - g * per;
  var x = D.x + (rc - D.C * Math.floor(rc / D.C) + 0.5) * D.w, y = D.g[g] + (Math.floor(rc / D.C) + 0.5) * D.h;
  var box = pic.parentNode;  // the HTML page scrolls the picture inside a box
  if (box.classList && box.classList.contains('picture')) {
    box.scrollTop = Math.max(0, y - 100);
    box.scrollLeft = Math.max(0, x - 100);
  }
  var m = pic.getScreenCTM();
  window.scrollTo(0, Math.max(0, m.d * y + m.f + window.scrollY - 200));
  m = pic.getScreenCTM();
  return [m.a * x + m.e, m.d * y + m.f];
})(%d)"""


def hover_text(b: Browser, k: int, where: str) -> str:
    x, y = b.js(CELL_CENTRE % k)
    b.hover(x, y)
    return b.js(f"document.querySelector('{where}').textContent")


def test_svg_renders_and_hover_shows_the_owners(browser, tmp_path):
    omap = ownership_map(parse_layout(SEED_64x64), (64, 64))
    page = tmp_path / "seed.svg"
    page.write_text(svg(omap, title=SEED_64x64))
    browser.open(page)
    assert_not_blank(browser, browser.screenshot(tmp_path / "seed-svg.png"), "#8fb8de", "#f7b267")  # s0 and s1
    assert browser.js("document.getElementById('tip').getAttribute('visibility')") == "hidden"
    text = hover_text(browser, 4, "#tip text")  # element [0, 4]: thread 16, register 0
    assert "element [0, 4]" in text and "s0 t16 r0" in text
    assert browser.js("document.getElementById('tip').getAttribute('visibility')") == "visible"
    assert browser.js("document.querySelectorAll('#hl rect.hl').length") == 32  # thread 16's 32 elements
    assert_not_blank(browser, browser.screenshot(tmp_path / "seed-svg-hover.png"))
    text = hover_text(browser, 32 * 64 + 1, "#tip text")
    assert "element [32, 1]" in text and "s1 t64 r1" in text


def test_html_renders_and_hover_lists_every_owner(browser, tmp_path):
    omap = ownership_map(parse_layout(SHARED), (128, 128), 1)
    page = tmp_path / "shared.html"
    page.write_text(html(omap, title=SHARED))
    browser.open(page)
    assert_not_blank(browser, browser.screenshot(tmp_path / "shared-html.png"), "#8fb8de", "#8fd18f")  # s0 and s2
    text = hover_text(browser, 40 * 128 + 5, "#info")
    assert "element [40, 5]" in text
    assert f"s2 t2 r{8 * 128 + 5}" in text and f"s3 t3 r{8 * 128 + 5}" in text  # a replicated element: both owners
    text = hover_text(browser, 127 * 128 + 100, "#info")  # scrolled into view inside the page's picture box
    assert "element [127, 100]" in text and f"s3 t3 r{32 * 128 + 31 * 128 + 100}" in text  # second round of the round-robin
    assert_not_blank(browser, browser.screenshot(tmp_path / "shared-html-hover.png"))


def test_threads_svg_renders_and_hover_names_the_slot(browser, tmp_path):
    omap = ownership_map(parse_layout(SEED_64x64), (64, 64))
    page = tmp_path / "threads.svg"
    page.write_text(svg(omap, title=SEED_64x64, view="threads"))
    browser.open(page)
    assert_not_blank(browser, browser.screenshot(tmp_path / "threads-svg.png"), "#8fb8de")
    text = hover_text(browser, 16 * 32 + 1, "#tip text")  # thread 16, register 1: element [0, 5]
    assert "thread t16 (s0, lane 16), register r1" in text and "holds element [0, 5]" in text
