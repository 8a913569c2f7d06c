"""What a request may cost the server, and in which order that is checked (issue 35, items 7-8).

Cheap limits (the session table, the upload's size, the image header's pixels, the server's
memory budget) are checked before anything is decoded; decodes are bounded by their pixels
in total, not serialised, so that one large upload does not hold up every other user; and
all sessions together hold at most the memory budget, tested with the largest images the
pixel limit admits (a small limit and budget, so that the tests stay fast).
"""

from __future__ import annotations

import http.cookiejar
import io
import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageFile
from server_helpers import BOX, client_for, make_client, png_bytes, post_box, upload

from torchgrabcut.imageio import write_image
from torchgrabcut.server.app import make_server
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.server.sessions import session_minimum_bytes

SIDE = 100  # the largest image: max_megapixels = SIDE * SIDE / 1e6
LARGEST = {"max_megapixels": SIDE * SIDE / 1e6}


def _picture(h: int, w: int, seed: int = 0) -> bytes:
    return png_bytes(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))


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
    "session table full": ({"max_sessions": 1}, 1, _picture(20, 30), 503, "sessions in use", False),
    "memory budget full": (
        {"max_memory_mb": session_minimum_bytes(SIDE * SIDE) / 2**20},
        1,
        _picture(SIDE, SIDE),
        503,
        "memory budget is full",
        True,
    ),
    "over the pixel limit": ({"max_megapixels": 1}, 0, _png_header(3000, 3000), 413, "9.0 megapixels", True),
    "over the upload size": ({"max_upload_mb": 0.01}, 0, _picture(100, 100), 413, "upload too large", False),
}


@pytest.mark.parametrize("case", sorted(CHEAP))
def test_cheap_limits_are_checked_before_anything_is_decoded(case: str, decodes: dict[str, int]) -> None:
    settings, fill, data, status, message, header_read = CHEAP[case]
    app, _ = make_client(**{**LARGEST, **settings})
    for i in range(fill):
        assert upload(client_for(app), _picture(SIDE, SIDE, seed=i)).status_code == 200
    decodes.update(open=0, load=0)
    sessions = len(app.extensions["torchgrabcut_sessions"])
    r = upload(client_for(app), data)
    assert r.status_code == status and message in r.get_json()["error"], r.get_json()
    assert decodes["load"] == 0, "pixels were decoded before the refusal"
    assert decodes["open"] <= int(header_read)
    assert len(app.extensions["torchgrabcut_sessions"]) == sessions  # no session left behind
    assert "Set-Cookie" not in r.headers


@pytest.fixture
def slow_decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Decodes of 90x90 images wait for ``release`` (and set ``started``); others run."""
    started, release = threading.Event(), threading.Event()
    load = ImageFile.ImageFile.load

    def load_slowly(self: ImageFile.ImageFile) -> Any:
        if self.size == (90, 90):
            started.set()
            release.wait(60)
        return load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", load_slowly)
    yield started, release
    release.set()


def _in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.update(r=fn()), daemon=True)
    thread.start()
    return thread, out


def test_a_large_decode_does_not_hold_up_other_uploads(slow_decodes: tuple[threading.Event, threading.Event]) -> None:
    started, release = slow_decodes
    app, big = make_client()
    small = client_for(app)
    thread, out = _in_thread(lambda: upload(big, _picture(90, 90)))
    assert started.wait(60)
    other, got = _in_thread(lambda: upload(small, _picture(10, 20)))
    other.join(20)
    assert not other.is_alive(), "a small upload waited for another user's decode"
    assert got["r"].status_code == 200
    release.set()
    thread.join(60)
    assert out["r"].status_code == 200 and out["r"].get_json()["width"] == 90


def test_decodes_are_bounded_by_their_pixels(slow_decodes: tuple[threading.Event, threading.Event]) -> None:
    # Room for one 90x90 decode and a small one beside it: a second large one waits, then 503.
    started, release = slow_decodes
    app, first = make_client(decode_pixels=90 * 90 + 200, queue_timeout_s=0.3)
    thread, out = _in_thread(lambda: upload(first, _picture(90, 90)))
    assert started.wait(60)
    second, small = client_for(app), client_for(app)
    r = upload(second, _picture(90, 90, seed=1))
    assert r.status_code == 503 and "being decoded" in r.get_json()["error"], r.get_json()
    assert upload(small, _picture(10, 20)).status_code == 200
    release.set()
    thread.join(60)
    assert out["r"].status_code == 200
    assert upload(second, _picture(90, 90, seed=1)).status_code == 200  # free again


def _check_accounts(app: Any) -> int:
    """The store's count of held bytes is what the sessions hold, and within the budget."""
    store = app.extensions["torchgrabcut_sessions"]
    held = store.held_bytes()
    assert held == sum(s.nbytes() for s in store._sessions.values())
    assert held <= store.max_bytes
    return int(held)


def test_all_sessions_together_stay_within_the_memory_budget() -> None:
    budget = 3 * session_minimum_bytes(SIDE * SIDE)
    app, _ = make_client(**LARGEST, max_memory_mb=budget / 2**20)
    admitted, refused = [], None
    stroke = {"strokes": [{"label": "bg", "radius": 1, "points": [[5, 5]]}]}
    for i in range(8):
        c = client_for(app)
        r = upload(c, _picture(SIDE, SIDE, seed=i))
        _check_accounts(app)
        if r.status_code == 503:
            refused = r.get_json()["error"]
            break
        assert r.status_code == 200
        admitted.append(c)
        for request in [lambda c=c: post_box(c, BOX)] + [lambda c=c: c.post("/api/strokes", json=stroke)] * 6:
            assert request().status_code == 200
            _check_accounts(app)
    assert refused is not None and "memory budget is full" in refused and "--max-memory-mb" in refused
    assert 3 <= len(admitted) < 8
    # Everyone admitted still works, and still has one undo step (older ones went to make room).
    for c in admitted:
        r = c.post("/api/strokes", json=stroke)
        assert r.status_code == 200, r.get_json()
        assert c.post("/api/undo").status_code == 200
        _check_accounts(app)
    # Once a session is gone, its bytes are free for the next.
    store = app.extensions["torchgrabcut_sessions"]
    with store._lock:
        victim = next(iter(store._sessions))
        del store._sessions[victim]
        store._held.pop(victim)
    assert upload(client_for(app), _picture(SIDE, SIDE)).status_code == 200
    _check_accounts(app)


def test_a_box_that_does_not_fit_is_refused_before_grabcut_and_changes_nothing() -> None:
    # A budget that holds one session of the largest image with one undo step, then made tighter.
    budget = session_minimum_bytes(SIDE * SIDE)
    app, a = make_client(**LARGEST, max_memory_mb=budget / 2**20)
    assert upload(a, _picture(SIDE, SIDE)).status_code == 200
    assert post_box(a, BOX).status_code == 200
    assert post_box(a, BOX).status_code == 200  # the one undo step fits
    assert post_box(a, BOX).status_code == 200  # and the older one goes to make room for the next
    store = app.extensions["torchgrabcut_sessions"]
    before = store.held_bytes()
    store.max_bytes = before  # no room for a second undo step, and none to make
    r = post_box(a, BOX)
    assert r.status_code == 503 and "memory budget is full" in r.get_json()["error"]
    assert store.held_bytes() == before and a.get("/api/state").get_json()["can_undo"]


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


@pytest.mark.parametrize("value", [[1, 2], "10", None, True, {"x": 1}, [[12, 8, 52, 40]]])
def test_a_box_coordinate_that_is_not_a_number_is_named(value: object, image: np.ndarray) -> None:
    _, c = make_client()
    upload(c, png_bytes(image))
    for key in ("x0", "y1"):
        body = dict(zip(("x0", "y0", "x1", "y1"), BOX))
        body[key] = value
        r = c.post("/api/box", json=body)
        error = r.get_json()["error"]
        assert r.status_code == 400 and error.startswith(f"box: {key}: expected a number (whole pixels), got "), error
        assert "one box per image" not in error
