"""server/access.py: who may ask; the Host header must name this server, posts need the page's token."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from server_helpers import BOX, make_client, png_bytes, post_box, upload

from torchgrabcut.imageio import write_image
from torchgrabcut.server.access import TOKEN_HEADER, split_host
from torchgrabcut.server.app import create_app
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.server.routes import COOKIE

# --- who may ask: the Host header and the page's token ------------------------------------------


def test_split_host() -> None:
    assert split_host("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert split_host("LocalHost") == ("localhost", None)
    assert split_host("[::1]:80") == ("::1", 80)
    assert split_host("[0:0::1]") == ("::1", None)
    for bad in ("::1", "[::1", "[::1]x", "a:b", "a:0", "a:65536", "a:", ":80", "a:\\u00b2"):
        with pytest.raises(ValueError, match="Host"):
            split_host(bad)


def get_with_host(c, path: str, host: str):
    return c.get(path, environ_overrides={"HTTP_HOST": host})


@pytest.mark.parametrize(
    ("config", "allowed", "refused"),
    [
        (
            {"port": 8765},
            ["127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765", "[0:0:0:0:0:0:0:1]:8765"],
            ["evil.example:8765", "evil.example", "127.0.0.1:8766", "localhost", "127.0.0.2:8765", "10.0.0.5:8765", ""],
        ),
        (
            {"port": 8765, "host": "Box.Lan", "allowed_hosts": ["alias.lan"]},
            ["box.lan:8765", "alias.lan:8765", "localhost:8765"],
            ["other.lan:8765", "box.lan.evil.example:8765", "alias.lan:1"],
        ),
        (
            {"port": 8765, "host": "0.0.0.0"},
            ["192.168.1.20:8765", "[fe80::1]:8765", "127.0.0.1:8765"],
            ["evil.example:8765", "192.168.1.20:9999"],
        ),
        ({}, ["localhost", "127.0.0.1:5000", "[::1]:1"], ["evil.example", "evil.example:5000"]),  # port not known
    ],
)
def test_host_header_must_name_this_server(image: np.ndarray, tmp_path: Path, config, allowed, refused) -> None:
    write_image(tmp_path / "a.png", image)
    _, c = make_client(images=[tmp_path / "a.png"], **config)
    # A page on another name that resolves to this machine (DNS rebinding) would open an
    # image in its own session and read it back; each Host gets its own cookies, as in a browser.
    for host in allowed:
        r = c.post("/api/open", json={"index": 0}, environ_overrides={"HTTP_HOST": host})
        assert r.status_code == 200, (host, r.get_json())
        for path in ("/", "/api/images", "/api/image.png", "/static/app.js"):
            assert get_with_host(c, path, host).status_code == 200, (host, path)
    for host in refused:
        r = c.post("/api/open", json={"index": 0}, environ_overrides={"HTTP_HOST": host})
        assert r.status_code == 403, (host, r.status_code)
        for path in ("/", "/api/images", "/api/image.png", "/api/state", "/static/app.js", "/nothing"):
            r = get_with_host(c, path, host)
            assert r.status_code == 403, (host, path, r.status_code)
            assert b"does not name this server" in r.data and b"a.png" not in r.data


def test_posts_need_the_pages_token(image: np.ndarray, tmp_path: Path) -> None:
    write_image(tmp_path / "a.png", image)
    app, c = make_client(images=[tmp_path / "a.png"])
    token = app.config["TORCHGRABCUT_TOKEN"]
    page = c.get("/")
    assert page.headers["Cache-Control"] == "no-store"
    assert f'<meta name="torchgrabcut-token" content="{token}">'.encode() in page.data
    assert create_app(ServerConfig(device="cpu")).config["TORCHGRABCUT_TOKEN"] != token  # one per server
    assert len(token) >= 40

    stranger = app.test_client()  # what another site can send: no token, or a guess
    sends = {
        "open": lambda cl, **kw: cl.post("/api/open", json={"index": 0}, **kw),
        "image": lambda cl, **kw: (
            upload(cl, png_bytes(image))
            if not kw
            else cl.post("/api/image", data={"image": (io.BytesIO(png_bytes(image)), "x.png")}, **kw)
        ),
        "box": lambda cl, **kw: cl.post("/api/box", json=dict(zip(("x0", "y0", "x1", "y1"), BOX)), **kw),
        "strokes": lambda cl, **kw: cl.post(
            "/api/strokes", json={"strokes": [{"label": "fg", "points": [[1, 1]]}]}, **kw
        ),
        "undo": lambda cl, **kw: cl.post("/api/undo", **kw),
    }
    for name, send in sends.items():
        for headers in ({}, {TOKEN_HEADER: "guess"}, {TOKEN_HEADER: token[:-1]}, {TOKEN_HEADER: "\u00e9" * 43}):
            r = send(stranger, headers=headers) if headers else send(stranger)
            assert r.status_code == 403, (name, headers, r.status_code)
            assert TOKEN_HEADER in r.get_json()["error"]
    assert len(app.extensions["torchgrabcut_sessions"]) == 0  # nothing was created

    # The same requests with the token (the page's client) work; reads need no token.
    assert c.post("/api/open", json={"index": 0}).status_code == 200
    assert post_box(c, BOX).status_code == 200
    stranger.set_cookie(COOKIE, c.get_cookie(COOKIE).value)
    assert stranger.get("/api/state").status_code == 200
    r = stranger.post("/api/undo")  # even with the victim's cookie, no token: refused
    assert r.status_code == 403 and c.get("/api/state").get_json()["action"] == "box"

    # A cross-origin preflight for the token header is never approved.
    r = stranger.options(
        "/api/box",
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": TOKEN_HEADER.lower(),
        },
    )
    assert not any(k.lower().startswith("access-control-allow") for k in r.headers.keys())
