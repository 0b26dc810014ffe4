"""app/chat/stream_columns.py: several streams read at once (Compare's columns, the Arena's sides)."""

import threading

import pytest

from app.chat.stream_columns import StreamColumns
from app.core.errors import InvalidRequest, ServerUnreachable


class FakeStream:
    def __init__(self, pieces=("a", "b"), fail: Exception | None = None, gate: threading.Event | None = None):
        self.pieces, self.fail, self.gate, self.cancelled, self.text = list(pieces), fail, gate, False, ""

    def __iter__(self):
        return self

    def __next__(self):
        if self.gate is not None:
            self.gate.wait(5)
        if self.pieces and not self.cancelled:
            piece = self.pieces.pop(0)
            self.text += piece
            return piece
        if self.fail is not None:
            raise self.fail
        raise StopIteration

    def cancel(self):
        self.cancelled = True


def test_a_refused_column_cancels_those_opened_before_it():
    first = FakeStream()

    def refused():
        raise InvalidRequest("There is no adapter named 'robot'.")

    with pytest.raises(InvalidRequest, match="robot"):
        StreamColumns([lambda: first, refused])
    assert first.cancelled


def test_columns_run_at_once_and_a_failure_is_kept_for_its_column():
    gate, told = threading.Event(), []
    ok, failing = FakeStream(gate=gate), FakeStream(pieces=("x",), fail=ServerUnreachable("The server went away."), gate=gate)
    run = StreamColumns([lambda: ok, lambda: failing], on_error=lambda column, error: told.append((column, str(error))))
    assert not run.done() and run.running(0) and run.running(1)  # both wait on the gate: neither ran first alone
    gate.set()
    views = list(run.snapshots(lambda: [s.text for s in run.streams]))
    assert views[-1] == ["ab", "x"] and run.done()
    assert run.errors == {1: "The server went away."} and told == [(1, "The server went away.")]
    assert set(run.ended) == {0, 1}
