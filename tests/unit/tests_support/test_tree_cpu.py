"""CPU seconds of a process tree: living children count, and so do children reaped before the reading."""

from __future__ import annotations

import subprocess
import sys

from tests.tree_cpu import tree_cpu_seconds

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n{then}"


def test_a_reaped_child_still_counts_through_its_parent():
    before = tree_cpu_seconds()
    subprocess.run([sys.executable, "-c", BURN.format(seconds=0.5, then="")], check=True)
    assert tree_cpu_seconds() - before >= 0.45


def test_a_living_child_counts_in_its_own_tree_and_in_its_parents():
    child = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=0.5, then="input()")],
                             stdin=subprocess.PIPE, text=True)
    try:
        before = tree_cpu_seconds()
        while tree_cpu_seconds(child.pid) < 0.45:
            assert child.poll() is None
        assert tree_cpu_seconds() - before > 0.0
        assert tree_cpu_seconds(child.pid) < tree_cpu_seconds()  # the child's tree is part of this one's
    finally:
        child.communicate("")
