"""Quality on a GrabCut-style dataset: error rate in the box and IoU against ground truth.

A dataset folder holds ``images/``, ``gt/<stem>.png`` (0 background, 255
foreground, 128 unscored) and ``boxes.csv`` (``name,x0,y0,x1,y1``, INCLUSIVE
pixel coordinates), as the GrabCut benchmark does. ``cv2.grabCut`` runs on the
same boxes in the same run when OpenCV is installed.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from torchgrabcut.api import grabcut
from torchgrabcut.imageio import read_image, read_label_image
from torchgrabcut.tools.opencv_reference import cv2_grabcut_box

__all__ = [
    "BOX_COLUMNS",
    "DatasetItem",
    "EvalResult",
    "evaluate_dataset",
    "foreground_iou",
    "format_eval",
    "load_dataset",
    "score",
]


@dataclass
class DatasetItem:
    name: str
    image: np.ndarray  # (H, W, 3) uint8, BGR as OpenCV reads it
    gt: np.ndarray  # (H, W) uint8
    box: tuple[int, int, int, int]  # half-open (x0, y0, x1, y1)


@dataclass
class EvalResult:
    names: list[str] = field(default_factory=list)
    error: dict[str, list[float]] = field(default_factory=dict)
    iou: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    agreement_iou: list[float] = field(default_factory=list)  # ours vs cv2
    cv2_failures: list[str] = field(default_factory=list)
    foregrounds: dict[str, list[np.ndarray]] = field(default_factory=dict)  # per method, per image
    items: list[DatasetItem] = field(default_factory=list)


BOX_COLUMNS = ("name", "x0", "y0", "x1", "y1")


def load_dataset(root: str | Path) -> list[DatasetItem]:
    """The dataset's items, every row of boxes.csv checked; a bad one is a ValueError naming the file and line."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset: no such folder: {root}")
    boxes_csv = root / "boxes.csv"
    if not boxes_csv.is_file():
        raise FileNotFoundError(f"dataset: expected {boxes_csv} (name,x0,y0,x1,y1 inclusive)")
    items = []
    try:
        # utf-8-sig: spreadsheet programs start the file with a byte-order mark.
        with boxes_csv.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            missing = [c for c in BOX_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(
                    f"{boxes_csv}: expected a header line {','.join(BOX_COLUMNS)}, "
                    f"got {','.join(reader.fieldnames or []) or 'an empty file'} (missing {', '.join(missing)})"
                )
            for row in reader:
                try:
                    items.append(_load_item(root, row))
                except (ValueError, OSError) as err:
                    raise ValueError(f"{boxes_csv}, line {reader.line_num}: {err}") from err
    except UnicodeDecodeError as err:
        raise ValueError(f"{boxes_csv}: not UTF-8 text ({err.reason} at byte {err.start})") from err
    except csv.Error as err:
        raise ValueError(f"{boxes_csv}: not a CSV file ({err})") from err
    if not items:
        raise ValueError(f"{boxes_csv}: no boxes (only a header line)")
    return items


def _load_item(root: Path, row: dict[str | None, str | None]) -> DatasetItem:
    """One row of boxes.csv as an item; ValueError with what is wrong (the caller adds file and line)."""
    if None in row:  # DictReader keeps the values beyond the header under the key None
        raise ValueError(f"more values than the header's columns: {row[None]}")
    values = [row[c] for c in BOX_COLUMNS]
    if any(v is None for v in values):
        got = sum(v is not None for v in values)
        raise ValueError(f"expected {len(BOX_COLUMNS)} values ({','.join(BOX_COLUMNS)}), got {got}")
    name = str(row["name"]).strip()
    if not name:
        raise ValueError("empty name")
    coords = []
    for c in BOX_COLUMNS[1:]:
        text = str(row[c])
        try:
            coords.append(int(text))
        except ValueError:
            raise ValueError(f"{c}: expected a whole number (pixel), got {text!r}") from None
    x0, y0, x1, y1 = coords
    image = read_image(root / "images" / name)
    gt = read_label_image(root / "gt" / (Path(name).stem + ".png"), "gt")
    h, w = image.shape[:2]
    if gt.shape != (h, w):
        raise ValueError(f"gt/{Path(name).stem}.png is {gt.shape[0]}x{gt.shape[1]} but the image is {h}x{w}")
    if not (0 <= x0 <= x1 < w and 0 <= y0 <= y1 < h):
        raise ValueError(
            f"box {x0},{y0},{x1},{y1} (inclusive) does not fit the {h}x{w} image {name}: "
            f"expected 0 <= x0 <= x1 <= {w - 1} and 0 <= y0 <= y1 <= {h - 1}"
        )
    if (x0, y0, x1, y1) == (0, 0, w - 1, h - 1) and min(h, w) < 3:
        # grabcut refuses it (no pixel is left to learn the background from, not even a
        # border); said here, where the row is known, rather than by the call on all rows.
        raise ValueError(
            f"box {x0},{y0},{x1},{y1} (inclusive) covers the whole {h}x{w} image {name}, "
            "leaving no background to learn from"
        )
    return DatasetItem(name, image, gt, (x0, y0, x1 + 1, y1 + 1))


def score(fg: np.ndarray, gt: np.ndarray, box: tuple[int, int, int, int]) -> tuple[float, float]:
    """(error rate inside the box, IoU), both over pixels where gt != 128."""
    scored = gt != 128
    truth = gt > 128
    x0, y0, x1, y1 = box
    in_box = np.zeros_like(scored)
    in_box[y0:y1, x0:x1] = True
    s_box = scored & in_box
    error = float(((fg != truth) & s_box).sum() / max(int(s_box.sum()), 1))
    union = int(((fg | truth) & scored).sum())
    iou = float(((fg & truth) & scored).sum() / union) if union else 1.0
    return error, iou


def foreground_iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of the foregrounds (labels 1 and 3, or True) of two masks; 1.0 when both are empty."""
    fa, fb = _foreground(a), _foreground(b)
    union = int((fa | fb).sum())
    return float((fa & fb).sum() / union) if union else 1.0


def _foreground(mask: np.ndarray) -> np.ndarray:
    return (mask & 1).astype(bool)


def evaluate_dataset(
    root: str | Path,
    device: str | None = None,
    max_iter: int = 5,
    with_cv2: bool = True,
    cv2_seed: int | None = None,
) -> EvalResult:
    """Ours and, when OpenCV is installed and ``with_cv2``, cv2.grabCut on every box.

    ``cv2_seed``: reset OpenCV's random generator to this before each image, so that
    cv2's mask for an image depends on nothing else; by default it is not reset, and
    cv2's masks depend on the images before (a fresh process going through the
    dataset in order gives the numbers the GrabCut-50 README quotes).
    """
    items = load_dataset(root)
    res = EvalResult(names=[it.name for it in items], items=items)
    t0 = time.perf_counter()
    ours = grabcut([it.image for it in items], box=[it.box for it in items], max_iter=max_iter, device=device)
    res.seconds["torchgrabcut"] = time.perf_counter() - t0
    ours_fg = [_foreground(m) for m in ours]
    res.foregrounds["torchgrabcut"] = ours_fg
    res.error["torchgrabcut"], res.iou["torchgrabcut"] = _scores(ours_fg, items)
    if with_cv2:
        try:
            import cv2  # optional: the comparison is left out without it
        except ImportError:
            return res
        cv2_fg = []
        t0 = time.perf_counter()
        for it in items:
            x0, y0, x1, y1 = it.box
            try:
                mask = cv2_grabcut_box(cv2, it.image, it.box, max_iter, seed=cv2_seed)
            except cv2.error:
                # OpenCV raises when the box leaves no background; score it as "whole box is foreground".
                res.cv2_failures.append(it.name)
                mask = np.zeros(it.gt.shape, np.uint8)
                mask[y0:y1, x0:x1] = 3
            cv2_fg.append(_foreground(mask))
        res.seconds["cv2.grabCut"] = time.perf_counter() - t0
        res.foregrounds["cv2.grabCut"] = cv2_fg
        res.error["cv2.grabCut"], res.iou["cv2.grabCut"] = _scores(cv2_fg, items)
        res.agreement_iou = [foreground_iou(a, b) for a, b in zip(ours_fg, cv2_fg)]
    return res


def _scores(fgs: list[np.ndarray], items: list[DatasetItem]) -> tuple[list[float], list[float]]:
    pairs = [score(fg, it.gt, it.box) for fg, it in zip(fgs, items)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def format_eval(res: EvalResult) -> str:
    lines = [f"{'method':<14} {'mean error in box':>18} {'mean IoU':>9} {'seconds':>9}"]
    for method in res.error:
        lines.append(
            f"{method:<14} {100 * np.mean(res.error[method]):>17.2f}% {np.mean(res.iou[method]):>9.3f}"
            f" {res.seconds[method]:>9.2f}"
        )
    if res.agreement_iou:
        same = sum(a == 1.0 for a in res.agreement_iou)
        lines.append(
            f"mean IoU between torchgrabcut and cv2.grabCut masks: {np.mean(res.agreement_iou):.3f} "
            f"({same} of {len(res.agreement_iou)} identical)"
        )
    if res.cv2_failures:
        lines.append("cv2.grabCut raised on " + ", ".join(res.cv2_failures) + " (scored as whole box foreground)")
    lines.append(f"{len(res.names)} images")
    return "\n".join(lines)
