"""One browser session's run of replies: the reply to a message (or a Regenerate), then to each message
queued meanwhile, in order; waiting messages show at the end of the conversation until they are sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass

from app.chat.context import AppContext
from app.chat.outbox import Queued
from app.chat.turns import add_user_message, continue_reply, stream_reply
from app.chat.versions import Reply
from app.core.sampling import SamplingParams

PENDING_PREFIX = "*waiting to be sent:* "  # marks a queued message in the shown conversation


@dataclass(frozen=True)
class ReplySettings:
    """What every reply of the run uses; `sampling()` is called per reply (a fresh seed each time)."""

    sampling: Callable[[], SamplingParams]
    system_prompt: str | None = None
    adapter: str | None = None
    history_mode: str = "same adapter"


def is_pending(message: dict) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(PENDING_PREFIX)


def without_pending(history: list[dict]) -> list[dict]:
    """The conversation without the shown-only entries of queued messages."""
    return [m for m in history if not is_pending(m)]


def pending_view(waiting: list[Queued]) -> list[dict]:
    """Queued messages as the conversation shows them until they are sent."""
    out = []
    for message in waiting:
        images = f"[{len(message.files)} image{'s' if len(message.files) > 1 else ''}] " if message.files else ""
        out.append({"role": "user", "content": PENDING_PREFIX + images + message.text})
    return out


def run_replies(ctx: AppContext, session: str, history: list[dict], first: Queued | None,
                settings: ReplySettings, earlier: Reply | None = None,
                continuing: bool = False) -> Iterator[tuple[list[dict], bool]]:
    """Yield (conversation to show, still running). The caller has made the session busy (Outbox.offer or
    start); `first` is the message that did so, None to answer the history as it is (Regenerate: `earlier` is
    the reply it replaces, whose versions are kept; `continuing`: go on with the history's last reply); queued
    messages are answered with their own settings when they carry them. Clear
    (a new outbox epoch) empties the conversation; messages queued after it are answered in the new one."""
    outbox = ctx.outbox
    epoch = outbox.epoch(session)
    history = without_pending(history)
    message, finished = first, False
    try:
        while True:
            if message is not None:
                history = add_user_message(history, message.text, list(message.files))
                settings = message.settings or settings  # each message keeps the adapter it was sent with
            yield [*history, *pending_view(outbox.waiting(session))], True  # the message shows at once
            if continuing:
                replies = continue_reply(ctx, session, history, settings.sampling(), settings.system_prompt,
                                         settings.history_mode)
            else:
                replies = stream_reply(ctx, session, history, settings.sampling(), settings.system_prompt,
                                       settings.adapter, settings.history_mode, earlier)
            earlier, continuing = None, False  # only the run's first reply regenerates or continues
            with closing(replies):  # leaving early cancels the server request
                for update in replies:
                    if outbox.epoch(session) != epoch:
                        break
                    history = update
                    yield [*history, *pending_view(outbox.waiting(session))], True
            if outbox.epoch(session) != epoch:  # cleared while replying
                history, epoch = [], outbox.epoch(session)
                yield [], True
            message = outbox.next(session)
            if message is None:
                finished = True
                break
        yield history, False
    finally:
        if not finished:  # the page went away mid-reply: nobody will read what waits
            outbox.release(session)
