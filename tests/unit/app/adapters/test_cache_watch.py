"""app/adapters/cache_watch.py, fed by the adapter streams: resident adapters, hits, misses (evictions seen) and
re-sends per adapter over the window; and the Server tab's rendering of it (app/web/cache_view.py)."""

from __future__ import annotations

from app.adapters.cache_watch import HIT, MISS, RESENT, SENT, CacheWatch
from app.adapters.registry import AdapterRegistry
from app.web.cache_view import cache_fields, cache_markdown
from tests.unit.app.adapters.test_registry import FakeServer, folder  # noqa: F401 - the fixture


def test_streams_record_sends_hits_misses_and_resends(folder):  # noqa: F811 - the fixture
    registry, server = AdapterRegistry(folder), FakeServer()
    registry.generate(server, "alpha", "hi", None)  # weights: sent
    registry.generate(server, "beta", "hi", None)
    registry.generate(server, "alpha", "hi", None)  # task id alone: a hit
    server.cache.discard(registry.task_id("beta"))  # the server evicts beta
    registry.generate(server, "beta", "hi", None)  # miss, then the weights again
    view = registry.cache_watch.view()
    rows = {r.name: r for r in view.rows}
    assert (rows["alpha"].sent, rows["alpha"].hits, rows["alpha"].misses) == (1, 1, 0)
    assert (rows["beta"].sent, rows["beta"].misses, rows["beta"].resent) == (1, 1, 1)
    # beta went while alpha alone was used after it: by LRU the cache holds one adapter, now beta
    assert view.resident == ("beta",) and view.evictions == 1 and view.capacity == 1
    fields = cache_fields(view)
    assert fields["resident"] == ["beta"] and fields["window_seconds"] == 900 and fields["capacity_estimate"] == 1
    assert "Resident now: **beta** · evictions seen: 1 · the cache holds about 1" in cache_markdown(view)
    registry.forget_server_state()
    assert registry.cache_watch.view().resident == ()


def test_events_leave_the_window_and_a_miss_ends_residence():
    now = [0.0]
    watch = CacheWatch(window=60, clock=lambda: now[0])
    watch.record(SENT, "a", 1)
    watch.record(HIT, "a", 1)
    watch.record(MISS, "a", 1)
    assert watch.view().resident == () and watch.view().rows[0].hits == 1
    now[0] = 61.0
    assert watch.view().rows == () and "No adapter request yet." in cache_markdown(watch.view())


def test_a_miss_shows_how_many_the_cache_holds():
    watch = CacheWatch()
    for task, name in ((1, "a"), (2, "b"), (3, "c")):
        watch.record(SENT, name, task)
    watch.record(MISS, "a", 1)  # a was evicted while b and c were newer: the cache holds 2
    watch.record(RESENT, "a", 1)  # a back in: b, the least recently used, is out
    view = watch.view()
    assert view.capacity == 2 and view.resident == ("c", "a") and view.evictions == 1
