"""Chat behaviour without widgets: validation, the person's new message, Regenerate's start, stream texts."""

import pytest

from app.chat import turns as chat_logic
from app.chat.messages import MSG_EMPTY_PROMPT
from app.context import AppConfig, AppContext
from app.core.constants import MAX_PROMPT_CHARS
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest

BASE_REPLY = Turn.reply(ReplyVersion("Paris."))


def test_validate_user_text():
    assert chat_logic.validate_user_text("  hi ") == "hi"
    with pytest.raises(InvalidRequest, match=MSG_EMPTY_PROMPT):
        chat_logic.validate_user_text("   ")
    with pytest.raises(InvalidRequest, match=str(MAX_PROMPT_CHARS)):
        chat_logic.validate_user_text("x" * (MAX_PROMPT_CHARS + 1))


def test_add_user_message_keeps_its_images_on_the_turn():
    talk = chat_logic.add_user_message(Conversation(), " What is it? ", ["/tmp/a.png", "/tmp/b.png"])
    assert talk.turns == (Turn.user("What is it?", (Media.of("/tmp/a.png"), Media.of("/tmp/b.png"))),)
    with pytest.raises(InvalidRequest, match=MSG_EMPTY_PROMPT):
        chat_logic.add_user_message(talk, "  ", None)


def test_a_file_alone_is_a_message():
    assert chat_logic.validate_user_text("  ", with_files=True) == ""
    talk = chat_logic.add_user_message(Conversation(), " ", ["/tmp/page.png"])
    assert talk.turns == (Turn.user("", (Media.of("/tmp/page.png"),)),)
    assert talk.current_media() == (Media.of("/tmp/page.png"),)
    with pytest.raises(InvalidRequest, match=str(MAX_PROMPT_CHARS)):
        chat_logic.validate_user_text("x" * (MAX_PROMPT_CHARS + 1), with_files=True)


class FakeStream:
    def __init__(self, text, cancelled=False):
        self.text, self.cancelled = text, cancelled


def test_reply_text_marks_stop_and_empty():
    assert chat_logic.reply_text(FakeStream(" Hi"), final=False) == "Hi"
    assert chat_logic.reply_text(FakeStream("Hi", cancelled=True), final=True) == "Hi (stopped)"
    assert chat_logic.reply_text(FakeStream("  "), final=True) == "(the model returned no text)"
    assert chat_logic.reply_text(FakeStream(" more"), final=False, keep_space=True) == " more"


def test_without_last_reply():
    talk = Conversation((Turn.user("a"), BASE_REPLY))
    assert chat_logic.without_last_reply(talk) == Conversation((Turn.user("a"),))
    with pytest.raises(InvalidRequest, match="no message to regenerate"):
        chat_logic.without_last_reply(Conversation())


def test_the_conversation_is_bounded_before_the_server_sees_it():
    long = Conversation((Turn.user("z" * 60_000), Turn.reply(ReplyVersion("y" * 60_000)), Turn.user("z" * 60_000)))
    with pytest.raises(InvalidRequest, match="180,000"):
        chat_logic.check_conversation(long, None)


def test_unknown_adapter_refused_before_any_request(tmp_path):
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1"))
    with pytest.raises(InvalidRequest, match="There is no adapter named 'nope'"):
        chat_logic.check_adapter(ctx, "nope")
    assert chat_logic.check_adapter(ctx, None) is None
    assert chat_logic.check_adapter(ctx, "") is None


def test_the_figures_line_says_how_the_new_messages_video_and_pdf_went():
    video = Media(name="ball.gif", kind="video", frames=("f1.png",), detail="GIF video: 1 frames sampled evenly")
    pdf = Media(name="a.pdf", kind="pdf", frames=("p1.png",), detail="PDF (1 page): page 1 sent as pictures")
    talk = Conversation((Turn.user("old", (pdf,)), BASE_REPLY, Turn.user("new", (video,))))
    assert chat_logic.media_figures("3 tokens", talk) == "3 tokens · GIF video: 1 frames sampled evenly"
    assert chat_logic.media_figures("3 tokens", Conversation((Turn.user("hi"),))) == "3 tokens"
