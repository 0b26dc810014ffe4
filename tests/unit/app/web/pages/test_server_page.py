"""The Server tab's charts over the history the app's sampler keeps: the x axis spans the readings held."""

from __future__ import annotations

from app.triton.metrics import Snapshot
from app.web.pages import server


def readings(minutes: float, every: float = server.SAMPLE_SECONDS) -> list[Snapshot]:
    count = int(minutes * 60 / every) + 1
    return [Snapshot(at=n * every, success=n, pending=0) for n in range(count)]


def test_a_long_history_is_charted_whole_and_a_short_one_over_three_minutes(monkeypatch):
    monkeypatch.setattr(server.MetricsHistory, "refresh", lambda self: None)  # only what the sampler took
    history = server.server_history("http://unused/metrics", "pacing")
    history.snapshots.extend(readings(minutes=10))
    _, rate, latency, load, _ = server.charts(history)
    assert rate.constructor_args["x_lim"] == [-600.0, 0] == load.constructor_args["x_lim"]
    assert rate.constructor_args["value"]["value"].min() > 0  # the requests of ten minutes ago are there
    history.snapshots.clear()
    history.snapshots.extend(readings(minutes=1))
    assert server.charts(history)[1].constructor_args["x_lim"] == [-server.WINDOW_SECONDS, 0]


def test_the_server_history_is_a_bounded_ring_of_a_quarter_hour(monkeypatch):
    history = server.server_history("http://unused/metrics", "pacing")
    history.clock = iter(range(0, 10**6, int(server.SAMPLE_SECONDS))).__next__  # the sampler's pace
    monkeypatch.setattr("app.triton.metrics.fetch_metrics", lambda url, timeout=2.0: {})
    for _ in range(2 * history.size):  # half an hour of readings
        history.refresh()
    held = history.snapshots[-1].at - history.snapshots[0].at
    assert len(history.snapshots) == history.size and held == server.HISTORY_SECONDS
