"""Hand a blocking text stream to asyncio code: a reader thread per stream, text passed in batches.

The reader wakes the event loop only when its buffer goes from empty to non-empty, so when the loop is
busy several tokens travel as one chunk, and an async consumer (the OpenAI-compatible API) needs no
thread hop per token.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable


class DeltaPump:
    """Reads `stream` (text deltas) on its own daemon thread; iterate `texts()` on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._ready = asyncio.Event()
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._done = False
        self.error: Exception | None = None

    def start(self, stream: Iterable[str], on_end: Callable[[], None] | None = None) -> DeltaPump:
        """Start the reader thread; `on_end()` runs on it once the stream has ended, whatever happened."""
        threading.Thread(target=self.run, args=(stream, on_end), name="stream-reader", daemon=True).start()
        return self

    def run(self, stream: Iterable[str], on_end: Callable[[], None] | None = None) -> None:
        """Reader thread: iterate the stream to its end (or its error), then signal the end."""
        try:
            for delta in stream:
                if delta:
                    with self._lock:
                        self._parts.append(delta)
                        first = len(self._parts) == 1
                    if first:
                        self._wake()
        except Exception as exc:  # noqa: BLE001 - any failure ends the reply; the consumer reads `error`
            self.error = exc
        finally:
            with self._lock:
                self._done = True
            self._wake()
            if on_end is not None:
                on_end()

    def _wake(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._ready.set)
        except RuntimeError:  # the loop has closed (app shutting down)
            pass

    async def texts(self) -> AsyncIterator[str]:
        """Text as it comes, one chunk per wake-up; ends when the stream ended (check `error` then)."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            with self._lock:
                parts, self._parts, done = self._parts, [], self._done
            if parts:
                yield "".join(parts)
            if done:
                return
