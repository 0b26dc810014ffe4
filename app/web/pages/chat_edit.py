"""Editing an earlier message of the chat: the edit becomes a new version of that message, answered at once, and
the earlier versions keep the turns that followed them; a stepper steps between the versions (branches)."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr

from app.chat.messages import MSG_BUSY_EDIT, MSG_BUSY_VERSIONS, MSG_EDIT_MESSAGES_ONLY
from app.chat.reply_run import ReplySettings
from app.chat.sampling import ChatSampling
from app.chat.turns import validate_user_text
from app.context import AppContext
from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.web.chat_view import chat_messages, message_turn
from app.web.labels import adapter_of
from app.web.pages.chat_replies import branch_target, refuse, replies


def edited_text(value: object) -> str:
    """The words of an edited message as the Chatbot sends them: a string, or a list of parts with text."""
    if isinstance(value, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in value)
    return value if isinstance(value, str) else ""


def on_edit(ctx: AppContext, session: str, conversation: Conversation, index: int | tuple, value: object,
            adapter_label: str, sampling: ChatSampling) -> Iterator[tuple]:
    """The person's message at Chatbot message `index` says `value` now: a new version of it (its pictures kept),
    answered with the panel's settings; the turns after it stay with the earlier version."""
    conversation, ctx = conversation or Conversation(), ctx.for_session(session)
    place = message_turn(conversation, index[0] if isinstance(index, tuple | list) else index)
    if place is None or conversation.turns[place].is_reply:
        yield refuse(MSG_EDIT_MESSAGES_ONLY)
        return
    try:
        text = validate_user_text(edited_text(value), bool(conversation.turns[place].media))
        sampling.params()
    except ChatError as exc:
        yield refuse(str(exc))
        return
    if not ctx.outbox.start(session):
        yield refuse(MSG_BUSY_EDIT)
        return
    settings = ReplySettings(sampling, adapter_of(adapter_label))
    yield from replies(ctx, session, conversation.edited(place, text), None, settings, gr.skip())


def on_step_branch(ctx: AppContext, session: str, conversation: Conversation, by: int) -> tuple:
    """Show the version `by` places later (earlier when negative) of the edited message the stepper names, with
    the turns that followed it: (chatbot, conversation)."""
    if ctx.outbox.busy(session):
        gr.Warning(MSG_BUSY_VERSIONS)
        return gr.skip(), gr.skip()
    at = branch_target(conversation)
    if at is None:
        return gr.skip(), gr.skip()
    stepped = conversation.stepped_branch(at, by)
    return chat_messages(stepped), stepped


def wire(ctx: AppContext, chatbot: gr.Chatbot, conversation: gr.State, adapter: gr.Dropdown, sampling: list,
         outputs: list, steppers: tuple[gr.Button, gr.Button]) -> tuple[list, list]:
    """The Chatbot's edit answered (`outputs`: the reply events' outputs) and the branch stepper's two buttons
    (`steppers`: older, newer). (the edit event, the step events)"""
    def edit(request: gr.Request, data: gr.EditData, shown, adapter_label, *values):
        yield from on_edit(ctx, request.session_hash, shown, data.index, data.value, adapter_label,
                           ChatSampling.from_values(*values))

    def step(by: int):
        def handler(request: gr.Request, shown):
            return on_step_branch(ctx, request.session_hash, shown, by)
        return handler

    edited = chatbot.edit(edit, [conversation, adapter, *sampling], outputs, api_visibility="private")
    stepped = [button.click(step(by), conversation, [chatbot, conversation], api_visibility="private",
                            show_progress="hidden") for button, by in zip(steppers, (-1, 1), strict=True)]
    return [edited], stepped
