"""The page's strokes painted into a mask as hard labels (GC_FGD, GC_BGD)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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
    from PIL import Image, ImageDraw

    h, w = mask.shape
    r = stroke.radius
    # Drawn on the stroke's bounding box only (clipped to the image), not the whole image.
    xs, ys = [p[0] for p in stroke.points], [p[1] for p in stroke.points]
    bx0, by0 = max(0, math.floor(min(xs) - r) - 1), max(0, math.floor(min(ys) - r) - 1)
    bx1, by1 = min(w, math.ceil(max(xs) + r) + 2), min(h, math.ceil(max(ys) + r) + 2)
    if bx0 >= bx1 or by0 >= by1:
        return  # entirely outside the image
    local = [(x - bx0, y - by0) for x, y in stroke.points]
    canvas = Image.new("1", (bx1 - bx0, by1 - by0), 0)
    draw = ImageDraw.Draw(canvas)
    for x, y in local:
        draw.ellipse((x - r, y - r, x + r, y + r), fill=1)
    if len(local) > 1:
        draw.line(local, fill=1, width=max(1, round(2 * r + 1)))
    painted = np.asarray(canvas, dtype=bool)
    mask[by0:by1, bx0:bx1][painted] = GC_FGD if stroke.foreground else GC_BGD
