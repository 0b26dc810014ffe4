"""The Benchmark tab's run generator and Stop: the status line's last word is the run's. The sweep is replaced by
one that waits for the stop switch (the real sweep against a real server is tested in tests/integration/
test_bench.py and the browser tests); what is checked here is the order of what the run says."""

from __future__ import annotations

import threading
import time

import pytest

from app.web.messages import (
    MSG_BENCH_NOTHING_TO_STOP,
    MSG_BENCH_RUNNING,
    MSG_BENCH_STOPPED_AT,
    MSG_BENCH_STOPPING,
)
from app.web.pages import benchmark


@pytest.fixture
def sweeping(monkeypatch):
    """A sweep that runs until the stop switch is set, then takes a moment to cancel its requests; the event says
    it has started."""
    started = threading.Event()

    def sweep(deployment, levels, *args, stop=None, **kwargs):
        started.set()
        assert stop.wait(30), "nobody stopped the sweep"
        time.sleep(5 * benchmark.STOP_POLL_SECONDS)
        return []
    monkeypatch.setattr(benchmark, "_target", lambda *args: object())
    monkeypatch.setattr(benchmark, "sweep", sweep)
    return started


def consume(run, into: list) -> threading.Thread:
    """Read the run's status lines in a thread, as Gradio's worker does."""
    reader = threading.Thread(target=lambda: into.extend(update[0] for update in run), daemon=True)
    reader.start()
    return reader


def test_stop_sets_the_switch_and_the_run_says_stopping_then_stopped(sweeping):
    said: list[str] = []
    reader = consume(benchmark.run(None, "m", ["1", "2"], 2, 8, 8), said)
    assert sweeping.wait(10)
    assert not isinstance(benchmark.stop_run(), str)  # Stop writes nothing: a late reply cannot overwrite the run
    reader.join(10)
    assert said == [MSG_BENCH_RUNNING.format(level=1), MSG_BENCH_STOPPING,
                    MSG_BENCH_STOPPED_AT.format(level=1, done=0)]
    assert benchmark.stop_run() == MSG_BENCH_NOTHING_TO_STOP


def test_a_run_closed_while_stopping_waits_for_its_level_and_frees_the_tab(sweeping):
    run = benchmark.run(None, "m", ["1"], 2, 8, 8)
    assert next(run)[0] == MSG_BENCH_RUNNING.format(level=1)
    stopper = threading.Timer(0.5, benchmark.stop_run)
    stopper.start()
    assert next(run)[0] == MSG_BENCH_STOPPING
    run.close()  # what Gradio does to the generator of a caller that left
    assert benchmark.stop_run() == MSG_BENCH_NOTHING_TO_STOP
    said: list[str] = []
    sweeping.clear()
    reader = consume(benchmark.run(None, "m", ["1"], 2, 8, 8), said)  # a new run is not "already running"
    assert sweeping.wait(10)
    benchmark.stop_run()
    reader.join(10)
    assert said[0] == MSG_BENCH_RUNNING.format(level=1) and said[-1] == MSG_BENCH_STOPPED_AT.format(level=1, done=0)
