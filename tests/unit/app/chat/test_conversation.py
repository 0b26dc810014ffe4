"""Queued messages in the shown conversation: visible while they wait, never sent to the model as such."""

from app.chat.conversation import PENDING_PREFIX, is_pending, pending_view, without_pending
from app.chat.outbox import Queued


def test_waiting_messages_show_with_their_images_counted():
    view = pending_view([Queued("Second question"), Queued("What is it?", ("/a.png", "/b.png"))])
    assert view == [{"role": "user", "content": PENDING_PREFIX + "Second question"},
                    {"role": "user", "content": PENDING_PREFIX + "[2 images] What is it?"}]
    assert all(is_pending(m) for m in view)


def test_without_pending_keeps_the_real_conversation():
    real = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert without_pending([*real, *pending_view([Queued("next")])]) == real
    assert not is_pending({"role": "assistant", "content": PENDING_PREFIX + "x"})
