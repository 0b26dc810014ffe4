"""Messages a person sends while a reply is still streaming: held in order and sent when it ends.

Per browser session: whether a reply is running, the messages waiting for it, and a counter that Clear
bumps so a running reply knows the conversation it was writing to is gone. Held in memory only while a
reply runs (the next request would carry them anyway); nothing is written anywhere."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from app.chat.messages import MSG_QUEUE_FULL
from app.core.errors import InvalidRequest

MAX_WAITING = 5  # messages one session may queue behind a running reply


@dataclass(frozen=True)
class Queued:
    """A message waiting for the running reply to end: its text, image files and the reply settings chosen
    when it was sent (adapter, sampling; None: the running reply's)."""

    text: str
    files: tuple[str, ...] = ()
    settings: object = field(default=None, compare=False)


@dataclass
class _Session:
    busy: bool = False
    waiting: deque = field(default_factory=deque)
    epoch: int = 0


class Outbox:
    """Which sessions are replying and what they queued; every change happens under one lock, so a message
    is either queued behind a running reply that will send it, or starts a reply itself, never neither."""

    def __init__(self, limit: int = MAX_WAITING) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}

    def offer(self, session: str, message: Queued) -> bool:
        """True: nothing runs, the caller replies now (the session is busy from here). False: queued."""
        with self._lock:
            state = self._sessions.setdefault(session, _Session())
            if not state.busy:
                state.busy = True
                return True
            if len(state.waiting) >= self._limit:
                raise InvalidRequest(MSG_QUEUE_FULL.format(count=len(state.waiting)))
            state.waiting.append(message)
            return False

    def start(self, session: str) -> bool:
        """Mark the session busy for a reply that queues nothing (Regenerate); False when one runs already."""
        with self._lock:
            state = self._sessions.setdefault(session, _Session())
            if state.busy:
                return False
            state.busy = True
            return True

    def next(self, session: str) -> Queued | None:
        """The next waiting message, or None: then the session is idle and forgotten."""
        with self._lock:
            state = self._sessions.get(session)
            if state is None:
                return None
            if state.waiting:
                return state.waiting.popleft()
            del self._sessions[session]
            return None

    def waiting(self, session: str) -> list[Queued]:
        with self._lock:
            state = self._sessions.get(session)
            return list(state.waiting) if state is not None else []

    def busy(self, session: str) -> bool:
        with self._lock:
            state = self._sessions.get(session)
            return state is not None and state.busy

    def epoch(self, session: str) -> int:
        with self._lock:
            state = self._sessions.get(session)
            return state.epoch if state is not None else 0

    def release(self, session: str) -> None:
        """Forget the session (its reply ended early, e.g. the page was closed): waiting messages go too."""
        with self._lock:
            self._sessions.pop(session, None)

    def clear(self, session: str) -> None:
        """Drop the waiting messages (Clear); a running reply sees the new epoch and writes nothing more."""
        with self._lock:
            state = self._sessions.get(session)
            if state is not None:
                state.waiting.clear()
                state.epoch += 1
