"""model_repo_templates/shared/gil_safe.py: finished BLS streams are held for a while, then released by the
thread that keeps the next one (or by release_all), never beyond the newest `most`."""

import threading

from tests.template_models import load_shared_helper
from tests.unit.templates.conftest import _pb_utils


class Stream:
    def __init__(self, name, freed):
        self.name, self.freed = name, freed

    def __del__(self):
        self.freed.append((self.name, threading.current_thread().name))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _streams(**limits):
    module = load_shared_helper("gil_safe.py", _pb_utils())
    clock = Clock()
    return module.FinishedStreams(clock=clock, **limits), clock


def test_a_stream_is_held_for_the_given_seconds_then_released_by_the_next_keep():
    freed = []
    held, clock = _streams(seconds=30.0, most=10)
    held.keep(Stream("first", freed))
    clock.now = 29.0
    held.keep(Stream("second", freed))
    assert freed == [] and len(held) == 2
    clock.now = 31.0
    worker = threading.Thread(target=lambda: held.keep(Stream("third", freed)), name="request-thread")
    worker.start()
    worker.join()
    assert freed == [("first", "request-thread")] and len(held) == 2


def test_no_more_than_the_newest_most_are_held():
    freed = []
    held, _ = _streams(seconds=30.0, most=2)
    for name in ("a", "b", "c", "d"):
        held.keep(Stream(name, freed))
    assert [name for name, _ in freed] == ["a", "b"] and len(held) == 2


def test_release_all_frees_everything_in_the_calling_thread():
    freed = []
    held, _ = _streams()
    held.keep(Stream("a", freed))
    held.keep(Stream("b", freed))
    held.release_all()
    assert sorted(freed) == [("a", "MainThread"), ("b", "MainThread")] and len(held) == 0


class _Request:
    def __init__(self, names):
        self.names = names

    def requested_output_names(self):
        return self.names


def test_only_the_outputs_the_client_asked_for_are_kept():
    module = load_shared_helper("gil_safe.py", _pb_utils())
    outputs = {"text_output": 1, "sequence_index": 2, "cum_log_probs": 3}
    assert module.requested_only(_Request(["text_output", "cum_log_probs"]), outputs) == {"text_output": 1,
                                                                                          "cum_log_probs": 3}
    assert module.requested_only(_Request([]), outputs) == outputs  # none named: Triton sends them all
    assert module.requested_only({"a dict request": 1}, outputs) == outputs


class Sender:
    def __init__(self):
        self.asked, self.gone = 0, False

    def is_cancelled(self):
        self.asked += 1
        return self.gone


def test_cancel_poll_asks_at_most_once_per_period_and_remembers_a_cancel():
    module = load_shared_helper("gil_safe.py", _pb_utils())
    clock, sender = Clock(), Sender()
    poll = module.CancelPoll(sender, period=0.1, clock=clock)
    assert not poll() and sender.asked == 1
    sender.gone = True
    clock.now = 0.05
    assert not poll() and sender.asked == 1  # within the period: the client is not asked
    clock.now = 0.1
    assert poll() and sender.asked == 2
    clock.now = 0.15
    assert poll() and sender.asked == 2  # once cancelled, always: no more round trips


def test_cancel_poll_without_a_sender_never_asks():
    module = load_shared_helper("gil_safe.py", _pb_utils())
    assert module.CancelPoll(None)() is False
