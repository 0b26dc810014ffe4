"""Compare: one prompt streamed at the same time through the base model and up to three adapters."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from app.chat.context import AppContext
from app.chat.turns import open_stream, reply_text, validate_user_text
from app.core.constants import MAX_COMPARE_ADAPTERS
from app.core.errors import ChatError, InvalidRequest
from app.deployments.base import SamplingParams

UPDATE_SECONDS = 0.1


class CompareRun:
    """Several streams, each read by its own thread; `texts()` is a snapshot of all columns."""

    def __init__(self, ctx: AppContext, prompt: str, adapters: list[str | None], params: SamplingParams):
        """`adapters`: one entry per column, None for the base model."""
        prompt = validate_user_text(prompt)
        chosen = [a or None for a in adapters]
        if not chosen:
            raise InvalidRequest("Pick the base model or at least one adapter to compare.")
        if len([a for a in chosen if a]) > MAX_COMPARE_ADAPTERS:
            raise InvalidRequest(f"Compare takes the base model and at most {MAX_COMPARE_ADAPTERS} adapters.")
        self.columns = list(dict.fromkeys(chosen))
        history = [{"role": "user", "content": prompt}]
        self._streams = [open_stream(ctx, history, params, None, name) for name in self.columns]
        self._errors: dict[int, str] = {}
        self._threads = [threading.Thread(target=self._drain, args=(i,), daemon=True)
                         for i in range(len(self._streams))]
        for thread in self._threads:
            thread.start()

    def _drain(self, index: int) -> None:
        try:
            for _ in self._streams[index]:
                pass
        except ChatError as exc:
            self._errors[index] = str(exc)

    def done(self) -> bool:
        return not any(t.is_alive() for t in self._threads)

    def texts(self) -> list[str]:
        out = []
        for i, stream in enumerate(self._streams):
            text = reply_text(stream, None, final=not self._threads[i].is_alive())
            out.append(f"{text}\n\n⚠️ {self._errors[i]}" if i in self._errors else text)
        return out

    def cancel(self) -> None:
        for stream in self._streams:
            stream.cancel()

    def updates(self) -> Iterator[list[str]]:
        """Snapshots every UPDATE_SECONDS until every column has finished."""
        try:
            while not self.done():
                yield self.texts()
                time.sleep(UPDATE_SECONDS)
            yield self.texts()
        finally:
            self.cancel()
