"""Chat behaviour without widgets: validation, history shaping per adapter, images of the current turn."""

import pytest

from app.chat import turns as chat_logic
from app.chat.context import AppConfig, AppContext
from app.chat.messages import MSG_EMPTY_PROMPT
from app.core.constants import MAX_PROMPT_CHARS
from app.core.errors import InvalidRequest

PIRATE_REPLY = {"role": "assistant", "content": "Arr, Paris!\n\n*adapter: pirate*"}
BASE_REPLY = {"role": "assistant", "content": "Paris."}


def user(text):
    return {"role": "user", "content": text}


def test_validate_user_text():
    assert chat_logic.validate_user_text("  hi ") == "hi"
    with pytest.raises(InvalidRequest, match=MSG_EMPTY_PROMPT):
        chat_logic.validate_user_text("   ")
    with pytest.raises(InvalidRequest, match=str(MAX_PROMPT_CHARS)):
        chat_logic.validate_user_text("x" * (MAX_PROMPT_CHARS + 1))


def test_add_user_message_puts_images_before_text():
    history = chat_logic.add_user_message([], "What is it?", ["/tmp/a.png", "/tmp/b.png"])
    assert [chat_logic.file_path(m["content"]) for m in history] == ["/tmp/a.png", "/tmp/b.png", None]
    assert history[-1] == user("What is it?")


def test_file_path_understands_both_gradio_shapes():
    assert chat_logic.file_path({"path": "/x.png"}) == "/x.png"
    assert chat_logic.file_path([{"type": "file", "file": {"path": "/y.png"}}]) == "/y.png"
    assert chat_logic.file_path([{"type": "text", "text": "hi"}]) is None
    assert chat_logic.file_path("plain text") is None


def test_current_turn_images_only_after_last_reply():
    history = [{"role": "user", "content": {"path": "/old.png"}}, user("first"), BASE_REPLY,
               {"role": "user", "content": {"path": "/new.png"}}, user("second")]
    assert chat_logic.current_turn_images(history) == ["/new.png"]
    assert chat_logic.current_turn_images([user("a"), BASE_REPLY]) == []


def test_history_for_keeps_each_adapter_thread():
    history = [user("q1"), PIRATE_REPLY, user("q2"), BASE_REPLY, user("q3")]
    assert chat_logic.history_for(history, None) == [user("q2"), BASE_REPLY, user("q3")]
    assert chat_logic.history_for(history, "pirate") == [user("q1"), PIRATE_REPLY, user("q3")]
    assert chat_logic.history_for(history, None, "whole conversation") == history
    assert chat_logic.reply_adapter(PIRATE_REPLY) == "pirate" and chat_logic.reply_adapter(BASE_REPLY) is None


def test_replies_with_a_record_go_back_to_the_model_as_their_words_alone():
    from app.chat.versions import Reply, ReplyVersion, reply_message

    pirate = reply_message(Reply((ReplyVersion("Arr, Paris", "pirate", figures="2 tokens · pirate · K", cut_at=2),)))
    history = [user("q1"), pirate, user("q2"), BASE_REPLY, user("q3")]
    assert chat_logic.reply_adapter(pirate) == "pirate"
    assert chat_logic.history_for(history, "pirate") == [user("q1"), {"role": "assistant", "content": "Arr, Paris"},
                                                         user("q3")]
    assert chat_logic.history_for(history, None, "whole conversation")[1] == {"role": "assistant",
                                                                              "content": "Arr, Paris"}


class FakeStream:
    def __init__(self, text, cancelled=False):
        self.text, self.cancelled = text, cancelled


def test_reply_text_marks_stop_empty_and_adapter():
    assert chat_logic.reply_text(FakeStream(" Hi"), None, final=False) == "Hi"
    assert chat_logic.reply_text(FakeStream("Hi", cancelled=True), None, final=True) == "Hi (stopped)"
    assert chat_logic.reply_text(FakeStream("  "), None, final=True) == "(the model returned no text)"
    assert chat_logic.reply_text(FakeStream("Arr"), "pirate", final=True) == "Arr\n\n*adapter: pirate*"
    assert chat_logic.reply_text(FakeStream("Hi"), None, final=True) == "Hi"


def test_without_last_reply():
    assert chat_logic.without_last_reply([user("a"), BASE_REPLY]) == [user("a")]
    with pytest.raises(InvalidRequest, match="no message to regenerate"):
        chat_logic.without_last_reply([])


def test_unknown_adapter_refused_before_any_request(tmp_path):
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1"))
    with pytest.raises(InvalidRequest, match="There is no adapter named 'nope'"):
        chat_logic.check_adapter(ctx, "nope")
    assert chat_logic.check_adapter(ctx, None) is None
    assert chat_logic.check_adapter(ctx, "") is None
