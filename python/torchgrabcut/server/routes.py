"""The server's blueprint: the page, its JSON API, the access check and the one error handler.

Views are module-level functions; what they need comes from the app they run in:
``app.extensions`` holds the :class:`ServerState` (EXTENSION), the session store (SESSIONS),
the GrabCut slots (SLOTS) and the decode budget (DECODES); ``app.config`` holds the token
(TOKEN) and the port bound (PORT, set by ``make_server`` once it is known). Every refusal
is an :class:`ApiError` raised where it is found and answered by :func:`error_response`.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from flask import Blueprint, Response, current_app, jsonify, request, send_file
from werkzeug.exceptions import HTTPException

from torchgrabcut.server.access import TOKEN_HEADER, HostCheck, access_refusal
from torchgrabcut.server.budget import Busy, PixelSlots
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.server.errors import ApiError
from torchgrabcut.server.images import decode_image, encode_png, image_size, rle_encode
from torchgrabcut.server.parsing import parse_box, parse_index, read_json_object
from torchgrabcut.server.segmenter import Segmenter
from torchgrabcut.server.sessions import (
    MemoryFull,
    Reservation,
    Session,
    SessionsFull,
    SessionStore,
    State,
    session_minimum_bytes,
)
from torchgrabcut.server.strokes import paint_strokes

__all__ = [
    "COOKIE",
    "DECODES",
    "EXTENSION",
    "PORT",
    "SESSIONS",
    "SLOTS",
    "STATIC",
    "TOKEN",
    "ServerState",
    "blueprint",
    "cookie_name",
]

COOKIE = "torchgrabcut_session"  # followed by _PORT once the port is known (cookie_name)
STATIC = Path(__file__).with_name("static")
EXTENSION = "torchgrabcut"
SESSIONS = "torchgrabcut_sessions"
SLOTS = "torchgrabcut_slots"
DECODES = "torchgrabcut_decodes"
TOKEN = "TORCHGRABCUT_TOKEN"
PORT = "TORCHGRABCUT_PORT"

blueprint = Blueprint("torchgrabcut", __name__)


@dataclass(frozen=True)
class ServerState:
    """What the views read that does not change while the server runs."""

    config: ServerConfig
    segmenter: Segmenter
    hosts: HostCheck
    page: str  # index.html with this server's token


def _server() -> ServerState:
    state: ServerState = current_app.extensions[EXTENSION]
    return state


def _sessions() -> SessionStore:
    store: SessionStore = current_app.extensions[SESSIONS]
    return store


def cookie_name() -> str:
    """The session cookie's name, with the port bound in it.

    Browsers send a cookie to every port of its host: named after the port, the cookie of a
    server on 127.0.0.1:8765 is not overwritten by (nor mistaken for) the one another server
    or program on 127.0.0.1 sets, and two servers on one machine keep their sessions apart.
    """
    port = current_app.config[PORT]
    return f"{COOKIE}_{port}" if port else COOKIE


# Access and errors, for every request of the app (static files and unknown paths too).


@blueprint.before_app_request
def check_access() -> None:
    """403 for a Host that does not name this server, or a change without the page's token."""
    refusal = access_refusal(
        _server().hosts,
        current_app.config[PORT],
        current_app.config[TOKEN],
        request.method,
        request.environ.get("HTTP_HOST"),
        request.headers.get(TOKEN_HEADER, ""),
    )
    if refusal is not None:
        raise ApiError(refusal, 403)


@blueprint.app_errorhandler(Exception)
def error_response(err: Exception) -> Any:
    """Every error of the app as a response: ``{"error": message}`` under /api/, text elsewhere.

    Unexpected exceptions are logged and answered 500 as JSON, and the server keeps serving.
    """
    if isinstance(err, ApiError):
        status, message = err.status, str(err)
    elif isinstance(err, HTTPException):
        status = err.code or 500
        if status == 413:
            message = f"upload too large: the limit is {_server().config.max_upload_mb:g} MB"
        else:
            message = f"{err.name}: {err.description}"
    else:
        current_app.logger.exception("torchgrabcut serve: unexpected error")
        return jsonify(error=f"internal error: {type(err).__name__}: {err}"), 500
    if request.path.startswith("/api/"):
        return jsonify(error=message), status
    return Response(message, status=status, mimetype="text/plain")


# Helpers of the views.


@contextmanager
def locked_session() -> Iterator[Session]:
    """The request's session, its lock held: everything it holds is read and written in here."""
    store = _sessions()
    sid = request.cookies.get(cookie_name())
    session = store.get(sid)
    if session is None:
        if sid:
            minutes = _server().config.session_timeout_s / 60
            raise ApiError(
                f"this session has ended (no request for {minutes:g} minutes, or the "
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
    cfg = _server().config
    slots: threading.BoundedSemaphore = current_app.extensions[SLOTS]
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


@contextmanager
def bad_values_as_400() -> Iterator[None]:
    """The request's values that GrabCut or the painting refuse (ValueError, TypeError): 400."""
    try:
        yield
    except (ValueError, TypeError) as err:
        raise ApiError(str(err)) from err


def open_image(session: Session) -> np.ndarray:
    """The session's image (call under its lock)."""
    if session.image is None:
        raise ApiError("no image is open in this session: open or upload an image first")
    return session.image


def current_state(session: Session) -> State:
    """The session's current mask and model (call under its lock)."""
    if session.state is None:
        raise ApiError("no mask yet: drag a box around the object first")
    return session.state


def session_json(session: Session, image: np.ndarray, **extra: Any) -> dict[str, Any]:
    """The session's state as the API answers it (call under its lock)."""
    h, w = image.shape[:2]
    out: dict[str, Any] = {
        "name": session.image_name,
        "width": w,
        "height": h,
        "device": str(_server().segmenter.device),
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


@contextmanager
def memory(nbytes: int, replaces: Session | None = None, trims: Session | None = None) -> Iterator[Reservation]:
    """``nbytes`` of the server's memory budget for the block (SessionStore.reserve), else 503."""
    try:
        reservation = _sessions().reserve(nbytes, replaces=replaces, trims=trims)
    except MemoryFull as err:
        raise ApiError(str(err), 503) from err
    with reservation:
        yield reservation


@contextmanager
def decoding(pixels: int) -> Iterator[None]:
    """``pixels`` of the decode budget, waited for up to queue_timeout_s, else 503."""
    decodes: PixelSlots = current_app.extensions[DECODES]
    try:
        with decodes.hold(pixels, _server().config.queue_timeout_s):
            yield
    except Busy as err:
        raise ApiError(str(err), 503) from err


def open_in_session(read: Callable[[], tuple[bytes, str]]) -> Any:
    """Opens the image ``read`` gives (its bytes and name) in the request's session, made when
    there is none (its cookie set).

    The cheap limits come first, each before anything costly: the session table (503), the
    image's header (400, 413), the server's memory budget (503), the decode budget (503);
    then the decode. The session's lock is held throughout: its requests run one at a time.
    """
    store = _sessions()
    try:
        session = store.get_or_create(request.cookies.get(cookie_name()))
    except SessionsFull as err:
        raise ApiError(str(err), 503) from err
    try:
        with session.lock:
            data, name = read()
            cfg = _server().config
            width, height = image_size(data, cfg.max_pixels, name)
            with memory(session_minimum_bytes(width * height), replaces=session) as room:
                with decoding(width * height):
                    image = decode_image(data, cfg.max_pixels, name)
                session.open(image, name)
                room.commit(session)
            resp = jsonify(session_json(session, image))
    finally:
        store.discard_if_empty(session)  # a session made for an upload that failed
        store.touch(session)
    resp.set_cookie(cookie_name(), session.sid, httponly=True, samesite="Strict")
    return resp


def new_state_room(session: Session) -> Any:
    """The memory a new mask and model need, made in the budget (503 if it cannot be), the
    session's own oldest undo steps dropped first if need be (call under its lock).

    The first mask, and the first undo step, go into the room counted since the image was
    opened; later ones need new bytes.
    """
    return memory(session.push_bytes(), trims=session)


# The views.


@blueprint.get("/")
def index() -> Any:
    return Response(_server().page, mimetype="text/html", headers={"Cache-Control": "no-store"})


@blueprint.get("/api/images")
def images() -> Any:
    return jsonify(images=[{"index": i, "name": Path(p).name} for i, p in enumerate(_server().config.images)])


@blueprint.post("/api/open")
def open_listed() -> Any:
    cfg = _server().config
    path = Path(cfg.images[parse_index(read_json_object(request).get("index"), len(cfg.images))])

    def read() -> tuple[bytes, str]:
        try:
            return path.read_bytes(), path.name
        except OSError as err:
            raise ApiError(f"{path.name}: cannot read the file ({err.strerror or err})") from err

    return open_in_session(read)


@blueprint.post("/api/image")
def upload() -> Any:
    # The body is parsed only once the session table has room (in open_in_session).
    def read() -> tuple[bytes, str]:
        f = request.files.get("image")
        if f is None:
            raise ApiError("expected a file in the multipart field 'image'")
        return f.read(), Path(f.filename or "upload").name

    return open_in_session(read)


@blueprint.get("/api/state")
def get_state() -> Any:
    with locked_session() as session:
        return jsonify(session_json(session, open_image(session)))


@blueprint.get("/api/image.png")
def image_png() -> Any:
    with locked_session() as session:
        data = encode_png(open_image(session))
    return Response(data, mimetype="image/png", headers={"Cache-Control": "no-store"})


@blueprint.post("/api/box")
def box() -> Any:
    t = time.perf_counter()
    server = _server()
    iterations = server.config.box_iter
    coords = parse_box(read_json_object(request))
    with locked_session() as session:
        image = open_image(session)
        with new_state_room(session) as room:
            with grabcut_slot(), bad_values_as_400():
                mask, model, ms = server.segmenter.run(image, box=list(coords), max_iter=iterations)
            x0, y0, x1, y1 = (int(v) for v in coords)  # checked by grabcut
            session.push(State(mask, model, "box", (x0, y0, x1, y1)))
            room.commit(session)
        out = session_json(session, image, grabcut_ms=ms, iterations=iterations)
    out["server_ms"] = (time.perf_counter() - t) * 1e3
    return jsonify(out)


@blueprint.post("/api/strokes")
def strokes() -> Any:
    t = time.perf_counter()
    server = _server()
    iterations = server.config.refine_iter
    given = read_json_object(request).get("strokes")
    with locked_session() as session:
        image = open_image(session)
        state = current_state(session)
        with new_state_room(session) as room:
            with grabcut_slot(), bad_values_as_400():
                painted = paint_strokes(state.mask, given)
                mask, model, ms = server.segmenter.run(image, painted, model=state.model, max_iter=iterations)
            session.push(State(mask, model, "strokes", state.box))
            room.commit(session)
        out = session_json(session, image, grabcut_ms=ms, iterations=iterations)
    out["server_ms"] = (time.perf_counter() - t) * 1e3
    return jsonify(out)


@blueprint.post("/api/undo")
def undo() -> Any:
    with locked_session() as session:
        image = open_image(session)
        if not session.undo():
            raise ApiError("nothing to undo")
        _sessions().account(session)  # the undone state's mask is freed
        return jsonify(session_json(session, image))


@blueprint.get("/api/mask.png")
def mask_png() -> Any:
    binary = request.args.get("binary", "0") not in ("0", "", "false")
    with locked_session() as session:
        open_image(session)
        m = current_state(session).mask
        data = encode_png(((m & 1) * 255).astype(np.uint8) if binary else m)
        stem = Path(session.image_name).stem or "image"
    fname = f"{stem}_mask{'_binary' if binary else ''}.png"
    resp = send_file(io.BytesIO(data), mimetype="image/png", as_attachment=True, download_name=fname)
    resp.headers["Cache-Control"] = "no-store"
    return resp
