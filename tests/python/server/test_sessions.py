"""server/sessions.py: sessions expire by idle time and stay while a request holds them."""

from __future__ import annotations

import numpy as np
import pytest
from server_helpers import BOX, client_for, download, make_client, mask_of, png_bytes, post_box, upload

from torchgrabcut.server.sessions import SessionsFull, SessionStore


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_sessions_expire_by_idle_time_not_by_new_arrivals(image: np.ndarray) -> None:
    app, first = make_client(max_sessions=2, session_timeout_s=600)
    store = app.extensions["torchgrabcut_sessions"]
    clock = store.clock = FakeClock()
    second, third = client_for(app), client_for(app)
    assert upload(first, png_bytes(image)).status_code == 200
    box_mask = mask_of(post_box(first, BOX))
    clock.now += 300
    assert upload(second, png_bytes(image)).status_code == 200

    # The table is full of live sessions: a new browser is refused, nobody is evicted,
    # however many times it tries.
    for _ in range(20):
        r = upload(third, png_bytes(image))
        assert r.status_code == 503 and "2 sessions in use" in r.get_json()["error"], r.get_json()
        assert "--max-sessions" in r.get_json()["error"]
    assert len(store) == 2
    np.testing.assert_array_equal(download(first), box_mask)
    assert first.get("/api/state").get_json()["can_undo"]  # the undo history is intact

    # Ten minutes (the timeout here) after its last request the first session is gone; the
    # second, used since, stays, and the newcomer gets the free slot.
    clock.now += 200
    assert second.get("/api/state").status_code == 200
    clock.now += 400  # first idle for exactly the timeout: still kept
    assert upload(third, png_bytes(image)).status_code == 503
    clock.now += 1
    assert upload(third, png_bytes(image)).status_code == 200
    r = first.get("/api/state")
    assert r.status_code == 400 and "this session has ended" in r.get_json()["error"], r.get_json()
    assert second.get("/api/state").status_code == 200
    assert len(store) == 2


def test_session_store_keeps_a_session_in_a_request() -> None:
    clock = FakeClock()
    store = SessionStore(max_sessions=1, idle_timeout_s=60, clock=clock)
    s = store.get_or_create(None)
    assert store.get(s.sid) is s
    clock.now += 61
    with s.lock:  # a request still running after the timeout: not expired under it
        with pytest.raises(SessionsFull, match="1 sessions in use"):
            store.get_or_create(None)
        store.touch(s)  # which the app does when the request ends
    clock.now += 60
    assert store.get_or_create(s.sid) is s  # used again: its idle time restarts
    clock.now += 61
    other = store.get_or_create(None)
    assert other is not s and store.get(s.sid) is None and len(store) == 1
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="idle timeout"):
            SessionStore(idle_timeout_s=bad)
