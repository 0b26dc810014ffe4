"""The CPU demo's real tritonserver: a second demo on busy ports changes nothing of the first, and no
python-backend stub or shared-memory segment outlives the server, stopped or killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from setup.cpu.demo import demo_instances_dir, start_demo_triton
from setup.launcher import SHM_DIR, LaunchError, TritonProcess
from setup.paths import PROJECT_ROOT
from tests.proc_helpers import live_members
from tests.servers import free_port, free_ports, start_triton

pytestmark = pytest.mark.usefixtures("demo_command_memory")  # the demos these tests start

STUBS = 6  # preprocessing, postprocessing, tensorrt_llm, tensorrt_llm_bls, multimodal_encoders (+ pacing)


def quiet(*_):
    pass


def segments(process: TritonProcess) -> list[Path]:
    return sorted(SHM_DIR.glob(f"{process.shm_prefix}*"))


def snapshot(folder: Path) -> dict[str, int]:
    """Every path under `folder` with its modification time."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))}


def serves(http_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v2/models/tensorrt_llm_bls/ready",
                                    timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def demo(cpu_model_dir):
    """One demo started as `python -m app --demo` starts it: its own repository folder in the cache."""
    ports = tuple(free_ports(3))
    process = start_demo_triton(*ports, log=quiet)
    yield process, ports
    process.stop()


def test_second_demo_on_busy_ports_fails_and_touches_nothing(demo):
    process, (http, grpc, metrics) = demo
    folder = demo_instances_dir() / f"{http}-{grpc}-{metrics}"
    assert (folder / "repo" / "tensorrt_llm_bls" / "config.pbtxt").is_file()
    (folder / "repo" / "marker").write_text("first instance")
    before, members = snapshot(folder), sorted(live_members(process.pid))

    started = time.monotonic()
    with pytest.raises(LaunchError) as same_ports:
        start_demo_triton(http, grpc, metrics, log=quiet)
    other_http = free_port()
    with pytest.raises(LaunchError) as same_grpc:
        start_demo_triton(other_http, grpc, free_port(), log=quiet)
    assert time.monotonic() - started < 2  # failed on the ports, before writing or starting anything

    assert str(same_ports.value) == (f"Triton's HTTP port {http} on 127.0.0.1 is already in use (another "
                                     "tritonserver or app?); pick another with --triton-http-port.")
    assert f"Triton's gRPC port {grpc} on 127.0.0.1 is already in use" in str(same_grpc.value)
    assert "--triton-grpc-port" in str(same_grpc.value)
    assert snapshot(folder) == before and (folder / "repo" / "marker").read_text() == "first instance"
    assert not any(demo_instances_dir().glob(f"{other_http}-*"))
    assert process.is_running() and sorted(live_members(process.pid)) == members and serves(http)


def test_app_demo_on_busy_ports_says_which_port_and_exits(demo):
    """`python -m app --demo` on the ports of a running demo: one error line, no 'ready'."""
    process, (http, grpc, metrics) = demo
    result = subprocess.run(
        [sys.executable, "-m", "app", "--demo", "--port", str(free_port()), "--triton-http-port", str(free_port()),
         "--triton-grpc-port", str(grpc), "--triton-metrics-port", str(free_port())],
        capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"error: Triton's gRPC port {grpc} on 127.0.0.1 is already in use" in result.stderr
    assert "pick another with --triton-grpc-port." in result.stderr
    assert "ready" not in result.stdout and "Web UI" not in result.stdout
    assert process.is_running() and serves(http)


def test_stop_leaves_no_process_of_the_group_and_no_shared_memory(demo):
    process, (http, grpc, metrics) = demo
    pgid = process.pid
    assert len(live_members(pgid)) == 1 + STUBS - 1  # the demo here runs without the pacing model
    assert len(segments(process)) >= STUBS - 1
    started = time.monotonic()
    process.stop()
    assert live_members(pgid) == [] and segments(process) == []
    assert time.monotonic() - started < 20
    assert not (demo_instances_dir() / f"{http}-{grpc}-{metrics}").exists()  # its repository went with it
    assert not serves(http)


def test_killed_tritonserver_leaves_no_stub_and_no_shared_memory(tmp_path, cpu_model_dir):
    """kill -9 of tritonserver alone (not its group): its stubs and their segments are gone in seconds."""
    triton = start_triton(tmp_path)  # the test-suite demo: repository in tmp_path, with the pacing model
    process = triton.process
    pgid = process.pid
    try:
        assert len(live_members(pgid)) == 1 + STUBS
        assert len(segments(process)) >= STUBS
        os.kill(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (live_members(pgid) or segments(process)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_members(pgid) == [], "python-backend stubs outlived tritonserver"
        assert segments(process) == []
        assert time.monotonic() - (deadline - 10) < 5
    finally:
        process.stop()
