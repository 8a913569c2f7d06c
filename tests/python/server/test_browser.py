"""`torchgrabcut serve` in a real browser: headless Chromium driven by selenium, with the mouse.

On a GrabCut-50 image the test drags the dataset's box on the page's canvas, checks the mask
the browser downloads against the ground truth, paints a background stroke where the mask is
wrong, checks that the refinement changed it there and beyond, undoes it, and uploads a file
that is not an image and one that is too large. A second test plays another site: from one
server's page it posts to and reads from a second server, which refuses. Screenshots go to
$TEST_ARTIFACTS_DIR (default test-artifacts/ at the repository root). Needs Debian's chromium
and chromium-driver (scripts/install_system_deps.sh, which `make test` runs); skips without them.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT
from torchgrabcut.server.app import make_server
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.tools.evaluate import load_dataset, score

IMAGE = "209070.jpg"  # GrabCut-50: the box alone gives IoU ~0.91, one wrong blob a stroke can fix
DISPLAY_SCALE = 1.5  # the canvas is shown at 1.5 CSS pixels per image pixel
TIMEOUT = 60


def _executable(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidate = Path("/usr/bin") / name
    return str(candidate) if candidate.is_file() else None


def artifacts_dir() -> Path:
    d = Path(os.environ.get("TEST_ARTIFACTS_DIR") or ROOT / "test-artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    chromium, chromedriver = _executable("chromium"), _executable("chromedriver")
    if chromium is None or chromedriver is None:
        pytest.skip("chromium and chromium-driver are not installed (bash scripts/install_system_deps.sh)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1100,900"):
        options.add_argument(arg)
    d = webdriver.Chrome(service=Service(chromedriver), options=options)
    d.set_script_timeout(TIMEOUT)
    try:
        yield d
    finally:
        d.quit()


@contextmanager
def serving(config: ServerConfig) -> Iterator[tuple[str, Any]]:
    """The page's URL and the Flask app, served from a thread."""
    server = make_server(config)  # 127.0.0.1, a free port; Host and token checked as by `serve`
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/", server.app
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


def page_value(driver, expr: str):
    return driver.execute_script(f"return {expr};")


def wait_results(driver, count: int) -> None:
    """Waits until the page has handled ``count`` answers and is idle; fails on a page error."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, TIMEOUT).until(
        lambda d: (
            page_value(d, "window.tgcPage && !window.tgcPage.busy && window.tgcPage.results") >= count
            or page_value(d, "window.tgcPage && window.tgcPage.errors") > 0
        )
    )
    assert page_value(driver, "window.tgcPage.errors") == 0, page_value(driver, "window.tgcPage.lastError")


def drag(driver, canvas, points: list[tuple[float, float]]) -> None:
    """Presses the mouse at the first point (image pixels), moves through the others, releases."""
    from selenium.webdriver.common.action_chains import ActionChains

    rect = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.width];", canvas
    )
    scale = rect[2] / page_value(driver, "window.tgcPage.width")
    viewport = [(round(rect[0] + x * scale), round(rect[1] + y * scale)) for x, y in points]
    chain = ActionChains(driver)
    pointer = chain.w3c_actions.pointer_action
    pointer.move_to_location(*viewport[0])
    pointer.pointer_down()
    for vx, vy in viewport[1:]:
        pointer.move_to_location(vx, vy)
    pointer.pointer_up()
    chain.perform()


def browser_fetch_png(driver, path: str) -> np.ndarray:
    """GET ``path`` from inside the page (its session cookie) and decode the PNG."""
    b64 = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        fetch(arguments[0], {credentials: "same-origin"})
          .then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error("HTTP " + r.status))))
          .then((buf) => {
            const u = new Uint8Array(buf);
            let s = "";
            for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode.apply(null, u.subarray(i, i + 0x8000));
            done(btoa(s));
          })
          .catch((e) => done("ERROR " + e.message));
        """,
        path,
    )
    assert not b64.startswith("ERROR"), b64
    with Image.open(io.BytesIO(base64.b64decode(b64))) as im:
        return np.asarray(im).copy()


def page_labels(driver) -> np.ndarray:
    """The labels the page decoded and draws (window.tgcPage.labels), as an (H, W) array."""
    b64 = driver.execute_script(
        """
        const lab = window.tgcPage.labels;
        let s = "";
        for (let i = 0; i < lab.length; i += 0x8000) s += String.fromCharCode.apply(null, lab.subarray(i, i + 0x8000));
        return btoa(s);
        """
    )
    h, w = page_value(driver, "window.tgcPage.height"), page_value(driver, "window.tgcPage.width")
    return np.frombuffer(base64.b64decode(b64), np.uint8).reshape(h, w)


def stroke_target(fg: np.ndarray, gt: np.ndarray, box: tuple[int, int, int, int]) -> tuple[int, int]:
    """The pixel deepest inside the false foreground in the box (farthest from any correct pixel)."""
    import cv2

    wrong = fg & (gt == 0)
    x0, y0, x1, y1 = box
    inside = np.zeros_like(wrong)
    inside[y0:y1, x0:x1] = True
    depth = cv2.distanceTransform((wrong & inside).astype(np.uint8), cv2.DIST_L2, 5)
    y, x = np.unravel_index(int(np.argmax(depth)), depth.shape)
    assert depth[y, x] >= 6, "expected a false-foreground blob wide enough for a stroke"
    return int(x), int(y)


def test_box_stroke_undo_in_chromium(driver, grabcut50: Path) -> None:
    from selenium.webdriver.common.by import By

    pytest.importorskip("cv2")
    item = next(it for it in load_dataset(grabcut50) if it.name == IMAGE)
    h, w = item.gt.shape
    config = ServerConfig(images=[grabcut50 / "images" / IMAGE], device="cpu", max_upload_mb=1)
    out = artifacts_dir()
    with serving(config) as (url, _):
        driver.get(url)
        wait_results(driver, 1)  # the page opens the first listed image by itself
        assert (page_value(driver, "window.tgcPage.width"), page_value(driver, "window.tgcPage.height")) == (w, h)
        canvas = driver.find_element(By.ID, "view")
        # Shown larger than the image, so CSS pixels and image pixels differ.
        driver.execute_script(
            "arguments[0].style.maxWidth = 'none'; arguments[0].style.maxHeight = 'none';"
            "arguments[0].style.width = arguments[1] + 'px';",
            canvas,
            DISPLAY_SCALE * w,
        )
        assert abs(canvas.rect["width"] - DISPLAY_SCALE * w) < 1

        # 1. Drag the box.
        x0, y0, x1, y1 = item.box
        drag(driver, canvas, [(x0, y0), ((x0 + x1) / 2, (y0 + y1) / 2), (x1, y1)])
        wait_results(driver, 2)
        last = page_value(driver, "window.tgcPage.last")
        assert last["action"] == "box" and last["grabcut_ms"] > 0 and last["server_ms"] >= last["grabcut_ms"]
        mask_box = browser_fetch_png(driver, "/api/mask.png")
        assert mask_box.shape == (h, w) and mask_box.max() <= 3
        np.testing.assert_array_equal(page_labels(driver), mask_box)  # the page draws what the server holds
        fg_box = (mask_box & 1).astype(bool)
        _, iou_box = score(fg_box, item.gt, item.box)
        assert iou_box >= 0.8, f"IoU after the box {iou_box:.3f}"
        status = driver.find_element(By.ID, "status").text
        assert "GrabCut" in status and "ms" in status, status
        driver.save_screenshot(str(out / "browser_box.png"))

        # 2. A background stroke through the widest false-foreground blob.
        driver.find_element(By.ID, "mode-bg").click()
        driver.execute_script(
            "const r = document.getElementById('radius'); r.value = 4; r.dispatchEvent(new Event('input'));"
        )
        sx, sy = stroke_target(fg_box, item.gt, item.box)
        drag(driver, canvas, [(sx - 6, sy), (sx, sy), (sx + 6, sy)])
        wait_results(driver, 3)
        assert page_value(driver, "window.tgcPage.last")["action"] == "strokes"
        mask_stroke = browser_fetch_png(driver, "/api/mask.png")
        np.testing.assert_array_equal(page_labels(driver), mask_stroke)
        assert (mask_stroke[sy, sx - 3 : sx + 4] == 0).all()  # hard background (GC_BGD) under the stroke
        fg_stroke = (mask_stroke & 1).astype(bool)
        changed = fg_stroke != fg_box
        assert changed.sum() > 200, "the refinement should change more than the stroke's ~100 pixels"
        _, iou_stroke = score(fg_stroke, item.gt, item.box)
        assert iou_stroke > iou_box, (iou_box, iou_stroke)
        binary = browser_fetch_png(driver, "/api/mask.png?binary=1")
        np.testing.assert_array_equal(binary, fg_stroke.astype(np.uint8) * 255)
        driver.save_screenshot(str(out / "browser_stroke.png"))

        # 3. Undo restores the box's mask exactly.
        driver.find_element(By.ID, "undo").click()
        wait_results(driver, 4)
        np.testing.assert_array_equal(browser_fetch_png(driver, "/api/mask.png"), mask_box)
        np.testing.assert_array_equal(page_labels(driver), mask_box)

        # 4. A file that is not an image: a clear message, and the page keeps working.
        bad = out / "not-an-image.txt"
        bad.write_text("hello")
        driver.find_element(By.ID, "upload").send_keys(str(bad))
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, TIMEOUT).until(lambda d: page_value(d, "window.tgcPage.errors") == 1)
        status = driver.find_element(By.ID, "status")
        assert "not an image" in status.text and "error" in status.get_attribute("class")
        # 5. And one over the upload limit (1 MB here).
        big = out / "too-large.png"
        big.write_bytes(b"\x89PNG" + bytes(3 * 1024 * 1024))
        driver.find_element(By.ID, "upload").send_keys(str(big))
        WebDriverWait(driver, TIMEOUT).until(lambda d: page_value(d, "window.tgcPage.errors") == 2)
        assert "upload too large: the limit is 1 MB" in status.text, status.text
        bad.unlink()
        big.unlink()
        np.testing.assert_array_equal(browser_fetch_png(driver, "/api/mask.png"), mask_box)
    print(f"browser: IoU box {iou_box:.3f}, after stroke {iou_stroke:.3f}; {changed.sum()} pixels changed; {out}")


def test_another_origin_cannot_use_the_server(driver) -> None:
    # Two servers on two ports are two origins: the page of the first plays the attacker's
    # site and tries what any web page can do to the second one.
    from torchgrabcut.data import BUNDLED_IMAGE

    attacker = ServerConfig(images=[BUNDLED_IMAGE], device="cpu")
    with serving(attacker) as (other, _), serving(ServerConfig(device="cpu")) as (target, app):
        driver.get(other)
        wait_results(driver, 1)
        results = driver.execute_async_script(
            """
            const target = arguments[0];
            const done = arguments[arguments.length - 1];
            const canvas = document.createElement("canvas");
            canvas.width = 32; canvas.height = 24;
            canvas.getContext("2d").fillRect(4, 4, 10, 10);
            const outcome = (p) => p.then((r) => "answered " + r.status + (r.type === "opaque" ? " opaque" : ""),
                                          (e) => "refused " + e.name);
            canvas.toBlob(async (blob) => {
              const form = new FormData();
              form.append("image", blob, "x.png");
              const out = {};
              // A plain form post needs no preflight: it reaches the server, which wants the token.
              out.upload = await outcome(fetch(target + "api/image", {method: "POST", mode: "no-cors", body: form}));
              // With the token header the browser asks first (preflight); the server never approves.
              out.header = await outcome(fetch(target + "api/open", {method: "POST",
                headers: {"X-Torchgrabcut-Token": "guess", "Content-Type": "application/json"}, body: "{}"}));
              // Reading: no CORS headers, so the answer is withheld from the page.
              out.read = await outcome(fetch(target + "api/images"));
              done(out);
            }, "image/png");
            """,
            target,
        )
        store = app.extensions["torchgrabcut_sessions"]
        assert results == {"upload": "answered 0 opaque", "header": "refused TypeError", "read": "refused TypeError"}
        assert len(store) == 0, "a cross-origin post opened a session"
