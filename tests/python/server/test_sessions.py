"""server/sessions.py: sessions expire by idle time and stay while a request holds them; the undo
history stays within its byte budget and undo restores each mask exactly; all sessions together
stay within the server's memory budget."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from server_helpers import BOX, client_for, download, make_client, mask_of, png_bytes, post_box, random_png, upload

from conftest import object_image
from torchgrabcut.model import GrabCutModel
from torchgrabcut.server.routes import COOKIE
from torchgrabcut.server.sessions import (
    DEFAULT_HISTORY_BYTES,
    Session,
    SessionsFull,
    SessionStore,
    State,
    session_minimum_bytes,
)


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


# --- the undo history's byte budget -----------------------------------------------------------


def _state(mask: np.ndarray) -> State:
    return State(mask, GrabCutModel(torch.zeros(10, 13, dtype=torch.float64)), "strokes", (0, 0, 1, 1))


def test_the_history_of_a_40_megapixel_image_stays_within_the_default_budget() -> None:
    # Whole masks at 40 MP are 40 MB each: 32 of them (the step limit alone) would be 1.3 GB.
    session = Session("sid", max_history=32)
    assert session.max_history_bytes == DEFAULT_HISTORY_BYTES == 256 * 2**20
    shape = (5000, 8000)
    states = [_state(np.full(shape, k % 4, np.uint8)) for k in range(2)]
    session.open(np.zeros((1, 1, 3), np.uint8), "big")
    for k in range(12):
        if k >= 2:  # keep at most the states the session may hold, plus these two
            states = [*states[-1:], _state(np.full(shape, k % 4, np.uint8))]
            states[-1].mask[k, k] = 255  # every mask distinct
        session.push(states[-1])
        assert session.history_bytes() <= DEFAULT_HISTORY_BYTES
    # 6 steps of 40 MB fit in 256 MiB, 7 do not; the oldest went first, and the state before
    # the first push (no mask) with them.
    assert len(session.history) == 6 and all(s is not None for s in session.history)
    current = session.state
    assert session.undo() and session.state is not current and session.state is states[0]
    # The README's other figure: the step limit alone bounds it up to 8 MP (read-only views
    # stand in for the masks: their nbytes is the full size, nothing is allocated).
    eight = Session("sid", max_history=32)
    for k in range(40):
        eight.push(_state(np.broadcast_to(np.uint8(k % 4), (2000, 4000))))
    assert len(eight.history) == 32 and eight.history_bytes() <= DEFAULT_HISTORY_BYTES


def test_the_newest_step_stays_over_the_budget_and_undo_restores_each_mask_exactly() -> None:
    rng = np.random.default_rng(0)
    masks = [rng.integers(0, 4, (300, 400), dtype=np.uint8) for _ in range(9)]
    session = Session("sid", max_history=32, max_history_bytes=3 * masks[0].nbytes + 5000)
    for m in masks:
        session.push(_state(m.copy()))
    assert session.history_bytes() <= session.max_history_bytes and len(session.history) == 3
    for expected in masks[-2:-5:-1]:
        assert session.undo()
        np.testing.assert_array_equal(session.state.mask, expected)
    assert not session.undo()
    tiny = Session("sid", max_history=32, max_history_bytes=0)  # one step is always kept
    for m in masks[:4]:
        tiny.push(_state(m.copy()))
    assert len(tiny.history) == 1 and tiny.undo()
    np.testing.assert_array_equal(tiny.state.mask, masks[2])
    with pytest.raises(ValueError, match="max_history_bytes >= 0"):
        SessionStore(max_history_bytes=-1)


def test_many_strokes_on_a_large_image_keep_the_history_within_its_budget() -> None:
    h, w = 600, 800
    box = (150, 100, 650, 500)
    big = object_image(np.random.default_rng(9), h, w, box)
    budget = 2 * 2**20  # four masks of 480 kB and their models
    app, c = make_client(max_history_bytes=budget)
    assert upload(c, png_bytes(big)).status_code == 200
    session = app.extensions["torchgrabcut_sessions"].get(c.get_cookie(COOKIE).value)
    masks = [mask_of(post_box(c, box))]
    for i in range(10):
        x, y = 160 + 45 * i, 110 + 30 * i
        r = c.post("/api/strokes", json={"strokes": [{"label": "bg", "radius": 6, "points": [[x, y], [x + 20, y]]}]})
        assert r.status_code == 200, r.get_json()
        masks.append(mask_of(r))
        assert not np.array_equal(masks[-1], masks[-2])
        assert session.history_bytes() <= budget
        kept = [state for state in session.history if state is not None]  # None: before the box
        assert len(kept) == min(i + 1, 4)
    # Undo gives back the four newest earlier masks exactly, newest first, and then no more.
    for expected in masks[-2:-6:-1]:
        r = c.post("/api/undo")
        assert r.status_code == 200
        np.testing.assert_array_equal(mask_of(r), expected)
        np.testing.assert_array_equal(download(c), expected)
    assert not r.get_json()["can_undo"]
    assert c.post("/api/undo").status_code == 400


# -- all sessions together within one memory budget (issue 35, item 8) ---------------------------


SIDE = 100  # the largest image: max_megapixels = SIDE * SIDE / 1e6 (small, so that the tests stay fast)
LARGEST = {"max_megapixels": SIDE * SIDE / 1e6}


def _check_accounts(app: Any) -> int:
    """The store's count of held bytes is what the sessions hold, and within the budget."""
    store = app.extensions["torchgrabcut_sessions"]
    held = store.held_bytes()
    assert held == sum(s.nbytes() for s in store._sessions.values())
    assert held <= store.max_bytes
    return int(held)


def test_all_sessions_together_stay_within_the_memory_budget() -> None:
    budget = 3 * session_minimum_bytes(SIDE * SIDE)
    app, _ = make_client(**LARGEST, max_memory_mb=budget / 2**20)
    admitted, refused = [], None
    stroke = {"strokes": [{"label": "bg", "radius": 1, "points": [[5, 5]]}]}
    for i in range(8):
        c = client_for(app)
        r = upload(c, random_png(SIDE, SIDE, seed=i))
        _check_accounts(app)
        if r.status_code == 503:
            refused = r.get_json()["error"]
            break
        assert r.status_code == 200
        admitted.append(c)
        for request in [lambda c=c: post_box(c, BOX)] + [lambda c=c: c.post("/api/strokes", json=stroke)] * 6:
            assert request().status_code == 200
            _check_accounts(app)
    assert refused is not None and "memory budget is full" in refused and "--max-memory-mb" in refused
    assert 3 <= len(admitted) < 8
    # Everyone admitted still works, and still has one undo step (older ones went to make room).
    for c in admitted:
        r = c.post("/api/strokes", json=stroke)
        assert r.status_code == 200, r.get_json()
        assert c.post("/api/undo").status_code == 200
        _check_accounts(app)
    # Once a session is gone, its bytes are free for the next.
    store = app.extensions["torchgrabcut_sessions"]
    with store._lock:
        victim = next(iter(store._sessions))
        del store._sessions[victim]
        store._held.pop(victim)
    assert upload(client_for(app), random_png(SIDE, SIDE)).status_code == 200
    _check_accounts(app)


def test_a_box_that_does_not_fit_is_refused_before_grabcut_and_changes_nothing() -> None:
    # A budget that holds one session of the largest image with one undo step, then made tighter.
    budget = session_minimum_bytes(SIDE * SIDE)
    app, a = make_client(**LARGEST, max_memory_mb=budget / 2**20)
    assert upload(a, random_png(SIDE, SIDE)).status_code == 200
    assert post_box(a, BOX).status_code == 200
    assert post_box(a, BOX).status_code == 200  # the one undo step fits
    assert post_box(a, BOX).status_code == 200  # and the older one goes to make room for the next
    store = app.extensions["torchgrabcut_sessions"]
    before = store.held_bytes()
    store.max_bytes = before  # no room for a second undo step, and none to make
    r = post_box(a, BOX)
    assert r.status_code == 503 and "memory budget is full" in r.get_json()["error"]
    assert store.held_bytes() == before and a.get("/api/state").get_json()["can_undo"]
