"""Servers that live as long as their group: the session fixtures of `ONE_WORKER` (tests/server_groups.py) stop when
the worker moves on to another group, instead of at the end of the worker's session.

A group's tests reach the worker together and run one after another, so when the next test is in another group the
group's servers are done with; keeping them to the end of the session kept vLLM, the llmapi and XComposer2 servers
resident beside every later group's servers. The fixtures that reach them through `request.getfixturevalue`
(`REACHES`) are finished first, since pytest links only declared arguments to what they depend on; a later test
that needs one of them starts it again.

The worker's demo tritonserver (`triton`, kept for its session) also stops when a server start of this worker
must wait for the memory budget and the test at hand does not use it (`stop_unused_demo`): the waits were 180 to
280 s of a worker's time a run, a restart of the demo server about 20.

Only the test suite imports this module; it imports nothing of the app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tests.server_groups import ONE_WORKER, REACHES

DEMO_SERVER = ("app_served", "triton")  # each worker's demo tritonserver and the app served on it, kept for its session
CURRENT: dict[str, object] = {}  # "item": the test this worker is running (tests/conftest.py sets it)


def by_group(items: Sequence, groups: Mapping[str, str]) -> list:
    """`items` with each group's tests together, groups in the order they first appear (stable within a group);
    an item without a group keeps its place among the groups."""
    order: dict[str, int] = {}
    for item in items:
        order.setdefault(groups.get(item.nodeid, item.nodeid), len(order))
    return sorted(items, key=lambda item: order[groups.get(item.nodeid, item.nodeid)])


def group_fixtures_done(item, nextitem, groups: Mapping[str, str]) -> list[str]:
    """The fixture names to finish after `item`: the group's shared servers (and what reaches them) when `nextitem`
    is in another group; none at the session's end (pytest finishes everything then)."""
    if item.nodeid not in groups or nextitem is None or groups[item.nodeid] == groups.get(nextitem.nodeid):
        return []
    return [*REACHES, *ONE_WORKER]


def finish_fixtures(item, names: Sequence[str]) -> None:
    """Finish the active fixtures `names` (their teardown runs now; a later request starts them afresh)."""
    for name in names:
        for fixturedef in item.session._fixturemanager.getfixturedefs(name, item) or ():
            if fixturedef.cached_result is not None:
                fixturedef.finish(item._request)


def demo_users() -> set[str]:
    """The fixture names whose tests use the demo server: its own, and those that reach it by name (`REACHES`)."""
    return {*DEMO_SERVER, *(name for name, reached in REACHES.items() if set(reached) & set(DEMO_SERVER))}


def stop_unused_demo() -> bool:
    """Stop this worker's demo server when the running test does not use it (the memory budget's `make_room`);
    True when it was running and is stopping."""
    item = CURRENT.get("item")
    if item is None or demo_users() & set(item.fixturenames):
        return False
    running = any(fixturedef.cached_result is not None
                  for fixturedef in item.session._fixturemanager.getfixturedefs("triton", item) or ())
    if running:
        finish_fixtures(item, [*sorted(demo_users() - set(DEMO_SERVER)), *DEMO_SERVER])
    return running
