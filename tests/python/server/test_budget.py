"""server/budget.py: decodes are bounded by their pixels in total, not serialised (issue 35, item 7).

One large upload does not hold up every other user's; only as many large ones decode at once
as the budget holds, and a request that finds too little free for too long gets 503.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import ImageFile
from server_helpers import client_for, make_client, random_png, upload


@pytest.fixture
def slow_decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Decodes of 90x90 images wait for ``release`` (and set ``started``); others run."""
    started, release = threading.Event(), threading.Event()
    load = ImageFile.ImageFile.load

    def load_slowly(self: ImageFile.ImageFile) -> Any:
        if self.size == (90, 90):
            started.set()
            release.wait(60)
        return load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", load_slowly)
    yield started, release
    release.set()


def _in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.update(r=fn()), daemon=True)
    thread.start()
    return thread, out


def test_a_large_decode_does_not_hold_up_other_uploads(slow_decodes: tuple[threading.Event, threading.Event]) -> None:
    started, release = slow_decodes
    app, big = make_client()
    small = client_for(app)
    thread, out = _in_thread(lambda: upload(big, random_png(90, 90)))
    assert started.wait(60)
    other, got = _in_thread(lambda: upload(small, random_png(10, 20)))
    other.join(20)
    assert not other.is_alive(), "a small upload waited for another user's decode"
    assert got["r"].status_code == 200
    release.set()
    thread.join(60)
    assert out["r"].status_code == 200 and out["r"].get_json()["width"] == 90


def test_decodes_are_bounded_by_their_pixels(slow_decodes: tuple[threading.Event, threading.Event]) -> None:
    # Room for one 90x90 decode and a small one beside it: a second large one waits, then 503.
    started, release = slow_decodes
    app, first = make_client(decode_pixels=90 * 90 + 200, queue_timeout_s=0.3)
    thread, out = _in_thread(lambda: upload(first, random_png(90, 90)))
    assert started.wait(60)
    second, small = client_for(app), client_for(app)
    r = upload(second, random_png(90, 90, seed=1))
    assert r.status_code == 503 and "being decoded" in r.get_json()["error"], r.get_json()
    assert upload(small, random_png(10, 20)).status_code == 200
    release.set()
    thread.join(60)
    assert out["r"].status_code == 200
    assert upload(second, random_png(90, 90, seed=1)).status_code == 200  # free again
