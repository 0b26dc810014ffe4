"""DeltaPump: a blocking stream read on its own thread, or a stream that reads on the loop read by a task there; its
text handed to the event loop's consumer in batches."""

import asyncio
import threading
import time

import pytest

from app.api.stream_pump import DeltaPump
from app.core.errors import ServerUnreachable
from app.core.streams import StreamDefaults
from tests.threads import run_async as run


class Words(StreamDefaults):
    """A stream its iterating thread reads: the words of `words` (an iterator that may wait)."""

    def __init__(self, words):
        self._words = iter(words)

    def __iter__(self):
        return self

    def __next__(self) -> str:
        return next(self._words)


class LoopWords(StreamDefaults):
    """A stream read on the loop: a word arrives `gap` seconds after ready() is awaited; next() gives "" while
    nothing has arrived (as a Triton stream read on the loop does), then the word, then the end or `fail`."""

    reads_on_loop = True

    def __init__(self, words, gap: float, fail: Exception | None = None):
        self._words, self._gap, self._fail = list(words), gap, fail
        self._arrived: list[str] = []
        self.nothing_yet = 0  # times next() was asked before a word had arrived

    async def ready(self) -> None:
        if not self._arrived and self._words:
            await asyncio.sleep(self._gap)
            self._arrived.append(self._words.pop(0))

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self._arrived:
            return self._arrived.pop(0)
        if self._words:
            self.nothing_yet += 1
            return ""
        if self._fail is not None:
            raise self._fail
        raise StopIteration


def slow_words(words, gap: float, fail: Exception | None = None) -> Words:
    def wait_each():
        for word in words:
            time.sleep(gap)
            yield word
        if fail is not None:
            raise fail
    return Words(wait_each())


async def collect(stream, on_end=None):
    pump = DeltaPump(asyncio.get_running_loop()).start(stream, on_end=on_end)
    return [text async for text in pump.texts()], pump


def test_every_word_arrives_in_order_and_the_end_is_signalled():
    ended = threading.Event()
    chunks, pump = run(collect(slow_words(["a ", "b ", "", "c"], 0.01), on_end=ended.set))
    assert "".join(chunks) == "a b c" and pump.error is None
    assert ended.wait(1)


def test_a_busy_consumer_gets_words_batched():
    async def main():
        pump = DeltaPump(asyncio.get_running_loop()).start(slow_words([f"{i} " for i in range(40)], 0.005))
        chunks = []
        async for text in pump.texts():
            chunks.append(text)
            time.sleep(0.05)  # the loop is busy: words pile up and come as one chunk
        return chunks

    chunks = run(main())
    assert "".join(chunks).split() == [str(i) for i in range(40)]
    assert len(chunks) < 20


def test_an_error_ends_the_text_and_is_kept():
    ended = threading.Event()
    chunks, pump = run(collect(slow_words(["a"], 0.0, ServerUnreachable("gone")), on_end=ended.set))
    assert "".join(chunks) == "a"
    assert isinstance(pump.error, ServerUnreachable) and ended.wait(1)


def test_the_reader_thread_never_outlives_its_stream():
    import _thread

    before = _thread._count()  # threads started with _thread (the reader is one) that are still running
    ended = threading.Event()
    run(collect(slow_words(["x"] * 3, 0.0), on_end=ended.set))
    assert ended.wait(1)
    time.sleep(0.05)
    assert _thread._count() == before


@pytest.mark.parametrize("words", [[], [""]])
def test_an_empty_stream_ends_at_once(words):
    chunks, pump = run(collect(Words(words)))
    assert chunks == [] and pump.error is None


def test_many_streams_at_once_space_each_streams_chunks_but_not_its_end():
    from app.api.stream_pump import chunk_gap
    from app.chat.throttle import LiveCount

    assert chunk_gap(1) == 0.0 and chunk_gap(4) == 0.0  # few streams: every wake-up is a chunk
    assert chunk_gap(32) == 0.032 and chunk_gap(128) == 0.05
    busy = LiveCount()
    for _ in range(200):  # 200 other streams: this one's chunks are held 50 ms apart
        busy.__enter__()

    def words_after_the_first():  # the first word alone for 0.2 s: it is a chunk of its own however late the loop
        yield "0 "
        time.sleep(0.2)
        yield from slow_words([f"{i} " for i in range(1, 60)], 0.002)

    async def main(live):
        pump = DeltaPump(asyncio.get_running_loop(), live=live).start(Words(words_after_the_first()))
        started = time.monotonic()
        chunks = [text async for text in pump.texts()]
        return chunks, time.monotonic() - started

    alone, _ = run(main(LiveCount()))
    crowded, seconds = run(main(busy))
    words = "".join(f"{i} " for i in range(60))
    assert "".join(alone) == words and "".join(crowded) == words and crowded[0] == "0 "
    assert len(crowded) < len(alone) and len(crowded) <= (seconds - 0.2) / 0.05 + 3
    assert busy.value == 200  # its own count left when it ended


def test_a_stream_that_reads_on_the_loop_is_read_there_in_order_without_a_thread():
    import _thread

    ended = threading.Event()
    stream = LoopWords(["a ", "b ", "", "c"], 0.01)

    async def main():
        before = _thread._count()
        pump = DeltaPump(asyncio.get_running_loop()).start(stream, on_end=ended.set)
        started = _thread._count() - before  # while it reads
        return [text async for text in pump.texts()], pump, started

    chunks, pump, threads_started = run(main())
    assert "".join(chunks) == "a b c" and pump.error is None and ended.is_set()
    assert threads_started == 0  # no reader thread


def test_a_stream_read_on_the_loop_ends_with_its_error_kept():
    ended = threading.Event()
    chunks, pump = run(collect(LoopWords(["a"], 0.0, ServerUnreachable("gone")), on_end=ended.set))
    assert "".join(chunks) == "a" and isinstance(pump.error, ServerUnreachable) and ended.is_set()


def test_nothing_yet_from_a_stream_read_on_the_loop_is_neither_text_nor_its_end():
    stream = LoopWords(["late"], 0.05)
    assert next(stream) == "" and stream.nothing_yet == 1  # asked before ready(): nothing yet, and not the end
    chunks, pump = run(collect(stream))
    assert chunks == ["late"] and pump.error is None
