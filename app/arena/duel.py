"""Two answers streamed at once through the chat's request path (app.chat.turns.open_stream, as Compare's columns
are): each side its own conversation (a follow-up sends each model its own earlier answers), the same sampling,
seed and attachments. A failed side shows a sentence that names no contestant."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

from app.arena.messages import MSG_ARENA_ANSWER_FAILED
from app.chat.compare import UPDATE_SECONDS
from app.chat.context import AppContext
from app.chat.turns import open_stream, reply_text
from app.core.conversation import ContextPolicy, Conversation
from app.core.errors import ChatError
from app.core.sampling import SamplingParams

LOG = logging.getLogger(__name__)


class DuelRun:
    """Side A's and side B's streams, each read by its own thread; `texts()` is a snapshot of both."""

    def __init__(self, ctx: AppContext, conversations: list[Conversation], adapters: list[str | None],
                 params: SamplingParams):
        """`conversations`: each side's, ending with the person's message; `adapters`: None for the base model."""
        self._streams = []
        try:
            for conversation, adapter in zip(conversations, adapters, strict=True):
                sent = conversation.context_for_reply(ContextPolicy(), adapter).conversation
                self._streams.append(open_stream(ctx, sent, params, None, adapter))
        except ChatError:
            self.cancel()
            raise
        self._failed: set[int] = set()
        self._threads = [threading.Thread(target=self._drain, args=(i,), daemon=True)
                         for i in range(len(self._streams))]
        for thread in self._threads:
            thread.start()

    def _drain(self, index: int) -> None:
        try:
            for _ in self._streams[index]:
                pass
        except ChatError as exc:  # its sentence may name the adapter: kept in the log, not shown
            LOG.warning("arena answer %d failed: %s", index, exc)
            self._failed.add(index)

    def done(self) -> bool:
        return not any(thread.is_alive() for thread in self._threads)

    def texts(self) -> list[str]:
        """Both answers so far ("(stopped)" on a cancelled one, a sentence on a failed one)."""
        out = []
        for i, stream in enumerate(self._streams):
            text = reply_text(stream, final=not self._threads[i].is_alive())
            out.append(f"{text}\n\n{MSG_ARENA_ANSWER_FAILED}".strip() if i in self._failed else text)
        return out

    def cancel(self) -> None:
        for stream in self._streams:
            stream.cancel()

    def updates(self) -> Iterator[list[str]]:
        """Both texts every UPDATE_SECONDS until both have ended (the last snapshot after the end)."""
        while not self.done():
            yield self.texts()
            time.sleep(UPDATE_SECONDS)
        yield self.texts()
