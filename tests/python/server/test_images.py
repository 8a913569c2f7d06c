"""server/images.py: the mask's run-length encoding and the uploaded image's limits."""

from __future__ import annotations

import numpy as np
import pytest
from server_helpers import png_bytes, rle_decode

from torchgrabcut.server.images import decode_image, rle_encode

# --- pure helpers -----------------------------------------------------------------------------


def test_rle_round_trip() -> None:
    rng = np.random.default_rng(0)
    for shape in [(1, 1), (3, 7), (30, 40)]:
        m = rng.integers(0, 4, shape).astype(np.uint8)
        m[:, : shape[1] // 2] = 2  # long runs too
        enc = rle_encode(m)
        assert sum(enc["counts"]) == m.size
        assert all(a != b for a, b in zip(enc["values"], enc["values"][1:]))  # runs are maximal
        np.testing.assert_array_equal(rle_decode(enc, *shape), m)


def test_decode_image_limits(image: np.ndarray) -> None:
    np.testing.assert_array_equal(decode_image(png_bytes(image), 10**6), image)  # BGR kept
    with pytest.raises(ValueError, match="not an image") as err:
        decode_image(b"GIF89a? no", 10**6)
    assert err.value.status == 400
    with pytest.raises(ValueError, match="too large: 64x48") as err:
        decode_image(png_bytes(image), 1000)
    assert err.value.status == 413
