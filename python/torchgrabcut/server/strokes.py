"""The page's strokes painted into a mask as hard labels (GC_FGD, GC_BGD)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from torchgrabcut.api import GC_BGD, GC_FGD
from torchgrabcut.server.parsing import Stroke, parse_strokes

__all__ = ["paint_strokes"]


def paint_strokes(mask: np.ndarray, strokes: Any) -> np.ndarray:
    """A copy of ``mask`` with each stroke painted as hard labels.

    ``strokes`` is the request's list of ``{"label": "fg" | "bg", "radius": r, "points": [[x, y], ...]}``
    (checked by :func:`~torchgrabcut.server.parsing.parse_strokes`, ValueError when bad);
    every pixel within ``radius`` of the polyline becomes GC_FGD or GC_BGD. Points may lie
    outside the image (the part inside is painted).
    """
    out = mask.copy()
    for stroke in parse_strokes(strokes):
        _paint(out, stroke)
    return out


def _paint(mask: np.ndarray, stroke: Stroke) -> None:
    h, w = mask.shape
    r = stroke.radius
    # Drawn on the stroke's bounding box only (clipped to the image), not the whole image.
    xs, ys = [p[0] for p in stroke.points], [p[1] for p in stroke.points]
    bx0, by0 = max(0, math.floor(min(xs) - r) - 1), max(0, math.floor(min(ys) - r) - 1)
    bx1, by1 = min(w, math.ceil(max(xs) + r) + 2), min(h, math.ceil(max(ys) + r) + 2)
    if bx0 >= bx1 or by0 >= by1:
        return  # entirely outside the image
    canvas = Image.new("1", (bx1 - bx0, by1 - by0), 0)
    draw = ImageDraw.Draw(canvas)
    # Pillow draws in C ints: far points are clipped first, each segment to the canvas and a
    # margin wider than the stroke, so that what it draws is the part near the image.
    pad = r + 2
    box = (bx0 - pad, by0 - pad, bx1 + pad, by1 + pad)
    for x, y in stroke.points:
        if box[0] <= x <= box[2] and box[1] <= y <= box[3]:
            draw.ellipse((x - bx0 - r, y - by0 - r, x - bx0 + r, y - by0 + r), fill=1)
    for a, b in zip(stroke.points, stroke.points[1:]):
        seg = _clip_segment(a, b, box)
        if seg is not None:
            (ax, ay), (qx, qy) = seg
            draw.line([(ax - bx0, ay - by0), (qx - bx0, qy - by0)], fill=1, width=max(1, round(2 * r + 1)))
    painted = np.asarray(canvas, dtype=bool)
    mask[by0:by1, bx0:bx1][painted] = GC_FGD if stroke.foreground else GC_BGD


def _clip_segment(
    a: tuple[float, float], b: tuple[float, float], box: tuple[float, float, float, float]
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The part of segment ab inside box (x0, y0, x1, y1), or None (Liang-Barsky)."""
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t0, t1 = 0.0, 1.0
    for step, room in ((-dx, ax - box[0]), (dx, box[2] - ax), (-dy, ay - box[1]), (dy, box[3] - ay)):
        if step == 0:
            if room < 0:
                return None  # parallel to this side and outside it
        elif step < 0:
            t0 = max(t0, room / step)
        else:
            t1 = min(t1, room / step)
    if t0 > t1:
        return None
    return (ax + t0 * dx, ay + t0 * dy), (ax + t1 * dx, ay + t1 * dy)
