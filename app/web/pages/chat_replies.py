"""The chat's reply buttons and a run of replies as the page shows it: Stop and Regenerate, Continue, the last
reply's version stepper and the stepper of an edited message's versions; a refusal as a toast."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import gradio as gr

from app.chat.outbox import Queued
from app.chat.reply_run import ReplySettings, run_replies
from app.context import AppContext
from app.core.conversation import Conversation
from app.web.chat_view import chat_messages
from app.web.labels import VERSION_OF

BRANCH_OF = "Message {number}: {shown}/{count}"  # the stepper of an edited message's versions


def controls(running: bool) -> tuple[gr.Button, gr.Button]:
    """Stop and Regenerate: Stop only while a reply runs, Regenerate only when none does."""
    return (gr.Button(interactive=running, variant="stop" if running else "secondary"),
            gr.Button(interactive=not running))


def reply_controls(conversation: Conversation) -> tuple:
    """Continue (enabled for a last reply cut at max tokens), the version stepper ‹ n/m › of the last reply (shown
    when it has more than one version) and `branch_controls`. Set by the events that change what the chat shows,
    never on each streamed update: a `chatbot.change` handler made every update a second round trip (the page's
    CPU tripled)."""
    reply = conversation.last_reply if conversation else None
    count = len(reply.versions) if reply else 0
    stepper = count > 1
    return (gr.Button(interactive=bool(reply and reply.current.can_continue)),
            gr.Button(visible=stepper, interactive=stepper and reply.shown > 0),
            gr.Button(visible=stepper, value=VERSION_OF.format(shown=reply.shown + 1, count=count) if stepper else ""),
            gr.Button(visible=stepper, interactive=stepper and reply.shown < count - 1),
            *branch_controls(conversation))


def branch_target(conversation: Conversation | None) -> int | None:
    """The edited message the branch stepper steps: the last one with more than one version (None: there is none)."""
    branched = conversation.branched() if conversation else ()
    return branched[-1] if branched else None


def branch_controls(conversation: Conversation | None) -> tuple:
    """The stepper ‹ Message n: k/m › of the edited message `branch_target` names (hidden when there is none)."""
    at = branch_target(conversation)
    if at is None:
        return gr.Button(visible=False), gr.Button(visible=False, value=""), gr.Button(visible=False)
    turn = conversation.turns[at]
    number = sum(1 for t in conversation.turns[:at + 1] if not t.is_reply)
    count = len(turn.branches)
    return (gr.Button(visible=True, interactive=turn.shown > 0),
            gr.Button(visible=True, value=BRANCH_OF.format(number=number, shown=turn.shown + 1, count=count)),
            gr.Button(visible=True, interactive=turn.shown < count - 1))


@dataclass(frozen=True)
class ReplyOutputs:
    """The components a run of replies updates; `components()` is the one place their order lives (the order of
    every tuple `replies` and `refuse` yield). `shown` are reply_controls' seven: Continue, the version stepper's
    three, the branch stepper's three."""

    box: gr.components.Component
    chatbot: gr.components.Component
    conversation: gr.components.Component
    stop: gr.Button
    regenerate: gr.Button
    shown: tuple[gr.Button, ...]

    def components(self) -> list:
        return [self.box, self.chatbot, self.conversation, self.stop, self.regenerate, *self.shown]


REPLY_OUTPUTS = 5 + 7  # len(ReplyOutputs.components()): the five above, then reply_controls' seven


def refuse(message: str, outputs: int = REPLY_OUTPUTS) -> tuple:
    """A toast, and every output left as it was: the conversation and the input stay usable."""
    gr.Warning(message)
    return (gr.skip(),) * outputs


def replies(ctx: AppContext, session: str, conversation: Conversation, first: Queued | None, settings: ReplySettings,
            box_value, **run) -> Iterator[tuple]:
    """A run's updates in ReplyOutputs' order; the box is touched once, at the start; the buttons at the start and
    when the run ends."""
    updates = run_replies(ctx, session, conversation, first, settings, **run)
    update = next(updates)
    yield box_value, chat_messages(update.conversation, update.streaming, update.waiting), update.conversation, \
        *controls(update.running), *reply_controls(update.conversation)
    for update in updates:
        buttons = (*controls(False), *reply_controls(update.conversation)) if not update.running else \
            (gr.skip(),) * (REPLY_OUTPUTS - 3)
        yield gr.skip(), chat_messages(update.conversation, update.streaming, update.waiting), update.conversation, \
            *buttons


