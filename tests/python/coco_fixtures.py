"""Helpers for tests/python/dataset: small COCO sets on disk and independent ways to read them back."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from pycocotools import mask as mask_utils
from synthetic_coco import make_synthetic_coco

REPO = Path(__file__).resolve().parents[2]


def clean_coco(root: Path) -> Path:
    """Six 240x320 images with 2..5 shapes apart from each other (polygon ground truth), plus edge cases.

    Added to the generated annotations: a crowd region, a 1-pixel-wide box, a
    box outside the image, an annotation without a segmentation, an image whose
    only annotation is a crowd region (and whose file does not exist: it must
    not be read), and an image without annotations.
    """
    path = make_synthetic_coco(
        root, 6, height=240, width=320, boxes=(2, 5), box_px=(30, 110), overlap=False, seed=7, image_format="png"
    )
    coco = json.loads(path.read_text())
    anns = coco["annotations"]
    extra = [
        {"id": 901, "image_id": 1, "category_id": 1, "iscrowd": 1, "bbox": [10.0, 10.0, 50.0, 40.0], "area": 1.0},
        {"id": 902, "image_id": 2, "category_id": 1, "iscrowd": 0, "bbox": [30.0, 30.0, 1.0, 40.0], "area": 1.0},
        {"id": 903, "image_id": 2, "category_id": 1, "iscrowd": 0, "bbox": [400.0, 10.0, 30.0, 30.0], "area": 1.0},
        {"id": 904, "image_id": 3, "category_id": 1, "iscrowd": 0, "bbox": [5.5, 6.25, 40.0, 30.5], "area": 1.0},
        {"id": 905, "image_id": 100, "category_id": 1, "iscrowd": 1, "bbox": [1.0, 1.0, 5.0, 5.0], "area": 1.0},
    ]
    # Insert them among the others, not at the end, so that the output order is really checked.
    for k, ann in enumerate(extra):
        anns.insert(2 * k + 1, ann)
    coco["images"].append({"id": 100, "file_name": "not_there.png", "height": 240, "width": 320})
    coco["images"].append({"id": 101, "file_name": "no_annotations.png", "height": 240, "width": 320})
    path.write_text(json.dumps(coco))
    return path


def grabcut50_coco(src: Path, names: list[str], root: Path) -> Path:
    """GrabCut-50 images as a COCO file: boxes from boxes.csv, ground truth = gt pixels of 255 as RLE.

    The images are linked, not copied.
    """
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "gt").mkdir(exist_ok=True)
    images, anns = [], []
    with (src / "boxes.csv").open(newline="") as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    for i, name in enumerate(names):
        row = rows[name]
        os.symlink(src / "images" / name, root / "images" / name)
        os.symlink(src / "gt" / (Path(name).stem + ".png"), root / "gt" / (Path(name).stem + ".png"))
        gt = np.asarray(Image.open(src / "gt" / (Path(name).stem + ".png")).convert("L"))
        h, w = gt.shape
        rle = mask_utils.encode(np.asfortranarray((gt == 255).astype(np.uint8)))
        x0, y0, x1, y1 = (int(row[k]) for k in ("x0", "y0", "x1", "y1"))  # inclusive
        images.append({"id": i, "file_name": name, "height": h, "width": w})
        anns.append(
            {
                "id": i,
                "image_id": i,
                "category_id": 1,
                "iscrowd": 0,
                "bbox": [float(x0), float(y0), float(x1 - x0 + 1), float(y1 - y0 + 1)],
                "area": float(mask_utils.area(rle)),
                "segmentation": {"size": [h, w], "counts": rle["counts"].decode()},
            }
        )
    with (root / "boxes.csv").open("w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["name", "x0", "y0", "x1", "y1"])
        for name in names:
            wr.writerow([name, *(rows[name][k] for k in ("x0", "y0", "x1", "y1"))])
    path = root / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "o"}]}))
    return path


def decode_segmentation(seg: Any, h: int, w: int) -> np.ndarray:
    """Any COCO segmentation as an (h, w) bool mask, the way pycocotools' COCO.annToMask reads it."""
    if isinstance(seg, list):
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    elif isinstance(seg["counts"], list):
        rle = mask_utils.frPyObjects(seg, h, w)
    else:
        rle = {"size": seg["size"], "counts": seg["counts"].encode()}
    return mask_utils.decode(rle).astype(bool)


def numpy_iou(a: np.ndarray, b: np.ndarray) -> float:
    union = int((a | b).sum())
    return float((a & b).sum() / union) if union else 1.0


def run_module(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300) -> Any:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env
    )


def dataset_args(coco: Path, images: Path, out: Path, *extra: str) -> list[str]:
    return ["--coco", str(coco), "--images", str(images), "-o", str(out), "--quiet", *extra]


def bad_segmentations(h: int, w: int) -> dict[str, Any]:
    """Malformed ground-truth segmentations for an h x w image, by what is wrong with them.

    Handed to pycocotools, several crash it (NaN), make it allocate without bound
    (a coordinate of 2e9), loop forever (counts adding up to more than h * w) or
    raise (counts out of uint32).
    """
    n = h * w
    # a valid compressed string for an h x (w + 1) mask with a few runs: its counts add up to too much
    wide = np.zeros((h, w + 1), np.uint8)
    wide[2:6, 3:9] = 1
    too_many = mask_utils.encode(np.asfortranarray(wide))["counts"].decode()
    # the 4th value is a difference to the 2nd: 500 - 600 makes a negative count
    negative_delta = _encode_counts([10, 500, 5, -600]) + _encode_counts([n])
    return {
        "polygon NaN": [[10, 10, 20, 10, float("nan"), 20]],
        "polygon inf": [[10, 10, 20, 10, float("inf"), 20]],
        "polygon -inf": [[10, 10, float("-inf"), 10, 15, 20]],
        "polygon 2e9": [[10, 10, 200, 10, 2e9, 200]],
        "polygon -1e9": [[10, -1e9, 20, 10, 15, 20]],
        "polygon 1e30 int": [[10, 10, 20, 10, 10**30, 20]],
        "second polygon NaN": [[1, 1, 5, 1, 5, 5], [1, float("nan"), 5, 1, 5, 5]],
        "polygon odd length": [[1, 2, 3, 4, 5, 6, 7]],
        "polygon of 4 numbers": [[1, 2, 3, 4]],  # pycocotools would take it for a box
        "polygon empty": [[]],
        "polygon of strings": [["1", "2", "3", "4", "5", "6"]],
        "polygon of bools": [[True, True, True, False, False, True]],
        "polygon with null": [[1, 2, 3, None, 5, 6]],
        "polygon nested": [[[1, 2], [3, 4], [5, 6]]],
        "flat numbers": [1, 2, 3, 4, 5, 6],
        "list of dicts": [{"size": [h, w], "counts": [n]}],
        "string": "1 2 3 4 5 6",
        "number": 7,
        "true": True,
        "RLE without counts": {"size": [h, w]},
        "RLE without size": {"counts": [n]},
        "RLE size swapped": {"size": [w, h], "counts": [n]},
        "RLE size strings": {"size": [str(h), str(w)], "counts": [n]},
        "RLE size of 3": {"size": [h, w, 1], "counts": [n]},
        "RLE size null": {"size": None, "counts": [n]},
        "counts over h*w": {"size": [h, w], "counts": [n, 5]},
        "counts under h*w": {"size": [h, w], "counts": [n - 5]},
        "counts negative": {"size": [h, w], "counts": [-5, n + 5]},
        "counts 2**32": {"size": [h, w], "counts": [2**32, 5]},
        "counts wrapping to h*w": {"size": [h, w], "counts": [2**32 + 5, n - 5]},
        "counts fractional": {"size": [h, w], "counts": [1.5, n - 1.5]},
        "counts NaN": {"size": [h, w], "counts": [float("nan"), n]},
        "counts bool": {"size": [h, w], "counts": [True, n - 1]},
        "counts strings": {"size": [h, w], "counts": [str(n)]},
        "counts nested": {"size": [h, w], "counts": [[n]]},
        "counts dict": {"size": [h, w], "counts": {"0": n}},
        "counts null": {"size": [h, w], "counts": None},
        "counts number": {"size": [h, w], "counts": n},
        "string over h*w": {"size": [h, w], "counts": too_many},
        "string cut in a value": {"size": [h, w], "counts": too_many + "o"},  # 'o' says more follows
        "string truncated": {"size": [h, w], "counts": too_many[: len(too_many) // 2]},
        "string of control chars": {"size": [h, w], "counts": "\x01\x02"},
        "string past 'o'": {"size": [h, w], "counts": "zzz"},
        "string non-ASCII": {"size": [h, w], "counts": "\u00e9\u00e9"},
        "string with NUL": {"size": [h, w], "counts": "3\x003"},
        "string of 7-group value": {"size": [h, w], "counts": "ooooooP"},
        "string negative count": {"size": [h, w], "counts": negative_delta},
        "string empty": {"size": [h, w], "counts": ""},
    }


def _encode_counts(values: list[int]) -> str:
    """COCO's compressed counts of raw values (no differencing): the encoder of pycocotools' rleToString."""
    out = []
    for x in values:
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


# Run in a child: handed to pycocotools, these values crash it, make it allocate until the
# kernel kills the process, or loop forever; the limit on address space turns the allocation
# into a MemoryError, and the test's timeout a loop into a failure, instead of taking pytest down.
LIMIT_MEMORY = """
import resource
vm = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (3 << 30), vm + (3 << 30)))
"""


# -- the dataset job's inputs, shared by the test files of the coco modules ----------------------


def small_coco(clean: Path) -> Path:
    """Images 2 and 3 of clean_coco's set (000001.png, 000002.png): a small box, a box outside, 6 boxes."""
    coco = json.loads(clean.read_text())
    coco["images"] = [im for im in coco["images"] if im["id"] in (2, 3)]
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in (2, 3)]
    path = clean.parent / "small.json"
    path.write_text(json.dumps(coco))
    return path


def dataset_opts(coco: Path, images: Path, out: Path, **kw: Any) -> Any:
    """DatasetOptions for a quick in-process run on the CPU."""
    from torchgrabcut.dataset.job import DatasetOptions

    base: dict[str, Any] = {"device": "cpu", "batch_size": 4, "workers": 0, "quiet": True}
    return DatasetOptions(coco, images, out, **{**base, **kw})


def reference_annotations(coco: Path, out: Path) -> list[dict[str, Any]]:
    """The annotations of an uninterrupted run on coco (its images beside it, in images/)."""
    from torchgrabcut.dataset.job import run_dataset

    run_dataset(dataset_opts(coco, coco.parent / "images", out))
    return json.loads(out.read_text())["annotations"]


def edited_coco(src: Path, dest: Path, edit: Any) -> Path:
    """src's document, changed in place by edit(document), written to dest."""
    coco = json.loads(src.read_text())
    edit(coco)
    dest.write_text(json.dumps(coco))
    return dest


def copy_images(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def one_line_error(capsys: Any, argv: list[str]) -> str:
    """Runs the command line in-process: exit 2 and one line on stderr, which is returned."""
    from torchgrabcut.cli import main

    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert err.startswith("torchgrabcut dataset: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    return err
