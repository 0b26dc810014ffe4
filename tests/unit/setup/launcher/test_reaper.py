"""The reaper ends a process group when the pipe from its starter closes, and only a group that is still the
one it was given (real processes: a stand-in 'server' that has a child in its group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from setup.launcher import reaper
from setup.launcher.process import REAPER

SERVER = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); time.sleep(120)"


def _group_with_child() -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-c", SERVER], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(reaper.members(server.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(reaper.members(server.pid)) == 2
    return server


def _reaper_for(pgid: int, start: str, prefix: str = "") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(REAPER), str(pgid), start, prefix], stdin=subprocess.PIPE,
                            start_new_session=True)


def test_the_group_ends_when_the_starter_pipe_closes(tmp_path, monkeypatch):
    server = _group_with_child()
    watcher = _reaper_for(server.pid, reaper.start_time(server.pid))
    time.sleep(0.3)
    assert watcher.poll() is None and len(reaper.members(server.pid)) == 2  # nothing happens while the pipe is open
    watcher.stdin.close()  # what the kernel does when the starter dies, SIGKILL included
    assert watcher.wait(timeout=20) == 0
    server.wait(timeout=5)
    assert reaper.members(server.pid) == [] and server.returncode == -signal.SIGTERM


def test_a_group_with_another_start_time_is_left_alone():
    server = _group_with_child()
    try:
        watcher = _reaper_for(server.pid, "1")  # as if the pid had been reused by another process
        watcher.stdin.close()
        assert watcher.wait(timeout=20) == 0
        assert len(reaper.members(server.pid)) == 2 and server.poll() is None
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=5)


def test_shared_memory_segments_of_the_prefix_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(reaper, "SHM_DIR", tmp_path)
    (tmp_path / "tvl1p2n0r_a").write_bytes(b"x")
    (tmp_path / "other").write_bytes(b"x")
    reaper.end_group(2**22 + 12345, "0", "tvl1p2n0r")  # no such group: only the segments are cleaned
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["other"]


def test_only_empty_backend_folders_are_removed(tmp_path):
    from setup.launcher.reaper import python_env_dirs, remove_empty_dirs

    empty, full, other = tmp_path / "python_env_a1", tmp_path / "python_env_b2", tmp_path / "keep_me"
    for folder in (empty, full, other):
        folder.mkdir()
    (full / "env.tar").write_bytes(b"x")
    assert python_env_dirs(tmp_path) == {empty, full}
    remove_empty_dirs([empty, full, tmp_path / "python_env_gone"])
    assert not empty.exists() and (full / "env.tar").exists() and other.exists()


def test_backend_folders_since_a_time_are_those_made_from_then_on(tmp_path):
    from setup.launcher.reaper import python_env_dirs_since

    old, new = tmp_path / "python_env_old", tmp_path / "python_env_new"
    old.mkdir()
    new.mkdir()
    os.utime(old, (1_000_000, 1_000_000))
    assert python_env_dirs_since(2_000_000, tmp_path) == {new}
    assert python_env_dirs_since(0, tmp_path) == {old, new}


def test_the_ready_line_names_the_folders_to_remove():
    mine, theirs = reaper.BACKEND_TMP / "python_env_mine01", reaper.BACKEND_TMP / "python_env_theirs"
    message = reaper.ready_line({mine})
    assert reaper.folders_named(message) == {mine}
    assert reaper.folders_named(reaper.ready_line(set())) == set()  # ready, and made none: remove none
    assert reaper.folders_named(b"") is None  # never ready: the reaper falls back to its time window
    assert reaper.folders_named(b"ready\t/etc/passwd\t" + str(theirs).encode() + b"\n") == {theirs}


def test_a_ready_server_s_reaper_removes_only_its_named_folders():
    server = _group_with_child()
    before = reaper.python_env_dirs()
    mine = Path(reaper.BACKEND_TMP) / f"python_env_t{os.getpid()}a"
    other = Path(reaper.BACKEND_TMP) / f"python_env_t{os.getpid()}b"
    mine.mkdir()
    other.mkdir()  # as if another server had started meanwhile
    try:
        watcher = subprocess.Popen([sys.executable, str(REAPER), str(server.pid), reaper.start_time(server.pid), "",
                                    "0"], stdin=subprocess.PIPE, start_new_session=True)
        watcher.stdin.write(reaper.ready_line({mine}))
        watcher.stdin.close()
        assert watcher.wait(timeout=20) == 0
        server.wait(timeout=5)
        assert not mine.exists() and other.exists()
        assert reaper.python_env_dirs() - before == {other}
    finally:
        for folder in (mine, other):
            if folder.exists():
                folder.rmdir()
