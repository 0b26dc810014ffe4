"""app/chat/chat_stream.py: the one reply stream the chat hands out ends every failure with a sentence (the
counting is tested in test_live.py)."""

import logging

import pytest

from app.chat.chat_stream import ChatStream
from app.chat.live import LiveReplies
from app.chat.turns import stream_reply
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation, Turn
from app.core.errors import InvalidImage, ReplyFailed
from app.core.sampling import SamplingParams
from tests.compare_fakes import RecordingDeployment, WordStream


class BreaksAfterOneWord(WordStream):
    def __next__(self):
        if self.chunks == 1:
            raise KeyError("input_ids")
        return super().__next__()


def test_a_failure_opening_the_reply_becomes_a_sentence_and_is_logged(caplog):
    def template_refuses():
        raise ValueError("No user query found in messages.\nmore lines")

    with caplog.at_level(logging.ERROR), pytest.raises(ReplyFailed) as raised:
        ChatStream.open(template_refuses, LiveReplies())
    assert "ValueError: No user query found in messages." in str(raised.value)
    assert "more lines" not in str(raised.value)
    assert "Traceback" in caplog.text or caplog.records[0].exc_info is not None


def test_a_chat_error_passes_unchanged():
    def refuses():
        raise InvalidImage("cat.png is damaged.")

    with pytest.raises(InvalidImage, match="cat.png is damaged."):
        ChatStream.open(refuses, LiveReplies())


def test_a_failure_while_streaming_becomes_a_sentence_and_the_stream_keeps_its_fields():
    replies = LiveReplies()
    stream = ChatStream(BreaksAfterOneWord("one two three"), replies)
    assert next(stream) == "one" and replies.in_progress() == 1
    with pytest.raises(ReplyFailed, match="KeyError"):
        next(stream)
    assert stream.text == "one " and stream.chunks == 1 and replies.in_progress() == 0  # the failure ended it
    stream.cancel()
    assert stream.cancelled


class TemplateRefuses(RecordingDeployment):
    def open_reply(self, request):
        raise ValueError("apply_chat_template got no message")


def test_the_chat_reply_ends_with_the_failure_instead_of_hanging():
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1"), deployment=TemplateRefuses())
    asked = Conversation((Turn.user("hello"),))
    updates = list(stream_reply(ctx, "session", asked, SamplingParams(max_tokens=8)))
    last = updates[-1].conversation.turns[-1]
    assert updates[-1].streaming is None and last.is_reply
    assert "ValueError: apply_chat_template got no message" in last.current.note
    assert "The app's log has the details" in last.current.note
