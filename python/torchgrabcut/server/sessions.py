"""Per-browser state of `torchgrabcut serve`: the image, the mask, the kept model and an undo stack.

The undo stack keeps whole states (a mask is one byte a pixel: 40 MB at 40 megapixels), so it
is bounded twice: at most ``max_history`` steps and at most ``max_history_bytes`` bytes of
masks and models (:data:`DEFAULT_HISTORY_BYTES`, 256 MiB: 32 steps up to 8 megapixels, 6 at
40). The oldest steps are dropped first; the newest one is kept (unless ``max_history`` is 0),
so one undo is possible whatever the image's size (over the budget if that state alone is).

Each browser session (a random id in a cookie) owns one :class:`Session`. A session
is forgotten once it has gone ``idle_timeout_s`` seconds without a request; a new one
is never made by evicting a live one: when ``max_sessions`` live sessions exist, the
store refuses to make another (:class:`SessionsFull`). Every session has its own
lock: the web server is threaded, and two requests of one browser must not
interleave, while requests of different browsers run side by side. Everything a
request reads or writes in a session is read or written under that lock.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from torchgrabcut.model import GrabCutModel

__all__ = ["DEFAULT_HISTORY_BYTES", "DEFAULT_IDLE_TIMEOUT_S", "Session", "SessionStore", "SessionsFull", "State"]

DEFAULT_IDLE_TIMEOUT_S = 3600.0
DEFAULT_HISTORY_BYTES = 256 * 2**20


class SessionsFull(RuntimeError):
    """Every slot holds a session used within the idle timeout: no new session now."""


@dataclass(frozen=True)
class State:
    """One step of the segmentation: labels 0..3 and the mixtures they came with."""

    mask: np.ndarray  # (H, W) uint8, OpenCV labels
    model: GrabCutModel
    action: str  # "box" or "strokes": what produced it
    box: tuple[int, int, int, int]  # the box it started from (x0, y0, x1, y1), half-open

    @property
    def nbytes(self) -> int:
        """What keeping it costs: the mask and the mixtures' parameters."""
        params = self.model.params
        return int(self.mask.nbytes) + params.element_size() * params.numel()


@dataclass
class Session:
    """What one browser is working on."""

    sid: str
    max_history: int
    max_history_bytes: int = DEFAULT_HISTORY_BYTES
    lock: threading.Lock = field(default_factory=threading.Lock)
    image: np.ndarray | None = None  # (H, W, 3) uint8 BGR
    image_name: str = ""
    state: State | None = None
    history: list[State | None] = field(default_factory=list)  # earlier states, newest last
    last_used: float = 0.0  # the store's clock at the last request

    def open(self, image: np.ndarray, name: str) -> None:
        """A new image: forgets the mask, the model and the history."""
        self.image = image
        self.image_name = name
        self.state = None
        self.history.clear()

    def history_bytes(self) -> int:
        """The bytes the undo stack holds (masks and models)."""
        return sum(s.nbytes for s in self.history if s is not None)

    def push(self, state: State) -> None:
        """Makes ``state`` current; the current one goes on the undo stack.

        The oldest steps are dropped while there are more than ``max_history``, or more than
        ``max_history_bytes`` bytes of them and more than one (the newest step stays).
        """
        self.history.append(self.state)
        held = self.history_bytes()
        while len(self.history) > self.max_history or (len(self.history) > 1 and held > self.max_history_bytes):
            dropped = self.history.pop(0)
            held -= dropped.nbytes if dropped is not None else 0
        self.state = state

    def undo(self) -> bool:
        """Back to the previous state; False when there is none."""
        if not self.history:
            return False
        self.state = self.history.pop()
        return True


class SessionStore:
    """Sessions by id; those idle longer than ``idle_timeout_s`` are forgotten.

    ``clock`` (seconds, monotonic) is replaceable so that expiry can be tested without waiting.
    """

    def __init__(
        self,
        max_sessions: int = 16,
        max_history: int = 32,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        max_history_bytes: int = DEFAULT_HISTORY_BYTES,
    ) -> None:
        if max_sessions < 1 or max_history < 0 or max_history_bytes < 0:
            raise ValueError(
                "SessionStore: expected max_sessions >= 1, max_history >= 0 and max_history_bytes >= 0, got "
                f"{max_sessions}, {max_history}, {max_history_bytes}"
            )
        if not (math.isfinite(idle_timeout_s) and idle_timeout_s > 0):
            raise ValueError(f"SessionStore: expected a finite idle timeout > 0 s, got {idle_timeout_s!r}")
        self.max_sessions = max_sessions
        self.max_history = max_history
        self.max_history_bytes = max_history_bytes
        self.idle_timeout_s = float(idle_timeout_s)
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _expire(self, now: float) -> None:
        """Forgets sessions idle too long (caller holds ``_lock``).

        A session whose lock is held is in a request right now, however long it has been
        since that request began: it stays.
        """
        for sid in [
            s.sid for s in self._sessions.values() if now - s.last_used > self.idle_timeout_s and not s.lock.locked()
        ]:
            del self._sessions[sid]

    def get(self, sid: str | None) -> Session | None:
        """The session with this id (its idle time restarts), or None (unknown or expired)."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            session = self._sessions.get(sid) if sid else None
            if session is not None:
                session.last_used = now
            return session

    def touch(self, session: Session) -> None:
        """Restarts the session's idle time (the app calls it when a request ends)."""
        with self._lock:
            session.last_used = self.clock()

    def get_or_create(self, sid: str | None) -> Session:
        """The session with this id, or a new one with a fresh random id.

        Raises :class:`SessionsFull` when ``max_sessions`` sessions are live: a live
        session (its image, mask and undo history) is never dropped to make room.
        """
        with self._lock:
            now = self.clock()
            self._expire(now)
            session = self._sessions.get(sid) if sid else None
            if session is None:
                if len(self._sessions) >= self.max_sessions:
                    raise SessionsFull(
                        f"the server already holds {self.max_sessions} sessions in use (a session is forgotten "
                        f"{self.idle_timeout_s / 60:g} minutes after its last request): try again later, or "
                        "restart `torchgrabcut serve` with a larger --max-sessions"
                    )
                session = Session(secrets.token_urlsafe(24), self.max_history, self.max_history_bytes)
                self._sessions[session.sid] = session
            session.last_used = now
            return session
