"""Two answers streamed at once through the chat's request path (app.chat.turns.open_stream, as Compare's columns
are): each side its own conversation (a follow-up sends each model its own earlier answers), the same sampling,
seed and attachments. A failed side shows a sentence that names no contestant."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import partial

from app.arena.messages import MSG_ARENA_ANSWER_FAILED
from app.chat.stream_columns import StreamColumns
from app.chat.turns import open_stream, reply_text
from app.context import AppContext
from app.core.conversation import ContextPolicy, Conversation
from app.core.errors import ChatError
from app.core.sampling import SamplingParams

LOG = logging.getLogger(__name__)


class DuelRun:
    """Side A's and side B's streams, each read by its own thread; `texts()` is a snapshot of both."""

    def __init__(self, ctx: AppContext, conversations: list[Conversation], adapters: list[str | None],
                 params: SamplingParams):
        """`conversations`: each side's, ending with the person's message; `adapters`: None for the base model."""
        self._run = StreamColumns(
            [partial(open_stream, ctx, conversation.context_for_reply(ContextPolicy(), adapter).conversation, params,
                     None, adapter) for conversation, adapter in zip(conversations, adapters, strict=True)],
            on_error=_logged)

    def done(self) -> bool:
        return self._run.done()

    def texts(self) -> list[str]:
        """Both answers so far ("(stopped)" on a cancelled one, a sentence on a failed one)."""
        out = []
        for i, stream in enumerate(self._run.streams):
            text = reply_text(stream, final=not self._run.running(i))
            out.append(f"{text}\n\n{MSG_ARENA_ANSWER_FAILED}".strip() if i in self._run.errors else text)
        return out

    def cancel(self) -> None:
        self._run.cancel()

    def updates(self) -> Iterator[list[str]]:
        """Both texts every UPDATE_SECONDS until both have ended (the last snapshot after the end)."""
        yield from self._run.snapshots(self.texts)


def _logged(side: int, error: ChatError) -> None:
    """A failed side's sentence may name the adapter: kept in the log, not shown."""
    LOG.warning("arena answer %d failed: %s", side, error)
