"""Resumable results: per-rank part files, and merging them into the output file.

Layout, next to the output ``out.json``::

    out.json.parts/run.json         the settings that shape the results (input hash, margins, iterations)
    out.json.parts/rank0.jsonl      one line per finished image, appended by rank 0 only
    out.json.parts/rank1.jsonl      ... by rank 1 (when launched with torchrun)

A line is ``{"image": i, "size": [h, w], "results": [...]}`` with ``i`` the
image's index in the input's ``images`` and one record per annotation of the
image, in file order: ``{"a": j, "counts": "...", "area": n}`` (plus ``"iou"``
when the annotation had a ground-truth segmentation, or ``"gt_error"`` when that
segmentation was malformed and not scored) or ``{"a": j, "skip": "reason"}``. An
image that could not be read has ``"size": null`` and ``"error": "reason"`` in its
line, and ``{"a": j, "error": "reason"}`` for each annotation that would have been
segmented (the others are skips).
Lines are written a chunk of images at a time, then flushed and fsynced, so a
killed run loses at most the chunk it was working on.

On a restart every rank reads every part file (whatever the number of ranks of
the earlier run) and skips the images already there. A line cut short by the
kill (no newline at its end) is ignored and, before appending, its writer cuts
it off; a line that parses but is not a whole record of its image (a damaged or
edited file) is ignored too, and the image done again. Each file has one writer:
rank ``r`` of the current run appends to ``rank{r}.jsonl``; ranks take disjoint
shards, so no image is written twice.

The output keeps every other key of the input in place and rewrites only the
annotations, in their original order: the same bytes whatever the number of ranks
and however often the run was interrupted. Each rank turns the lines of its own
images into their annotations' JSON texts (an :class:`OutputShare`, built while
the run goes); rank 0 gathers the shares and writes the output from them (the
merge is the one step that does not shrink with more ranks, so it parses nothing
and encodes only what the shares do not hold).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchgrabcut.dataset.plan import _json_int

__all__ = [
    "OutputShare",
    "PartWriter",
    "check_run_config",
    "complete_line",
    "finished_images",
    "parts_dir",
    "read_parts",
    "remove_parts",
    "rewrite_annotation",
    "write_output",
]

FORMAT_VERSION = 1


def parts_dir(out: Path) -> Path:
    return out.with_name(out.name + ".parts")


def _compact(obj: Any) -> str:
    # json.dumps, not json.dump: dump runs the pure-Python encoder, ~3x slower.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _write_text_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file and a rename: never a half-written file.

    A failure (disk full, text that does not encode) removes the temporary file: a
    failed run leaves none behind, to pile up over reruns.
    """
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_run_config(directory: Path, config: dict[str, Any], replace: bool = False) -> None:
    """Records the run's settings in ``run.json``, or checks them against an earlier run's.

    With ``replace`` (the folder holds no finished image, so nothing to resume) an
    earlier record is overwritten instead of checked.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "run.json"
    config = {"format": FORMAT_VERSION, **config}
    if path.is_file() and not replace:
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as err:
            raise RuntimeError(f"{path} is unreadable ({err}); delete {directory} to start over") from err
        if not isinstance(old, dict):
            raise RuntimeError(f"{path} is unreadable (not a JSON object); delete {directory} to start over")
        if old != config:
            keys = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise RuntimeError(
                f"{directory} holds an unfinished run with other settings ({', '.join(keys)} differ); "
                "rerun with the same settings or delete it to start over"
            )
        return
    # every rank may write it: same bytes, atomic rename
    _write_text_atomic(path, json.dumps(config, indent=1, sort_keys=True))


def _lines(path: Path) -> Iterable[dict[str, Any]]:
    data = path.read_bytes()
    *complete, _partial = data.split(b"\n")  # the part after the last newline is cut short or empty
    for raw in complete:
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # unreadable: the image is simply done again
        if isinstance(rec, dict) and isinstance(rec.get("image"), int) and isinstance(rec.get("results"), list):
            yield rec


def read_parts(directory: Path) -> dict[int, list[dict[str, Any]]]:
    """Finished images: image index -> its lines, over every part file in ``directory``.

    An image has several lines when a run redid it (see :func:`complete_line`).
    """
    done: dict[int, list[dict[str, Any]]] = {}
    if not directory.is_dir():
        return done
    for path in sorted(directory.glob("rank*.jsonl")):
        for rec in _lines(path):
            done.setdefault(rec["image"], []).append(rec)
    return done


def _json_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def complete_line(line: dict[str, Any], anns: list[int]) -> bool:
    """Whether a part line is a whole record of an image with these annotations (indices, in order).

    Lines are only ever written whole by this module, but a part file is a file on disk:
    a line that parses yet does not hold what the merge reads (an edited or damaged file)
    means the image is done again, rather than a crash or an output missing its masks.
    """
    size = line.get("size")
    unreadable = "error" in line  # an image that could not be read: no size, no masks
    if unreadable:
        if size is not None or not isinstance(line["error"], str):
            return False
    elif not (isinstance(size, list) and len(size) == 2 and all(_json_int(v) and v > 0 for v in size)):
        return False
    results = line["results"]
    if len(results) != len(anns) or not all(isinstance(r, dict) for r in results):
        return False
    for r, a in zip(results, anns):
        if not _json_int(r.get("a")) or r["a"] != a:
            return False
        if "skip" in r:
            if not isinstance(r["skip"], str):
                return False
            continue
        if "error" in r or unreadable:  # the reason, in the line of an image not read, and only there
            if not (unreadable and isinstance(r.get("error"), str)):
                return False
            continue
        if not isinstance(r.get("counts"), str) or not _json_number(r.get("area")) or r["area"] < 0:
            return False
        if ("iou" in r and not _json_number(r["iou"])) or ("gt_error" in r and not isinstance(r["gt_error"], str)):
            return False
    return True


def finished_images(lines: dict[int, list[dict[str, Any]]], anns: dict[int, list[int]]) -> dict[int, dict[str, Any]]:
    """Image index -> the last complete line of each image in ``anns`` (its annotation indices)."""
    done = {}
    for image, image_anns in anns.items():
        whole = [line for line in lines.get(image, []) if complete_line(line, image_anns)]
        if whole:
            done[image] = whole[-1]
    return done


class PartWriter:
    """Appends finished images to one rank's part file, durable after every :meth:`write`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():  # drop a line a kill cut short, so that the next line starts clean
            data = path.read_bytes()
            keep = data.rfind(b"\n") + 1
            if keep != len(data):
                with path.open("r+b") as f:
                    f.truncate(keep)
                    f.flush()
                    os.fsync(f.fileno())
        self._file = path.open("ab")
        self.wrote = False  # set before the first write begins (read by other threads)

    def write(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        self.wrote = True
        self._file.write(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def rewrite_annotation(ann: dict[str, Any], size: list[int], rec: dict[str, Any], keep_gt: bool) -> dict[str, Any]:
    """The output's version of an annotation, from its record in a part line (see the package docs)."""
    new = dict(ann)
    if "skip" in rec:
        new["grabcut_skipped"] = rec["skip"]
        return new
    if "error" in rec:  # its image could not be read: the annotation as it was, and why
        new["grabcut_error"] = rec["error"]
        return new
    if keep_gt and ann.get("segmentation"):
        new["segmentation_gt"] = ann["segmentation"]
    new["segmentation"] = {"size": list(size), "counts": rec["counts"]}
    new["area"] = float(rec["area"])
    if "iou" in rec:
        new["grabcut_iou"] = round(rec["iou"], 4)
    if "gt_error" in rec:
        new["grabcut_gt_error"] = rec["gt_error"]
    return new


@dataclass
class OutputShare:
    """A rank's part of the output: its finished images' annotations, as their JSON texts, and their counts."""

    texts: dict[int, str] = field(default_factory=dict)  # annotation index -> its compact JSON in the output
    images: list[int] = field(default_factory=list)  # the images added, as indices into the input's "images"
    boxes: int = 0  # annotations segmented
    empty: int = 0  # of which the mask is empty
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> annotations skipped
    ious: list[float] = field(default_factory=list)  # against ground truth, where there was one
    gt_errors: list[tuple[int, Any, str]] = field(default_factory=list)  # malformed ground truth: (index, id, why)
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # images not read: (image index, why)
    not_segmented: int = 0  # their annotations marked grabcut_error
    run_images: int = 0  # images and boxes done by this run (the rest came from part files)
    run_boxes: int = 0

    def add(self, coco: dict[str, Any], line: dict[str, Any], keep_gt: bool) -> None:
        """Adds a finished image: one part line (see the module docs)."""
        anns = coco["annotations"]
        self.images.append(line["image"])
        if "error" in line:
            self.unreadable.append((line["image"], line["error"]))
        for rec in line["results"]:
            self.texts[rec["a"]] = _compact(rewrite_annotation(anns[rec["a"]], line["size"], rec, keep_gt))
            if "skip" in rec:
                self.skipped[rec["skip"]] = self.skipped.get(rec["skip"], 0) + 1
                continue
            if "error" in rec:
                self.not_segmented += 1
                continue
            self.boxes += 1
            self.empty += rec["area"] == 0
            if "iou" in rec:
                self.ious.append(rec["iou"])
            if "gt_error" in rec:
                self.gt_errors.append((rec["a"], anns[rec["a"]].get("id"), rec["gt_error"]))


def write_output(path: Path, coco: dict[str, Any], shares: list[OutputShare], image_indices: list[int]) -> None:
    """Writes the output: the input with the annotations of the shares' images rewritten.

    The bytes are those of ``json.dumps(document, separators=(",", ":"),
    ensure_ascii=False)``: a compact JSON object or list is its members' texts
    joined by commas, so the shares' texts are joined as they are. Raises
    RuntimeError when an image of ``image_indices`` is in no share.
    """
    covered = {i for share in shares for i in share.images}
    missing = [i for i in image_indices if i not in covered]
    if missing:
        raise RuntimeError(f"{len(missing)} images have no result yet (first: images[{missing[0]}]); rerun to finish")
    texts: dict[int, str] = {}
    for share in shares:
        texts.update(share.texts)
    anns = coco["annotations"]
    members = []
    for key, value in coco.items():
        if key == "annotations":
            value_text = "[" + ",".join(texts[j] if j in texts else _compact(a) for j, a in enumerate(anns)) + "]"
        else:
            value_text = _compact(value)
        members.append(_compact(key) + ":" + value_text)
    _write_text_atomic(path, "{" + ",".join(members) + "}")


def remove_parts(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
