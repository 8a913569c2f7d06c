"""What `torchgrabcut serve` is started with, and the bounds every setting is checked against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from torchgrabcut.api import MAX_ITER_LIMIT
from torchgrabcut.imageio import MAX_IMAGE_PIXELS
from torchgrabcut.server.access import is_host_name
from torchgrabcut.server.sessions import (
    DEFAULT_HISTORY_BYTES,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MEMORY_BYTES,
    session_minimum_bytes,
)

__all__ = ["LIMIT_MAX", "ServerConfig"]

# Upper bounds of the limits: far beyond use, below where they would overflow (byte counts as
# integers, a lock's wait in seconds); images no larger than the library reads at all.
LIMIT_MAX = {
    "max_upload_mb": 1e6,
    "max_megapixels": MAX_IMAGE_PIXELS / 1e6,
    "session_timeout_s": 1e9,
    "queue_timeout_s": 86400.0,
    "max_memory_mb": 1e9,
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
    queue_timeout_s: float = 30.0  # how long a request waits for a free GrabCut slot (or decode budget) before 503
    max_memory_mb: float = DEFAULT_MEMORY_BYTES / 2**20  # what all sessions together may hold (MiB)
    decode_pixels: int | None = None  # pixels decoded at once, all uploads together (None: 2 x max_pixels)

    @property
    def max_pixels(self) -> int:
        return int(self.max_megapixels * 1e6)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_memory_bytes(self) -> int:
        return int(self.max_memory_mb * 2**20)

    @property
    def decode_budget(self) -> int:
        """Pixels decoded at once: by default two of the largest images, or many small ones beside one."""
        return self.decode_pixels if self.decode_pixels is not None else 2 * self.max_pixels

    def check(self) -> None:
        """ValueError (naming the field) for a setting the server cannot run with."""
        for name in ("box_iter", "refine_iter"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_ITER_LIMIT:
                raise ValueError(f"{name}: expected a whole number of iterations 1..{MAX_ITER_LIMIT}, got {v!r}")
        for name, zero_ok in (
            ("max_upload_mb", False),
            ("max_memory_mb", False),
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
        self._check_budgets()
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ValueError(f"port: expected 0..65535, got {self.port}")
        for name in self.allowed_hosts:
            if not is_host_name(name):
                raise ValueError(f"allowed host: expected a host name or IP address (no port), got {name!r}")

    def _check_budgets(self) -> None:
        """The memory and decode budgets must admit the largest image the pixel limit admits."""
        need = session_minimum_bytes(self.max_pixels)
        if self.max_memory_bytes < need:
            raise ValueError(
                f"max_memory_mb: {self.max_memory_mb:g} MiB cannot hold one session with a {self.max_megapixels:g}-"
                f"megapixel image (its image, mask and one undo step: {need / 2**20:.1f} MiB)"
            )
        v = self.decode_pixels
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"decode_pixels: expected an integer >= 1 or None, got {v!r}")
