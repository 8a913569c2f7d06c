"""Data shipped with the package: the bundled image used by the demo, the benchmarks and the tests."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLED_BOX", "BUNDLED_BOX_FRACTION", "BUNDLED_IMAGE"]

BUNDLED_IMAGE = Path(__file__).with_name("astronaut.png")  # Eileen Collins, NASA (public domain), 512x512
BUNDLED_BOX = (15, 10, 370, 512)  # the astronaut in BUNDLED_IMAGE, half-open (x0, y0, x1, y1)
# The astronaut as fractions of the width and height (x0, y0, x1, y1): a box for the image at any scale.
BUNDLED_BOX_FRACTION = (0.03, 0.02, 0.72, 1.0)
