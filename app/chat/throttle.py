"""Fewer, fuller updates for a streamed reply: a web client needs ~20 per second, not one per token, and when many
replies stream at once the app coalesces further, so its updates per second stay within a budget."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator

UPDATE_SECONDS = 0.05  # at most ~20 updates per second per chat; the first text is shown at once
# Gradio spends about 1 ms of CPU per streamed update (its queue, the event's SSE message, a worker-thread hop), so
# past UPDATE_BUDGET / 20 chats at once the updates of every chat are spaced so that all of them together stay near
# UPDATE_BUDGET per second (32 chats: one update each per 0.16 s), never further apart than MAX_UPDATE_SECONDS.
UPDATE_BUDGET = 200
MAX_UPDATE_SECONDS = 0.5


class LiveCount:
    """How many throttled replies are streaming in this process right now."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> LiveCount:
        with self._lock:
            self._count += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._count -= 1

    @property
    def value(self) -> int:
        return self._count


LIVE = LiveCount()


def update_interval(live: int, least: float = UPDATE_SECONDS, budget: float = UPDATE_BUDGET,
                    most: float = MAX_UPDATE_SECONDS) -> float:
    """Seconds between one reply's updates while `live` replies stream at once."""
    return min(max(least, live / budget), max(most, least))


def throttled(stream: Iterable[str], texts, interval: float | None = None, live: LiveCount = LIVE) -> Iterator[str]:
    """Iterate `stream` (text deltas) and yield `texts()` (the reply so far) at most once per interval, always for
    the first text and always at the end, so nothing is lost and the first token is not delayed. The interval is
    `interval` when given, else update_interval() of the replies streaming at once (counted in `live`). Each update
    costs a web framework far more than reading a token, so fast models are shown at a steady rate instead of one
    event per token, and many chats at once share a budget of updates instead of each taking 20 per second."""
    with live:
        last = None
        shown = None
        for _ in stream:
            now = time.monotonic()
            gap = interval if interval is not None else update_interval(live.value)
            if last is None or now - last >= gap:
                last = now
                shown = texts()
                yield shown
        final = texts()
        if final != shown:
            yield final
