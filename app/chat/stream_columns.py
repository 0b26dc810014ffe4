"""Several reply streams read at the same time, one thread each: Compare's columns and the Arena's two sides.

Opened all or none (a refusal cancels those already open); each column keeps its error sentence and the time it
ended; `snapshots` gives a caller's view every UPDATE_SECONDS until every column has ended, then once more."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from app.core.errors import ChatError

UPDATE_SECONDS = 0.1
View = TypeVar("View")


class StreamColumns:
    def __init__(self, openers: list[Callable[[], object]], on_error: Callable[[int, ChatError], None] | None = None):
        """`openers`: one per column, each opening its reply stream; `on_error(column, error)` is told of a failure
        (the sentence is kept in `errors` either way)."""
        self.streams: list = []
        try:
            for open_column in openers:
                self.streams.append(open_column())
        except ChatError:
            self.cancel()  # the columns opened before the refusal
            raise
        self._on_error = on_error
        self.errors: dict[int, str] = {}
        self.ended: dict[int, float] = {}
        self._threads = [threading.Thread(target=self._drain, args=(i,), daemon=True) for i in range(len(self.streams))]
        for thread in self._threads:
            thread.start()

    def _drain(self, index: int) -> None:
        try:
            for _ in self.streams[index]:
                pass
        except ChatError as exc:
            self.errors[index] = str(exc)
            if self._on_error is not None:
                self._on_error(index, exc)
        finally:
            self.ended[index] = time.monotonic()

    def running(self, index: int) -> bool:
        return self._threads[index].is_alive()

    def done(self) -> bool:
        return not any(thread.is_alive() for thread in self._threads)

    def cancel(self) -> None:
        for stream in self.streams:
            stream.cancel()

    def snapshots(self, view: Callable[[], View]) -> Iterator[View]:
        """view() every UPDATE_SECONDS while a column runs, then the last one after the end."""
        while not self.done():
            yield view()
            time.sleep(UPDATE_SECONDS)
        yield view()
