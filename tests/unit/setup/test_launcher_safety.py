"""Launcher process safety without tritonserver: taken ports, readiness that only counts our own server,
and a process group (stand-ins for python-backend stubs that ignore SIGTERM, shared-memory segments)
that is gone after stop() or after the server is killed."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from setup.launcher import (
    SHM_DIR,
    InstanceFolder,
    LaunchError,
    LaunchOptions,
    TritonInstall,
    TritonProcess,
    check_ports_free,
    claim_instance_folder,
    port_in_use,
    start_triton,
)
from setup.paths import PROJECT_ROOT
from tests.proc_helpers import live_members
from tests.servers import free_port

# A stand-in tritonserver. MODE: "serve" answers /v2/health/ready on its --http-port; "busy" says what
# tritonserver says when a port is taken and exits 1 (after DELAY s); "idle" never answers.
# It starts two "stubs" in its process group that ignore SIGTERM (as the tensorrt_llm stub does) and
# makes a shared-memory segment per stub with the prefix it was given, as the python backend does.
FAKE_SERVER = textwrap.dedent("""
    import http.server, os, subprocess, sys, threading, time
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    mode, delay = os.environ["FAKE_MODE"], float(os.environ.get("FAKE_DELAY", "0"))
    prefix = args["backend-config"].split("shm-region-prefix-name=")[1]
    stub = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    for i in range(2):
        with open(f"/dev/shm/{prefix}fake-{i}", "wb") as segment:
            segment.write(b"x")
        subprocess.Popen([sys.executable, "-c", stub])
    print("stubs started", flush=True)
    if mode == "busy":
        time.sleep(delay)
        print(f"E failed to start HTTP service: Socket '127.0.0.1:{args['http-port']}' already in use", flush=True)
        sys.exit(1)
    if mode == "serve":
        class Ready(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
            def log_message(self, *_):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", int(args["http-port"])), Ready)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(600)
""")


@pytest.fixture
def fake_install(tmp_path, monkeypatch):
    def make(mode: str, delay: float = 0.0) -> TritonInstall:
        monkeypatch.setenv("FAKE_MODE", mode)
        monkeypatch.setenv("FAKE_DELAY", str(delay))
        path = tmp_path / "tritonserver"
        path.write_text(f"#!{sys.executable}\n{FAKE_SERVER}")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return TritonInstall(binary=path)
    return make


def options(tmp_path: Path, http_port: int | None = None, **kw) -> LaunchOptions:
    return LaunchOptions(model_repo=tmp_path, http_port=http_port or free_port(), grpc_port=free_port(),
                         metrics_port=free_port(), **kw)


class ReadyHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_):
        pass


@pytest.fixture
def other_server():
    """Another server that answers /v2/health/ready (as another tritonserver on the port would)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ReadyHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def segments(process: TritonProcess) -> list[Path]:
    return sorted(SHM_DIR.glob(f"{process.shm_prefix}*"))


def wait_for(check, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def group_of(process: TritonProcess, count: int) -> list[int]:
    """The live members once the fake server has started its stubs (leader + `count`)."""
    assert wait_for(lambda: len(live_members(process.pid)) == count + 1, 10), live_members(process.pid)
    return live_members(process.pid)


# -- ports ---------------------------------------------------------------------------------------------


def test_taken_port_is_named_with_the_flag_that_picks_another(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        opts = LaunchOptions(model_repo=tmp_path, http_port=free_port(), grpc_port=port, metrics_port=free_port())
        assert port_in_use(port) and not port_in_use(opts.http_port)
        message = (f"Triton's gRPC port {port} on 127.0.0.1 is already in use (another tritonserver or app?); "
                   "pick another with --triton-grpc-port.")
        with pytest.raises(LaunchError) as caught:
            check_ports_free(opts, "--triton-{kind}-port")
        assert str(caught.value) == message
        with pytest.raises(LaunchError, match=r"metrics port .* already in use .*; pick another port\.$"):
            check_ports_free(LaunchOptions(model_repo=tmp_path, http_port=free_port(), grpc_port=free_port(),
                                           metrics_port=port), port_flag=None)


def test_a_port_shared_with_so_reuseport_counts_as_taken(tmp_path):
    # gRPC servers (tritonserver's too) bind with SO_REUSEPORT, so a second server could bind beside them
    with socket.socket() as grpc_like:
        grpc_like.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        grpc_like.bind(("127.0.0.1", 0))
        grpc_like.listen()
        assert port_in_use(grpc_like.getsockname()[1])


def test_start_triton_on_a_taken_port_starts_nothing(tmp_path, fake_install, other_server):
    log = tmp_path / "log.txt"
    with pytest.raises(LaunchError, match=f"HTTP port {other_server} on 127.0.0.1 is already in use.*--http-port"):
        start_triton(fake_install("serve"), options(tmp_path, other_server), log, ready_timeout=5)
    assert not log.exists()


# -- readiness is our own server's ---------------------------------------------------------------------


@pytest.mark.parametrize("delay", [0.0, 1.5])
def test_server_that_exits_on_a_busy_port_is_not_ready_though_another_answers(tmp_path, fake_install,
                                                                             other_server, delay):
    """The other server's ready answer never counts: LaunchError with our server's own log."""
    process = TritonProcess(fake_install("busy", delay), options(tmp_path, other_server), tmp_path / "log.txt")
    process.start()
    started = time.monotonic()
    try:
        with pytest.raises(LaunchError, match=r"(?s)exited with code 1 before it was ready.*already in use"):
            process.wait_ready(timeout=30)
        assert time.monotonic() - started >= delay
    finally:
        process.stop(grace=0.5)
    assert live_members(process.pid) == [] and segments(process) == []


def test_alive_server_is_not_ready_while_another_holds_its_port(tmp_path, fake_install, other_server):
    process = TritonProcess(fake_install("idle"), options(tmp_path, other_server), tmp_path / "log.txt")
    process.start()
    try:
        with pytest.raises(LaunchError, match="not ready after 2 s. Port .* answers, but from a process we did not"):
            process.wait_ready(timeout=2)
    finally:
        process.stop(grace=0.5)


def test_server_that_answers_itself_is_ready(tmp_path, fake_install):
    process = start_triton(fake_install("serve"), options(tmp_path), tmp_path / "log.txt", ready_timeout=20)
    try:
        assert process.is_running() and process.answers_itself() and process.ready_seconds < 20
    finally:
        process.stop(grace=0.5)


def test_log_tail_shows_this_run_only(tmp_path, fake_install, other_server):
    log = tmp_path / "log.txt"
    log.write_text("an earlier run: model load failed\n")
    process = TritonProcess(fake_install("busy"), options(tmp_path, other_server), log)
    process.start()
    with pytest.raises(LaunchError) as caught:
        process.wait_ready(timeout=20)
    process.stop(grace=0.5)
    assert "already in use" in str(caught.value) and "earlier run" not in str(caught.value)


# -- nothing of the group outlives the server ----------------------------------------------------------


def test_each_instance_has_its_own_shared_memory_prefix(tmp_path):
    install = TritonInstall(binary=Path("/bin/ts"))
    first, second = (TritonProcess(install, options(tmp_path, 9000), tmp_path / "log") for _ in range(2))
    assert first.shm_prefix != second.shm_prefix
    assert str(os.getpid()) in first.shm_prefix and "9000" in first.shm_prefix
    assert f"--backend-config=python,shm-region-prefix-name={first.shm_prefix}0_" in first.command


def test_stop_ends_stubs_that_ignore_sigterm_and_removes_shared_memory(tmp_path, fake_install):
    process = start_triton(fake_install("serve"), options(tmp_path), tmp_path / "log.txt", ready_timeout=20)
    group_of(process, 2)
    assert len(segments(process)) == 2
    started = time.monotonic()
    process.stop(grace=0.5)
    assert time.monotonic() - started < 8
    assert live_members(process.pid) == [] and segments(process) == []


def test_stop_after_the_leader_died_still_ends_its_stubs(tmp_path, fake_install, monkeypatch):
    monkeypatch.setattr(TritonProcess, "_watch", lambda self: None)  # stop() alone must be enough
    process = start_triton(fake_install("serve"), options(tmp_path), tmp_path / "log.txt", ready_timeout=20)
    group_of(process, 2)
    os.kill(process.pid, signal.SIGKILL)
    time.sleep(0.5)
    assert len(live_members(process.pid)) == 2  # the stubs, orphaned
    process.stop(grace=0.5)
    assert live_members(process.pid) == [] and segments(process) == []


def test_killed_server_leaves_no_stub_and_no_shared_memory(tmp_path, fake_install):
    """kill -9 of tritonserver alone: the watcher ends the rest of its group within seconds."""
    process = start_triton(fake_install("serve"), options(tmp_path), tmp_path / "log.txt", ready_timeout=20)
    try:
        stubs = [pid for pid in group_of(process, 2) if pid != process.pid]
        os.kill(process.pid, signal.SIGKILL)
        assert wait_for(lambda: not live_members(process.pid) and not segments(process), 5), live_members(process.pid)
        assert not any(Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
                       for pid in stubs)
        assert process.wait() == -signal.SIGKILL
    finally:
        process.stop(grace=0.5)


# -- instance folders ----------------------------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from setup.launcher import claim_instance_folder
    folder = claim_instance_folder(Path(sys.argv[1]), "8000-8001-8002")
    (folder.path / "repo").mkdir()
    print("claimed", flush=True)
    time.sleep(600)
""")


def test_instance_folder_of_a_live_owner_is_never_handed_out(tmp_path):
    first = claim_instance_folder(tmp_path, "a")
    (first.path / "marker").write_text("mine")
    with pytest.raises(LaunchError, match="belongs to a running server"):
        claim_instance_folder(tmp_path, "a")
    assert (first.path / "marker").read_text() == "mine"
    other = claim_instance_folder(tmp_path, "b")
    first.release()
    assert not first.path.exists() and other.path.is_dir()
    again = claim_instance_folder(tmp_path, "a")
    assert again.path.is_dir() and list(again.path.iterdir()) == [again.path / InstanceFolder.LOCK_NAME]
    again.release()
    other.release()


def test_instance_folder_of_another_process_is_locked_until_it_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=PROJECT_ROOT)
    try:
        assert holder.stdout.readline().strip() == "claimed"
        with pytest.raises(LaunchError, match=f"pid {holder.pid}"):
            claim_instance_folder(tmp_path, "8000-8001-8002")
        assert (tmp_path / "8000-8001-8002" / "repo").is_dir()
    finally:
        holder.kill()
        holder.wait()
    folder = claim_instance_folder(tmp_path, "8000-8001-8002")  # its owner died: reused, emptied
    assert not (folder.path / "repo").exists()
    assert (folder.path / InstanceFolder.LOCK_NAME).read_text().strip() == str(os.getpid())
    folder.release()
