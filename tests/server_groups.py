"""Which tests of the server pass share a pytest-xdist worker (`make test` runs them with `--dist loadgroup`).

Each worker is a pytest session of its own, so a session fixture starts once per worker that uses it. A test gets
an `xdist_group` named for the servers it shares, so that every test of a shared server runs on one worker and
the server still starts once (tests/server_scheduling.py hands the groups to xdist):

- the tests of one module stay together (module fixtures start one server for the module);
- the tests that use one of `ONE_WORKER`'s fixtures stay together, with every module they are in (the servers
  that take long to start, and the paced servers of the rate-measuring tests: those modules run one after another,
  never two measuring beside each other);
- whatever these tie together is one group (union of modules and servers).

The demo tritonserver (`triton`, with `app_served`) and Chromium (`browser_context`) are not in `ONE_WORKER`: they
start in seconds and most modules use them, so a module that needs nothing else may run on either worker and each
worker starts its own. Tying them too would put almost the whole pass in one group, on one worker.

Only the test suite imports this module (tests/conftest.py); it imports nothing of the app.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# fixture -> the name its group carries: servers one worker owns (each starts once in the run)
ONE_WORKER: Mapping[str, str] = {
    "llmapi_triton": "llmapi",
    "xcomposer2_triton": "xcomposer2",
    "vllm": "vllm",
    "dynamo": "dynamo",
    "pacing": "paced",  # tests/bench_fixtures.py: bench, soak and page figures measured at a paced rate
    "family_outputs_triton": "family-outputs",  # four runner stand-ins: the heaviest server of the pass
}

# Fixtures that reach a server through request.getfixturevalue (not in a test's fixture names): what they may reach.
REACHES: Mapping[str, tuple[str, ...]] = {
    "demo_app": ("app_served", "llmapi_triton"),  # tests/conftest.py: each demo kind in turn
    "twin": ("app_served", "llmapi_triton"),  # tests/integration/test_twin_answers.py
    "group_served": ("family_outputs_triton",),  # tests/integration/test_runner_twins.py: one group is that server
    "_demo_stubs_alive": (),  # tests/conftest.py: only the demo server a test already uses (its stubs checked)
    "_closes_its_pages": (),  # tests/browser/conftest.py: the browser a test already uses, no server
}


@dataclass(frozen=True)
class TestNeeds:
    """One collected test: its id, its module's path and the names of every fixture it uses."""

    __test__ = False  # not a test class, whatever its name

    nodeid: str
    module: str
    fixtures: frozenset[str]


def servers_of(test: TestNeeds) -> set[str]:
    """The `ONE_WORKER` group names of the servers `test` uses, directly or through `REACHES`."""
    names = set(test.fixtures)
    for fixture in test.fixtures & REACHES.keys():
        names.update(REACHES[fixture])
    return {ONE_WORKER[name] for name in names if name in ONE_WORKER}


class _Union:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def server_groups(tests: Iterable[TestNeeds]) -> dict[str, str]:
    """Test id -> group name. A group with `ONE_WORKER` servers is named by them ("llmapi+xcomposer2"), one
    without by its module(s) ("tests/integration/test_faults.py")."""
    tests = list(tests)
    union = _Union()
    for test in tests:
        union.find(f"module:{test.module}")
        for server in servers_of(test):
            union.join(f"server:{server}", f"module:{test.module}")
    members: dict[str, list[str]] = {}
    for key in list(union.parent):
        members.setdefault(union.find(key), []).append(key)
    names = {}
    for root, keys in members.items():
        servers = sorted(k.removeprefix("server:") for k in keys if k.startswith("server:"))
        modules = sorted(k.removeprefix("module:") for k in keys if k.startswith("module:"))
        names[root] = "+".join(servers) if servers else "+".join(modules)
    return {test.nodeid: names[union.find(f"module:{test.module}")] for test in tests}


def group_summary(groups: Mapping[str, str]) -> list[str]:
    """One line per group, largest first: its name, how many tests, and its modules with their test counts."""
    by_group: dict[str, dict[str, int]] = {}
    for nodeid, group in groups.items():
        module = nodeid.split("::", 1)[0]
        counts = by_group.setdefault(group, {})
        counts[module] = counts.get(module, 0) + 1
    lines = []
    for group, counts in sorted(by_group.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        modules = ", ".join(f"{m.rsplit('/', 1)[-1]} ({n})" for m, n in sorted(counts.items()))
        lines.append(f"{group}: {sum(counts.values())} tests: {modules}")
    return lines
