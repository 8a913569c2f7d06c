"""write_image: the file is replaced whole (written under a temporary name, renamed), through a link."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from torchgrabcut.imageio import read_image, write_image


def test_write_image_replaces_a_file_whole_and_writes_through_a_link(tmp_path: Path) -> None:
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    out = tmp_path / "m.png"
    write_image(out, np.zeros((5, 5), np.uint8))
    write_image(out, grey)
    assert np.array_equal(read_image(out, grayscale=True), grey)
    (tmp_path / "link.png").symlink_to(out)
    write_image(tmp_path / "link.png", grey[::-1])
    assert (tmp_path / "link.png").is_symlink()
    assert np.array_equal(read_image(out, grayscale=True), grey[::-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.png", "m.png"]
    # A new file's mode is open()'s: 0o666 less the umask, not a temporary file's 0o600.
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
