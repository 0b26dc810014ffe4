"""The app's sampler: readings at a steady pace in one thread, whether a page is open or not, until it is stopped
or the app closes."""

from __future__ import annotations

import threading

from app.triton.metrics import MetricsHistory, parse_metrics
from app.triton.metrics_sampler import Sampler

COUNTER = 'nv_inference_request_success{{model="pacing",version="1"}} {count}\n'


def test_readings_go_on_without_anyone_asking_until_stopped():
    taken = threading.Semaphore(0)
    sampler = Sampler([taken.release], interval=0.01)
    sampler.start()
    try:
        assert all(taken.acquire(timeout=10) for _ in range(3))  # three readings, no page asked for them
        assert sampler.running
    finally:
        sampler.stop()
    assert not sampler.running


def test_a_failed_reading_does_not_end_the_history():
    calls: list[int] = []
    later = threading.Event()

    def flaky() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("metrics endpoint hiccup")
        later.set()

    sampler = Sampler([flaky], interval=0.01)
    sampler.start()
    try:
        assert later.wait(10)
    finally:
        sampler.stop()


def test_the_thread_ends_when_the_app_is_closed():
    app_open = threading.Event()
    app_open.set()
    read = threading.Event()
    sampler = Sampler([read.set], interval=0.01)
    sampler.start(alive=app_open.is_set)
    assert read.wait(10)
    app_open.clear()  # what blocks.close() does to blocks.is_running
    sampler._thread.join(10)
    assert not sampler.running


def test_the_sampler_fills_a_metrics_history_that_a_page_opened_later_charts(monkeypatch):
    """Requests served while no page was open are in the charts' rows: the sampler read them as they happened."""
    counts = iter(range(0, 1000, 3))  # 3 requests succeed between readings
    monkeypatch.setattr("app.triton.metrics.fetch_metrics",
                        lambda url, timeout=2.0: parse_metrics(COUNTER.format(count=next(counts))))
    history = MetricsHistory("http://unused/metrics", size=4, min_interval=0.0)
    readings = threading.Semaphore(0)
    sampler = Sampler([history.refresh, readings.release], interval=0.01)
    sampler.start()
    try:
        assert all(readings.acquire(timeout=10) for _ in range(6))
    finally:
        sampler.stop()
    assert len(history.snapshots) == 4  # a ring: the oldest readings were dropped
    rates = [r["value"] for r in history.series() if r["metric"] == "requests/s"]
    assert len(rates) == 3 and all(rate > 0 for rate in rates)
