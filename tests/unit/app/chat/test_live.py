"""The users' figures (counted by app/chat/chat_stream.py): replies in progress, waiting for a first token, tokens/s, time to first token, gaps."""

from __future__ import annotations

import gc
import math

from app.chat import live
from app.chat.chat_stream import ChatStream
from app.core.streams import StreamDefaults


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Reply(StreamDefaults):
    """A reply stream as deployments return it: text pieces, a chunk count, cancel()."""

    def __init__(self, pieces):
        self._pieces, self.chunks, self.cancelled, self.text = iter(pieces), 0, False, ""
        self.time_to_first_token = None

    def __iter__(self):
        return self

    def __next__(self):
        piece = next(self._pieces)
        self.chunks += 1
        self.text += piece
        return piece

    def cancel(self):
        self.cancelled = True


def test_a_reply_is_waiting_then_answering_then_done():
    clock = Clock()
    replies = live.LiveReplies(min_interval=0, clock=clock)
    stream = ChatStream(Reply(["a", "b", "c"]), replies)
    assert (replies.read().in_progress, replies.read().waiting) == (1, 1)
    clock.now += 0.25
    assert next(stream) == "a" and stream.text == "a" and stream.chunks == 1  # the stream's own attributes
    first = replies.read()
    assert (first.in_progress, first.waiting, first.tokens, first.first_tokens) == (1, 0, 1, (0.25,))
    assert list(stream) == ["b", "c"]
    done = replies.read()
    assert (done.in_progress, done.waiting, done.tokens, done.first_tokens) == (0, 0, 3, ())


def test_cancelled_and_dropped_replies_end():
    replies = live.LiveReplies(min_interval=0)
    cancelled = ChatStream(Reply(["a", "b"]), replies)
    cancelled.cancel()
    assert cancelled.cancelled and replies.read().in_progress == 0
    dropped = ChatStream(Reply(["a", "b"]), replies)
    next(dropped)
    assert replies.read().in_progress == 1
    del dropped  # a reader that went away without finishing
    gc.collect()
    assert replies.read().in_progress == 0


def test_series_rates_first_tokens_and_gaps():
    clock = Clock()
    replies = live.LiveReplies(min_interval=1.0, clock=clock)
    replies.read()
    stream = ChatStream(Reply(["x"] * 20), replies)
    clock.now += 0.5
    for _ in range(10):
        next(stream)
    clock.now += 1.5
    replies.read()  # 10 tokens over 2 s
    clock.now += 60  # nobody looked for a minute
    replies.read()
    rows = replies.series()

    def values(metric):
        return [(r["t"], r["value"]) for r in rows if r["metric"] == metric]

    rate = values(live.TOKENS_PER_SECOND)
    assert rate[0] == (-60.0, 5.0) and rate[1][0] == 0.0 and math.isnan(rate[1][1])  # a gap, not a ramp
    middle = [v for t, v in values(live.IN_PROGRESS) if -60 < t < 0]
    assert middle and all(math.isnan(v) for v in middle)
    first = values(live.FIRST_TOKEN_MS)
    assert (-60.0, 500.0) in first and math.isnan(dict(first)[0.0])  # 0.5 s, then none in the last 10 s


def test_the_adapter_data_each_reply_sent_is_counted_once():
    replies = live.LiveReplies(min_interval=0.0, clock=Clock())
    first = Reply(["a"])
    first.lora_bytes_sent, first.weights_sent = 8 + 4096, True
    stream = ChatStream(first, replies)
    list(stream)
    stream.cancel()  # the end is counted once, whether by the last piece or by a cancel after it
    reading = replies.read()
    assert (reading.lora_last, reading.lora_last_weights, reading.lora_total) == (4104, True, 4104)
    later = Reply(["b"])
    later.lora_bytes_sent, later.weights_sent = 8, False
    list(ChatStream(later, replies))
    reading = replies.read()
    assert (reading.lora_last, reading.lora_last_weights, reading.lora_total) == (8, False, 4112)
    list(ChatStream(Reply(["c"]), replies))  # a stream without adapter data (another deployment kind): nothing added
    assert replies.read().lora_total == 4112


def test_replies_in_progress_count_until_each_ends():
    replies = live.LiveReplies(min_interval=0)
    first, second = ChatStream(Reply(["a"]), replies), ChatStream(Reply(["b"]), replies)
    assert replies.in_progress() == 2
    list(first)
    assert replies.in_progress() == 1
    second.cancel()
    assert replies.in_progress() == 0
