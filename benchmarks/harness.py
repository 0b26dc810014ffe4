"""What the overhead and soak runs (and their tests) share: a pacing tritonserver on free loopback
ports, the app as its own process (so its CPU and memory are its own), and /proc readings of it.

Every process here is started in its own session and stopped through the pid we started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from setup.cpu.pacing import PacingSpec, start_pacing_triton, write_pacing_repository
from setup.launcher import TritonProcess
from setup.paths import PROJECT_ROOT

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    http, grpc, metrics = free_port(), free_port(), free_port()
    log_path = Path(folder) / "pacing_triton.log"
    process = start_pacing_triton(repo, http, grpc, metrics, log_path)
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
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def start(self, timeout: float = 90.0) -> AppProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(self.command, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"The app exited with code {self._proc.returncode}; see {self.log_path}.")
            try:
                with urllib.request.urlopen(self.url + "gradio_api/info", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"The app did not answer on {self.url} within {timeout:.0f} s; see {self.log_path}.")

    def rss_mb(self) -> float:
        return read_rss_mb(self.pid)

    def cpu_seconds(self) -> float:
        return read_cpu_seconds(self.pid)

    def stop(self, grace: float = 10.0) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        os.killpg(self._proc.pid, signal.SIGTERM)  # our own session: pgid == pid
        try:
            self._proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=5)

    def __enter__(self) -> AppProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def tokenizer_args() -> tuple[str, ...]:
    """`--tokenizer DIR` when the demo's converted model is cached (the prompt is then built with the
    tokenizer's chat template, as in the demo), else nothing (the named template)."""
    from setup.cpu.model import is_prepared, model_dir

    return ("--tokenizer", str(model_dir())) if is_prepared() else ()
