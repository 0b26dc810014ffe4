"""Find, start, supervise and stop `tritonserver`.

The command line mirrors the TensorRT-LLM backend's `launch_triton_server.py`: one `-n 1 tritonserver`
per rank under `mpirun` when world size > 1, a python-backend shared-memory prefix per rank,
`--disable-auto-complete-config`, and rank 0 alone serving the non-engine models.
The process runs in its own session; it is stopped through the pid we started, never by name.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from setup.paths import cache_dir

NVIDIA_CONTAINER_BINARY = Path("/opt/tritonserver/bin/tritonserver")
ENV_BINARY = "TRITONSERVER"


class LaunchError(RuntimeError):
    """tritonserver could not be found, started, or did not become ready."""


@dataclass(frozen=True)
class TritonInstall:
    """A tritonserver binary plus what it needs to run (backend folder, environment)."""

    binary: Path
    backend_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    source: str = "explicit"


@dataclass(frozen=True)
class LaunchOptions:
    """Everything that shapes the tritonserver command line."""

    model_repo: Path
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    address: str = "127.0.0.1"
    world_size: int = 1
    engine_model_names: tuple[str, ...] = ("tensorrt_llm",)
    multimodal_gpu0_cuda_mem_pool_bytes: int = 0
    log_verbose: int = 0
    cpu_only: bool = False
    extra_args: tuple[str, ...] = ()

    def validate(self) -> None:
        for name in ("http_port", "grpc_port", "metrics_port"):
            port = getattr(self, name)
            if not 1 <= port <= 65535:
                raise LaunchError(f"{name.replace('_', ' ')} must be between 1 and 65535, got {port}.")
        if len({self.http_port, self.grpc_port, self.metrics_port}) != 3:
            raise LaunchError("The HTTP, gRPC and metrics ports must all differ.")
        if self.world_size < 1:
            raise LaunchError(f"world size must be at least 1, got {self.world_size}.")
        if self.multimodal_gpu0_cuda_mem_pool_bytes < 0:
            raise LaunchError("The multimodal CUDA memory pool size cannot be negative.")
        if not self.model_repo.is_dir():
            raise LaunchError(f"Model repository {self.model_repo} does not exist.")


def _pytriton_root() -> Path | None:
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0]) / "tritonserver"
    return root if (root / "bin" / "tritonserver").is_file() else None


def _wheel_install() -> TritonInstall | None:
    """The tritonserver inside the nvidia-pytriton wheel, with the fixes it needs outside PyTriton.

    The python backend wants its stub beside `libtriton_python.so`, so the small backends tree is
    copied into the cache with the stub for this interpreter. The stub embeds libpython and must load
    the venv's own (LIBDIR first on LD_LIBRARY_PATH) and find the venv's `python3` first on PATH.
    """
    root = _pytriton_root()
    if root is None:
        return None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = root / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise LaunchError(f"The nvidia-pytriton wheel has no python-backend stub for Python {version}.")
    backends = cache_dir() / "triton_backends" / version
    target_stub = backends / "python" / "triton_python_backend_stub"
    if not target_stub.is_file():
        staging = backends.with_name(backends.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(root / "backends", staging)
        shutil.copy2(stub, staging / "python" / "triton_python_backend_stub")
        shutil.rmtree(backends, ignore_errors=True)
        staging.rename(backends)
    libs = root.parent.parent / "nvidia_pytriton.libs"
    pylibdir = sysconfig.get_config_var("LIBDIR") or ""
    ld_path = os.pathsep.join(p for p in (str(libs), pylibdir, os.environ.get("LD_LIBRARY_PATH", "")) if p)
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join([venv_bin, os.environ.get("PATH", "/usr/bin:/bin")])
    return TritonInstall(
        binary=root / "bin" / "tritonserver",
        backend_dir=backends,
        env={"LD_LIBRARY_PATH": ld_path, "PATH": path},
        source="nvidia-pytriton wheel",
    )


def find_tritonserver(explicit: str | os.PathLike | None = None) -> TritonInstall:
    """Explicit path, then $TRITONSERVER, then NVIDIA's container path, then the pytriton wheel."""
    for candidate, source in ((explicit, "explicit"), (os.environ.get(ENV_BINARY), f"${ENV_BINARY}")):
        if candidate:
            path = Path(candidate)
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise LaunchError(f"tritonserver given by {source} is not an executable file: {path}")
            return TritonInstall(binary=path, source=source)
    if NVIDIA_CONTAINER_BINARY.is_file():
        return TritonInstall(binary=NVIDIA_CONTAINER_BINARY, source="NVIDIA container")
    wheel = _wheel_install()
    if wheel is not None:
        return wheel
    raise LaunchError(
        "No tritonserver found: pass --tritonserver PATH, set $TRITONSERVER, run inside NVIDIA's "
        "Triton container, or install the pinned requirements (nvidia-pytriton ships one)."
    )


def _rank_args(install: TritonInstall, opts: LaunchOptions, rank: int) -> list[str]:
    args = [
        str(install.binary),
        f"--model-repository={opts.model_repo}",
        f"--http-address={opts.address}",
        f"--grpc-address={opts.address}",
        f"--metrics-address={opts.address}",
        f"--http-port={opts.http_port}",
        f"--grpc-port={opts.grpc_port}",
        f"--metrics-port={opts.metrics_port}",
        "--disable-auto-complete-config",
        f"--backend-config=python,shm-region-prefix-name=prefix{rank}_",
    ]
    if install.backend_dir is not None:
        args.append(f"--backend-directory={install.backend_dir}")
    if opts.cpu_only:
        args += ["--pinned-memory-pool-byte-size=0", "--allow-gpu-metrics=false"]
    if rank == 0:
        if opts.multimodal_gpu0_cuda_mem_pool_bytes:
            args.append(f"--cuda-memory-pool-byte-size=0:{opts.multimodal_gpu0_cuda_mem_pool_bytes}")
        if opts.log_verbose:
            args.append(f"--log-verbose={opts.log_verbose}")
    else:
        args.append("--model-control-mode=explicit")
        args += [f"--load-model={name}" for name in opts.engine_model_names]
    return args + list(opts.extra_args)


def build_command(install: TritonInstall, opts: LaunchOptions) -> list[str]:
    """The argv to run: tritonserver alone, or under mpirun with one process per rank."""
    if opts.world_size == 1:
        return _rank_args(install, opts, 0)
    cmd = ["mpirun", "--allow-run-as-root"]
    for rank in range(opts.world_size):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", *_rank_args(install, opts, rank)]
    return cmd


def _ready(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback URL we built
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


class TritonProcess:
    """One tritonserver (or mpirun) process group that we started and own."""

    def __init__(self, install: TritonInstall, opts: LaunchOptions, log_path: Path):
        opts.validate()
        self.install = install
        self.opts = opts
        self.log_path = log_path
        self.command = build_command(install, opts)
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def ready_url(self) -> str:
        host = "127.0.0.1" if self.opts.address in ("0.0.0.0", "") else self.opts.address
        return f"http://{host}:{self.opts.http_port}/v2/health/ready"

    def start(self) -> None:
        if self.opts.world_size > 1 and shutil.which("mpirun") is None:
            raise LaunchError(f"world size {self.opts.world_size} needs mpirun, which is not on PATH.")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.install.env}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(  # argv list, no shell
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True,
            )
        # The server runs in its own session, so it would outlive us; stop it when this process exits.
        atexit.register(self.stop)

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def wait_ready(self, timeout: float = 120.0, on_wait: Callable[[float], None] | None = None) -> float:
        """Poll /v2/health/ready; return seconds waited. Raises LaunchError with the log tail."""
        start = time.monotonic()
        while True:
            if _ready(self.ready_url):
                return time.monotonic() - start
            if not self.is_running():
                code = self._proc.returncode if self._proc else None
                raise LaunchError(f"tritonserver exited with code {code} before it was ready.\n{self.log_tail()}")
            waited = time.monotonic() - start
            if waited > timeout:
                raise LaunchError(f"tritonserver was not ready after {timeout:.0f} s.\n{self.log_tail()}")
            if on_wait:
                on_wait(waited)
            time.sleep(0.25)

    def wait(self) -> int | None:
        """Block until the process exits; its exit code."""
        return self._proc.wait() if self._proc else None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM the process group we started, then SIGKILL after `grace` seconds."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)  # our own session: pgid == pid
            except ProcessLookupError:
                pass
            try:
                self._proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._proc.wait(timeout=5)
        return self._proc.returncode

    def __enter__(self) -> TritonProcess:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
