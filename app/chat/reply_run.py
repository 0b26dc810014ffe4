"""One browser session's run of replies: the reply to a message (or a Regenerate, or a Continue), then to each
message queued meanwhile, in order; waiting messages are listed with every update until they are sent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

from app.chat.chat_context import ChatContext
from app.chat.outbox import Queued
from app.chat.sampling import ChatSampling
from app.chat.turns import add_user_message, continue_reply, stream_reply
from app.core.conversation import Conversation, Turn


@dataclass(frozen=True)
class ReplySettings:
    """What a reply uses: the panel's Sampling settings (a fresh seed per reply) and the adapter (None: base model)."""

    sampling: ChatSampling = ChatSampling()
    adapter: str | None = None


@dataclass(frozen=True)
class RunUpdate:
    """The conversation as the run has it (the person's messages sent so far, finished replies), the words of the
    reply being written (None between replies), the messages still waiting, and whether the run goes on."""

    conversation: Conversation
    streaming: str | None = None
    waiting: tuple[Queued, ...] = ()
    running: bool = True


def run_replies(ctx: ChatContext, session: str, conversation: Conversation, first: Queued | None,
                settings: ReplySettings, earlier: Turn | None = None,
                continuing: bool = False) -> Iterator[RunUpdate]:
    """Yield the run's updates. The caller has made the session busy (Outbox.offer or start); `first` is the
    message that did so, None to answer the conversation as it is (Regenerate: `earlier` is the reply it replaces,
    whose versions are kept; `continuing`: go on with the conversation's last reply); queued messages are answered
    with their own settings when they carry them. Clear (a new outbox epoch) empties the conversation; messages
    queued after it are answered in the new one."""
    outbox = ctx.outbox
    epoch = outbox.epoch(session)
    message, finished = first, False

    def update(shown: Conversation, streaming: str | None = None) -> RunUpdate:
        return RunUpdate(shown, streaming, tuple(outbox.waiting(session)))

    try:
        while True:
            if message is not None:
                conversation = add_user_message(conversation, message.text, list(message.files))
                settings = message.settings or settings  # each message keeps the adapter it was sent with
            yield update(conversation)  # the message shows at once
            sampling = settings.sampling
            if continuing:
                replies = continue_reply(ctx, session, conversation, sampling.params(), sampling.system_prompt or None,
                                         sampling.policy())
            else:
                replies = stream_reply(ctx, session, conversation, sampling.params(), sampling.system_prompt or None,
                                       settings.adapter, sampling.policy(), earlier)
            earlier, continuing = None, False  # only the run's first reply regenerates or continues
            with closing(replies):  # leaving early cancels the server request
                for reply in replies:
                    if outbox.epoch(session) != epoch:
                        break
                    if reply.streaming is None:
                        conversation = reply.conversation
                    yield update(reply.conversation, reply.streaming)
            if outbox.epoch(session) != epoch:  # cleared while replying
                conversation, epoch = Conversation(), outbox.epoch(session)
                yield update(conversation)
            message = outbox.next(session)
            if message is None:
                finished = True
                break
        yield RunUpdate(conversation, running=False)
    finally:
        if not finished:  # the page went away mid-reply: nobody will read what waits
            outbox.release(session)
