"""Group lifetimes of the shared servers: each group's tests run together, and its servers finish after its last."""

from __future__ import annotations

from types import SimpleNamespace

from tests.server_groups import ONE_WORKER, REACHES
from tests.server_lifetimes import by_group, group_fixtures_done


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
