"""Hand a reply's text stream to asyncio code in batches: read on the event loop itself when the stream can be
(opened through `open_on_loop`, a Triton stream reads with gRPC's asyncio API), else on a reader thread of its own.

The reader wakes the consumer only when its buffer goes from empty to non-empty, so when the loop is
busy several tokens travel as one chunk, and an async consumer (the OpenAI-compatible API) needs no
thread hop per token. When many streams run at once, each stream's chunks are also spaced (chunk_gap):
every chunk costs the app its trip through the HTTP stack, so past CHUNK_BUDGET chunks per second in all
the tokens of a stream travel together; the first chunk and the end are never held back.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Callable, Iterable

from app.chat.throttle import LiveCount
from app.triton.transport import LOOP_READS

CHUNK_BUDGET = 1000  # chunks per second across every stream before each stream's chunks are spaced
MAX_CHUNK_SECONDS = 0.05
LIVE = LiveCount()  # the pumps reading a stream now
_READING: set[asyncio.Task] = set()  # the loop's reading tasks, held until they end (asyncio keeps only weak ones)


def loop_context(loop: asyncio.AbstractEventLoop) -> contextvars.Context:
    """A copy of the current context in which the streams opened are read on `loop`."""
    context = contextvars.copy_context()
    context.run(LOOP_READS.set, loop)
    return context


def open_on_loop(opener: Callable[..., object], *args) -> asyncio.Future:
    """`opener(*args)` on one of the running loop's worker threads, with the streams it opens read on that loop;
    await the future for its result."""
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(None, loop_context(loop).run, opener, *args)


def chunk_gap(live: int, budget: float = CHUNK_BUDGET, most: float = MAX_CHUNK_SECONDS) -> float:
    """Seconds one stream's chunks are held apart while `live` streams run (0 while few run)."""
    gap = live / budget
    return 0.0 if gap < 0.005 else min(gap, most)


class DeltaPump:
    """Reads `stream` (text deltas) on its own daemon thread; iterate `texts()` on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, live: LiveCount = LIVE,
                 spacing: Callable[[int], float] = chunk_gap):
        """`spacing(live)`: seconds to hold this stream's chunks apart while `live` streams (counted in `live`) run."""
        self._loop = loop
        self._live = live
        self._spacing = spacing
        self._ready = asyncio.Event()
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._done = False
        self._holding = False  # the consumer is spacing its chunks: new text waits for the hold to end
        self.error: Exception | None = None

    def start(self, stream, on_end: Callable[[], None] | None = None) -> DeltaPump:
        """Start reading: a task on the loop for a stream that `reads_on_loop`, else a reader thread; `on_end()`
        runs once the stream has ended, whatever happened.

        The thread is a bare one (_thread): threading.Thread.start() waits until the new thread has run, which on
        a busy 2-core machine held the event loop about 2 ms per reply, and 32 chats that start together wait for
        each other's. Like a daemon thread it does not hold up the app's exit."""
        self._live.__enter__()
        if stream.reads_on_loop:  # a retry the stream opens while read here must read on this loop too
            task = self._loop.create_task(self.drive(stream, on_end), context=loop_context(self._loop))
            _READING.add(task)
            task.add_done_callback(_READING.discard)
        else:
            _thread.start_new_thread(self.run, (stream, on_end))
        return self

    async def drive(self, stream, on_end: Callable[[], None] | None = None) -> None:
        """Loop task: read a stream that reads on the loop to its end (or its error), then signal the end."""
        try:
            while True:
                await stream.ready()
                self._take(next(stream), self._ready.set)
        except StopIteration:
            pass
        except Exception as exc:  # noqa: BLE001 - any failure ends the reply; the consumer reads `error`
            self.error = exc
        finally:
            self._end(self._ready.set, on_end)

    def run(self, stream: Iterable[str], on_end: Callable[[], None] | None = None) -> None:
        """Reader thread: iterate the stream to its end (or its error), then signal the end."""
        try:
            for delta in stream:
                self._take(delta, self._wake)
        except Exception as exc:  # noqa: BLE001 - any failure ends the reply; the consumer reads `error`
            self.error = exc
        finally:
            self._end(self._wake, on_end)

    def _take(self, delta: str, wake: Callable[[], None]) -> None:
        """Keep a delta; `wake` the consumer when it is the first waiting (and the consumer is not holding)."""
        if delta:
            with self._lock:
                self._parts.append(delta)
                first = len(self._parts) == 1 and not self._holding
            if first:
                wake()

    def _end(self, wake: Callable[[], None], on_end: Callable[[], None] | None) -> None:
        with self._lock:
            self._done = True
        self._live.__exit__()
        wake()
        if on_end is not None:
            on_end()

    def _wake(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._ready.set)
        except RuntimeError:  # the loop has closed (app shutting down)
            pass

    def _release(self) -> None:
        """Event loop: the hold is over; go on at once when text is waiting."""
        with self._lock:
            self._holding = False
            waiting = bool(self._parts) or self._done
        if waiting:
            self._ready.set()

    async def texts(self) -> AsyncIterator[str]:
        """Text as it comes, one chunk per wake-up; ends when the stream ended (check `error` then)."""
        timer = None
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                with self._lock:
                    parts, self._parts, done = self._parts, [], self._done
                    gap = 0.0 if done else self._spacing(self._live.value)
                    self._holding = gap > 0
                if gap:
                    timer = self._loop.call_later(gap, self._release)
                if parts:
                    yield "".join(parts)
                if done:
                    return
        finally:
            if timer is not None:
                timer.cancel()
