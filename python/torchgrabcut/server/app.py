"""The Flask app of `torchgrabcut serve`: one static page and a small JSON API.

API (all JSON unless said otherwise; the session is a cookie the server sets when
an image is opened; coordinates are image pixels, x to the right, y down):

- ``GET  /api/images``: the images given on the command line, ``{"images": [{"index", "name"}]}``.
- ``POST /api/open`` ``{"index": i}``: opens one of them in this session.
- ``POST /api/image``: uploads an image (multipart field ``image``) and opens it.
  Not an image: 400; over the upload size or pixel limit: 413; both with ``{"error": message}``.
- ``GET  /api/image.png``: the session's image, as the server sees it (PNG).
- ``GET  /api/state``: the session's state (as below), without computing anything.
- ``POST /api/box`` ``{"x0", "y0", "x1", "y1"}``: half-open box; GrabCut from it (GC_INIT_WITH_RECT).
- ``POST /api/strokes`` ``{"strokes": [{"label": "fg" | "bg", "radius": r, "points": [[x, y], ...]}]}``:
  paints hard foreground (GC_FGD) or background (GC_BGD) discs along each polyline into the
  current mask and refines it from the kept model (GC_EVAL).
- ``POST /api/undo``: back to the state before the last box or strokes.
- ``GET  /api/mask.png``: the current mask as a grey PNG of OpenCV labels 0..3 (0 BGD, 1 FGD,
  2 PR_BGD, 3 PR_FGD; foreground = 1 or 3), the format ``torchgrabcut segment`` writes and
  reads; ``?binary=1`` gives 0 (background) / 255 (foreground) instead.

Open, box, strokes and undo answer with the session's state: the image size, the mask
run-length encoded (``mask.values`` and ``mask.counts``, row-major runs of labels), the
foreground fraction, the box the mask started from, ``grabcut_ms`` (the GrabCut call
alone, GPU work finished) and ``server_ms`` (the whole request: painting, GrabCut,
encoding), the device and whether an undo is possible. Errors are ``{"error": message}``
with a 4xx status (503 when the server is busy or its session table is full); the
server keeps serving.

Who may ask (the page is reachable by every web page the user visits, through the browser):

- Every request's ``Host`` header must name this server: 127.0.0.1, localhost or [::1],
  the ``--host`` it was started with, or a name given with ``--allow-host``, with the port
  it is bound to (with a wildcard ``--host`` such as 0.0.0.0, any IP address too). Anything
  else is refused with 403: a page on another domain that re-points its DNS name at this
  machine (DNS rebinding) cannot read the images or masks.
- Every POST must carry the header ``X-Torchgrabcut-Token`` with a random token made when the
  server starts and written into the page (``index.html``); without it: 403. Another site can
  neither read the token nor send a custom header without a CORS preflight, which this server
  never approves, so it cannot upload images or change a session.

Limits: JSON bodies up to 1 MiB, at most 100 strokes and 20000 points per request; uploads
up to ``--max-upload-mb``; images up to ``--max-megapixels`` (checked from the image header,
before decoding). At most ``--max-concurrent`` GrabCut calls run at once; a request that finds
them all busy waits up to ``--queue-timeout`` seconds for one, then gets 503. Requests of one
session run one after another, never interleaved. A session is forgotten after
``--session-timeout`` minutes without a request; when ``--max-sessions`` sessions are in use,
a new browser gets 503 (a live session is never evicted to make room).
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import json
import math
import re
import secrets
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchgrabcut.api import GC_BGD, GC_FGD, resolve_device
from torchgrabcut.server.sessions import DEFAULT_IDLE_TIMEOUT_S, Session, SessionsFull, SessionStore, State

__all__ = [
    "COOKIE",
    "TOKEN_HEADER",
    "ServerConfig",
    "UploadError",
    "create_app",
    "decode_image",
    "make_server",
    "paint_strokes",
    "rle_encode",
    "split_host",
]

COOKIE = "torchgrabcut_session"
TOKEN_HEADER = "X-Torchgrabcut-Token"
TOKEN_PLACEHOLDER = 'content="TORCHGRABCUT_TOKEN"'
STATIC = Path(__file__).with_name("static")
MAX_JSON_BYTES = 1 << 20
MAX_STROKES = 100
MAX_STROKE_POINTS = 20_000
MAX_RADIUS = 200
# Upper bounds of the limits: far beyond use, below where they would overflow (pixel and byte
# counts as integers, a lock's wait in seconds).
LIMIT_MAX = {"max_upload_mb": 1e6, "max_megapixels": 1e6, "session_timeout_s": 1e9, "queue_timeout_s": 86400.0}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


@dataclass
class ServerConfig:
    """What `torchgrabcut serve` was started with."""

    images: list[Path] = field(default_factory=list)
    device: str | None = None  # None: the GPU when usable, else the CPU
    box_iter: int = 5  # GrabCut iterations from a box
    refine_iter: int = 1  # iterations from the kept model after strokes (OpenCV's GC_EVAL, iterCount 1)
    max_upload_mb: float = 64.0
    max_megapixels: float = 40.0
    max_sessions: int = 16
    max_history: int = 32
    host: str = "127.0.0.1"  # the address bound; the Host header must name it (or a loopback name)
    port: int | None = None  # the port bound; None or 0: not known yet (make_server sets it), any port passes
    allowed_hosts: list[str] = field(default_factory=list)  # more names the Host header may use
    session_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S  # a session is forgotten after this long without a request
    max_concurrent: int = 1  # GrabCut calls (with their stroke painting) running at once
    queue_timeout_s: float = 30.0  # how long a request waits for a free GrabCut slot before 503

    def check(self) -> None:
        """ValueError (naming the field) for a setting the server cannot run with."""
        if self.box_iter < 1 or self.refine_iter < 1:
            raise ValueError(f"iterations: expected >= 1, got box {self.box_iter}, refine {self.refine_iter}")
        for name, zero_ok in (
            ("max_upload_mb", False),
            ("max_megapixels", False),
            ("session_timeout_s", False),
            ("queue_timeout_s", True),
        ):
            v, top = getattr(self, name), LIMIT_MAX[name]
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
            if not ok or not (0 <= v if zero_ok else 0 < v) or v > top:
                raise ValueError(f"{name}: expected a number {'>= 0' if zero_ok else '> 0'} and <= {top:g}, got {v!r}")
        for name in ("max_sessions", "max_concurrent"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected an integer >= 1, got {v!r}")
        if self.max_history < 0:
            raise ValueError(f"max_history: expected >= 0, got {self.max_history}")
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ValueError(f"port: expected 0..65535, got {self.port}")
        for name in self.allowed_hosts:
            if not _is_host_name(name):
                raise ValueError(f"allowed host: expected a host name or IP address (no port), got {name!r}")


class UploadError(ValueError):
    """An upload the server refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ApiError(Exception):
    """A request the server answers with ``{"error": message}`` and ``status``."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _host_name(name: str) -> str:
    """A host name compared case-blind; IP addresses in one spelling ([::1], 0:0::1 -> ::1)."""
    name = name.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def _is_host_name(name: str) -> bool:
    normal = _host_name(name)
    try:
        ipaddress.ip_address(normal)
    except ValueError:
        return re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", normal) is not None
    return True


def split_host(value: str) -> tuple[str, int | None]:
    """A Host header as (name, port or None); ValueError when it is not ``name[:port]``."""
    v = value.strip()
    port: str | None
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            raise ValueError(f"Host: unclosed '[' in {value!r}")
        name, rest = v[1:end], v[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"Host: expected [address]:port, got {value!r}")
        port = rest[1:] if rest else None
    elif v.count(":") == 1:
        name, port = v.split(":")
    elif ":" in v:
        raise ValueError(f"Host: an IPv6 address must be in brackets, got {value!r}")
    else:
        name, port = v, None
    if not name:
        raise ValueError(f"Host: no name in {value!r}")
    if port is None:
        return _host_name(name), None
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ValueError(f"Host: bad port in {value!r}")
    return _host_name(name), int(port)


class _HostCheck:
    """Which Host headers name this server: loopback names, --host, --allow-host; with a
    wildcard bind also any IP address (an address in the URL cannot be re-pointed by DNS)."""

    def __init__(self, cfg: ServerConfig) -> None:
        self.bind = _host_name(cfg.host)
        self.wildcard = self.bind in WILDCARD_HOSTS
        names = {_host_name(n) for n in (*LOOPBACK_HOSTS, *cfg.allowed_hosts)}
        if self.wildcard:
            names.add(_host_name(socket.gethostname()))
        else:
            names.add(self.bind)
        self.names = frozenset(names)

    def allows(self, value: str | None, port: int | None) -> bool:
        if not value:
            return False
        try:
            name, given = split_host(value)
        except ValueError:
            return False
        if port and (given if given is not None else 80) != port:
            return False
        if name in self.names:
            return True
        if self.wildcard:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False

    def url(self, port: int | None) -> str:
        host = "127.0.0.1" if self.wildcard else self.bind
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/" if port else f"http://{host}/"


def decode_image(data: bytes, max_pixels: int, name: str = "upload") -> np.ndarray:
    """Image bytes as (H, W, 3) uint8 BGR; UploadError when not an image or over ``max_pixels``."""
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise UploadError(f"{name}: the file is empty")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                w, h = im.size
                if w * h > max_pixels:
                    raise UploadError(
                        f"{name}: image too large: {w}x{h} = {w * h / 1e6:.1f} megapixels, "
                        f"the limit is {max_pixels / 1e6:.1f}",
                        413,
                    )
                im.load()
                rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
    except UploadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise UploadError(f"{name}: image too large ({err})", 413) from err
    except UnidentifiedImageError as err:
        raise UploadError(f"{name}: not an image (PNG, JPEG, BMP, ... expected)") from err
    except (OSError, SyntaxError, ValueError) as err:
        raise UploadError(f"{name}: cannot decode the image ({err})") from err
    if rgb.ndim != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise UploadError(f"{name}: the image is empty")
    if rgb.shape[0] * rgb.shape[1] > max_pixels:  # a format whose decoded size differs from its header's
        raise UploadError(f"{name}: image too large: {rgb.shape[1]}x{rgb.shape[0]}", 413)
    return np.ascontiguousarray(rgb[:, :, ::-1])


def _png(array: np.ndarray) -> bytes:
    from PIL import Image

    arr = array if array.ndim == 2 else array[:, :, ::-1]
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(arr)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def rle_encode(mask: np.ndarray) -> dict[str, list[int]]:
    """Row-major runs of a label mask: ``values[i]`` repeated ``counts[i]`` times."""
    flat = np.ascontiguousarray(mask).reshape(-1)
    if flat.size == 0:
        return {"values": [], "counts": []}
    ends = np.flatnonzero(flat[1:] != flat[:-1]) + 1  # where a new run starts
    bounds = np.empty(ends.size + 2, np.int64)
    bounds[0], bounds[1:-1], bounds[-1] = 0, ends, flat.size
    return {"values": flat[bounds[:-1]].tolist(), "counts": np.diff(bounds).tolist()}


def _parse_point(p: Any, where: str) -> tuple[float, float]:
    if not isinstance(p, (list, tuple)) or len(p) != 2:
        raise ValueError(f"{where}: expected a point [x, y], got {p!r}")
    x, y = p
    for v in (x, y):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise ValueError(f"{where}: expected finite numbers [x, y], got {p!r}")
    return float(x), float(y)


def paint_strokes(mask: np.ndarray, strokes: Any) -> np.ndarray:
    """A copy of ``mask`` with each stroke painted as hard labels.

    ``strokes`` is a list of ``{"label": "fg" | "bg", "radius": r, "points": [[x, y], ...]}``;
    every pixel within ``radius`` of the polyline becomes GC_FGD or GC_BGD. Points may lie
    outside the image (the part inside is painted). At most MAX_STROKES strokes and
    MAX_STROKE_POINTS points in all (each stroke's count is checked before its points are
    parsed), radius <= MAX_RADIUS.
    """
    from PIL import Image, ImageDraw

    if not isinstance(strokes, list) or not strokes:
        raise ValueError("strokes: expected a non-empty list of {label, radius, points}")
    if len(strokes) > MAX_STROKES:
        raise ValueError(f"strokes: at most {MAX_STROKES} strokes per request, got {len(strokes)}")
    h, w = mask.shape
    out = mask.copy()
    total = 0
    for i, s in enumerate(strokes):
        where = f"strokes[{i}]"
        if not isinstance(s, dict):
            raise ValueError(f"{where}: expected an object {{label, radius, points}}, got {s!r}")
        label = s.get("label")
        if label not in ("fg", "bg"):
            raise ValueError(f"{where}.label: expected 'fg' or 'bg', got {label!r}")
        radius = s.get("radius", 5)
        if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0 <= radius <= MAX_RADIUS:
            raise ValueError(f"{where}.radius: expected a number 0..{MAX_RADIUS}, got {radius!r}")
        points = s.get("points")
        if not isinstance(points, list) or not points:
            raise ValueError(f"{where}.points: expected a non-empty list of [x, y]")
        total += len(points)
        if total > MAX_STROKE_POINTS:
            raise ValueError(f"strokes: at most {MAX_STROKE_POINTS} points in all")
        pts = [_parse_point(p, f"{where}.points[{j}]") for j, p in enumerate(points)]
        r = float(radius)
        # Drawn on the stroke's bounding box only (clipped to the image), not the whole image.
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        bx0, by0 = max(0, math.floor(min(xs) - r) - 1), max(0, math.floor(min(ys) - r) - 1)
        bx1, by1 = min(w, math.ceil(max(xs) + r) + 2), min(h, math.ceil(max(ys) + r) + 2)
        if bx0 >= bx1 or by0 >= by1:
            continue  # entirely outside the image
        local = [(x - bx0, y - by0) for x, y in pts]
        canvas = Image.new("1", (bx1 - bx0, by1 - by0), 0)
        draw = ImageDraw.Draw(canvas)
        for x, y in local:
            draw.ellipse((x - r, y - r, x + r, y + r), fill=1)
        if len(local) > 1:
            draw.line(local, fill=1, width=max(1, round(2 * r + 1)))
        painted = np.asarray(canvas, dtype=bool)
        out[by0:by1, bx0:bx1][painted] = GC_FGD if label == "fg" else GC_BGD
    return out


class _Segmenter:
    """Runs GrabCut for the app and times it (GPU work finished before the clock stops)."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.device = resolve_device(config.device)

    def run(self, image: np.ndarray, mask: np.ndarray | None = None, **kwargs: Any) -> tuple[np.ndarray, Any, float]:
        from torchgrabcut.api import grabcut

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        t = time.perf_counter()
        mask, model = grabcut(image, mask, device=self.device, return_model=True, **kwargs)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return mask, model, (time.perf_counter() - t) * 1e3


def _need_image(session: Session) -> np.ndarray:
    """The session's image (call under its lock)."""
    if session.image is None:
        raise ApiError("no image is open in this session: open or upload an image first")
    return session.image


def _need_state(session: Session) -> State:
    """The session's current mask and model (call under its lock)."""
    if session.state is None:
        raise ApiError("no mask yet: drag a box around the object first")
    return session.state


def create_app(config: ServerConfig | None = None) -> Any:
    """The Flask app (Flask is imported here, so `import torchgrabcut` does not need it)."""
    try:
        from flask import Flask, Response, jsonify, request, send_file
        from werkzeug.exceptions import HTTPException
    except ImportError as err:
        raise RuntimeError("the web page needs Flask: pip install 'torchgrabcut[serve]'") from err

    cfg = config or ServerConfig()
    for p in cfg.images:
        if not Path(p).is_file():
            raise FileNotFoundError(f"image: no such file: {p}")
    cfg.check()
    segmenter = _Segmenter(cfg)
    store = SessionStore(cfg.max_sessions, cfg.max_history, cfg.session_timeout_s)
    max_pixels = int(cfg.max_megapixels * 1e6)
    hosts = _HostCheck(cfg)
    token = secrets.token_urlsafe(32)
    index_html = (STATIC / "index.html").read_text(encoding="utf-8")
    if TOKEN_PLACEHOLDER not in index_html:
        raise RuntimeError("static/index.html: the token placeholder is missing")
    index_html = index_html.replace(TOKEN_PLACEHOLDER, f'content="{token}"')

    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = int(cfg.max_upload_mb * 1024 * 1024)
    app.config["TORCHGRABCUT"] = cfg
    app.config["TORCHGRABCUT_DEVICE"] = str(segmenter.device)
    app.config["TORCHGRABCUT_TOKEN"] = token
    app.config["TORCHGRABCUT_PORT"] = cfg.port or None  # make_server sets the port it bound
    app.extensions["torchgrabcut_sessions"] = store
    app.extensions["torchgrabcut_slots"] = threading.BoundedSemaphore(cfg.max_concurrent)

    def error(message: str, status: int = 400) -> Any:
        return jsonify(error=message), status

    def plain_or_json(message: str, status: int) -> Any:
        if request.path.startswith("/api/"):
            return error(message, status)
        return Response(message, status=status, mimetype="text/plain")

    @app.before_request
    def check_origin() -> Any:
        port = app.config["TORCHGRABCUT_PORT"]
        host = request.environ.get("HTTP_HOST")
        if not hosts.allows(host, port):
            return plain_or_json(
                f"Host {host!r} does not name this server: open {hosts.url(port)} "
                "(names other than the bound address need --allow-host)",
                403,
            )
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            given = request.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(given.encode("utf-8", "replace"), token.encode()):
                return plain_or_json(
                    f"missing or wrong {TOKEN_HEADER} header: requests that change anything must come from "
                    "this server's page (reload it; the token changes when the server restarts)",
                    403,
                )
        return None

    @app.errorhandler(ApiError)
    def api_error(err: ApiError) -> Any:
        return error(str(err), err.status)

    @app.errorhandler(UploadError)
    def upload_error(err: UploadError) -> Any:
        return error(str(err), err.status)

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Any:
        status = err.code or 500
        if status == 413:
            message = f"upload too large: the limit is {cfg.max_upload_mb:g} MB"
        else:
            message = f"{err.name}: {err.description}"
        return plain_or_json(message, status)

    @app.errorhandler(Exception)
    def internal_error(err: Exception) -> Any:
        app.logger.exception("torchgrabcut serve: unexpected error")
        return error(f"internal error: {type(err).__name__}: {err}", 500)

    def body() -> dict[str, Any]:
        """The JSON object of the request, read only when it is at most MAX_JSON_BYTES."""
        if not request.is_json:
            raise ApiError("expected a JSON object in the request body (Content-Type: application/json)")
        too_large = f"request body too large: the limit for JSON requests is {MAX_JSON_BYTES} bytes"
        if request.content_length is not None and request.content_length > MAX_JSON_BYTES:
            raise ApiError(too_large, 413)
        raw = request.stream.read(MAX_JSON_BYTES + 1)
        if len(raw) > MAX_JSON_BYTES:
            raise ApiError(too_large, 413)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise ApiError("expected a JSON object in the request body")
        return data

    @contextmanager
    def locked_session() -> Iterator[Session]:
        """The request's session, its lock held: everything it holds is read and written in here."""
        sid = request.cookies.get(COOKIE)
        session = store.get(sid)
        if session is None:
            if sid:
                raise ApiError(
                    f"this session has ended (no request for {cfg.session_timeout_s / 60:g} minutes, or the "
                    "server restarted): open or upload an image again"
                )
            raise ApiError("no image is open in this session: open or upload an image first")
        try:
            with session.lock:
                yield session
        finally:
            store.touch(session)  # idle time counts from the end of the last request

    @contextmanager
    def grabcut_slot() -> Iterator[None]:
        """One of the max_concurrent GrabCut slots, waited for up to queue_timeout_s, else 503."""
        slots = app.extensions["torchgrabcut_slots"]
        if not slots.acquire(timeout=cfg.queue_timeout_s):
            raise ApiError(
                f"busy: {cfg.max_concurrent} GrabCut call(s) running and none finished within "
                f"{cfg.queue_timeout_s:g} s; try again",
                503,
            )
        try:
            yield
        finally:
            slots.release()

    def state_json(session: Session, image: np.ndarray, **extra: Any) -> dict[str, Any]:
        h, w = image.shape[:2]
        out: dict[str, Any] = {
            "name": session.image_name,
            "width": w,
            "height": h,
            "device": str(segmenter.device),
            "can_undo": bool(session.history),
            "mask": None,
            "foreground": None,
        }
        if session.state is not None:
            m = session.state.mask
            out["mask"] = rle_encode(m)
            out["foreground"] = float((m & 1).mean())
            out["action"] = session.state.action
            out["box"] = list(session.state.box)
        out.update(extra)
        return out

    def opened(image: np.ndarray, name: str) -> Any:
        try:
            session = store.get_or_create(request.cookies.get(COOKIE))
        except SessionsFull as err:
            raise ApiError(str(err), 503) from err
        try:
            with session.lock:
                session.open(image, name)
                resp = jsonify(state_json(session, image))
        finally:
            store.touch(session)
        resp.set_cookie(COOKIE, session.sid, httponly=True, samesite="Strict")
        return resp

    @app.get("/")
    def index() -> Any:
        return Response(index_html, mimetype="text/html", headers={"Cache-Control": "no-store"})

    @app.get("/api/images")
    def images() -> Any:
        return jsonify(images=[{"index": i, "name": Path(p).name} for i, p in enumerate(cfg.images)])

    @app.post("/api/open")
    def open_listed() -> Any:
        index = body().get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cfg.images):
            raise ApiError(f"index: expected 0..{len(cfg.images) - 1}, got {index!r}")
        path = Path(cfg.images[index])
        try:
            data = path.read_bytes()
        except OSError as err:
            raise ApiError(f"{path.name}: cannot read the file ({err.strerror or err})") from err
        return opened(decode_image(data, max_pixels, path.name), path.name)

    @app.post("/api/image")
    def upload() -> Any:
        f = request.files.get("image")
        if f is None:
            raise ApiError("expected a file in the multipart field 'image'")
        name = Path(f.filename or "upload").name
        return opened(decode_image(f.read(), max_pixels, name), name)

    @app.get("/api/state")
    def get_state() -> Any:
        with locked_session() as session:
            return jsonify(state_json(session, _need_image(session)))

    @app.get("/api/image.png")
    def image_png() -> Any:
        with locked_session() as session:
            data = _png(_need_image(session))
        return Response(data, mimetype="image/png", headers={"Cache-Control": "no-store"})

    @app.post("/api/box")
    def box() -> Any:
        t = time.perf_counter()
        data = body()
        coords = [data.get(k) for k in ("x0", "y0", "x1", "y1")]
        with locked_session() as session:
            image = _need_image(session)
            with grabcut_slot():
                try:
                    mask, model, ms = segmenter.run(image, box=coords, max_iter=cfg.box_iter)
                except (ValueError, TypeError) as err:
                    raise ApiError(str(err)) from err
            x0, y0, x1, y1 = (int(v) for v in coords)  # checked by grabcut
            session.push(State(mask, model, "box", (x0, y0, x1, y1)))
            out = state_json(session, image, grabcut_ms=ms, iterations=cfg.box_iter)
        out["server_ms"] = (time.perf_counter() - t) * 1e3
        return jsonify(out)

    @app.post("/api/strokes")
    def strokes() -> Any:
        t = time.perf_counter()
        strokes = body().get("strokes")
        with locked_session() as session:
            image = _need_image(session)
            state = _need_state(session)
            with grabcut_slot():
                try:
                    painted = paint_strokes(state.mask, strokes)
                    mask, model, ms = segmenter.run(image, painted, model=state.model, max_iter=cfg.refine_iter)
                except (ValueError, TypeError) as err:
                    raise ApiError(str(err)) from err
            session.push(State(mask, model, "strokes", state.box))
            out = state_json(session, image, grabcut_ms=ms, iterations=cfg.refine_iter)
        out["server_ms"] = (time.perf_counter() - t) * 1e3
        return jsonify(out)

    @app.post("/api/undo")
    def undo() -> Any:
        with locked_session() as session:
            image = _need_image(session)
            if not session.undo():
                raise ApiError("nothing to undo")
            return jsonify(state_json(session, image))

    @app.get("/api/mask.png")
    def mask_png() -> Any:
        binary = request.args.get("binary", "0") not in ("0", "", "false")
        with locked_session() as session:
            _need_image(session)
            m = _need_state(session).mask
            data = _png(((m & 1) * 255).astype(np.uint8) if binary else m)
            stem = Path(session.image_name).stem or "image"
        fname = f"{stem}_mask{'_binary' if binary else ''}.png"
        resp = send_file(io.BytesIO(data), mimetype="image/png", as_attachment=True, download_name=fname)
        resp.headers["Cache-Control"] = "no-store"
        return resp

    return app


def make_server(config: ServerConfig) -> Any:
    """The app in a threaded werkzeug server bound to ``config.host``:``config.port`` (0 or None:
    a free port); the Host check then uses the port actually bound (``server.server_port``)."""
    from werkzeug.serving import make_server as werkzeug_server

    app = create_app(config)
    server = werkzeug_server(config.host, config.port or 0, app, threaded=True)
    app.config["TORCHGRABCUT_PORT"] = server.server_port
    return server
