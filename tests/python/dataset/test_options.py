"""dataset/options.py: the checks of the options against the input, made before any image is read.

An output that is one of the input images, by any spelling (issue 35, item 2).
"""

from __future__ import annotations

import os
from pathlib import Path

import dataset_fixtures
import pytest
from coco_fixtures import (
    copy_images,
    dataset_args,
    one_line_error,
)

from torchgrabcut.dataset.parts import parts_dir

# The shared fixtures (dataset_fixtures.py), bound here: pytest looks a fixture up by its name in the test's module.
full, small = dataset_fixtures.full, dataset_fixtures.small

# -- an output that is an input image --------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["the image", "through ..", "symbolic link", "hard link", "linked folder"])
def test_output_that_is_an_input_image_is_refused(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture, spelling: str
) -> None:
    images = copy_images(small.parent / "images", tmp_path / "images")
    coco = tmp_path / "in.json"
    coco.write_bytes(small.read_bytes())
    photo = images / "000001.png"
    before = photo.read_bytes()
    if spelling == "the image":
        out = photo
    elif spelling == "through ..":
        (images / "sub").mkdir()
        out = images / "sub" / ".." / "000001.png"
    elif spelling == "symbolic link":
        out = tmp_path / "link.png"
        out.symlink_to(photo)
    elif spelling == "hard link":
        out = tmp_path / "hard.png"
        os.link(photo, out)
    else:
        (tmp_path / "alias").symlink_to(images)
        out = tmp_path / "alias" / "000001.png"
    err = one_line_error(capsys, ["dataset", *dataset_args(coco, images, out, "--device", "cpu")])
    assert "--output" in err and "000001.png" in err and "input image" in err, err
    assert photo.read_bytes() == before and not parts_dir(out).exists()
