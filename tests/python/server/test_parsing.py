"""server/parsing.py: a request's values checked, each refusal naming the value (issue 35, item 12)."""

from __future__ import annotations

import numpy as np
import pytest
from server_helpers import BOX, make_client, png_bytes, upload


@pytest.mark.parametrize("value", [[1, 2], "10", None, True, {"x": 1}, [[12, 8, 52, 40]]])
def test_a_box_coordinate_that_is_not_a_number_is_named(value: object, image: np.ndarray) -> None:
    _, c = make_client()
    upload(c, png_bytes(image))
    for key in ("x0", "y1"):
        body = dict(zip(("x0", "y0", "x1", "y1"), BOX))
        body[key] = value
        r = c.post("/api/box", json=body)
        error = r.get_json()["error"]
        assert r.status_code == 400 and error.startswith(f"box: {key}: expected a number (whole pixels), got "), error
        assert "one box per image" not in error
