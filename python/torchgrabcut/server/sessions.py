"""Per-browser state of `torchgrabcut serve`: the image, the mask, the kept model and an undo stack.

Each browser session (a random id in a cookie) owns one :class:`Session`. The
store keeps at most ``max_sessions`` of them and forgets the least recently used
one beyond that. Every session has its own lock: the web server is threaded, and
two requests of one browser must not interleave, while requests of different
browsers run side by side.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from torchgrabcut.model import GrabCutModel

__all__ = ["Session", "SessionStore", "State"]


@dataclass(frozen=True)
class State:
    """One step of the segmentation: labels 0..3 and the mixtures they came with."""

    mask: np.ndarray  # (H, W) uint8, OpenCV labels
    model: GrabCutModel
    action: str  # "box" or "strokes": what produced it
    box: tuple[int, int, int, int]  # the box it started from (x0, y0, x1, y1), half-open


@dataclass
class Session:
    """What one browser is working on."""

    sid: str
    max_history: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    image: np.ndarray | None = None  # (H, W, 3) uint8 BGR
    image_name: str = ""
    state: State | None = None
    history: list[State | None] = field(default_factory=list)  # earlier states, newest last

    def open(self, image: np.ndarray, name: str) -> None:
        """A new image: forgets the mask, the model and the history."""
        self.image = image
        self.image_name = name
        self.state = None
        self.history.clear()

    def push(self, state: State) -> None:
        """Makes ``state`` current; the current one goes on the undo stack (bounded)."""
        self.history.append(self.state)
        if len(self.history) > self.max_history:
            del self.history[0]
        self.state = state

    def undo(self) -> bool:
        """Back to the previous state; False when there is none."""
        if not self.history:
            return False
        self.state = self.history.pop()
        return True


class SessionStore:
    """Sessions by id, least recently used forgotten beyond ``max_sessions``."""

    def __init__(self, max_sessions: int = 16, max_history: int = 32) -> None:
        if max_sessions < 1 or max_history < 0:
            raise ValueError(
                f"SessionStore: expected max_sessions >= 1 and max_history >= 0, got {max_sessions}, {max_history}"
            )
        self.max_sessions = max_sessions
        self.max_history = max_history
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def get(self, sid: str | None) -> Session | None:
        """The session with this id (now the most recently used), or None."""
        if not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None:
                self._sessions.move_to_end(sid)
            return session

    def get_or_create(self, sid: str | None) -> Session:
        """The session with this id, or a new one with a fresh random id."""
        with self._lock:
            session = self._sessions.get(sid) if sid else None
            if session is not None:
                self._sessions.move_to_end(session.sid)
                return session
            session = Session(secrets.token_urlsafe(24), self.max_history)
            self._sessions[session.sid] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            return session
