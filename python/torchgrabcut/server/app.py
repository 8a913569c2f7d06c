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
with a 4xx status; the server keeps serving.
"""

from __future__ import annotations

import io
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchgrabcut.api import GC_BGD, GC_FGD, resolve_device
from torchgrabcut.server.sessions import Session, SessionStore, State

__all__ = ["COOKIE", "ServerConfig", "UploadError", "create_app", "decode_image", "paint_strokes", "rle_encode"]

COOKIE = "torchgrabcut_session"
STATIC = Path(__file__).with_name("static")
MAX_STROKE_POINTS = 100_000
MAX_RADIUS = 200


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


class UploadError(ValueError):
    """An upload the server refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


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
    outside the image (the part inside is painted).
    """
    from PIL import Image, ImageDraw

    if not isinstance(strokes, list) or not strokes:
        raise ValueError("strokes: expected a non-empty list of {label, radius, points}")
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


def create_app(config: ServerConfig | None = None) -> Any:
    """The Flask app (Flask is imported here, so `import torchgrabcut` does not need it)."""
    try:
        from flask import Flask, Response, jsonify, request, send_file, send_from_directory
        from werkzeug.exceptions import HTTPException
    except ImportError as err:
        raise RuntimeError("the web page needs Flask: pip install 'torchgrabcut[serve]'") from err

    cfg = config or ServerConfig()
    for p in cfg.images:
        if not Path(p).is_file():
            raise FileNotFoundError(f"image: no such file: {p}")
    if cfg.box_iter < 1 or cfg.refine_iter < 1:
        raise ValueError(f"iterations: expected >= 1, got box {cfg.box_iter}, refine {cfg.refine_iter}")
    if cfg.max_upload_mb <= 0 or cfg.max_megapixels <= 0:
        raise ValueError("limits: expected a positive upload size and pixel limit")
    segmenter = _Segmenter(cfg)
    store = SessionStore(cfg.max_sessions, cfg.max_history)
    max_pixels = int(cfg.max_megapixels * 1e6)

    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = int(cfg.max_upload_mb * 1024 * 1024)
    app.config["TORCHGRABCUT"] = cfg
    app.config["TORCHGRABCUT_DEVICE"] = str(segmenter.device)
    app.extensions["torchgrabcut_sessions"] = store

    def error(message: str, status: int = 400) -> Any:
        return jsonify(error=message), status

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Any:
        status = err.code or 500
        if status == 413:
            message = f"upload too large: the limit is {cfg.max_upload_mb:g} MB"
        else:
            message = f"{err.name}: {err.description}"
        if request.path.startswith("/api/"):
            return error(message, status)
        return Response(message, status=status, mimetype="text/plain")

    @app.errorhandler(Exception)
    def internal_error(err: Exception) -> Any:
        app.logger.exception("torchgrabcut serve: unexpected error")
        return error(f"internal error: {type(err).__name__}: {err}", 500)

    def body() -> dict[str, Any]:
        data = request.get_json(silent=True)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object in the request body")
        return data

    def current(require_mask: bool = False) -> Session:
        session = store.get(request.cookies.get(COOKIE))
        if session is None or session.image is None:
            raise ValueError("no image is open in this session: open or upload an image first")
        if require_mask and session.state is None:
            raise ValueError("no mask yet: drag a box around the object first")
        return session

    def state_json(session: Session, **extra: Any) -> dict[str, Any]:
        assert session.image is not None
        h, w = session.image.shape[:2]
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

    def opened(session: Session, image: np.ndarray, name: str) -> Any:
        with session.lock:
            session.open(image, name)
            resp = jsonify(state_json(session))
        resp.set_cookie(COOKIE, session.sid, httponly=True, samesite="Strict")
        return resp

    @app.get("/")
    def index() -> Any:
        return send_from_directory(STATIC, "index.html")

    @app.get("/api/images")
    def images() -> Any:
        return jsonify(images=[{"index": i, "name": Path(p).name} for i, p in enumerate(cfg.images)])

    @app.post("/api/open")
    def open_listed() -> Any:
        try:
            index = body().get("index")
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cfg.images):
                raise ValueError(f"index: expected 0..{len(cfg.images) - 1}, got {index!r}")
            path = Path(cfg.images[index])
            image = decode_image(path.read_bytes(), max_pixels, path.name)
        except UploadError as err:
            return error(str(err), err.status)
        except (ValueError, OSError) as err:
            return error(str(err))
        return opened(store.get_or_create(request.cookies.get(COOKIE)), image, path.name)

    @app.post("/api/image")
    def upload() -> Any:
        f = request.files.get("image")
        if f is None:
            return error("expected a file in the multipart field 'image'")
        name = Path(f.filename or "upload").name
        try:
            image = decode_image(f.read(), max_pixels, name)
        except UploadError as err:
            return error(str(err), err.status)
        return opened(store.get_or_create(request.cookies.get(COOKIE)), image, name)

    @app.get("/api/state")
    def get_state() -> Any:
        try:
            session = current()
        except ValueError as err:
            return error(str(err))
        with session.lock:
            return jsonify(state_json(session))

    @app.get("/api/image.png")
    def image_png() -> Any:
        try:
            session = current()
        except ValueError as err:
            return error(str(err))
        with session.lock:
            assert session.image is not None
            data = _png(session.image)
        return Response(data, mimetype="image/png", headers={"Cache-Control": "no-store"})

    @app.post("/api/box")
    def box() -> Any:
        t = time.perf_counter()
        try:
            data = body()
            session = current()
            coords = [data.get(k) for k in ("x0", "y0", "x1", "y1")]
            with session.lock:
                assert session.image is not None
                mask, model, ms = segmenter.run(session.image, box=coords, max_iter=cfg.box_iter)
                x0, y0, x1, y1 = (int(v) for v in coords)  # checked by grabcut
                session.push(State(mask, model, "box", (x0, y0, x1, y1)))
                out = state_json(session, grabcut_ms=ms, iterations=cfg.box_iter)
        except (ValueError, TypeError) as err:
            return error(str(err))
        out["server_ms"] = (time.perf_counter() - t) * 1e3
        return jsonify(out)

    @app.post("/api/strokes")
    def strokes() -> Any:
        t = time.perf_counter()
        try:
            data = body()
            session = current(require_mask=True)
            with session.lock:
                assert session.image is not None and session.state is not None
                painted = paint_strokes(session.state.mask, data.get("strokes"))
                mask, model, ms = segmenter.run(
                    session.image, painted, model=session.state.model, max_iter=cfg.refine_iter
                )
                session.push(State(mask, model, "strokes", session.state.box))
                out = state_json(session, grabcut_ms=ms, iterations=cfg.refine_iter)
        except (ValueError, TypeError) as err:
            return error(str(err))
        out["server_ms"] = (time.perf_counter() - t) * 1e3
        return jsonify(out)

    @app.post("/api/undo")
    def undo() -> Any:
        try:
            session = current()
        except ValueError as err:
            return error(str(err))
        with session.lock:
            if not session.undo():
                return error("nothing to undo")
            return jsonify(state_json(session))

    @app.get("/api/mask.png")
    def mask_png() -> Any:
        try:
            session = current(require_mask=True)
        except ValueError as err:
            return error(str(err))
        binary = request.args.get("binary", "0") not in ("0", "", "false")
        with session.lock:
            assert session.state is not None
            m = session.state.mask
            data = _png(((m & 1) * 255).astype(np.uint8) if binary else m)
            stem = Path(session.image_name).stem or "image"
        fname = f"{stem}_mask{'_binary' if binary else ''}.png"
        resp = send_file(io.BytesIO(data), mimetype="image/png", as_attachment=True, download_name=fname)
        resp.headers["Cache-Control"] = "no-store"
        return resp

    return app
