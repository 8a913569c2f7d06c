"""`torchgrabcut serve`: argument parsing and the local web server; the app is in app.py."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from torchgrabcut.api import MAX_ITER_LIMIT
from torchgrabcut.cli.options import add_device, int_range
from torchgrabcut.data import BUNDLED_IMAGE
from torchgrabcut.server.config import LIMIT_MAX, ServerConfig

__all__ = ["add_parser", "run"]

DEFAULT_PORT = 8765


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="interactive web page: drag a box, paint strokes, download the mask",
        description=(
            "Serves one page on http://HOST:PORT/ (127.0.0.1 by default: only this machine can reach it). "
            "Open one of IMAGES or upload one, drag a box around the object, paint foreground and "
            "background strokes to refine the mask, undo, download the mask PNG. Requests whose Host "
            "header does not name this server, and posts without the page's token, are refused (403)."
        ),
    )
    p.add_argument("images", nargs="*", help="images to offer on the page (default: the bundled astronaut)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the browser may use for this server (its Host header); repeatable. "
        "127.0.0.1, localhost, [::1] and --host always pass",
    )
    add_device(p)
    top = MAX_ITER_LIMIT
    p.add_argument(
        "--box-iter", type=int_range(1, top), default=5, help=f"GrabCut iterations from a box, 1..{top} (default 5)"
    )
    p.add_argument(
        "--refine-iter",
        type=int_range(1, top),
        default=1,
        help=f"iterations from the kept model after strokes, 1..{top} (default 1)",
    )
    _add_limit_options(p)
    p.set_defaults(handler=run)


# The flag of each setting whose refusal by ServerConfig.check names its field.
_FLAGS = {
    "box_iter": "--box-iter",
    "refine_iter": "--refine-iter",
    "max_memory_mb": "--max-memory-mb",
    "max_upload_mb": "--max-upload-mb",
    "max_megapixels": "--max-megapixels",
    "port": "--port",
}


def _add_limit_options(p: argparse.ArgumentParser) -> None:
    """What one request, one browser and all of them together may cost the server."""
    p.add_argument("--max-upload-mb", type=float, default=64.0, help="largest upload in MB (default 64)")
    p.add_argument(
        "--max-megapixels",
        type=float,
        default=40.0,
        help="largest image in megapixels, checked from the image header before decoding (default 40)",
    )
    p.add_argument("--max-sessions", type=int, default=16, help="browser sessions kept at once (default 16)")
    p.add_argument(
        "--max-memory-mb",
        type=float,
        default=4096.0,
        metavar="MIB",
        help="what all sessions together may hold: images, masks, undo steps (default 4096); "
        "when full, a request that would hold more gets 503",
    )
    p.add_argument(
        "--session-timeout",
        type=float,
        default=60.0,
        metavar="MINUTES",
        help="a session (image, mask, undo history) is forgotten after this long without a request (default 60)",
    )
    p.add_argument(
        "--max-concurrent", type=int, default=1, help="GrabCut calls running at once, all sessions (default 1)"
    )
    p.add_argument(
        "--queue-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a request waits for a GrabCut slot before it gets 503 (default 30)",
    )


def _limit(flag: str, value: float, top: float, zero_ok: bool = False) -> None:
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok) or value > top:
        raise ValueError(f"{flag}: expected a number {'>= 0' if zero_ok else '> 0'} and <= {top:g}, got {value:g}")


def _config_from_args(args: argparse.Namespace) -> ServerConfig:
    """The server's settings from the command line; ValueError naming the flag of a bad value
    (checked here, before anything starts, so that the message names the flag, not the field)."""
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port: expected 0..65535, got {args.port}")
    for flag, value in (("--max-sessions", args.max_sessions), ("--max-concurrent", args.max_concurrent)):
        if value < 1:
            raise ValueError(f"{flag}: expected >= 1, got {value}")
    _limit("--max-upload-mb", args.max_upload_mb, LIMIT_MAX["max_upload_mb"])
    _limit("--max-megapixels", args.max_megapixels, LIMIT_MAX["max_megapixels"])
    _limit("--session-timeout", args.session_timeout, LIMIT_MAX["session_timeout_s"] / 60)
    _limit("--queue-timeout", args.queue_timeout, LIMIT_MAX["queue_timeout_s"], zero_ok=True)
    _limit("--max-memory-mb", args.max_memory_mb, LIMIT_MAX["max_memory_mb"])
    images = [Path(p) for p in args.images] if args.images else [BUNDLED_IMAGE]
    config = ServerConfig(
        images=images,
        device=args.device,
        box_iter=args.box_iter,
        refine_iter=args.refine_iter,
        max_upload_mb=args.max_upload_mb,
        max_megapixels=args.max_megapixels,
        max_sessions=args.max_sessions,
        host=args.host,
        port=args.port,
        allowed_hosts=list(args.allow_host),
        session_timeout_s=args.session_timeout * 60,
        max_concurrent=args.max_concurrent,
        queue_timeout_s=args.queue_timeout,
        max_memory_mb=args.max_memory_mb,
    )
    try:
        config.check()
    except ValueError as err:  # named by its field: said with the flag
        message = str(err)
        field = message.partition(":")[0]
        raise ValueError(_FLAGS[field] + message[len(field) :] if field in _FLAGS else message) from None
    return config


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: --help and the other commands do not load the server.
    from torchgrabcut.server.app import make_server

    config = _config_from_args(args)
    server = make_server(config)
    host = f"[{args.host}]" if ":" in args.host else args.host
    device = server.app.config["TORCHGRABCUT_DEVICE"]
    print(
        f"torchgrabcut serve: http://{host}:{server.server_port}/ ({len(config.images)} image(s), GrabCut on {device})"
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"torchgrabcut serve: warning: bound to {args.host}, reachable from other machines", file=sys.stderr)
    print("Press Ctrl+C to stop.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
