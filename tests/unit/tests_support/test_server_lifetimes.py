"""Group lifetimes of the shared servers: each group's tests run together, and its servers finish after its last."""

from __future__ import annotations

from types import SimpleNamespace

from tests.server_groups import ONE_WORKER, REACHES
from tests.server_lifetimes import CURRENT, by_group, group_fixtures_done, stop_unused_demo


def _items(*ids):
    return [SimpleNamespace(nodeid=i) for i in ids]


GROUPS = {"a.py::1": "vllm", "b.py::1": "b.py", "a.py::2": "vllm", "c.py::1": "vllm", "b.py::2": "b.py"}


def test_each_groups_tests_run_together_in_first_seen_order():
    items = _items("a.py::1", "b.py::1", "unit.py::1", "c.py::1", "b.py::2", "a.py::2")
    assert [i.nodeid for i in by_group(items, GROUPS)] == [
        "a.py::1", "c.py::1", "a.py::2", "b.py::1", "b.py::2", "unit.py::1"]


def test_servers_finish_only_when_the_next_test_is_in_another_group():
    a1, a2, b1, unit = _items("a.py::1", "a.py::2", "b.py::1", "unit.py::1")
    assert group_fixtures_done(a1, a2, GROUPS) == []
    done = group_fixtures_done(a2, b1, GROUPS)
    assert done.index(next(iter(REACHES))) < done.index(next(iter(ONE_WORKER)))  # what reaches a server goes first
    assert set(done) == set(REACHES) | set(ONE_WORKER)
    assert group_fixtures_done(a2, None, GROUPS) == []  # the session's end finishes everything anyway
    assert group_fixtures_done(unit, a1, GROUPS) == []  # a unit test holds no shared server


class FixtureDefs:
    """The fixtures a worker has running, as pytest's fixture manager hands them out; `finished` in order."""

    def __init__(self, running):
        self.running, self.finished = set(running), []

    def getfixturedefs(self, name, item):
        defs = self

        class Def:
            cached_result = ("server", None, None) if name in defs.running else None

            def finish(self, request):
                defs.running.discard(name)
                defs.finished.append(name)

        return [Def()]


def _running(fixturenames, running):
    fixtures = FixtureDefs(running)
    item = SimpleNamespace(fixturenames=fixturenames, session=SimpleNamespace(_fixturemanager=fixtures),
                           _request=None)
    return item, fixtures


def test_a_wait_stops_this_workers_demo_server_when_the_test_does_not_use_it(monkeypatch):
    item, fixtures = _running(["tmp_path"], {"triton", "app_served", "demo_app"})
    monkeypatch.setitem(CURRENT, "item", item)
    assert stop_unused_demo()
    reachers = sorted(name for name, reached in REACHES.items() if "app_served" in reached)
    assert reachers == ["demo_app", "twin"]  # what reaches the demo server by name finishes before it
    assert fixtures.finished == ["demo_app", "app_served", "triton"] and not fixtures.running


def test_a_test_that_uses_the_demo_server_keeps_it(monkeypatch):
    for names in (["page", "browser_context", "app_served", "triton"], ["demo_app"], ["twin"]):
        item, fixtures = _running(names, {"triton", "app_served"})
        monkeypatch.setitem(CURRENT, "item", item)
        assert not stop_unused_demo() and fixtures.finished == []


def test_nothing_to_stop_without_a_running_demo_server_or_a_test(monkeypatch):
    item, fixtures = _running(["tmp_path"], set())
    monkeypatch.setitem(CURRENT, "item", item)
    assert not stop_unused_demo() and fixtures.finished == []
    monkeypatch.delitem(CURRENT, "item")
    assert not stop_unused_demo()
