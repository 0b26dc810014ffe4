"""Editing an earlier message, called directly: the edit is answered as a new version of the message, the stepper
steps back to the turns of the earlier version; replies and busy sessions are refused."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat.sampling import ChatSampling
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation, ReplyVersion, Turn
from app.web.pages.chat_edit import edited_text, on_edit, on_step_branch
from app.web.pages.chat_replies import REPLY_OUTPUTS, reply_controls
from tests.compare_fakes import RecordingDeployment

SESSION = "session-1"
SHORT = ChatSampling(max_tokens=2)


@pytest.fixture
def ctx(monkeypatch) -> AppContext:
    context = AppContext(AppConfig(), deployment=RecordingDeployment())
    monkeypatch.setattr(context.adapter_checks, "start", lambda *_: None)
    return context


def three_turns() -> Conversation:
    talk = Conversation()
    for number in (1, 2, 3):
        talk = talk.with_turn(Turn.user(f"Q{number}")).with_turn(Turn.reply(ReplyVersion(f"A{number}")))
    return talk


def test_an_edited_first_message_is_answered_and_the_stepper_goes_back(ctx):
    *_, last = list(on_edit(ctx, SESSION, three_turns(), 0, [{"type": "text", "text": "Q1 again"}], "base model",
                            SHORT))
    talk = last[2]
    assert [t.text for t in talk.turns] == ["Q1 again", "reply from"] and talk.turns[0].shown == 1
    assert ctx.deployment.requests[-1].conversation.turns == (Turn.user("Q1 again"),)  # the later turns are not sent
    older, label, newer = last[-3:]
    assert label.value == "Message 1: 2/2" and older.interactive and not newer.interactive
    shown, back = on_step_branch(ctx, SESSION, talk, -1)
    assert [t.text for t in back.turns] == [t.text for t in three_turns().turns]
    assert [m["content"] for m in shown][:2] == ["Q1", "A1"]
    assert reply_controls(back)[-2].value == "Message 1: 1/2"


def test_only_a_message_of_the_person_is_edited_and_not_while_a_reply_runs(ctx):
    with pytest.warns(UserWarning, match="Only your own messages"):
        assert list(on_edit(ctx, SESSION, three_turns(), 1, "A1?", "base model", SHORT)) == \
            [(gr.skip(),) * REPLY_OUTPUTS]
    with pytest.warns(UserWarning, match="Type a message first"):
        list(on_edit(ctx, SESSION, three_turns(), 0, "  ", "base model", SHORT))
    assert ctx.outbox.start(SESSION)  # a reply runs
    with pytest.warns(UserWarning, match="press Stop first"):
        list(on_edit(ctx, SESSION, three_turns(), 0, "Q1 again", "base model", SHORT))
    assert ctx.deployment.requests == []


def test_edited_text_reads_a_string_or_parts():
    assert edited_text("a") == "a" and edited_text([{"type": "text", "text": "b"}]) == "b" and edited_text(None) == ""
