"""The Chat tab's handlers, called directly (no layout, no browser): a message and its reply, the Sampling
settings as one value, a new picture starting what the model sees, Regenerate's versions, stepping, Continue's
refusal, Clear."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat.sampling import ChatSampling
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.web.pages.chat import (
    REPLY_OUTPUTS,
    on_clear,
    on_continue,
    on_regenerate,
    on_send,
    on_step,
    reply_controls,
)
from tests.compare_fakes import RecordingDeployment

SESSION = "session-1"
SHORT = ChatSampling(max_tokens=2)  # greedy, cut at two of the fake model's three words


@pytest.fixture
def ctx(monkeypatch) -> AppContext:
    context = AppContext(AppConfig(), deployment=RecordingDeployment())
    monkeypatch.setattr(context.adapter_checks, "start", lambda *_: None)  # the adapter check is not under test
    return context


def finished(updates) -> tuple:
    """The last update of a reply event: (box, chatbot, conversation, stop, regenerate, continue, older, version,
    newer)."""
    *_, last = list(updates)
    return last


def send(ctx, conversation, text, files=(), sampling=SHORT, adapter="base model") -> Conversation:
    return finished(on_send(ctx, SESSION, {"text": text, "files": list(files)}, conversation, adapter, sampling))[2]


def test_a_message_gets_its_reply_with_the_settings_as_one_value(ctx):
    updates = list(on_send(ctx, SESSION, {"text": " Hi ", "files": []}, Conversation(), "pirate", SHORT))
    box, shown, conversation, stop, regenerate, continue_button, *stepper = updates[-1]
    assert [turn.role for turn in conversation.turns] == ["user", "assistant"] and conversation.turns[0].text == "Hi"
    reply = conversation.last_reply.current
    assert reply.text == "reply from" and reply.adapter == "pirate" and reply.cut_at == 2
    assert reply.sampling.max_tokens == 2 and reply.sampling.top_k == 1  # greedy, as the panel chose
    assert shown[0] == {"role": "user", "content": "Hi"} and shown[1]["content"].startswith("reply from")
    assert isinstance(updates[0][0], gr.MultimodalTextbox) and updates[0][0].value == {"text": "", "files": []}
    assert not stop.interactive and regenerate.interactive
    assert continue_button.interactive and not any(button.visible for button in stepper)  # cut at 2, one version
    # the reply buttons are set when the run starts and when it ends, not at each streamed update in between
    assert len(updates) > 2 and all(update[5:] == (gr.skip(),) * (REPLY_OUTPUTS - 5) for update in updates[1:-1])
    assert not updates[0][5].interactive  # Continue waits for the reply's end
    assert ctx.deployment.requests[0].sampling.max_tokens == 2 and ctx.deployment.requests[0].adapter == "pirate"


def test_a_bad_setting_is_refused_and_nothing_changes(ctx):
    with pytest.warns(UserWarning, match="seed must be a whole number"):
        refused = list(on_send(ctx, SESSION, {"text": "Hi"}, Conversation(), "base model",
                               ChatSampling(decoding="sample", seed="1.5")))
    assert refused == [(gr.skip(),) * REPLY_OUTPUTS] and ctx.deployment.requests == []


def test_a_new_picture_starts_what_the_model_is_sent(ctx, tmp_path):
    first, second = tmp_path / "rocket.png", tmp_path / "coffee.png"
    talk = send(ctx, Conversation(), "What is this?", [str(first)])
    talk = send(ctx, talk, "And this?", [str(second)])
    assert len(talk) == 4 and ctx.deployment.requests[1].conversation.turns == (talk.turns[2],)
    assert talk.last_reply.current.context == (2,)
    send(ctx, talk, "And this?", [str(second)], ChatSampling(max_tokens=2, keep_pictures=True))
    assert len(ctx.deployment.requests[2].conversation) == 5  # the whole conversation


def test_regenerate_keeps_versions_and_stepping_shows_them(ctx):
    talk = send(ctx, Conversation(), "Hi", sampling=ChatSampling(max_tokens=20))
    talk = finished(on_regenerate(ctx, SESSION, talk, "french", SHORT))[2]
    reply = talk.last_reply
    assert [v.text for v in reply.versions] == ["reply from base", "reply from"] and reply.shown == 1
    assert [v.adapter for v in reply.versions] == [None, "french"]
    continue_button, older, version, newer, *branch_stepper = reply_controls(talk)
    assert version.value == "2/2" and older.interactive and not newer.interactive and continue_button.interactive
    assert not any(button.visible for button in branch_stepper)  # no message was edited
    shown, stepped = on_step(ctx, SESSION, talk, -1)
    assert stepped.last_reply.shown == 0 and shown[-1]["content"].startswith("reply from base")


def test_continue_needs_a_cut_reply_and_clear_empties(ctx):
    talk = send(ctx, Conversation(), "Hi", sampling=ChatSampling(max_tokens=20))
    with pytest.warns(UserWarning, match="Only a reply cut at the token limit"):
        assert list(on_continue(ctx, SESSION, talk, "base model", SHORT)) == [(gr.skip(),) * REPLY_OUTPUTS]
    assert on_clear(ctx, SESSION) == ([], Conversation())


def test_regenerate_under_greedy_says_it_gives_the_same_words(ctx, monkeypatch):
    said = []
    monkeypatch.setattr(gr, "Info", said.append)
    talk = send(ctx, Conversation(), "Hi")
    finished(on_regenerate(ctx, SESSION, talk, "base model", SHORT))
    assert len(said) == 1 and "same words" in said[0] and "Sample" in said[0]
    finished(on_regenerate(ctx, SESSION, talk, "base model", ChatSampling(decoding="sample", max_tokens=2)))
    assert len(said) == 1  # sampling: a new reply, nothing to say


def test_continue_counts_the_whole_reply_and_goes_on_after_stop(ctx):
    """After Continue the figures counted only the last piece ("8 tokens" after three); Continue was off after
    Stop."""
    from dataclasses import replace

    talk = send(ctx, Conversation(), "Hi")  # cut at two tokens
    first = talk.last_reply.current.figures
    assert first.startswith("2 tokens")
    talk = finished(on_continue(ctx, SESSION, talk, "base model", SHORT))[2]
    import re

    total, added = map(int, re.match(r"^(\d+) tokens \((\d+) after Continue\) · ", talk.last_reply.current.figures)
                       .groups())
    assert added >= 1 and total == 2 + added
    stopped = talk.with_last_reply(talk.last_reply.with_current(
        replace(talk.last_reply.current, cut_at=None, stopped=True)))
    assert reply_controls(stopped)[0].interactive  # Continue is on after Stop
    resumed = finished(on_continue(ctx, SESSION, stopped, "base model", SHORT))[2]
    assert resumed.last_reply.current.text.startswith(stopped.last_reply.current.text)
