"""`torchgrabcut serve` through Flask's test client: the API against direct grabcut calls.

Every mask the server returns is compared with the library called directly on the same
image (box -> GC_INIT_WITH_RECT; strokes -> the mask painted independently and refined from
the model a direct call returned, GC_EVAL). Also: the mask encodings, undo, separate browser
sessions, bad uploads and bad requests (clear message, server keeps serving), and the
command line.
"""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import object_image, requires_cuda
from torchgrabcut.api import GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD, grabcut
from torchgrabcut.imageio import write_image
from torchgrabcut.server.app import COOKIE, ServerConfig, create_app, decode_image, paint_strokes, rle_encode

BOX = (12, 8, 52, 40)


def png_bytes(image_bgr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    arr = image_bgr if image_bgr.ndim == 2 else image_bgr[:, :, ::-1]
    Image.fromarray(np.ascontiguousarray(arr)).save(buf, format="PNG")
    return buf.getvalue()


def rle_decode(mask: dict, h: int, w: int) -> np.ndarray:
    return np.repeat(np.array(mask["values"], np.uint8), mask["counts"]).reshape(h, w)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return object_image(np.random.default_rng(7), 48, 64, BOX)


@pytest.fixture(scope="module")
def image2() -> np.ndarray:
    return object_image(np.random.default_rng(8), 40, 56, (5, 5, 40, 35))


def make_client(**kwargs):
    app = create_app(ServerConfig(device="cpu", **kwargs))
    return app, app.test_client()


def upload(client, data: bytes, name: str = "img.png"):
    return client.post("/api/image", data={"image": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def post_box(client, box):
    x0, y0, x1, y1 = box
    return client.post("/api/box", json={"x0": x0, "y0": y0, "x1": x1, "y1": y1})


def mask_of(resp) -> np.ndarray:
    j = resp.get_json()
    return rle_decode(j["mask"], j["height"], j["width"])


def download(client, binary: bool = False) -> np.ndarray:
    r = client.get("/api/mask.png" + ("?binary=1" if binary else ""))
    assert r.status_code == 200, r.get_json()
    assert r.mimetype == "image/png" and "attachment" in r.headers["Content-Disposition"]
    with Image.open(io.BytesIO(r.data)) as im:
        assert im.mode == "L"
        return np.asarray(im).copy()


# --- pure helpers -----------------------------------------------------------------------------


def test_rle_round_trip() -> None:
    rng = np.random.default_rng(0)
    for shape in [(1, 1), (3, 7), (30, 40)]:
        m = rng.integers(0, 4, shape).astype(np.uint8)
        m[:, : shape[1] // 2] = 2  # long runs too
        enc = rle_encode(m)
        assert sum(enc["counts"]) == m.size
        assert all(a != b for a, b in zip(enc["values"], enc["values"][1:]))  # runs are maximal
        np.testing.assert_array_equal(rle_decode(enc, *shape), m)


def distance_to_polyline(h: int, w: int, pts: list[tuple[float, float]]) -> np.ndarray:
    """Euclidean distance of every pixel centre (x, y) to the polyline, in numpy."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    best = np.full((h, w), np.inf)
    segs = list(itertools.pairwise(pts)) or [(pts[0], pts[0])]
    for (ax, ay), (bx, by) in segs:
        dx, dy = bx - ax, by - ay
        length2 = dx * dx + dy * dy
        t = np.zeros_like(xx) if length2 == 0 else np.clip(((xx - ax) * dx + (yy - ay) * dy) / length2, 0, 1)
        best = np.minimum(best, np.hypot(xx - (ax + t * dx), yy - (ay + t * dy)))
    return best


@pytest.mark.parametrize(
    ("label", "radius", "pts"),
    [
        ("fg", 3, [(10.0, 10.0), (40.0, 20.0), (45.5, 35.2)]),
        ("bg", 5, [(30.0, 20.0)]),
        ("bg", 2, [(-5.0, 3), (70, 3)]),  # partly outside the image
        ("fg", 3, [(-50, -50), (-20, -30)]),  # entirely outside: nothing painted
    ],
)
def test_paint_strokes_against_distance(label: str, radius: float, pts) -> None:
    h, w = 40, 60
    mask = np.full((h, w), GC_PR_FGD, np.uint8)
    mask[:, :5] = GC_PR_BGD
    out = paint_strokes(mask, [{"label": label, "radius": radius, "points": [list(p) for p in pts]}])
    d = distance_to_polyline(h, w, pts)
    value = GC_FGD if label == "fg" else GC_BGD
    assert (out[d <= radius - 1] == value).all()  # everything well inside is painted
    far = d > radius + 1.5
    np.testing.assert_array_equal(out[far], mask[far])  # nothing well outside is
    assert set(np.unique(out[(out != mask)])) <= {value}
    np.testing.assert_array_equal(mask[:, 5:], GC_PR_FGD)  # the input is not modified


@pytest.mark.parametrize(
    ("strokes", "message"),
    [
        ([], "non-empty list"),
        ("x", "non-empty list"),
        ([{"label": "maybe", "points": [[1, 1]]}], "'fg' or 'bg'"),
        ([{"label": "fg", "points": []}], "points"),
        ([{"label": "fg", "points": [[1, "a"]]}], "finite numbers"),
        ([{"label": "fg", "points": [[1, float("nan")]]}], "finite numbers"),
        ([{"label": "fg", "radius": -1, "points": [[1, 1]]}], "radius"),
        ([{"label": "fg", "radius": 1e9, "points": [[1, 1]]}], "radius"),
        ([{"label": "fg", "points": [[1, 2, 3]]}], "point"),
    ],
)
def test_paint_strokes_rejects(strokes, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        paint_strokes(np.zeros((5, 5), np.uint8), strokes)


def test_decode_image_limits(image: np.ndarray) -> None:
    np.testing.assert_array_equal(decode_image(png_bytes(image), 10**6), image)  # BGR kept
    with pytest.raises(ValueError, match="not an image") as err:
        decode_image(b"GIF89a? no", 10**6)
    assert err.value.status == 400
    with pytest.raises(ValueError, match="too large: 64x48") as err:
        decode_image(png_bytes(image), 1000)
    assert err.value.status == 413


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
    b = app.test_client()
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
    fresh = app.test_client()
    r = post_box(fresh, BOX)
    assert r.status_code == 400 and "open or upload an image first" in r.get_json()["error"]
    fresh.set_cookie(COOKIE, "forged")
    assert post_box(fresh, BOX).status_code == 400


def test_least_recently_used_session_is_forgotten(image: np.ndarray) -> None:
    app, first = make_client(max_sessions=2)
    clients = [first, app.test_client(), app.test_client()]
    for cl in clients:
        assert upload(cl, png_bytes(image)).status_code == 200
    assert len(app.extensions["torchgrabcut_sessions"]) == 2
    assert first.get("/api/state").status_code == 400  # evicted
    assert clients[2].get("/api/state").status_code == 200


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


def test_config_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        create_app(ServerConfig(images=[tmp_path / "missing.png"], device="cpu"))
    with pytest.raises(ValueError, match="iterations"):
        create_app(ServerConfig(device="cpu", refine_iter=0))


def test_import_stays_light() -> None:
    code = "import sys, torchgrabcut, torchgrabcut.cli; assert 'flask' not in sys.modules, 'flask imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --- the command line ----------------------------------------------------------------------


def test_cli_serve_starts_and_answers(image: np.ndarray, tmp_path: Path) -> None:
    write_image(tmp_path / "a.png", image)
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchgrabcut", "serve", "a.png", "--port", "0", "--device", "cpu"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        base = m.group(0)
        with urllib.request.urlopen(base, timeout=30) as resp:
            assert b"torchgrabcut" in resp.read()
        with urllib.request.urlopen(base + "api/images", timeout=30) as resp:
            assert b"a.png" in resp.read()
    finally:
        proc.terminate()
        proc.wait(30)


def test_cli_serve_errors(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "torchgrabcut", "serve", "missing.png", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "missing.png" in res.stderr, res.stderr


# --- the GPU --------------------------------------------------------------------------------


@requires_cuda
def test_cuda_server_matches_cpu_and_reports_time() -> None:
    from torchgrabcut.bench import DEFAULT_BOX_FRACTION, DEFAULT_IMAGE, scaled_image
    from torchgrabcut.imageio import read_image

    img = scaled_image(read_image(DEFAULT_IMAGE), 1.0)
    h, w = img.shape[:2]
    box = tuple(int(f * s) for f, s in zip(DEFAULT_BOX_FRACTION, (w, h, w, h)))
    strokes = [{"label": "bg", "radius": 6, "points": [[int(0.6 * w), int(0.3 * h)], [int(0.65 * w), int(0.35 * h)]]}]
    masks = {}
    for device in ("cpu", "cuda"):
        app = create_app(ServerConfig(device=device))
        c = app.test_client()
        assert upload(c, png_bytes(img)).status_code == 200
        rb = post_box(c, box)
        rs = c.post("/api/strokes", json={"strokes": strokes})
        assert rb.status_code == 200 and rs.status_code == 200
        assert rs.get_json()["device"].startswith(device)
        masks[device] = (mask_of(rb), mask_of(rs))
        print(f"{device}: box {rb.get_json()['grabcut_ms']:.1f} ms, refine {rs.get_json()['grabcut_ms']:.1f} ms")
    for cpu_mask, gpu_mask in zip(masks["cpu"], masks["cuda"]):
        np.testing.assert_array_equal(gpu_mask, cpu_mask)
