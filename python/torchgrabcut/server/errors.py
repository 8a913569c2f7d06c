"""The one error type of the server: a message and the HTTP status to answer it with.

Raised anywhere below a request (views, access checks, uploads); the blueprint's error
handler (routes.py) turns it into the response, so no view builds an error response itself.
"""

from __future__ import annotations

__all__ = ["ApiError", "UploadError"]


class ApiError(Exception):
    """A request the server refuses: answered with ``message`` and ``status``."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class UploadError(ApiError, ValueError):
    """An image the server refuses to decode (not an image, empty, over the pixel limit).

    A ValueError as well, so that :func:`~torchgrabcut.server.images.decode_image` reads like
    any other decoder to callers outside a request.
    """
