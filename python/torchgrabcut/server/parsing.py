"""Reading what a request sends, within the server's limits: the JSON body (at most
MAX_JSON_BYTES, read no further), the index of a listed image, the strokes (at most
MAX_STROKES strokes, MAX_STROKE_POINTS points in all, radius <= MAX_RADIUS)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from torchgrabcut.server.errors import ApiError

if TYPE_CHECKING:
    from flask import Request

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_RADIUS",
    "MAX_STROKES",
    "MAX_STROKE_POINTS",
    "Stroke",
    "parse_box",
    "parse_index",
    "parse_strokes",
    "read_json_object",
]

MAX_JSON_BYTES = 1 << 20
MAX_STROKES = 100
MAX_STROKE_POINTS = 20_000
MAX_RADIUS = 200
# Stroke points may lie outside the image (a drag past the canvas edge), but not absurdly far:
# within this bound, the clipping of server/strokes.py computes in doubles without overflow.
MAX_COORDINATE = 1e12


def read_json_object(request: Request) -> dict[str, Any]:
    """The request's JSON object; ApiError 400 when it is not one, 413 over MAX_JSON_BYTES.

    The body is read up to one byte past the limit, whatever Content-Length says, so that a
    client cannot make the server buffer more.
    """
    if not request.is_json:
        raise ApiError("expected a JSON object in the request body (Content-Type: application/json)")
    too_large = f"request body too large: the limit for JSON requests is {MAX_JSON_BYTES} bytes"
    if request.content_length is not None and request.content_length > MAX_JSON_BYTES:
        raise ApiError(too_large, 413)
    raw = request.stream.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise ApiError(too_large, 413)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ApiError("expected a JSON object in the request body")
    return data


def parse_index(value: Any, count: int) -> int:
    """``value`` as an index into ``count`` listed images; ApiError 400 otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise ApiError(f"index: expected 0..{count - 1}, got {value!r}")
    return value


def parse_box(data: dict[str, Any]) -> tuple[float, float, float, float]:
    """The request's ``x0, y0, x1, y1``, each a JSON number; ApiError 400 naming the first that is not.

    Only the kind is checked here (a list or a string would reach GrabCut as a batch of boxes
    and be refused as one); whole pixels, order and range are GrabCut's checks, with its message.
    """
    coords = []
    for key in ("x0", "y0", "x1", "y1"):
        v = data.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ApiError(
                f"box: {key}: expected a number (whole pixels), got {json.dumps(v)[:40]} "
                "(send x0, y0, x1 and y1 as four numbers)"
            )
        coords.append(v)
    return coords[0], coords[1], coords[2], coords[3]


@dataclass(frozen=True)
class Stroke:
    """One stroke of the page: a polyline of image points painted ``radius`` wide."""

    foreground: bool  # painted GC_FGD, else GC_BGD
    radius: float
    points: list[tuple[float, float]]


def _parse_point(p: Any, where: str) -> tuple[float, float]:
    if not isinstance(p, (list, tuple)) or len(p) != 2:
        raise ValueError(f"{where}: expected a point [x, y], got {p!r}")
    x, y = p
    for v in (x, y):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or abs(v) > MAX_COORDINATE:
            raise ValueError(f"{where}: expected finite numbers [x, y] within +-{MAX_COORDINATE:g}, got {p!r}")
    return float(x), float(y)


def parse_strokes(strokes: Any) -> list[Stroke]:
    """``[{"label": "fg" | "bg", "radius": r, "points": [[x, y], ...]}, ...]`` as strokes.

    ValueError naming the first bad value. Each stroke's point count is added to the total
    and checked before its points are parsed, so that an oversized request costs no parsing.
    """
    if not isinstance(strokes, list) or not strokes:
        raise ValueError("strokes: expected a non-empty list of {label, radius, points}")
    if len(strokes) > MAX_STROKES:
        raise ValueError(f"strokes: at most {MAX_STROKES} strokes per request, got {len(strokes)}")
    out = []
    total = 0
    for i, s in enumerate(strokes):
        where = f"strokes[{i}]"
        if not isinstance(s, dict):
            raise ValueError(f"{where}: expected an object {{label, radius, points}}, got {s!r}")
        label = s.get("label")
        if label not in ("fg", "bg"):
            raise ValueError(f"{where}.label: expected 'fg' or 'bg', got {label!r}")
        radius = s.get("radius", 5)
        if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0 <= radius <= MAX_RADIUS:
            raise ValueError(f"{where}.radius: expected a number 0..{MAX_RADIUS}, got {radius!r}")
        points = s.get("points")
        if not isinstance(points, list) or not points:
            raise ValueError(f"{where}.points: expected a non-empty list of [x, y]")
        total += len(points)
        if total > MAX_STROKE_POINTS:
            raise ValueError(f"strokes: at most {MAX_STROKE_POINTS} points in all")
        pts = [_parse_point(p, f"{where}.points[{j}]") for j, p in enumerate(points)]
        out.append(Stroke(label == "fg", float(radius), pts))
    return out
