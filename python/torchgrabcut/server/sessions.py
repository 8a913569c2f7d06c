"""Per-browser state of `torchgrabcut serve`: the image, the mask, the kept model and an undo stack.

The undo stack keeps whole states (a mask is one byte a pixel: 40 MB at 40 megapixels), so it
is bounded twice: at most ``max_history`` steps and at most ``max_history_bytes`` bytes of
masks and models (:data:`DEFAULT_HISTORY_BYTES`, 256 MiB: 32 steps up to 8 megapixels, 6 at
40). The oldest steps are dropped first; the newest one is kept (unless ``max_history`` is 0),
so one undo is possible whatever the image's size (over the budget if that state alone is).

All sessions together are bounded by one memory budget (``max_bytes``, :data:`DEFAULT_MEMORY_BYTES`):
what each holds (its image, room for its mask, its current state and its undo history) is
counted in the store, and a request that would keep more (an image opened, a new mask) first
reserves the bytes (:meth:`SessionStore.reserve`). When they do not fit, oldest undo steps
are dropped (the requesting session's first, then the least recently used sessions', each
keeping one); if that is not enough the request is refused (:class:`MemoryFull`, answered
503) before any work, and no image or current mask is touched.

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
from types import TracebackType

import numpy as np

from torchgrabcut.model import GrabCutModel

__all__ = [
    "DEFAULT_HISTORY_BYTES",
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MEMORY_BYTES",
    "MODEL_BYTES",
    "MemoryFull",
    "Reservation",
    "Session",
    "SessionStore",
    "SessionsFull",
    "State",
    "session_minimum_bytes",
]

DEFAULT_IDLE_TIMEOUT_S = 3600.0
DEFAULT_HISTORY_BYTES = 256 * 2**20
DEFAULT_MEMORY_BYTES = 4096 * 2**20
# What one state's model may hold beyond its mask (two 5-component mixtures of float64
# parameters are about 1 KiB): reserved with each new mask, so that a reservation covers it.
MODEL_BYTES = 16 * 2**10


def session_minimum_bytes(pixels: int) -> int:
    """What a session with an image of ``pixels`` is counted as holding from the moment it is
    opened: the BGR image, room for its mask and model, and room for one undo step (so that
    every session admitted can segment and refine; the budget must hold this for the largest image)."""
    return 3 * pixels + 2 * (pixels + MODEL_BYTES)


class SessionsFull(RuntimeError):
    """Every slot holds a session used within the idle timeout: no new session now."""


class MemoryFull(RuntimeError):
    """The server's memory budget cannot hold what a request would keep."""


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

    def _room(self) -> int:
        """The bytes of one state of this image: its mask and (at most) its model."""
        assert self.image is not None
        return self.image.shape[0] * self.image.shape[1] + MODEL_BYTES

    def nbytes(self) -> int:
        """The bytes this session is counted as holding: its image, its mask and model (room
        for them before the first box) and its undo history (room for one step, at least)."""
        if self.image is None:
            return 0
        current = self.state.nbytes if self.state is not None else self._room()
        return int(self.image.nbytes) + current + max(self.history_bytes(), self._room())

    def push_bytes(self) -> int:
        """At most what :meth:`push` of a new state adds to :meth:`nbytes`: the current state
        goes on the undo stack, where room for one step is already counted."""
        if self.image is None:
            return 0
        moved = self.state.nbytes if self.state is not None else 0
        after = int(self.image.nbytes) + self._room() + max(self.history_bytes() + moved, self._room())
        return max(0, after - self.nbytes())

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
        max_bytes: int = DEFAULT_MEMORY_BYTES,
    ) -> None:
        if max_sessions < 1 or max_history < 0 or max_history_bytes < 0 or max_bytes < 0:
            raise ValueError(
                "SessionStore: expected max_sessions >= 1, max_history >= 0, max_history_bytes >= 0 and "
                f"max_bytes >= 0, got {max_sessions}, {max_history}, {max_history_bytes}, {max_bytes}"
            )
        if not (math.isfinite(idle_timeout_s) and idle_timeout_s > 0):
            raise ValueError(f"SessionStore: expected a finite idle timeout > 0 s, got {idle_timeout_s!r}")
        self.max_sessions = max_sessions
        self.max_history = max_history
        self.max_history_bytes = max_history_bytes
        self.idle_timeout_s = float(idle_timeout_s)
        self.max_bytes = max_bytes
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._held: dict[str, int] = {}  # bytes each session holds, as last counted
        self._reserved = 0  # bytes promised to requests in progress
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
            self._held.pop(sid, None)  # its image, masks and history go with it

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

    def discard_if_empty(self, session: Session) -> None:
        """Forgets a session made for a request that failed before it held an image."""
        with self._lock:
            if session.image is None and self._sessions.get(session.sid) is session:
                del self._sessions[session.sid]
                self._held.pop(session.sid, None)

    def held_bytes(self) -> int:
        """The bytes all sessions hold, with those reserved by requests in progress."""
        with self._lock:
            return sum(self._held.values()) + self._reserved

    def account(self, session: Session) -> None:
        """Counts what ``session`` holds now (call under its lock, after it changed)."""
        nbytes = session.nbytes()
        with self._lock:
            if self._sessions.get(session.sid) is session:
                self._held[session.sid] = nbytes

    def reserve(self, nbytes: int, replaces: Session | None = None, trims: Session | None = None) -> Reservation:
        """Room for ``nbytes`` more held bytes, until the reservation is committed or left.

        ``replaces``: a session whose whole content the new bytes replace (an image opened
        in it), so its bytes count as free. When the budget is short, the oldest undo steps
        are dropped, each session keeping one: first those of ``trims`` (the requesting
        session, whose lock the caller holds), then those of the others, least recently
        used first, skipping any in a request right now. MemoryFull when that is not enough;
        nothing but those undo steps was changed.
        """
        with self._lock:
            credit = self._held.get(replaces.sid, 0) if replaces is not None else 0
            if self._free() + credit < nbytes:
                self._trim_history(nbytes - credit, trims)
            if self._free() + credit < nbytes:
                held = sum(self._held.values()) + self._reserved
                raise MemoryFull(
                    f"the server's memory budget is full ({held / 2**20:.1f} of {self.max_bytes / 2**20:.1f} MiB "
                    f"held by {len(self._sessions)} session(s)' images, masks and undo steps; this needs "
                    f"{nbytes / 2**20:.1f} MiB more): try again later, or restart `torchgrabcut serve` with a "
                    "larger --max-memory-mb"
                )
            self._reserved += nbytes
        return Reservation(self, nbytes)

    def _trim_history(self, nbytes: int, own: Session | None) -> None:
        """Drops oldest undo steps until ``nbytes`` are free or none can go (caller holds ``_lock``)."""
        others = sorted((s for s in self._sessions.values() if s is not own), key=lambda s: s.last_used)
        for session in [own, *others] if own is not None else others:
            # Another session is trimmed only when its lock is free at once: a waiting lock
            # could be held by a request waiting for this store's lock (a deadlock).
            if session is not own and not session.lock.acquire(blocking=False):
                continue
            try:
                while self._free() < nbytes and len(session.history) > 1:
                    session.history.pop(0)
                    self._held[session.sid] = session.nbytes()
            finally:
                if session is not own:
                    session.lock.release()
            if self._free() >= nbytes:
                return

    def _free(self) -> int:
        """The budget not held nor reserved (caller holds ``_lock``)."""
        return self.max_bytes - sum(self._held.values()) - self._reserved

    def _settle(self, nbytes: int, session: Session | None) -> None:
        """Ends a reservation of ``nbytes``; with ``session``, counts what it holds now, at once."""
        held = session.nbytes() if session is not None else 0
        with self._lock:
            self._reserved -= nbytes
            if session is not None and self._sessions.get(session.sid) is session:
                self._held[session.sid] = held


class Reservation:
    """Bytes set aside in a :class:`SessionStore` for one request; a context manager.

    :meth:`commit` turns them into what the session now holds, in one step (no moment where
    they count twice, or not at all); leaving the block without committing gives them back.
    """

    def __init__(self, store: SessionStore, nbytes: int) -> None:
        self.store, self.nbytes, self.done = store, nbytes, False

    def commit(self, session: Session) -> None:
        """The session changed (call under its lock): count what it holds, release the reservation."""
        if not self.done:
            self.done = True
            self.store._settle(self.nbytes, session)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        if not self.done:
            self.done = True
            self.store._settle(self.nbytes, None)
