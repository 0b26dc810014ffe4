"""What /proc says: members of a process group, which processes hold a listening port; the health probe."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path


def health_ok(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback URL we built
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def process_table() -> list[tuple[int, int, int, str]]:
    """(pid, ppid, pgid, state) of every process in /proc."""
    table = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            table.append((int(stat_file.parent.name), int(fields[1]), int(fields[2]), fields[0]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def group_members(pgid: int, zombies: bool = False) -> list[int]:
    """Pids of process group `pgid` (zombies, which hold no memory, only when asked)."""
    return [pid for pid, _, group, state in process_table() if group == pgid and (zombies or state != "Z")]


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP `port` (any address) in this network namespace."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    found = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
    except OSError:
        pass
    return found
