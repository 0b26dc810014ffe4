"""What the benchmarks (and their tests) share: the CPU demo's tritonserver or a pacing tritonserver on free loopback
ports, the app as its own process (so its CPU and memory are its own), and /proc readings of it.

Every process here is started in its own session and stopped through the pid we started.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.server_process import ServerProcess, free_port, on_free_ports
from setup.cpu.pacing import PacingSpec, start_pacing_triton, write_pacing_repository
from setup.launcher import TritonProcess

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
DEMO_READY_TIMEOUT = 300.0  # the demo's models load in ~20 s idle; a loaded 2-core machine takes several times that


@dataclass
class DemoServer:
    process: TritonProcess
    grpc_url: str
    log_path: Path


@contextmanager
def demo_server(folder: Path, overrides: dict | None = None, ready_timeout: float = DEMO_READY_TIMEOUT):
    """tritonserver with the CPU demo's repository (written into `folder`, the engine and encoder prepared first) on
    free ports, started again on new ones when a port was taken meanwhile; stopped on exit. Its log is the demo's,
    `cache_dir()/logs/triton-<http port>.log`: it outlives the run's scratch folder, for a run whose server failed."""
    from setup.cpu.demo import start_demo_triton, write_demo_repository

    repo = write_demo_repository(Path(folder) / "repo", overrides=overrides, log=lambda *_: None)
    ports, process = on_free_ports(lambda *ports: start_demo_triton(
        *ports, repo=repo, log=lambda *_: None, ready_timeout=ready_timeout))
    try:
        yield DemoServer(process, f"127.0.0.1:{ports[1]}", process.log_path)
    finally:
        process.stop()


@dataclass
class PacingServer:
    process: TritonProcess
    grpc_url: str
    metrics_url: str
    log_path: Path


@contextmanager
def pacing_server(folder: Path, spec: PacingSpec | None = None):
    """tritonserver with the pacing model alone, on free ports; stopped on exit."""
    repo = write_pacing_repository(Path(folder) / "pacing_repo", spec or PacingSpec())
    log_path = Path(folder) / "pacing_triton.log"
    (_, grpc, metrics), process = on_free_ports(lambda *ports: start_pacing_triton(repo, *ports, log_path))
    try:
        yield PacingServer(process, f"127.0.0.1:{grpc}", f"http://127.0.0.1:{metrics}/metrics", log_path)
    finally:
        process.stop()


def read_rss_mb(pid: int) -> float:
    """Resident memory of one process in MB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def read_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds one process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class AppProcess:
    """`python -m app --triton URL ...` in its own session, logging to a file."""

    def __init__(self, triton_url: str, model: str, log_path: Path, port: int | None = None,
                 extra_args: tuple[str, ...] = ()):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = Path(log_path)
        self.command = [sys.executable, "-m", "app", "--triton", triton_url, "--model", model,
                        "--port", str(self.port), *extra_args]
        self._server = ServerProcess("The app", self.command, self.log_path)

    @property
    def pid(self) -> int:
        assert self._server.pid is not None
        return self._server.pid

    def start(self, timeout: float = 90.0) -> AppProcess:
        self._server.start().wait_until(self._answers, timeout, f"answer on {self.url}", interval=0.3)
        return self

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "gradio_api/info", timeout=2) as response:  # noqa: S310
                return response.status == 200
        except OSError:
            return False

    def rss_mb(self) -> float:
        return read_rss_mb(self.pid)

    def cpu_seconds(self) -> float:
        return read_cpu_seconds(self.pid)

    def stop(self, grace: float = 10.0) -> None:
        self._server.stop(grace)

    def __enter__(self) -> AppProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def tokenizer_args() -> tuple[str, ...]:
    """`--tokenizer DIR` when the demo's converted model is cached (the prompt is then built with the
    tokenizer's chat template, as in the demo), else nothing (the named template)."""
    from setup.cpu.model import is_prepared, model_dir

    return ("--tokenizer", str(model_dir())) if is_prepared() else ()
