"""The README's Python examples run as written, on the bundled image.

Each ```python block is executed with only the names a reader must supply
(their own photo, images, boxes) defined beforehand; what the block computes is
then checked against a direct call, so an example that drifts from the API fails here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import torchgrabcut
from torchgrabcut.data import BUNDLED_BOX, BUNDLED_IMAGE
from torchgrabcut.imageio import read_image

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_the_readme_has_the_examples_this_file_runs() -> None:
    blocks = _python_blocks()
    assert len(blocks) == 4, f"README has {len(blocks)} python blocks; give each new one a test here"
    assert "torchgrabcut.grabcut(img, box=" in blocks[0]
    assert "gc.grabCut(img, mask, (x, y, w, h)" in blocks[1]
    assert "torchgrabcut.mincut(source, sink, edges)" in blocks[2]
    assert "torchgrabcut.mincut(volume_source, volume_sink, volume_edges)" in blocks[3]


def test_quick_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cv2")
    # The example reads "photo.jpg": the bundled PNG under that name (cv2 reads by content).
    shutil.copy(BUNDLED_IMAGE, tmp_path / "photo.jpg")
    monkeypatch.chdir(tmp_path)
    img = read_image(BUNDLED_IMAGE)
    small = np.ascontiguousarray(img[:200, :240])
    ns: dict[str, Any] = {
        "images": torch.from_numpy(np.stack([img, img])).permute(0, 3, 1, 2).contiguous(),
        "boxes": torch.tensor([[50, 40, 300, 260], list(BUNDLED_BOX)]),
        "img_a": img,
        "img_b": small,
        "box_a": (50, 40, 300, 260),
        "box_b": (20, 20, 200, 180),
    }
    exec(compile(_python_blocks()[0], "README.md (quick start)", "exec"), ns)

    direct = torchgrabcut.grabcut(img, box=(50, 40, 300, 260))
    assert ns["img"].shape == img.shape and np.array_equal(ns["img"], img)
    assert np.array_equal(ns["fg"], (direct == torchgrabcut.GC_FGD) | (direct == torchgrabcut.GC_PR_FGD))
    assert 0 < int(ns["fg"].sum()) < ns["fg"].size
    # The batch line's result was replaced by the list line's: a list of two masks.
    masks = ns["masks"]
    assert isinstance(masks, list) and [m.shape for m in masks] == [img.shape[:2], small.shape[:2]]
    assert np.array_equal(masks[0], direct)
    assert np.array_equal(masks[1], torchgrabcut.grabcut(small, box=(20, 20, 200, 180)))
    # The refined mask keeps the stroke as hard background.
    assert (ns["mask"][120:130, 200:220] == torchgrabcut.GC_BGD).all()


def test_quick_start_batch_line() -> None:
    img = read_image(BUNDLED_IMAGE)
    images = torch.from_numpy(np.stack([img, img])).permute(0, 3, 1, 2).contiguous()
    boxes = torch.tensor([[50, 40, 300, 260], list(BUNDLED_BOX)])
    line = next(ln for ln in _python_blocks()[0].splitlines() if ln.startswith("masks = torchgrabcut.grabcut(images"))
    ns: dict[str, Any] = {"torchgrabcut": torchgrabcut, "images": images, "boxes": boxes}
    exec(compile(line, "README.md (batch line)", "exec"), ns)
    masks = ns["masks"]
    assert isinstance(masks, torch.Tensor) and tuple(masks.shape) == (2, *img.shape[:2])
    for b, box in enumerate([(50, 40, 300, 260), BUNDLED_BOX]):
        assert np.array_equal(masks[b].numpy(), torchgrabcut.grabcut(img, box=box))


def test_cv2_drop_in() -> None:
    img = read_image(BUNDLED_IMAGE)
    mask = np.zeros(img.shape[:2], np.uint8)
    bgd = np.zeros((1, 65), np.float64)
    fgd = np.zeros((1, 65), np.float64)
    x, y, w, h = 15, 10, 355, 502
    ns: dict[str, Any] = {"img": img, "mask": mask, "bgd": bgd, "fgd": fgd, "x": x, "y": y, "w": w, "h": h}
    exec(compile(_python_blocks()[1], "README.md (cv2 drop-in)", "exec"), ns)
    # In place, as cv2.grabCut: the returned arrays are the caller's.
    assert ns["mask"] is mask and ns["bgd"] is bgd and ns["fgd"] is fgd
    assert np.array_equal(mask, torchgrabcut.grabcut(img, box=(x, y, x + w, y + h)))
    assert bgd.any() and fgd.any()


def test_graph_cuts_on_grids() -> None:
    ns: dict[str, Any] = {}
    exec(compile(_python_blocks()[2], "README.md (graph cuts on grids)", "exec"), ns)
    # What the comments say: the flow, the canonical cut, a scale of 1 for integers.
    assert int(ns["flow"]) == 2 and ns["flow"].shape == ()
    assert ns["cut"].tolist() == [[True, True, False]] and float(ns["scale"]) == 1.0
    p = ns["prob"].clamp(1e-4, 1 - 1e-4)
    direct = torchgrabcut.mincut(-torch.log1p(-p), -torch.log(p), torch.full((4, 4, 128, 128), 0.5))
    assert ns["foreground"].shape == (4, 128, 128) and ns["foreground"].dtype == torch.bool
    assert torch.equal(ns["foreground"], direct.cut) and torch.equal(ns["result"].flow, direct.flow)


def test_graph_cuts_on_3d_grids() -> None:
    ns: dict[str, Any] = {"torch": torch, "torchgrabcut": torchgrabcut}
    exec(compile(_python_blocks()[3], "README.md (3D grids)", "exec"), ns)
    volume = ns["volume"]
    assert volume.cut.shape == (32, 32, 32) and volume.cut.dtype == torch.bool and volume.flow.shape == ()
    direct = torchgrabcut.mincut(ns["volume_source"], ns["volume_sink"], ns["volume_edges"])
    assert torch.equal(volume.cut, direct.cut) and torch.equal(volume.flow, direct.flow)
