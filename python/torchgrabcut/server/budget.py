"""How many image pixels the server decodes at once: a semaphore counted in pixels.

Decoding an upload costs memory and time in proportion to its pixels (Pillow's image, the
RGB and BGR arrays: about 14 bytes a pixel), so decodes are bounded by their pixels in
total, not serialised: small images decode beside a large one, and only as many large ones
run at once as the budget holds. A request that finds too little free waits up to the
queue timeout, then gets 503 (:class:`Busy`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Busy", "PixelSlots"]


class Busy(RuntimeError):
    """The decode budget stayed too full for the whole wait."""


class PixelSlots:
    """At most ``capacity`` pixels being decoded at once, all requests together."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"PixelSlots: expected a capacity >= 1 pixel, got {capacity}")
        self.capacity = capacity
        self._free = capacity
        self._changed = threading.Condition()

    @property
    def free(self) -> int:
        with self._changed:
            return self._free

    @contextmanager
    def hold(self, pixels: int, timeout: float) -> Iterator[None]:
        """``pixels`` of the budget for the block, waited for up to ``timeout`` seconds, else Busy.

        A request larger than the whole budget waits for all of it, so that it can still run.
        """
        need = max(1, min(pixels, self.capacity))
        with self._changed:
            if not self._changed.wait_for(lambda: self._free >= need, timeout):
                raise Busy(
                    f"busy: {(self.capacity - self._free) / 1e6:.1f} megapixels of images are being decoded (the "
                    f"server decodes at most {self.capacity / 1e6:.1f} at once) and {need / 1e6:.1f} did not come "
                    f"free within {timeout:g} s; try again"
                )
            self._free -= need
        try:
            yield
        finally:
            with self._changed:
                self._free += need
                self._changed.notify_all()
