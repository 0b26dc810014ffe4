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
