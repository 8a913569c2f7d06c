"""The Flask app of `torchgrabcut serve`: :func:`create_app` assembles it, :func:`make_server`
binds it. The API and who may use it are described in the package's docstring
(``torchgrabcut.server``); the views are in routes.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from torchgrabcut.server.access import HostCheck, new_token, page_with_token
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
    from flask import Flask

    from torchgrabcut.server import routes

    cfg = config or ServerConfig()
    for p in cfg.images:
        if not Path(p).is_file():
            raise FileNotFoundError(f"image: no such file: {p}")
    cfg.check()
    segmenter = Segmenter(cfg.device)
    store = SessionStore(
        cfg.max_sessions, cfg.max_history, cfg.session_timeout_s, max_history_bytes=cfg.max_history_bytes
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
    app.register_blueprint(routes.blueprint)
    return app


def make_server(config: ServerConfig) -> Any:
    """The app in a threaded werkzeug server bound to ``config.host``:``config.port`` (0 or None:
    a free port); the Host check then uses the port actually bound (``server.server_port``)."""
    from werkzeug.serving import make_server as werkzeug_server

    from torchgrabcut.server.routes import PORT

    app = create_app(config)
    server = werkzeug_server(config.host, config.port or 0, app, threaded=True)
    app.config[PORT] = server.server_port
    return server
