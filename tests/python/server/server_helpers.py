"""The server tests' helpers: a Flask test client with the page's token, uploads, boxes and masks."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from conftest import SERVER_BOX
from torchgrabcut.server.app import create_app
from torchgrabcut.server.config import ServerConfig

BOX = SERVER_BOX


def png_bytes(image_bgr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    arr = image_bgr if image_bgr.ndim == 2 else image_bgr[:, :, ::-1]
    Image.fromarray(np.ascontiguousarray(arr)).save(buf, format="PNG")
    return buf.getvalue()


def rle_decode(mask: dict, h: int, w: int) -> np.ndarray:
    return np.repeat(np.array(mask["values"], np.uint8), mask["counts"]).reshape(h, w)


def client_for(app):
    """A test client that sends the page's token, as the page does."""
    c = app.test_client()
    c.environ_base["HTTP_X_TORCHGRABCUT_TOKEN"] = app.config["TORCHGRABCUT_TOKEN"]
    return c


def make_client(**kwargs):
    app = create_app(ServerConfig(device="cpu", **kwargs))
    return app, client_for(app)


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


def random_png(h: int, w: int, seed: int = 0) -> bytes:
    """A PNG of random pixels (it compresses badly: its decode costs what its size says)."""
    return png_bytes(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))
