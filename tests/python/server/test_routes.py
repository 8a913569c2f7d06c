"""server/routes.py: what a request may cost the server, and the order of its checks (issue 35, items 7-8).

Cheap limits (the session table, the upload's size, the image header's pixels, the server's
memory budget) are checked before anything is decoded, tested with the largest images the
pixel limit admits (a small limit, so that the tests stay fast); the session cookie is named
after the port.
"""

from __future__ import annotations

import http.cookiejar
import io
import json
import re
import threading
import urllib.request
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageFile
from server_helpers import client_for, make_client, random_png, upload

from torchgrabcut.imageio import write_image
from torchgrabcut.server.app import make_server
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.server.sessions import session_minimum_bytes

SIDE = 100  # the largest image: max_megapixels = SIDE * SIDE / 1e6 (small, so that the tests stay fast)
LARGEST = {"max_megapixels": SIDE * SIDE / 1e6}


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times Pillow opened a header and decoded pixels from now on."""
    counts = {"open": 0, "load": 0}
    opened, load = Image.open, ImageFile.ImageFile.load

    def counted_open(*args: Any, **kwargs: Any) -> Any:
        counts["open"] += 1
        return opened(*args, **kwargs)

    def counted_load(self: ImageFile.ImageFile) -> Any:
        counts["load"] += 1
        return load(self)

    monkeypatch.setattr(Image, "open", counted_open)
    monkeypatch.setattr(ImageFile.ImageFile, "load", counted_load)
    return counts


def _png_header(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("1", (width, height)).save(buf, "PNG")
    return buf.getvalue()


# Each case: the settings, how many sessions fill the server first (each with an image of
# the largest size), the upload, its status and message, and whether its header may be read
# at all (the session table and the upload's size come first).
CHEAP = {
    "session table full": ({"max_sessions": 1}, 1, random_png(20, 30), 503, "sessions in use", False),
    "memory budget full": (
        {"max_memory_mb": session_minimum_bytes(SIDE * SIDE) / 2**20},
        1,
        random_png(SIDE, SIDE),
        503,
        "memory budget is full",
        True,
    ),
    "over the pixel limit": ({"max_megapixels": 1}, 0, _png_header(3000, 3000), 413, "9.0 megapixels", True),
    "over the upload size": ({"max_upload_mb": 0.01}, 0, random_png(100, 100), 413, "upload too large", False),
}


@pytest.mark.parametrize("case", sorted(CHEAP))
def test_cheap_limits_are_checked_before_anything_is_decoded(case: str, decodes: dict[str, int]) -> None:
    settings, fill, data, status, message, header_read = CHEAP[case]
    app, _ = make_client(**{**LARGEST, **settings})
    for i in range(fill):
        assert upload(client_for(app), random_png(SIDE, SIDE, seed=i)).status_code == 200
    decodes.update(open=0, load=0)
    sessions = len(app.extensions["torchgrabcut_sessions"])
    r = upload(client_for(app), data)
    assert r.status_code == status and message in r.get_json()["error"], r.get_json()
    assert decodes["load"] == 0, "pixels were decoded before the refusal"
    assert decodes["open"] <= int(header_read)
    assert len(app.extensions["torchgrabcut_sessions"]) == sessions  # no session left behind
    assert "Set-Cookie" not in r.headers


def test_the_session_cookie_is_named_after_the_port(image: np.ndarray, tmp_path: Any) -> None:
    # Browsers send a cookie to every port of its host: two servers on 127.0.0.1 (or another
    # program there) must not overwrite each other's session.
    write_image(tmp_path / "a.png", image)
    servers = [make_server(ServerConfig(images=[tmp_path / "a.png"], device="cpu", port=0)) for _ in range(2)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    try:
        bases = [f"http://127.0.0.1:{s.server_port}/" for s in servers]
        for base in bases:
            token = re.search(rb'name="torchgrabcut-token" content="([^"]+)"', browser.open(base, timeout=30).read())
            assert token
            headers = {"Content-Type": "application/json", "X-Torchgrabcut-Token": token.group(1).decode()}
            opened = browser.open(urllib.request.Request(base + "api/open", b'{"index": 0}', headers), timeout=30)
            assert f"torchgrabcut_session_{base.split(':')[-1].strip('/')}=" in opened.headers["Set-Cookie"]
        for base in bases:  # both sessions still there
            state = json.loads(browser.open(base + "api/state", timeout=30).read())
            assert state["name"] == "a.png"
    finally:
        for s, t in zip(servers, threads):
            s.shutdown()
            t.join(30)
            s.server_close()
