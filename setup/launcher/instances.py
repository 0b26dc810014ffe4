"""A folder per running instance, owned through an flock'd lock file (dies with its owner)."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from setup.launcher.options import LaunchError


class InstanceFolder:
    """A folder that belongs to one running server (its repository, ...), held by a lock file.

    The lock file records the owner's pid and holds an exclusive `flock` for as long as the owner keeps
    it: the lock goes with the owner's process, so a folder whose owner died is free again, and a
    live owner's folder (another process, or another server in this one) is never handed out twice.
    """

    LOCK_NAME = "owner.lock"

    def __init__(self, path: Path, lock_fd: int):
        self.path = path
        self._lock_fd: int | None = lock_fd

    def release(self, remove: bool = True) -> None:
        """Give the folder up (removing it first unless `remove` is False)."""
        if self._lock_fd is None:
            return
        with _RegistryLock(self.path.parent):
            if remove:
                shutil.rmtree(self.path, ignore_errors=True)
            os.close(self._lock_fd)
            self._lock_fd = None


class _RegistryLock:
    """Serializes claims and releases under one parent folder (between processes)."""

    def __init__(self, parent: Path):
        parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(parent / ".registry.lock", os.O_RDWR | os.O_CREAT, 0o644)

    def __enter__(self):
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


def _try_lock(lock_path: Path) -> int | None:
    """An fd holding the exclusive lock on `lock_path`, or None when someone else holds it."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def claim_instance_folder(parent: Path, name: str) -> InstanceFolder:
    """Take `parent/name` for this process's new server: emptied and locked, the owner pid recorded.

    Raises LaunchError when a live owner holds it; a folder whose owner died is reused. Name folders
    after the server's ports and check the ports are free first: a server whose owner was killed may
    still run on that folder, and it still holds its ports. (Folders of other names are left alone.)
    """
    parent = Path(parent)
    with _RegistryLock(parent):
        path = parent / name
        path.mkdir(parents=True, exist_ok=True)
        lock_path = path / InstanceFolder.LOCK_NAME
        fd = _try_lock(lock_path)
        if fd is None:
            try:
                owner = lock_path.read_text().strip() or "unknown"
            except OSError:
                owner = "unknown"
            raise LaunchError(f"{path} belongs to a running server (pid {owner}); it is left as it is.")
        for item in path.iterdir():  # what a dead owner left
            if item.name == InstanceFolder.LOCK_NAME:
                continue
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return InstanceFolder(path, fd)
