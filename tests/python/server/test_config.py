"""server/config.py: a bad setting is refused when the app is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchgrabcut.server.app import create_app
from torchgrabcut.server.config import ServerConfig


def test_config_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        create_app(ServerConfig(images=[tmp_path / "missing.png"], device="cpu"))
    with pytest.raises(ValueError, match="iterations"):
        create_app(ServerConfig(device="cpu", refine_iter=0))
    inf, nan = float("inf"), float("nan")
    for field, values in {
        "max_megapixels": (inf, nan, 0, -1, 1e303, "40"),
        "max_upload_mb": (inf, 0, 1e303),
        "session_timeout_s": (inf, 0),
        "queue_timeout_s": (inf, -1, 1e300),
        "max_concurrent": (0, 1.5),
        "max_sessions": (0,),
        "max_history": (-1, 1.5),
        "max_history_bytes": (-1, 2.0**20, True),
    }.items():
        for v in values:
            with pytest.raises(ValueError, match=field):
                create_app(ServerConfig(device="cpu", **{field: v}))
    for name in ("evil.example:80", "", "http://x", "a b"):
        with pytest.raises(ValueError, match="allowed host"):
            create_app(ServerConfig(device="cpu", allowed_hosts=[name]))
