"""setup/launcher/process.py with stand-in servers (`sys.executable` scripts, no tritonserver): the ready URL,
one start per object, mpirun required for several ranks, cleanup actions after stop, wait() returning once
the group a server left behind is gone, and the context manager. Readiness, ports and the stop of stubs
that ignore SIGTERM are in tests/unit/setup/test_launcher.py and test_launcher_safety.py."""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

import pytest

from setup.launcher.options import LaunchError, LaunchOptions, TritonInstall
from setup.launcher.process import TritonProcess
from setup.launcher.procfs import group_members

# leaves a child behind in its process group and exits 0 (as a server whose stub outlives it would)
LEAVES_A_CHILD = ("import subprocess, sys\n"
                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                  "print('bye', flush=True)\n")
SLEEPS = "import time; time.sleep(60)\n"


def fake_server(tmp_path: Path, script: str) -> TritonInstall:
    path = tmp_path / "tritonserver"
    path.write_text(f"#!{sys.executable}\n{script}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return TritonInstall(binary=path)


def process(tmp_path: Path, script: str = SLEEPS, **kw) -> TritonProcess:
    return TritonProcess(fake_server(tmp_path, script), LaunchOptions(model_repo=tmp_path, http_port=18000,
                                                                      grpc_port=18001, metrics_port=18002, **kw),
                         tmp_path / "logs" / "server.log")


@pytest.mark.parametrize("address, url", [
    ("127.0.0.1", "http://127.0.0.1:18000/v2/health/ready"),
    ("0.0.0.0", "http://127.0.0.1:18000/v2/health/ready"),
    ("::1", "http://[::1]:18000/v2/health/ready"),
])
def test_ready_url(tmp_path, address, url):
    assert process(tmp_path, address=address).ready_url == url


def test_options_are_checked_when_the_process_is_made(tmp_path):
    with pytest.raises(LaunchError, match="does not exist"):
        TritonProcess(fake_server(tmp_path, SLEEPS), LaunchOptions(model_repo=tmp_path / "absent"), tmp_path / "log")


def test_several_ranks_need_mpirun_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    server = process(tmp_path, world_size=2)
    with pytest.raises(LaunchError, match="world size 2 needs mpirun"):
        server.start()
    assert server.pid is None


def test_before_start_there_is_nothing_to_stop_or_wait_for(tmp_path):
    server = process(tmp_path)
    assert server.stop() is None and server.wait() is None and not server.is_running()
    assert server.log_tail() == "(no log)"


def test_a_process_starts_once_and_cleanups_run_once_after_stop(tmp_path):
    server = process(tmp_path)
    done: list[str] = []
    server.add_cleanup(lambda: done.append("repo removed"))
    server.start()
    try:
        with pytest.raises(LaunchError, match="started already"):
            server.start()
        assert server.is_running() and done == []
    finally:
        server.stop(grace=2)
    assert done == ["repo removed"] and not server.is_running()
    server.stop(grace=2)
    assert done == ["repo removed"]


def test_wait_returns_once_what_the_server_left_behind_is_gone(tmp_path):
    server = process(tmp_path, LEAVES_A_CHILD)
    server.start()
    try:
        started = time.monotonic()
        assert server.wait() == 0
        assert group_members(server.pid) == []  # the watcher ended the child it left
        assert time.monotonic() - started < 30  # the child would sleep 60 s
        assert server.log_tail() == "bye"
    finally:
        server.stop(grace=1)


def test_the_context_manager_stops_the_group(tmp_path):
    with process(tmp_path) as server:
        assert server.is_running()
        pgid = server.pid
    assert not server.is_running() and group_members(pgid) == []
    assert (tmp_path / "logs").is_dir()  # the log folder was made for it
