"""CPU seconds used by a process and everything it started (servers, model stubs, Chromium), read from /proc.

A process's own user and system time plus the time of the children it has reaped (cutime, cstime), summed over the
process and its living descendants: a server stopped and reaped between two readings still counts, through its
parent. Processes that left the tree (re-parented to init) are not counted. Linux only; elsewhere the reading is 0.
Only the test suite imports this module.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces), or None if it is gone."""
    try:
        return (PROC / pid / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds of `root` (this process by default), its descendants alive now and the children they reaped."""
    if not PROC.is_dir():
        return 0.0
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None or len(fields) < 13:
            continue
        # after the name: state, ppid, ..., utime (index 11), stime, cutime, cstime (14)
        ticks[int(entry)] = sum(int(value) for value in fields[11:15])
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += ticks.get(pid, 0)
        pending.extend(children.get(pid, ()))
    return total / TICKS
