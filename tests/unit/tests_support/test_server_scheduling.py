"""tests/server_scheduling.py: the server pass's scheduler takes each test's group from the workers' file."""

from __future__ import annotations

from tests.server_scheduling import GROUPS_FILE, GroupsFile, write_groups


def test_groups_come_from_the_file_which_is_then_removed(tmp_path):
    write_groups(tmp_path, {"tests/integration/test_a.py::x": "vllm"})
    write_groups(tmp_path, {"tests/integration/test_a.py::x": "vllm"})  # the other worker: same file, replaced
    assert [p.name for p in tmp_path.iterdir()] == [GROUPS_FILE]
    groups = GroupsFile(tmp_path)
    assert groups.group("tests/integration/test_a.py::x") == "vllm"
    assert list(tmp_path.iterdir()) == []
    assert groups.group("tests/integration/test_a.py::x") == "vllm"  # read once, kept
    assert groups.group("tests/integration/test_b.py::y") is None  # xdist's own rule decides


def test_no_file_means_no_groups(tmp_path):
    assert GroupsFile(tmp_path).group("tests/integration/test_a.py::x") is None
    assert GroupsFile(None).group("tests/integration/test_a.py::x") is None


def test_a_heavy_group_waits_while_another_worker_runs_one():
    from tests.server_scheduling import next_scope

    waiting = ["family-outputs", "vllm", "tests/integration/test_stream.py", "paced"]
    assert next_scope(waiting, ["llmapi+xcomposer2"]) == "tests/integration/test_stream.py"
    assert next_scope(waiting, ["paced"]) is None  # nothing heavy elsewhere: the queue's order
    assert next_scope(waiting, []) is None
    assert next_scope(["vllm", "family-outputs"], ["llmapi+xcomposer2"]) is None  # only heavy left: in order
    assert next_scope(["paced", "vllm"], ["family-outputs"]) is None  # the first waiting is light anyway
    assert next_scope([], ["vllm"]) is None


def test_the_scheduler_hands_a_light_group_to_the_second_worker(tmp_path):
    from collections import OrderedDict

    from tests.server_scheduling import ServerGroupScheduling

    class Node:
        def __init__(self):
            self.sent = []

        def send_runtest_some(self, indexes):
            self.sent.append(indexes)

    collection = ["a::1", "b::1", "c::1"]
    groups = {"a::1": "llmapi+xcomposer2", "b::1": "family-outputs", "c::1": "tests/integration/test_x.py"}
    scheduler = ServerGroupScheduling.__new__(ServerGroupScheduling)
    first, second = Node(), Node()
    scheduler.assigned_work, scheduler.registered_collections = {}, {first: collection, second: collection}
    scheduler.workqueue = OrderedDict((groups[n], {n: False}) for n in collection)
    scheduler._assign_work_unit(first)
    scheduler._assign_work_unit(second)
    assert first.sent == [[0]] and second.sent == [[2]]  # not family-outputs beside llmapi+xcomposer2
    assert list(scheduler.workqueue) == ["family-outputs"]
