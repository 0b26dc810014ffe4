"""NVIDIA Dynamo's OpenAI frontend over two mocker workers on loopback: the distributed serving layer users put
in front of many GPUs, here with simulated engines (no GPU, no etcd, no NATS).

    python -m benchmarks.peer_dynamo        # install if needed, serve smollm2 through the frontend, Ctrl-C stops

The recipe (shared/reference/deployments_2026.md §6): `ai-dynamo` and `ai-dynamo-runtime` 1.6.1 installed with
--no-deps into `.venv-dynamo` (their `aisimulate` dependency downloads from a host these machines cannot reach),
then their plain dependencies; the frontend and the mocker share a TMPDIR, where file discovery keeps its
store. The mocker answers with tokens of the model's vocabulary at simulated speed, not a model's text:
good for routing, streaming, cancellation and load, not for content.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks import peer_venv
from benchmarks.peer_vllm import served_models
from benchmarks.scratch import scratch_folder
from benchmarks.server_process import ServerProcess, free_port, serve_until_interrupted, started
from setup.paths import PROJECT_ROOT

VENV = PROJECT_ROOT / ".venv-dynamo"
VERSION = "1.6.1"
PACKAGES = (f"ai-dynamo=={VERSION}", f"ai-dynamo-runtime=={VERSION}")
DEPENDENCIES = ("aiohttp", "certifi", "kubernetes<33", "msgspec", "prometheus-client", "pyzmq", "redis<9", "tqdm",
                "transformers", "typing-extensions", "zstandard", "pydantic<=2.13.5", "uvloop")
SERVED_NAME = "smollm2"
PLANES = ("--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq")
# The runtime's sockets on loopback: left to itself it binds its request and response-stream sockets
# (OS-assigned ports) to the machine's outward address and advertises its event publishers there. 1.6.1 still
# binds the ZMQ event publishers to 0.0.0.0 (no setting moves them), but advertises them on 127.0.0.1, so all
# traffic stays on loopback (tests/integration/test_dynamo.py checks both).
LOOPBACK_ENV = {name: "127.0.0.1" for name in ("DYN_TCP_RPC_HOST", "DYN_TCP_RESPONSE_STREAM_HOST",
                                                "DYN_EVENT_PLANE_HOST", "DYN_SYSTEM_HOST")}


def ensure_venv(venv: Path = VENV, log=print) -> Path:
    """`venv` with Dynamo's frontend and mocker (once; a marker file records it); returns its python."""
    steps = (("install", "-q", "--no-deps", *PACKAGES), ("install", "-q", *DEPENDENCIES))
    return peer_venv.ensure_venv(venv, f"ai-dynamo-{VERSION}", steps, log)


class DynamoServer:
    """The frontend (KV-aware router) and one mocker process per served model: `workers` simulated engines
    for smollm2, one for each name in `extra_models` (a second model behind the same front, which the app
    lists beside the base model like an adapter served as a model name)."""

    def __init__(self, model_dir: Path, log_dir: Path, python: Path | None = None, port: int | None = None,
                 workers: int = 2, speedup: float = 10.0, extra_models: tuple[str, ...] = ()):
        python = str(python or VENV / "bin" / "python")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.models = [SERVED_NAME, *extra_models]
        self._store = tempfile.TemporaryDirectory(prefix="dynamo-discovery-")
        env = {"TMPDIR": self._store.name, **LOOPBACK_ENV}
        self.frontend = ServerProcess("Dynamo's frontend", [
            python, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(self.port), *PLANES,
            "--router-mode", "kv"], Path(log_dir) / "dynamo-frontend.log", env=env)
        self.mockers = [ServerProcess(f"Dynamo's mocker for {name}", [
            python, "-m", "dynamo.mocker", "--model-path", str(model_dir), "--model-name", name, *PLANES,
            "--endpoint", f"dyn://dynamo.{name.replace('-', '_')}.generate",
            "--num-workers", str(workers if name == SERVED_NAME else 1), "--speedup-ratio", str(speedup)],
            Path(log_dir) / f"dynamo-mocker-{name}.log", env=env) for name in self.models]

    def start(self, timeout: float = 300.0) -> DynamoServer:
        try:
            self.frontend.start()
            for mocker in self.mockers:
                mocker.start()
            self.frontend.wait_until(self._serving, timeout, f"list {self.models} on {self.url}/models",
                                     interval=1.0)
        except BaseException:
            self.stop()
            raise
        return self

    def _serving(self) -> bool:
        for mocker in self.mockers:
            if mocker.exited() is not None:
                raise mocker.exit_error(mocker.exited())
        return set(self.models) <= set(served_models(self.url))

    def served(self) -> list[str]:
        return served_models(self.url)

    def stop(self) -> None:
        self.frontend.stop()
        for mocker in self.mockers:
            mocker.stop()
        self._store.cleanup()


def dynamo_server(model_dir: Path, log_dir: Path, log=print, timeout: float = 300.0):
    """Install if needed; a context manager yielding the running DynamoServer, stopped on exit."""
    return started(DynamoServer(model_dir, log_dir, python=ensure_venv(log=log)), timeout, log)


def main() -> None:
    from setup.cpu.model import prepare_cpu_model
    from setup.paths import cache_dir

    with scratch_folder(), dynamo_server(prepare_cpu_model(), cache_dir() / "logs") as server:
        serve_until_interrupted(server)


if __name__ == "__main__":
    main()
