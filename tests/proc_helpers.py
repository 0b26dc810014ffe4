"""Read the process table from /proc (tests check that what we started is really gone)."""

from __future__ import annotations

from pathlib import Path

# fields after the command name in /proc/<pid>/stat: state, ppid, pgrp, ...
_STATE, _PPID, _PGRP = 0, 1, 2


def running(field: int, value: int) -> list[int]:
    """Pids whose stat `field` equals `value`, zombies (awaiting their reaper) excluded."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[field]) == value and fields[_STATE] != "Z":
            found.append(int(stat_file.parent.name))
    return found


def live_members(pgid: int) -> list[int]:
    """Running processes of process group `pgid`."""
    return running(_PGRP, pgid)


def children_of(pid: int) -> list[int]:
    """Running children of `pid`."""
    return running(_PPID, pid)
