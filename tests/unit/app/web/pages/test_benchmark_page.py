"""The Benchmark tab's run generator and Stop: the status line's last word is the run's. The sweep is replaced by
one that waits for the stop switch (the real sweep against a real server is tested in tests/integration/
test_bench.py and the browser tests); what is checked here is the order of what the run says."""

from __future__ import annotations

import threading
import time

import gradio as gr
import pytest

from app.bench.stats import RequestRecord, summarize
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


def summary(concurrency: int):
    """A level's figures: two requests of 10 tokens, first tokens after 100 and 200 ms."""
    records = [RequestRecord(started=0.0, first_token=0.1 * n, ended=1.0, tokens=10) for n in (1, 2)]
    return summarize(records, 1.0, settings={"concurrency": concurrency})


def shown(update) -> bool:
    return update.constructor_args["visible"]


def test_one_level_is_drawn_as_points_since_a_line_needs_two():
    _, ttft_line, ttft_points, e2e_line, e2e_points, _ = benchmark._outputs([summary(4)])
    assert shown(ttft_points) and shown(e2e_points) and not shown(ttft_line) and not shown(e2e_line)
    rows = ttft_points.constructor_args["value"]
    assert sorted(rows["series"]) == ["p50", "p90", "p99"] and set(rows["concurrency"]) == {"4"}
    assert rows["ms"].tolist() == pytest.approx([150.0, 190.0, 199.0])


def test_two_levels_are_drawn_as_lines():
    _, ttft_line, ttft_points, e2e_line, e2e_points, _ = benchmark._outputs([summary(1), summary(2)])
    assert shown(ttft_line) and shown(e2e_line) and not shown(ttft_points) and not shown(e2e_points)
    assert set(e2e_line.constructor_args["value"]["concurrency"]) == {"1", "2"}


def test_stop_is_on_from_the_first_level_to_the_run_s_last_word(monkeypatch):
    monkeypatch.setattr(benchmark, "_target", lambda *args: object())
    monkeypatch.setattr(benchmark, "sweep", lambda deployment, levels, *args, **kwargs: [summary(levels[0])])
    updates = list(benchmark.run(None, "m", ["1", "2"], 2, 8, 8))
    stops = [update[-1] for update in updates]
    assert stops[0].constructor_args["interactive"] is True and stops[0].constructor_args["variant"] == "stop"
    assert updates[-1][0].startswith("Done:") and stops[-1].constructor_args["interactive"] is False
    assert stops[-1].constructor_args["variant"] == "secondary"  # grey when off: it does not look like a live Stop
    assert not [s for s in stops[1:-1] if isinstance(s, gr.Button)]  # left as it is in between


def test_a_problem_leaves_stop_off():
    (update,) = list(benchmark.run(None, "m", [], 2, 8, 8))
    assert update[0].startswith("⚠️") and update[-1].constructor_args["interactive"] is False
