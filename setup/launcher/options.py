"""Launch options of tritonserver, the launcher's error, and the checks before a start (free ports, shared
memory)."""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

NVIDIA_CONTAINER_BINARY = Path("/opt/tritonserver/bin/tritonserver")
ENV_BINARY = "TRITONSERVER"
SHM_DIR = Path("/dev/shm")
# (LaunchOptions field, how people call it, the {kind} in a command-line flag such as --{kind}-port)
# Triton's Python models (BLS, pre/postprocessing, the CPU stand-ins) pass tensors through /dev/shm: each
# stub starts with a 1 MiB region that grows in 1 MiB steps, and an image's prompt table takes a few MiB.
MIN_SHM_BYTES = 64 * 2**20
PORTS = (("http_port", "HTTP", "http"), ("grpc_port", "gRPC", "grpc"), ("metrics_port", "metrics", "metrics"))


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
    no_mpi: bool = False  # one process whatever the world size (the llmapi model starts its own workers)
    engine_model_names: tuple[str, ...] = ("tensorrt_llm",)
    multimodal_gpu0_cuda_mem_pool_bytes: int = 0
    log_verbose: int = 0
    cpu_only: bool = False
    extra_args: tuple[str, ...] = ()

    def validate(self) -> None:
        self.validate_ports()
        if self.world_size < 1:
            raise LaunchError(f"world size must be at least 1, got {self.world_size}.")
        if self.multimodal_gpu0_cuda_mem_pool_bytes < 0:
            raise LaunchError("The multimodal CUDA memory pool size cannot be negative.")
        if not self.model_repo.is_dir():
            raise LaunchError(f"Model repository {self.model_repo} does not exist.")

    def validate_ports(self) -> None:
        for name in ("http_port", "grpc_port", "metrics_port"):
            port = getattr(self, name)
            if not 1 <= port <= 65535:
                raise LaunchError(f"{name.replace('_', ' ')} must be between 1 and 65535, got {port}.")
        if len({self.http_port, self.grpc_port, self.metrics_port}) != 3:
            raise LaunchError("The HTTP, gRPC and metrics ports must all differ.")

    @property
    def probe_host(self) -> str:
        """Where a client reaches the server: the bind address, loopback for the any-address."""
        return "127.0.0.1" if self.address in ("0.0.0.0", "") else self.address.strip("[]")


def port_in_use(port: int, address: str = "127.0.0.1") -> bool:
    """Someone holds the port on `address` (binding there, as tritonserver will, fails)."""
    host = address.strip("[]") or "0.0.0.0"
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def check_ports_free(options: LaunchOptions, port_flag: str | None = "--{kind}-port") -> None:
    """Raise LaunchError naming the first of the HTTP, gRPC and metrics ports that is taken.

    `port_flag` is the command-line flag that picks that port (`{kind}` is http, grpc or metrics);
    None when the ports come from somewhere else (a form).
    """
    options.validate_ports()
    for name, label, kind in PORTS:
        port = getattr(options, name)
        if port_in_use(port, options.address):
            advice = f"pick another with {port_flag.format(kind=kind)}" if port_flag else "pick another port"
            raise LaunchError(f"Triton's {label} port {port} on {options.address} is already in use "
                              f"(another tritonserver or app?); {advice}.")


def ports_or_free(preferred: tuple[int, int, int], address: str = "127.0.0.1") -> tuple[int, int, int]:
    """`preferred` (HTTP, gRPC, metrics) when all three are free on `address`, else three free ports picked by the
    system (held together while they are picked, so no two are the same)."""
    if not any(port_in_use(port, address) for port in preferred):
        return preferred
    with contextlib.ExitStack() as held:
        probes = [held.enter_context(socket.socket()) for _ in preferred]
        for probe in probes:
            probe.bind((address, 0))
        return tuple(probe.getsockname()[1] for probe in probes)  # type: ignore[return-value]


def check_shared_memory(shm_dir: Path = SHM_DIR, needed: int = MIN_SHM_BYTES) -> None:
    """Raise LaunchError in one line when `shm_dir` has less than `needed` bytes free (a container started
    with Docker's default 64 MB /dev/shm, shared with other servers, runs out mid-request otherwise)."""
    try:
        stats = os.statvfs(shm_dir)
    except OSError:
        return  # no /dev/shm to measure (not Linux): Triton says what it misses itself
    free = stats.f_bavail * stats.f_frsize
    if free < needed:
        raise LaunchError(f"Triton's Python models need shared memory: {shm_dir} has {free / 2**20:.0f} MiB free, "
                          f"at least {needed // 2**20} MiB are needed (in Docker, start with --shm-size=1g).")
