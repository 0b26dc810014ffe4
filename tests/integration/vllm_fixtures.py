"""vLLM's CPU build for the integration tests: installed once (benchmarks.peer_vllm), started once per session.

The server runs with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True so the Adapters tab can register adapters at run
time. `python -m tests.integration.vllm_fixtures` starts one by hand (Ctrl-C stops it).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path

from benchmarks.peer_vllm import VllmServer, ensure_venv

RUNTIME_LORA_ENV = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}


@contextmanager
def _environment(extra: dict[str, str]):
    """os.environ with `extra` while the server process is started (VllmServer copies os.environ)."""
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class RunningVllm:
    """A vLLM server started elsewhere (VLLM_TEST_URL), with the attributes the tests read."""

    def __init__(self, url: str):
        self.url = url.rstrip("/").removesuffix("/v1") + "/v1"
        self.start_seconds = 0.0
        self.log_path = None

    def stop(self) -> None:
        """Not ours to stop."""


def metrics_value(url: str, name: str) -> float | None:
    """Sum of one Prometheus metric of the server at `url` (its /v1 address)."""
    import urllib.request

    with urllib.request.urlopen(url.removesuffix("/v1") + "/metrics", timeout=5) as reply:  # noqa: S310 - loopback
        lines = reply.read().decode().splitlines()
    values = [float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(name + "{") or
              line.startswith(name + " ")]
    return sum(values) if values else None


def start_vllm(model_dir: Path, log_path: Path, port: int | None = None, timeout: float = 900.0) -> VllmServer:
    """Install vLLM's CPU build if needed and start it (smollm2 + pirate + french, runtime LoRA loading)."""
    python = ensure_venv(log=lambda *_: None)
    server = VllmServer(model_dir, log_path, python=python, port=port)
    started = time.monotonic()
    with _environment(RUNTIME_LORA_ENV):
        server.start(timeout)
    server.start_seconds = time.monotonic() - started
    return server


def zero_b_adapter(source: Path, target: Path) -> Path:
    """A copy of a PEFT adapter whose lora_B matrices are all zero: applied, it changes nothing."""
    import shutil

    import numpy as np
    from safetensors.numpy import load_file, save_file

    shutil.copytree(source, target)
    weights = load_file(target / "adapter_model.safetensors")
    save_file({k: np.zeros_like(v) if "lora_B" in k else v for k, v in weights.items()},
              target / "adapter_model.safetensors")
    return target


if __name__ == "__main__":
    from setup.cpu.model import prepare_cpu_model
    from setup.paths import cache_dir

    port = int(os.environ.get("VLLM_PORT", "0")) or None
    vllm = start_vllm(prepare_cpu_model(), cache_dir() / "logs" / "vllm-dev.log", port=port)
    print(f"vLLM ready at {vllm.url} in {vllm.start_seconds:.0f} s", flush=True)
    try:
        while vllm.served():
            time.sleep(5)
    except KeyboardInterrupt:
        pass
    finally:
        vllm.stop()

