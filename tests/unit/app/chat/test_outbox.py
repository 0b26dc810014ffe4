"""Messages sent while a reply runs: queued in order, never lost between "busy" and "idle"."""

import threading

import pytest

from app.chat.outbox import Outbox, Queued
from app.core.errors import InvalidRequest


def test_first_message_starts_the_rest_wait_in_order():
    outbox = Outbox()
    assert outbox.offer("s", Queued("one")) is True
    assert outbox.offer("s", Queued("two")) is False
    assert outbox.offer("s", Queued("three", ("/tmp/a.png",))) is False
    assert [m.text for m in outbox.waiting("s")] == ["two", "three"]
    assert outbox.next("s") == Queued("two")
    assert outbox.next("s") == Queued("three", ("/tmp/a.png",))
    assert outbox.busy("s")
    assert outbox.next("s") is None and not outbox.busy("s")  # idle now: the next message starts again
    assert outbox.offer("s", Queued("four")) is True


def test_sessions_are_separate():
    outbox = Outbox()
    assert outbox.offer("a", Queued("x")) and outbox.offer("b", Queued("y"))
    assert outbox.waiting("a") == [] and outbox.waiting("b") == []


def test_a_full_queue_says_so():
    outbox = Outbox(limit=2)
    outbox.offer("s", Queued("running"))
    outbox.offer("s", Queued("1"))
    outbox.offer("s", Queued("2"))
    with pytest.raises(InvalidRequest, match="2 messages are already waiting"):
        outbox.offer("s", Queued("3"))


def test_regenerate_start_only_when_idle():
    outbox = Outbox()
    assert outbox.start("s") is True
    assert outbox.start("s") is False
    assert outbox.offer("s", Queued("meanwhile")) is False  # queued behind the regenerated reply


def test_clear_drops_waiting_and_bumps_the_epoch():
    outbox = Outbox()
    outbox.offer("s", Queued("running"))
    outbox.offer("s", Queued("waiting"))
    before = outbox.epoch("s")
    outbox.clear("s")
    assert outbox.waiting("s") == [] and outbox.epoch("s") == before + 1
    assert outbox.next("s") is None


def test_release_forgets_the_session():
    outbox = Outbox()
    outbox.offer("s", Queued("running"))
    outbox.offer("s", Queued("waiting"))
    outbox.release("s")
    assert not outbox.busy("s") and outbox.waiting("s") == []


def test_no_message_is_lost_when_a_reply_ends_as_another_arrives():
    """Many senders race the reply's end: every message is either started or handed to the running reply."""
    outbox, started, handed = Outbox(limit=10_000), [], []
    outbox.offer("s", Queued("first"))
    barrier = threading.Barrier(9)

    def send(i):
        barrier.wait()
        for j in range(200):
            if outbox.offer("s", Queued(f"{i}-{j}")):
                started.append(f"{i}-{j}")

    def reply_loop():
        barrier.wait()
        for _ in range(2000):
            message = outbox.next("s")
            if message is None:
                continue
            handed.append(message.text)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)] + [threading.Thread(target=reply_loop)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    while (message := outbox.next("s")) is not None:
        handed.append(message.text)
    assert sorted(started + handed) == sorted(f"{i}-{j}" for i in range(8) for j in range(200))
