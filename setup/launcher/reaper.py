"""Ends a tritonserver process group once the process that started it is gone, however it went (SIGKILL too).

    python reaper.py PGID STARTTIME SHM_PREFIX [SINCE]   # started by TritonProcess; stdin is a pipe from it

The starter keeps the pipe's write end. Once its server is ready it writes one line, READY and the python
backend folders that server made, tab-separated. When the starter exits, the kernel closes that end and
this script reads end-of-file: if the group still exists (its leader has the same start time, or it has
members left after the leader), it gets SIGTERM, then SIGKILL after GRACE seconds, and the group's
shared-memory segments and the empty python-backend folders it left in /tmp are removed: those named in the
READY line, or, for a server that was never ready, those made since SINCE. After a normal stop the group is already gone and nothing is done.
Standard library only, run by path, so it works wherever the starter's interpreter runs.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

GRACE = 10.0
SHM_DIR = Path("/dev/shm")
# Triton's python backend makes an empty folder /tmp/python_env_XXXXXX at start (a fixed path: TMPDIR is not
# read) and removes it only when it exits cleanly; a server ended by SIGKILL leaves it behind.
BACKEND_TMP = Path("/tmp")
READY = "ready"


def python_env_dirs(root: Path = BACKEND_TMP) -> set[Path]:
    """The python backend's folders under `root` now."""
    return set(root.glob("python_env_*"))


def python_env_dirs_since(since: float, root: Path = BACKEND_TMP) -> set[Path]:
    """The backend folders made at or after `since` (time.time(); an empty folder's mtime is when it was made)."""
    found = set()
    for folder in python_env_dirs(root):
        try:
            if folder.stat().st_mtime >= since:
                found.add(folder)
        except OSError:
            pass
    return found


def remove_empty_dirs(folders) -> None:
    """rmdir each folder; one that holds anything (or is gone already) is left as it is."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot): with the pid, it names one process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose group is `pgid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def still_ours(pgid: int, leader_start: str) -> bool:
    """The group we were told about: its leader with the same start time, or members left after it."""
    now = start_time(pgid)
    if now is not None:
        return now == leader_start
    return bool(members(pgid))


def end_group(pgid: int, leader_start: str, shm_prefix: str) -> bool:
    """End the group if it is still the one we were told about; whether it was."""
    ours = pgid > 1 and still_ours(pgid, leader_start)  # 0 and 1 would mean our own group / every process
    if ours:
        for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                break
            end = time.monotonic() + wait
            while members(pgid) and time.monotonic() < end:
                time.sleep(0.1)
            if not members(pgid):
                break
    if shm_prefix:
        for segment in SHM_DIR.glob(f"{shm_prefix}*"):
            try:
                segment.unlink()
            except OSError:
                pass
    return ours


def ready_line(folders) -> bytes:
    """What the starter writes once its server is ready: READY and the server's backend folders."""
    return ("\t".join([READY, *sorted(str(folder) for folder in folders)]) + "\n").encode()


def folders_named(message: bytes) -> set[Path] | None:
    """The folders of a READY line in what the starter wrote; None when it wrote none (never ready)."""
    for line in message.decode(errors="replace").splitlines():
        fields = line.split("\t")
        if fields[0] == READY:
            return {Path(field) for field in fields[1:] if Path(field).parent == BACKEND_TMP}
    return None


def main(argv: list[str]) -> int:
    pgid, leader_start, shm_prefix = int(argv[1]), argv[2], argv[3]
    # SINCE: when the starter started the server (on a loaded machine the backend may make its folder before
    # this script has even started, so a look at /tmp from here would be too late)
    since = float(argv[4]) if len(argv) > 4 else time.time()
    message = b""
    while chunk := sys.stdin.buffer.read(4096):  # EOF comes when the starter is gone
        message = (message + chunk)[-65536:]
    if end_group(pgid, leader_start, shm_prefix):
        named = folders_named(message)
        # by name when the server was ready: a time window alone also holds other servers' folders
        remove_empty_dirs(named if named is not None else python_env_dirs_since(since))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
