"""server/strokes.py: strokes painted onto the mask, against the distance to the stroke."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from torchgrabcut.api import GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD
from torchgrabcut.server.strokes import paint_strokes


def distance_to_polyline(h: int, w: int, pts: list[tuple[float, float]]) -> np.ndarray:
    """Euclidean distance of every pixel centre (x, y) to the polyline, in numpy."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    best = np.full((h, w), np.inf)
    segs = list(itertools.pairwise(pts)) or [(pts[0], pts[0])]
    for (ax, ay), (bx, by) in segs:
        dx, dy = bx - ax, by - ay
        length2 = dx * dx + dy * dy
        t = np.zeros_like(xx) if length2 == 0 else np.clip(((xx - ax) * dx + (yy - ay) * dy) / length2, 0, 1)
        best = np.minimum(best, np.hypot(xx - (ax + t * dx), yy - (ay + t * dy)))
    return best


@pytest.mark.parametrize(
    ("label", "radius", "pts"),
    [
        ("fg", 3, [(10.0, 10.0), (40.0, 20.0), (45.5, 35.2)]),
        ("bg", 5, [(30.0, 20.0)]),
        ("bg", 2, [(-5.0, 3), (70, 3)]),  # partly outside the image
        ("fg", 3, [(-50, -50), (-20, -30)]),  # entirely outside: nothing painted
        # Far outside, past what Pillow's C ints hold: only the part near the image is drawn.
        ("fg", 2, [(-1e9, 20), (1e9, 25)]),
        ("bg", 3, [(-3e9, -3e9), (3e9, 3e9)]),
        ("fg", 1, [(1e12, 10), (-1e12, 10), (30, -1e12)]),
        ("bg", 4, [(20, 20), (1e12, 1e12)]),
    ],
)
def test_paint_strokes_against_distance(label: str, radius: float, pts) -> None:
    h, w = 40, 60
    mask = np.full((h, w), GC_PR_FGD, np.uint8)
    mask[:, :5] = GC_PR_BGD
    out = paint_strokes(mask, [{"label": label, "radius": radius, "points": [list(p) for p in pts]}])
    d = distance_to_polyline(h, w, pts)
    value = GC_FGD if label == "fg" else GC_BGD
    assert (out[d <= radius - 1] == value).all()  # everything well inside is painted
    far = d > radius + 1.5
    np.testing.assert_array_equal(out[far], mask[far])  # nothing well outside is
    assert set(np.unique(out[(out != mask)])) <= {value}
    np.testing.assert_array_equal(mask[:, 5:], GC_PR_FGD)  # the input is not modified


@pytest.mark.parametrize(
    ("strokes", "message"),
    [
        ([], "non-empty list"),
        ("x", "non-empty list"),
        ([{"label": "maybe", "points": [[1, 1]]}], "'fg' or 'bg'"),
        ([{"label": "fg", "points": []}], "points"),
        ([{"label": "fg", "points": [[1, "a"]]}], "finite numbers"),
        ([{"label": "fg", "points": [[1, float("nan")]]}], "finite numbers"),
        ([{"label": "fg", "points": [[1, 1.1e12]]}], "within +-1e+12"),
        ([{"label": "fg", "points": [[-1e300, 1]]}], "within +-1e+12"),
        ([{"label": "fg", "radius": -1, "points": [[1, 1]]}], "radius"),
        ([{"label": "fg", "radius": 1e9, "points": [[1, 1]]}], "radius"),
        ([{"label": "fg", "points": [[1, 2, 3]]}], "point"),
    ],
)
def test_paint_strokes_rejects(strokes, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        paint_strokes(np.zeros((5, 5), np.uint8), strokes)
