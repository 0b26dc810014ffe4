"""The server pass's time by group: reports summed by the group they carry, spans from first start to last stop,
the busiest groups first; CPU seconds summed by group and by test."""

from __future__ import annotations

from types import SimpleNamespace

from tests.group_times import CPU_PROPERTY, GROUP_PROPERTY, UNGROUPED, GroupTimes


def report(nodeid, group, duration, start, worker=None, cpu=None):
    node = SimpleNamespace(gateway=SimpleNamespace(id=worker)) if worker else None
    properties = ([(GROUP_PROPERTY, group)] if group else []) + ([(CPU_PROPERTY, cpu)] if cpu is not None else [])
    return SimpleNamespace(nodeid=nodeid, user_properties=properties, duration=duration, start=start,
                           stop=start + duration, node=node)


def test_reports_are_summed_by_group_busiest_first():
    times = GroupTimes()
    times.add(report("a.py::t1", "vllm", 30.0, 100.0, "gw0", cpu=50.0))  # a setup that started the server
    times.add(report("a.py::t1", "vllm", 2.0, 130.0, "gw0", cpu=1.5))  # its call
    times.add(report("a.py::t2@vllm", "vllm", 3.0, 140.0, "gw0", cpu=2.0))
    times.add(report("b.py::t", None, 5.0, 50.0, "gw1"))  # a report without a CPU reading counts none
    vllm = times.groups["vllm"]
    assert (vllm.busy, vllm.span, vllm.tests, vllm.workers) == (35.0, 43.0, {"a.py::t1", "a.py::t2"}, {"gw0"})
    assert vllm.cpu == 53.5
    lines = times.lines()
    assert lines[1].split()[:5] == ["vllm", "35", "54", "43", "2"] and lines[2].startswith(UNGROUPED)
    assert lines[-1].split() == ["all", "40", "54"]
    assert times.cpu_lines() == ["   51.5  a.py::t1", "    2.0  a.py::t2"]


def test_groups_past_the_shown_ones_are_summed_in_one_line():
    times = GroupTimes()
    for index in range(5):
        times.add(report(f"t{index}", f"g{index}", float(index + 1), 0.0))
    lines = times.lines(shown=2)
    assert [line.split()[0] for line in lines[1:3]] == ["g4", "g3"]
    assert lines[3].split() == ["3", "more", "groups", "6", "0"]


def test_no_reports_print_nothing():
    assert GroupTimes().lines() == [] and GroupTimes().cpu_lines() == []
