"""`torchgrabcut serve` through Flask's test client: the API against direct grabcut calls.

Every mask the server returns is compared with the library called directly on the same
image (box -> GC_INIT_WITH_RECT; strokes -> the mask painted independently and refined from
the model a direct call returned, GC_EVAL). Also: undo, separate browser sessions, bad
uploads and bad requests (clear message, server keeps serving). The server's other modules
have their tests beside this file (test_<module>.py; server/cli.py: test_server_cli.py).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from server_helpers import BOX, client_for, download, make_client, mask_of, png_bytes, post_box, rle_decode, upload

from conftest import requires_cuda
from torchgrabcut.api import GC_BGD, GC_FGD, grabcut
from torchgrabcut.imageio import read_image, write_image
from torchgrabcut.server.app import create_app, make_server
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.server.images import decode_image
from torchgrabcut.server.routes import COOKIE
from torchgrabcut.server.strokes import paint_strokes

# --- the API ----------------------------------------------------------------------------------


def test_box_strokes_undo_match_direct_calls(image: np.ndarray) -> None:
    _, c = make_client()
    r = upload(c, png_bytes(image), "object.png")
    assert r.status_code == 200, r.get_json()
    j = r.get_json()
    assert (j["width"], j["height"], j["name"], j["mask"], j["can_undo"]) == (64, 48, "object.png", None, False)
    assert COOKIE in r.headers["Set-Cookie"] and "HttpOnly" in r.headers["Set-Cookie"]
    served = c.get("/api/image.png")
    with Image.open(io.BytesIO(served.data)) as im:
        np.testing.assert_array_equal(np.asarray(im)[:, :, ::-1], image)

    # Box: the same mask as grabcut from the box, 5 iterations.
    r = post_box(c, BOX)
    assert r.status_code == 200, r.get_json()
    j = r.get_json()
    ref_mask, ref_model = grabcut(image, box=BOX, device="cpu", return_model=True)
    box_mask = mask_of(r)
    np.testing.assert_array_equal(box_mask, ref_mask)
    assert j["action"] == "box" and j["box"] == list(BOX) and j["iterations"] == 5 and j["can_undo"]
    assert 0 < j["grabcut_ms"] <= j["server_ms"]
    assert j["foreground"] == pytest.approx(float((ref_mask & 1).mean()))
    np.testing.assert_array_equal(download(c), ref_mask)
    np.testing.assert_array_equal(download(c, binary=True), (ref_mask & 1) * 255)

    # Strokes: painted into the kept mask, refined from the kept model (one GC_EVAL iteration).
    strokes = [
        {"label": "bg", "radius": 2, "points": [[20, 20], [30, 22]]},
        {"label": "fg", "radius": 1.5, "points": [[5, 5]]},
    ]
    r = c.post("/api/strokes", json={"strokes": strokes})
    assert r.status_code == 200, r.get_json()
    painted = paint_strokes(ref_mask, strokes)
    ref2 = grabcut(image, painted, model=ref_model, max_iter=1, device="cpu")
    stroke_mask = mask_of(r)
    np.testing.assert_array_equal(stroke_mask, ref2)
    assert (stroke_mask[20, 21:30] == GC_BGD).all() and stroke_mask[5, 5] == GC_FGD
    assert r.get_json()["action"] == "strokes" and r.get_json()["iterations"] == 1
    np.testing.assert_array_equal(download(c), ref2)

    # A second stroke continues from the model the first one left.
    _, model2 = grabcut(image, painted, model=ref_model, max_iter=1, device="cpu", return_model=True)
    s2 = [{"label": "fg", "radius": 2, "points": [[40, 30]]}]
    r = c.post("/api/strokes", json={"strokes": s2})
    ref3 = grabcut(image, paint_strokes(ref2, s2), model=model2, max_iter=1, device="cpu")
    np.testing.assert_array_equal(mask_of(r), ref3)

    # Undo walks back exactly, then says there is nothing left.
    r = c.post("/api/undo")
    np.testing.assert_array_equal(mask_of(r), ref2)
    r = c.post("/api/undo")
    np.testing.assert_array_equal(mask_of(r), ref_mask)
    np.testing.assert_array_equal(download(c), ref_mask)
    r = c.post("/api/undo")
    assert r.status_code == 200 and r.get_json()["mask"] is None and not r.get_json()["can_undo"]
    r = c.post("/api/undo")
    assert r.status_code == 400 and "nothing to undo" in r.get_json()["error"]
    assert c.get("/api/mask.png").status_code == 400


def test_strokes_after_an_empty_foreground() -> None:
    # A box on noise gives no foreground at all; foreground strokes then give the empty class
    # its pixels (GC_EVAL learns both mixtures from the mask, as cv2 does) instead of a dead end.
    noise = np.random.default_rng(0).integers(0, 256, (40, 50, 3)).astype(np.uint8)
    box = (10, 10, 30, 30)
    _, c = make_client()
    upload(c, png_bytes(noise))
    r = post_box(c, box)
    assert r.status_code == 200 and r.get_json()["foreground"] == 0.0
    ref_mask, ref_model = grabcut(noise, box=box, device="cpu", return_model=True)
    strokes = [{"label": "fg", "radius": 2, "points": [[15, 15], [20, 18]]}]
    r = c.post("/api/strokes", json={"strokes": strokes})
    assert r.status_code == 200, r.get_json()
    painted = paint_strokes(ref_mask, strokes)
    expected = grabcut(noise, painted, model=ref_model, max_iter=1, device="cpu")
    np.testing.assert_array_equal(mask_of(r), expected)
    assert (mask_of(r)[painted == GC_FGD] == GC_FGD).all() and r.get_json()["foreground"] > 0


def test_history_is_bounded(image: np.ndarray) -> None:
    _, c = make_client(max_history=2)
    upload(c, png_bytes(image))
    post_box(c, BOX)
    for i in range(3):
        r = c.post("/api/strokes", json={"strokes": [{"label": "bg", "radius": 1, "points": [[20 + i, 20]]}]})
        assert r.status_code == 200
    assert c.post("/api/undo").status_code == 200
    r = c.post("/api/undo")
    assert r.status_code == 200 and not r.get_json()["can_undo"]
    assert r.get_json()["action"] == "strokes"  # the oldest states were dropped
    assert c.post("/api/undo").status_code == 400


def test_sessions_are_separate(image: np.ndarray, image2: np.ndarray, tmp_path: Path) -> None:
    write_image(tmp_path / "a.png", image)
    write_image(tmp_path / "b.png", image2)
    app, a = make_client(images=[tmp_path / "a.png", tmp_path / "b.png"])
    b = client_for(app)
    assert a.get("/api/images").get_json() == {"images": [{"index": 0, "name": "a.png"}, {"index": 1, "name": "b.png"}]}
    assert a.post("/api/open", json={"index": 0}).get_json()["name"] == "a.png"
    assert b.post("/api/open", json={"index": 1}).get_json()["name"] == "b.png"
    assert a.get_cookie(COOKIE).value != b.get_cookie(COOKIE).value

    # Both at once, from two threads: each gets its own image's mask.
    box_b = (5, 5, 40, 35)
    results: dict[str, object] = {}

    def run(name: str, client, box) -> None:
        results[name] = post_box(client, box)

    threads = [threading.Thread(target=run, args=("a", a, BOX)), threading.Thread(target=run, args=("b", b, box_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    np.testing.assert_array_equal(mask_of(results["a"]), grabcut(image, box=BOX, device="cpu"))
    np.testing.assert_array_equal(mask_of(results["b"]), grabcut(image2, box=box_b, device="cpu"))

    # Undo in one leaves the other alone.
    assert a.post("/api/undo").get_json()["mask"] is None
    np.testing.assert_array_equal(download(b), grabcut(image2, box=box_b, device="cpu"))

    # A client without the cookie, or with an unknown one, has no image.
    fresh = client_for(app)
    r = post_box(fresh, BOX)
    assert r.status_code == 400 and "open or upload an image first" in r.get_json()["error"]
    fresh.set_cookie(COOKIE, "forged")
    assert post_box(fresh, BOX).status_code == 400


def test_concurrent_requests_of_one_session_serialize(image: np.ndarray) -> None:
    _, c = make_client()
    upload(c, png_bytes(image))
    post_box(c, BOX)
    codes: list[int] = []

    def stroke(i: int) -> None:
        r = c.post("/api/strokes", json={"strokes": [{"label": "bg", "radius": 1, "points": [[15 + 3 * i, 12]]}]})
        codes.append(r.status_code)

    threads = [threading.Thread(target=stroke, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert codes == [200] * 4
    final = download(c)
    for i in range(4):  # every stroke landed: none was lost to a race
        assert final[12, 15 + 3 * i] == GC_BGD
    undos = 0
    while c.post("/api/undo").status_code == 200:
        undos += 1
    assert undos == 5  # four strokes and the box


class SignallingLock:
    """A lock that records when another thread has started waiting for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting = threading.Event()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        self.waiting.set()
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.mark.parametrize("request_", ["strokes", "mask.png", "state"])
def test_a_request_waiting_while_undo_clears_the_mask_gets_a_4xx(image: np.ndarray, request_: str) -> None:
    # The request arrives while another one (here: the test) holds the session; by the time
    # it gets the lock, undo has gone back to "no mask". What it checks must be checked then.
    app, c = make_client()
    upload(c, png_bytes(image))
    post_box(c, BOX)
    session = app.extensions["torchgrabcut_sessions"].get(c.get_cookie(COOKIE).value)
    session.lock = SignallingLock()
    result: dict[str, object] = {}

    def send() -> None:
        if request_ == "strokes":
            result["r"] = c.post("/api/strokes", json={"strokes": [{"label": "fg", "points": [[20, 20]]}]})
        else:
            result["r"] = c.get("/api/" + request_)

    with session.lock:
        thread = threading.Thread(target=send)
        thread.start()
        assert session.lock.waiting.wait(120), "the request never reached the session's lock"
        while session.undo():
            pass
    thread.join(120)
    r = result["r"]
    if request_ == "state":
        assert r.status_code == 200 and r.get_json()["mask"] is None
    else:
        assert r.status_code == 400 and "no mask yet" in r.get_json()["error"], (r.status_code, r.data[:300])


def test_many_concurrent_requests_on_one_session(image: np.ndarray) -> None:
    app, c = make_client(max_history=10_000)
    upload(c, png_bytes(image))
    sid = c.get_cookie(COOKIE).value
    n_threads, per_thread = 48, 3
    start = threading.Barrier(n_threads)
    answers: list[tuple[str, int, object]] = []
    answers_lock = threading.Lock()

    def worker(i: int) -> None:
        cl = client_for(app)
        cl.set_cookie(COOKIE, sid)
        start.wait(120)
        for k in range(per_thread):
            op = ("box", "strokes", "undo", "mask", "state", "image")[(i + k) % 6]
            if op == "box":
                r = post_box(cl, BOX)
            elif op == "strokes":
                # Foreground inside the object, background outside the box: no stroke can
                # leave a class empty, so the only refusal a stroke can get is "no mask yet".
                point = [22 + i % 20, 24] if (i + k) % 2 else [15 + i % 30, 44]
                label = "fg" if (i + k) % 2 else "bg"
                r = cl.post("/api/strokes", json={"strokes": [{"label": label, "radius": 1, "points": [point]}]})
            elif op == "undo":
                r = cl.post("/api/undo")
            elif op == "mask":
                r = cl.get("/api/mask.png")
            elif op == "state":
                r = cl.get("/api/state")
            else:
                r = cl.get("/api/image.png")
            body = r.get_json() if r.mimetype == "application/json" else r.data
            with answers_lock:
                answers.append((op, r.status_code, body))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert len(answers) == n_threads * per_thread
    assert not [(op, code, body) for op, code, body in answers if code >= 500]
    expected_errors = {"box": (), "strokes": ("no mask yet",), "undo": ("nothing to undo",), "mask": ("no mask yet",)}
    pushes = undos = 0
    for op, code, body in answers:
        if code != 200:
            assert code == 400 and any(m in body["error"] for m in expected_errors.get(op, ())), (op, code, body)
            continue
        if op in ("box", "strokes", "undo", "state"):
            assert sum(body["mask"]["counts"]) == 64 * 48 if body["mask"] else body["foreground"] is None
        if op in ("box", "strokes"):
            pushes += 1
            assert body["can_undo"] and body["action"] == op
        elif op == "undo":
            undos += 1
        elif op in ("mask", "image"):
            with Image.open(io.BytesIO(body)) as im:
                assert im.size == (64, 48)
    assert pushes > 0
    # Every box and stroke pushed one state, every undo popped one: what is left to undo is
    # exactly the difference, and undoing it all ends with no mask.
    state = c.get("/api/state").get_json()
    if state["mask"] is not None:
        np.testing.assert_array_equal(download(c), rle_decode(state["mask"], 48, 64))
    left = 0
    while (r := c.post("/api/undo")).status_code == 200:
        left += 1
    assert r.status_code == 400 and "nothing to undo" in r.get_json()["error"]
    assert left == pushes - undos
    assert c.get("/api/state").get_json()["mask"] is None


class SignallingSemaphore:
    """A one-slot semaphore that records when a request has started waiting for it."""

    def __init__(self) -> None:
        self._sem = threading.BoundedSemaphore(1)
        self.waiting = threading.Event()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if self._sem.acquire(blocking=False):
            return True
        self.waiting.set()
        return self._sem.acquire(blocking, timeout)

    def release(self) -> None:
        self._sem.release()


def test_grabcut_calls_are_limited(image: np.ndarray, image2: np.ndarray) -> None:
    # All slots busy: a request waits up to queue_timeout_s (0 here), then 503; nothing changes.
    app, c = make_client(max_concurrent=1, queue_timeout_s=0)
    upload(c, png_bytes(image))
    box_mask = mask_of(post_box(c, BOX))
    slots = app.extensions["torchgrabcut_slots"]
    assert slots.acquire(timeout=0)
    try:
        for r in (post_box(c, BOX), c.post("/api/strokes", json={"strokes": [{"label": "fg", "points": [[9, 9]]}]})):
            assert r.status_code == 503 and "busy: 1 GrabCut call(s) running" in r.get_json()["error"]
        assert c.get("/api/state").get_json()["action"] == "box"  # reads need no slot
        np.testing.assert_array_equal(download(c), box_mask)
    finally:
        slots.release()
    r = c.post("/api/strokes", json={"strokes": [{"label": "bg", "radius": 1, "points": [[20, 20]]}]})
    assert r.status_code == 200 and r.get_json()["action"] == "strokes"

    # Within the queue timeout, a request waits for the slot and then runs.
    app, c = make_client(max_concurrent=1, queue_timeout_s=600)
    sem = app.extensions["torchgrabcut_slots"] = SignallingSemaphore()
    upload(c, png_bytes(image2))
    result: dict[str, object] = {}
    assert sem.acquire()
    try:
        thread = threading.Thread(target=lambda: result.update(r=post_box(c, (5, 5, 40, 35))))
        thread.start()
        assert sem.waiting.wait(120), "the request never waited for the slot"
    finally:
        sem.release()
    thread.join(120)
    np.testing.assert_array_equal(mask_of(result["r"]), grabcut(image2, box=(5, 5, 40, 35), device="cpu"))


def test_an_upload_is_the_image_segment_reads_from_the_same_file(image: np.ndarray, tmp_path: Path) -> None:
    # A phone photo: stored sideways, EXIF orientation 6 (shown turned 90 degrees clockwise).
    # The page must segment the picture `torchgrabcut segment photo.jpg` segments.
    exif = Image.Exif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(np.rot90(image, k=1)[:, :, ::-1])).save(buf, "JPEG", exif=exif, quality=95)
    (tmp_path / "photo.jpg").write_bytes(buf.getvalue())
    expected = read_image(tmp_path / "photo.jpg")
    assert expected.shape == image.shape  # upright again
    _, c = make_client()
    r = upload(c, buf.getvalue(), "photo.jpg")
    assert (r.get_json()["width"], r.get_json()["height"]) == (64, 48)
    with Image.open(io.BytesIO(c.get("/api/image.png").data)) as im:
        np.testing.assert_array_equal(np.asarray(im)[:, :, ::-1], expected)
    r = post_box(c, BOX)
    assert r.status_code == 200, r.get_json()
    np.testing.assert_array_equal(mask_of(r), grabcut(expected, box=BOX, device="cpu"))


def test_bad_uploads_get_a_message_and_the_server_keeps_serving(image: np.ndarray) -> None:
    _, c = make_client(max_upload_mb=0.05, max_megapixels=0.004)
    cases = [
        (b"this is not an image", 400, "not an image"),
        (b"", 400, "empty"),
        (png_bytes(image)[:60], 400, "cannot decode"),
        (bytes(80_000), 413, "upload too large"),
        (png_bytes(np.zeros((80, 80, 3), np.uint8)), 413, "megapixels"),
    ]
    for data, status, message in cases:
        r = upload(c, data, "bad.png")
        assert r.status_code == status, (message, r.status_code, r.data[:200])
        assert message in r.get_json()["error"], r.get_json()
        # and the server still works
        assert upload(c, png_bytes(image)).status_code == 200
        assert post_box(c, BOX).status_code == 200
    r = c.post("/api/image", data={}, content_type="multipart/form-data")
    assert r.status_code == 400 and "'image'" in r.get_json()["error"]


def test_decompression_bomb_is_refused(image: np.ndarray) -> None:
    _, c = make_client()
    big = Image.new("1", (20_000, 20_000))  # 400 MP, a few kB as PNG
    buf = io.BytesIO()
    big.save(buf, format="PNG")
    bomb = buf.getvalue()
    assert len(bomb) < 200_000
    r = upload(c, bomb, "bomb.png")
    assert r.status_code == 413 and "too large" in r.get_json()["error"]
    assert upload(c, png_bytes(image)).status_code == 200
    buf = io.BytesIO()
    Image.new("1", (7100, 7100)).save(buf, format="PNG")  # 50.4 MP: under Pillow's bomb limit, over ours
    r = upload(c, buf.getvalue(), "big.png")
    assert r.status_code == 413 and "7100x7100 = 50.4 megapixels, the limit is 40.0" in r.get_json()["error"]


def png_header_only(width: int, height: int) -> bytes:
    """An RGB PNG of this size whose pixel data is 10 bytes: its header and nothing to decode."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(bytes(10))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_pixel_limit_is_checked_from_the_header(image: np.ndarray, tmp_path: Path) -> None:
    # No pixel data at all: decoding would fail (400 "cannot decode"); the size in the
    # header is refused first (413), for uploads and listed images alike.
    header = png_header_only(6000, 6000)
    with pytest.raises(ValueError, match="cannot decode"):
        decode_image(png_header_only(60, 60), 10**6)
    (tmp_path / "huge.png").write_bytes(header)
    _, c = make_client(images=[tmp_path / "huge.png"], max_megapixels=10)
    for r in (upload(c, header, "huge.png"), c.post("/api/open", json={"index": 0})):
        assert r.status_code == 413, r.get_json()
        assert "6000x6000 = 36.0 megapixels, the limit is 10.0" in r.get_json()["error"]


def test_json_bodies_and_strokes_are_bounded(image: np.ndarray) -> None:
    _, c = make_client()
    upload(c, png_bytes(image))
    box_mask = mask_of(post_box(c, BOX))

    def strokes(body: bytes):
        return c.post("/api/strokes", data=body, content_type="application/json")

    # Over 1 MiB: refused from its length, before parsing (the upload limit is 64 MB).
    big = b'{"strokes": [{"label": "fg", "points": [' + b"[1, 1], " * 200_000 + b"[1, 1]]}]}"
    r = strokes(big)
    assert r.status_code == 413 and "1048576 bytes" in r.get_json()["error"], r.get_json()
    many = [{"label": "bg", "radius": 1, "points": [[1, 1]]}] * 101
    r = c.post("/api/strokes", json={"strokes": many})
    assert r.status_code == 400 and "at most 100 strokes" in r.get_json()["error"]
    r = c.post("/api/strokes", json={"strokes": [{"label": "bg", "points": [[1, 1]] * 20_001}]})
    assert r.status_code == 400 and "at most 20000 points" in r.get_json()["error"]
    for bad in (b"[" * 100_000 + b"]" * 100_000, b'{"strokes": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", b"\xff"):
        r = strokes(bad)
        assert r.status_code == 400 and "expected a JSON object" in r.get_json()["error"], r.get_json()
    r = c.post("/api/box", data='{"x0": 1}', content_type="text/plain")
    assert r.status_code == 400 and "application/json" in r.get_json()["error"]
    np.testing.assert_array_equal(download(c), box_mask)  # nothing changed
    r = c.post("/api/strokes", json={"strokes": [{"label": "bg", "points": [[1, 1]] * 20_000}]})
    assert r.status_code == 200


def test_bad_requests(image: np.ndarray, tmp_path: Path) -> None:
    write_image(tmp_path / "a.png", image)
    (tmp_path / "broken.png").write_bytes(b"not a png")
    _, c = make_client(images=[tmp_path / "a.png", tmp_path / "broken.png"])
    r = c.post("/api/open", json={"index": 1})
    assert r.status_code == 400 and "not an image" in r.get_json()["error"]
    for bad in ({"index": 2}, {"index": -1}, {"index": "0"}, {}):
        r = c.post("/api/open", json=bad)
        assert r.status_code == 400 and "index" in r.get_json()["error"]
    assert c.post("/api/open", data="x", content_type="text/plain").status_code == 400
    assert c.post("/api/open", json={"index": 0}).status_code == 200

    r = c.post("/api/strokes", json={"strokes": [{"label": "fg", "points": [[1, 1]]}]})
    assert r.status_code == 400 and "box" in r.get_json()["error"]
    for box, message in [((30, 8, 10, 40), "inverted"), ((0, 0, 65, 48), "0 <= x0 < x1 <= 64"), ((1, 2, 3), "numbers")]:
        r = c.post("/api/box", json=dict(zip(("x0", "y0", "x1", "y1"), box)))
        assert r.status_code == 400 and message in r.get_json()["error"], r.get_json()
    r = c.post("/api/box", json={"x0": 1.5, "y0": 2, "x1": 30, "y1": 30})
    assert r.status_code == 400 and "whole" in r.get_json()["error"]
    assert post_box(c, BOX).status_code == 200
    r = c.post("/api/strokes", json={"strokes": [{"label": "up", "points": [[1, 1]]}]})
    assert r.status_code == 400 and "'fg' or 'bg'" in r.get_json()["error"]
    r = c.get("/api/nothing")
    assert r.status_code == 404 and "error" in r.get_json()
    r = c.get("/api/box")
    assert r.status_code == 405 and "error" in r.get_json()
    assert c.get("/api/state").get_json()["action"] == "box"  # still there


class BrokenSlots:
    def acquire(self, timeout: float | None = None) -> bool:
        raise RuntimeError("slot table broken")


def test_unexpected_errors_answer_500_and_pages_answer_text(image: np.ndarray) -> None:
    app, c = make_client()
    assert upload(c, png_bytes(image)).status_code == 200
    slots = app.extensions["torchgrabcut_slots"]
    app.extensions["torchgrabcut_slots"] = BrokenSlots()
    r = post_box(c, BOX)
    assert r.status_code == 500 and r.get_json() == {"error": "internal error: RuntimeError: slot table broken"}
    app.extensions["torchgrabcut_slots"] = slots
    assert post_box(c, BOX).status_code == 200  # the server keeps serving
    # Outside /api/ the answer is text for people, not JSON.
    r = c.get("/nothing")
    assert r.status_code == 404 and r.mimetype == "text/plain" and r.data.startswith(b"Not Found: ")
    r = c.post("/")
    assert r.status_code == 405 and r.mimetype == "text/plain"


def test_page_and_static_files() -> None:
    _, c = make_client()
    page = c.get("/")
    assert page.status_code == 200 and b'<canvas id="view"' in page.data
    for src in re.findall(rb'(?:src|href)="(/static/[^"]+)"', page.data):
        assert c.get(src.decode()).status_code == 200, src
    # No resource from another host: the page works offline.
    for name in ("index.html", "app.js", "style.css"):
        text = (Path(create_app.__code__.co_filename).parent / "static" / name).read_text()
        assert "http://" not in text and "https://" not in text, name


def test_import_stays_light() -> None:
    code = "import sys, torchgrabcut, torchgrabcut.cli; assert 'flask' not in sys.modules, 'flask imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_library_does_not_import_the_server() -> None:
    code = (
        "import sys, torchgrabcut, torchgrabcut.api, torchgrabcut.model, torchgrabcut.cv2_compat, "
        "torchgrabcut.imageio; assert not [m for m in sys.modules if m.startswith('torchgrabcut.server')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_make_server_checks_the_port_it_bound() -> None:
    server = make_server(ServerConfig(device="cpu", port=0))  # 0: a free port, known once bound
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_port
        assert server.app.config["TORCHGRABCUT_PORT"] == port != 0
        url = f"http://127.0.0.1:{port}/api/images"
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Host": f"localhost:{port}"})) as resp:
            assert resp.status == 200
        wrong = urllib.request.Request(url, headers={"Host": f"localhost:{port + 1}"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(wrong, timeout=30)
        assert err.value.code == 403 and f"open http://127.0.0.1:{port}/" in err.value.read().decode()
    finally:
        server.shutdown()
        thread.join(30)
        server.server_close()


# --- the GPU --------------------------------------------------------------------------------


@requires_cuda
def test_cuda_server_matches_cpu_and_reports_time() -> None:
    from torchgrabcut.data import BUNDLED_BOX_FRACTION, BUNDLED_IMAGE
    from torchgrabcut.imageio import read_image
    from torchgrabcut.tools.speed import scaled_image

    img = scaled_image(read_image(BUNDLED_IMAGE), 1.0)
    h, w = img.shape[:2]
    box = tuple(int(f * s) for f, s in zip(BUNDLED_BOX_FRACTION, (w, h, w, h)))
    strokes = [{"label": "bg", "radius": 6, "points": [[int(0.6 * w), int(0.3 * h)], [int(0.65 * w), int(0.35 * h)]]}]
    masks = {}
    for device in ("cpu", "cuda"):
        app = create_app(ServerConfig(device=device))
        c = client_for(app)
        assert upload(c, png_bytes(img)).status_code == 200
        rb = post_box(c, box)
        rs = c.post("/api/strokes", json={"strokes": strokes})
        assert rb.status_code == 200 and rs.status_code == 200
        assert rs.get_json()["device"].startswith(device)
        masks[device] = (mask_of(rb), mask_of(rs))
        print(f"{device}: box {rb.get_json()['grabcut_ms']:.1f} ms, refine {rs.get_json()['grabcut_ms']:.1f} ms")
    for cpu_mask, gpu_mask in zip(masks["cpu"], masks["cuda"]):
        np.testing.assert_array_equal(gpu_mask, cpu_mask)
