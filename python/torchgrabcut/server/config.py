"""What `torchgrabcut serve` is started with, and the bounds every setting is checked against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from torchgrabcut.imageio import MAX_IMAGE_PIXELS
from torchgrabcut.server.access import is_host_name
from torchgrabcut.server.sessions import DEFAULT_HISTORY_BYTES, DEFAULT_IDLE_TIMEOUT_S

__all__ = ["LIMIT_MAX", "ServerConfig"]

# Upper bounds of the limits: far beyond use, below where they would overflow (byte counts as
# integers, a lock's wait in seconds); images no larger than the library reads at all.
LIMIT_MAX = {
    "max_upload_mb": 1e6,
    "max_megapixels": MAX_IMAGE_PIXELS / 1e6,
    "session_timeout_s": 1e9,
    "queue_timeout_s": 86400.0,
}


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
    max_history: int = 32  # undo steps kept per session
    max_history_bytes: int = DEFAULT_HISTORY_BYTES  # and the bytes they may hold (the newest step always stays)
    host: str = "127.0.0.1"  # the address bound; the Host header must name it (or a loopback name)
    port: int | None = None  # the port bound; None or 0: not known yet (make_server sets it), any port passes
    allowed_hosts: list[str] = field(default_factory=list)  # more names the Host header may use
    session_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S  # a session is forgotten after this long without a request
    max_concurrent: int = 1  # GrabCut calls (with their stroke painting) running at once
    queue_timeout_s: float = 30.0  # how long a request waits for a free GrabCut slot before 503

    @property
    def max_pixels(self) -> int:
        return int(self.max_megapixels * 1e6)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

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
        for name in ("max_history", "max_history_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}: expected an integer >= 0, got {v!r}")
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ValueError(f"port: expected 0..65535, got {self.port}")
        for name in self.allowed_hosts:
            if not is_host_name(name):
                raise ValueError(f"allowed host: expected a host name or IP address (no port), got {name!r}")
