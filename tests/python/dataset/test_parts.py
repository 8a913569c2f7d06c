"""dataset/parts.py: the output written atomically; a failed write leaves no temporary file (issue 35, item 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchgrabcut.dataset.parts import OutputShare, write_output

# -- a failed write --------------------------------------------------------------------------------


@pytest.mark.parametrize("fails", ["fsync", "replace", "encode"])
def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """Disk full, a rename refused, text that does not encode: the error, and no out.json.tmp<pid>."""
    from torchgrabcut.dataset import parts

    coco: dict[str, Any] = {"images": [], "annotations": [], "info": "ok"}

    def disk_full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    if fails == "fsync":
        monkeypatch.setattr(parts.os, "fsync", disk_full)
    elif fails == "replace":
        monkeypatch.setattr(parts.os, "replace", disk_full)
    else:
        coco["info"] = "\udcff"
    with pytest.raises((OSError, ValueError)):
        write_output(tmp_path / "out.json", coco, [OutputShare()], [])
    assert list(tmp_path.iterdir()) == []
