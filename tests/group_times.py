"""Where the server pass spends its time: each test report's seconds (setup, call and teardown) and the CPU seconds
its worker's process tree used meanwhile (tests/tree_cpu.py: servers, stubs and Chromium included) summed by the
xdist group its test ran in, with the group's span from its first start to its last stop and the worker that ran
it. The conftest tags each report with its group and CPU (`user_properties`, which pytest-xdist carries to the
controller) and prints the tables at the end of the pass."""

from __future__ import annotations

from dataclasses import dataclass, field

GROUP_PROPERTY = "server_group"
CPU_PROPERTY = "tree_cpu_seconds"
UNGROUPED = "(no shared server)"
SHOWN = 15


@dataclass
class GroupTime:
    busy: float = 0.0  # seconds of its tests' setup, call and teardown
    cpu: float = 0.0  # CPU seconds of the worker's process tree during them
    start: float | None = None
    stop: float | None = None
    tests: set[str] = field(default_factory=set)
    workers: set[str] = field(default_factory=set)

    @property
    def span(self) -> float:
        return (self.stop - self.start) if self.start is not None and self.stop is not None else 0.0


class GroupTimes:
    """The reports of one pass, summed by group."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupTime] = {}
        self.test_cpu: dict[str, float] = {}

    def add(self, report) -> None:
        """Count one test report (setup, call or teardown)."""
        properties = dict(getattr(report, "user_properties", ()) or ())
        entry = self.groups.setdefault(properties.get(GROUP_PROPERTY) or UNGROUPED, GroupTime())
        entry.busy += float(getattr(report, "duration", 0.0) or 0.0)
        cpu = float(properties.get(CPU_PROPERTY) or 0.0)
        entry.cpu += cpu
        test = report.nodeid.split("@")[0]
        self.test_cpu[test] = self.test_cpu.get(test, 0.0) + cpu
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start:
            entry.start = start if entry.start is None else min(entry.start, start)
        if stop:
            entry.stop = stop if entry.stop is None else max(entry.stop, stop)
        entry.tests.add(test)
        node = getattr(report, "node", None)
        worker = getattr(getattr(node, "gateway", None), "id", None)
        if worker:
            entry.workers.add(worker)

    def lines(self, shown: int = SHOWN) -> list[str]:
        """The table: the groups with the most busy seconds first, then the total."""
        if not self.groups:
            return []
        ranked = sorted(self.groups.items(), key=lambda item: item[1].busy, reverse=True)
        width = max(len(name) for name, _ in ranked[:shown])
        out = [f"{'group':<{width}}  {'busy s':>7}  {'cpu s':>7}  {'span s':>7}  {'tests':>5}  worker"]
        for name, entry in ranked[:shown]:
            out.append(f"{name:<{width}}  {entry.busy:7.0f}  {entry.cpu:7.0f}  {entry.span:7.0f}  "
                       f"{len(entry.tests):5d}  {','.join(sorted(entry.workers)) or '-'}")
        rest = ranked[shown:]
        if rest:
            out.append(f"{f'{len(rest)} more groups':<{width}}  {sum(e.busy for _, e in rest):7.0f}  "
                       f"{sum(e.cpu for _, e in rest):7.0f}")
        out.append(f"{'all':<{width}}  {sum(e.busy for _, e in ranked):7.0f}  {sum(e.cpu for _, e in ranked):7.0f}")
        return out

    def cpu_lines(self, shown: int = SHOWN) -> list[str]:
        """The tests whose worker's process tree used the most CPU seconds (setup, call and teardown)."""
        ranked = sorted(self.test_cpu.items(), key=lambda item: item[1], reverse=True)[:shown]
        return [f"{seconds:7.1f}  {test}" for test, seconds in ranked if seconds > 0]
