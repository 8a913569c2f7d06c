"""The Flask app of `torchgrabcut serve`: :func:`create_app` assembles it, :func:`make_server`
binds it. The API and who may use it are described in the package's docstring
(``torchgrabcut.server``); the views are in routes.py."""

from __future__ import annotations

import errno
import socket
import threading
from pathlib import Path
from typing import Any

from torchgrabcut.server.access import HostCheck, new_token, page_with_token
from torchgrabcut.server.budget import PixelSlots
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.server.segmenter import Segmenter
from torchgrabcut.server.sessions import SessionStore

__all__ = ["create_app", "make_server"]


def _import_flask() -> None:
    """Flask is an optional dependency: imported here, so `import torchgrabcut` does not need it."""
    try:
        import flask  # noqa: F401
        import werkzeug  # noqa: F401
    except ImportError as err:
        raise RuntimeError("the web page needs Flask: pip install 'torchgrabcut[serve]'") from err


def create_app(config: ServerConfig | None = None) -> Any:
    """The Flask app serving ``config`` (RuntimeError without Flask, FileNotFoundError for a
    missing image, ValueError for a bad setting); a new token each time."""
    _import_flask()
    from flask import Flask  # optional (the serve extra)

    from torchgrabcut.server import routes  # imports flask

    cfg = config or ServerConfig()
    for p in cfg.images:
        if not Path(p).is_file():
            raise FileNotFoundError(f"image: no such file: {p}")
    cfg.check()
    segmenter = Segmenter(cfg.device)
    store = SessionStore(
        cfg.max_sessions,
        cfg.max_history,
        cfg.session_timeout_s,
        max_history_bytes=cfg.max_history_bytes,
        max_bytes=cfg.max_memory_bytes,
    )
    hosts = HostCheck(cfg.host, cfg.allowed_hosts)
    token = new_token()
    page = page_with_token((routes.STATIC / "index.html").read_text(encoding="utf-8"), token)

    app = Flask(__name__, static_folder=str(routes.STATIC), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = cfg.max_upload_bytes
    app.config["TORCHGRABCUT"] = cfg
    app.config["TORCHGRABCUT_DEVICE"] = str(segmenter.device)
    app.config[routes.TOKEN] = token
    app.config[routes.PORT] = cfg.port or None  # make_server sets the port it bound
    app.extensions[routes.EXTENSION] = routes.ServerState(cfg, segmenter, hosts, page)
    app.extensions[routes.SESSIONS] = store
    app.extensions[routes.SLOTS] = threading.BoundedSemaphore(cfg.max_concurrent)
    app.extensions[routes.DECODES] = PixelSlots(cfg.decode_budget)
    app.register_blueprint(routes.blueprint)
    return app


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``; ValueError naming the setting when it cannot be.

    Bound here rather than by werkzeug, which prints its own text and exits 1 on a port in use.
    The address family is the one werkzeug gives the socket it is handed (IPv6 for an address
    with a colon).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        addresses = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as err:
        reason = err.strerror if isinstance(err, socket.gaierror) else str(err)
        raise ValueError(f"--host {host}: not an address or name this machine can listen on ({reason})") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug: restart at once after a stop
        sock.bind(addresses[0][4])
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise ValueError(
                f"--port {port}: already in use on {host} by another program (pick another, or --port 0 for a free one)"
            ) from None
        raise ValueError(f"--host {host}: cannot listen there, port {port} ({err.strerror or err})") from None
    return sock


def make_server(config: ServerConfig) -> Any:
    """The app in a threaded werkzeug server bound to ``config.host``:``config.port`` (0 or None:
    a free port); the Host check then uses the port actually bound (``server.server_port``).

    ValueError (naming ``--host`` or ``--port``) when the address cannot be listened on.
    """
    from werkzeug.serving import make_server as werkzeug_server  # optional (the serve extra)

    from torchgrabcut.server.routes import PORT  # imports flask

    app = create_app(config)
    sock = _listen(config.host, config.port or 0)
    try:
        server = werkzeug_server(config.host, config.port or 0, app, threaded=True, fd=sock.fileno())
    finally:
        sock.close()  # werkzeug holds its own duplicate of the socket
    server.server_port = server.port  # what werkzeug's own bind would have set
    app.config[PORT] = server.server_port
    return server
