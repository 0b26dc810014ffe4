"""Gradio jobs nobody reads: noticed by event id, cancelled after a grace time."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from app.core.constants import (
    UNREAD_JOB_GRACE_SECONDS,
)

LOG = logging.getLogger(__name__)


class JobWatch:
    """Cancels queue jobs whose result nobody starts reading within `grace` seconds.

    The guard reports each new job (the `event_id` answered to POST .../call/<api> or .../queue/join)
    and each reader (GET .../call/<api>/<event_id>, GET .../queue/data?session_hash=...). A reader reads
    every job of its session. `session_of(event_id)` gives a job's session (None once it has ended);
    `cancel(event_id, session)` stops it. The callbacks come from the app, which knows Gradio's queue.
    """

    def __init__(self, session_of: Callable[[str], str | None],
                 cancel: Callable[[str, str], Awaitable[None]], grace: float = UNREAD_JOB_GRACE_SECONDS,
                 prefix: str = "/gradio_api"):
        self.session_of, self.cancel, self.grace = session_of, cancel, grace
        self._submit = re.compile(rf"{re.escape(prefix)}/(?:queue/join|call/(?:v2/)?[^/]+)/?")
        self._read_call = re.compile(rf"{re.escape(prefix)}/call/(?:v2/)?[^/]+/(?P<event>[^/]+)/?")
        self._read_queue = f"{prefix}/queue/data"
        self._pending: dict[str, str] = {}  # event id -> session, jobs nobody reads yet
        self._by_session: dict[str, set[str]] = {}
        self._readers: dict[str, int] = {}  # session -> readers connected now
        self._tasks: set[asyncio.Task] = set()
        self.cancelled = 0

    def is_submit(self, method: str, path: str) -> bool:
        return method == "POST" and self._submit.fullmatch(path) is not None

    def reader_session(self, method: str, path: str, query: bytes) -> str | None:
        """The session a GET reads, or None when it is not a reader."""
        if method != "GET":
            return None
        if path.rstrip("/") == self._read_queue:
            values = parse_qs(query.decode("latin-1")).get("session_hash")
            return values[0] if values else None
        match = self._read_call.fullmatch(path)
        if match is None:
            return None
        event = match.group("event")
        return self._pending.get(event) or self.session_of(event) or event

    def submitted(self, event_id: str) -> None:
        session = self.session_of(event_id)
        if session is None or self._readers.get(session):
            return  # already over, or read by a reader that is connected now
        self._pending[event_id] = session
        self._by_session.setdefault(session, set()).add(event_id)
        asyncio.get_running_loop().call_later(self.grace, self._expire, event_id)

    def reader_opened(self, session: str) -> None:
        self._readers[session] = self._readers.get(session, 0) + 1
        for event_id in self._by_session.pop(session, ()):
            self._pending.pop(event_id, None)

    def reader_closed(self, session: str) -> None:
        left = self._readers.get(session, 0) - 1
        if left > 0:
            self._readers[session] = left
        else:
            self._readers.pop(session, None)

    def _expire(self, event_id: str) -> None:
        session = self._pending.pop(event_id, None)
        if session is None:
            return
        events = self._by_session.get(session)
        if events is not None:
            events.discard(event_id)
            if not events:
                del self._by_session[session]
        LOG.info("cancelling job %s: nobody read its result within %.0f s", event_id, self.grace)
        self.cancelled += 1
        task = asyncio.ensure_future(self.cancel(event_id, session))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            LOG.error("cancelling an unread job failed", exc_info=task.exception())
