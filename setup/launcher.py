"""Find, start, supervise and stop `tritonserver`.

The command line mirrors the TensorRT-LLM backend's `launch_triton_server.py`: one `-n 1 tritonserver`
per rank under `mpirun` when world size > 1, a python-backend shared-memory prefix per rank,
`--disable-auto-complete-config`, and rank 0 alone serving the non-engine models.
The process runs in its own session (its process group id is its pid); it is stopped through that
group, never by name, and nothing of it outlives it: no python-backend stub, no shared-memory segment.
"""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from setup.paths import cache_dir

NVIDIA_CONTAINER_BINARY = Path("/opt/tritonserver/bin/tritonserver")
ENV_BINARY = "TRITONSERVER"
SHM_DIR = Path("/dev/shm")
# (LaunchOptions field, how people call it, the {kind} in a command-line flag such as --{kind}-port)
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


def _rank_args(install: TritonInstall, opts: LaunchOptions, rank: int, shm_prefix: str) -> list[str]:
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
        f"--backend-config=python,shm-region-prefix-name={shm_prefix}{rank}_",
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


def build_command(install: TritonInstall, opts: LaunchOptions, shm_prefix: str = "prefix") -> list[str]:
    """The argv to run: tritonserver alone, or under mpirun with one process per rank.

    Rank r's python-backend stubs name their shared-memory segments `<shm_prefix><r>_<uuid>`.
    """
    if opts.world_size == 1:
        return _rank_args(install, opts, 0, shm_prefix)
    cmd = ["mpirun", "--allow-run-as-root"]
    for rank in range(opts.world_size):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", *_rank_args(install, opts, rank, shm_prefix)]
    return cmd


class InstanceFolder:
    """A folder that belongs to one running server (its repository, ...), held by a lock file.

    The lock file records the owner's pid and holds an exclusive `flock` for as long as the owner keeps
    it: the lock goes with the owner's process, so a folder whose owner died is free again, and a
    live owner's folder (another process, or another server in this one) is never handed out twice.
    """

    LOCK_NAME = "owner.lock"

    def __init__(self, path: Path, lock_fd: int):
        self.path = path
        self._lock_fd: int | None = lock_fd

    def release(self, remove: bool = True) -> None:
        """Give the folder up (removing it first unless `remove` is False)."""
        if self._lock_fd is None:
            return
        with _RegistryLock(self.path.parent):
            if remove:
                shutil.rmtree(self.path, ignore_errors=True)
            os.close(self._lock_fd)
            self._lock_fd = None


class _RegistryLock:
    """Serializes claims and releases under one parent folder (between processes)."""

    def __init__(self, parent: Path):
        parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(parent / ".registry.lock", os.O_RDWR | os.O_CREAT, 0o644)

    def __enter__(self):
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


def _try_lock(lock_path: Path) -> int | None:
    """An fd holding the exclusive lock on `lock_path`, or None when someone else holds it."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def claim_instance_folder(parent: Path, name: str) -> InstanceFolder:
    """Take `parent/name` for this process's new server: emptied and locked, the owner pid recorded.

    Raises LaunchError when a live owner holds it; a folder whose owner died is reused. Name folders
    after the server's ports and check the ports are free first: a server whose owner was killed may
    still run on that folder, and it still holds its ports. (Folders of other names are left alone.)
    """
    parent = Path(parent)
    with _RegistryLock(parent):
        path = parent / name
        path.mkdir(parents=True, exist_ok=True)
        lock_path = path / InstanceFolder.LOCK_NAME
        fd = _try_lock(lock_path)
        if fd is None:
            try:
                owner = lock_path.read_text().strip() or "unknown"
            except OSError:
                owner = "unknown"
            raise LaunchError(f"{path} belongs to a running server (pid {owner}); it is left as it is.")
        for item in path.iterdir():  # what a dead owner left
            if item.name == InstanceFolder.LOCK_NAME:
                continue
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return InstanceFolder(path, fd)


def _ready(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback URL we built
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _process_table() -> list[tuple[int, int, int, str]]:
    """(pid, ppid, pgid, state) of every process in /proc."""
    table = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            table.append((int(stat_file.parent.name), int(fields[1]), int(fields[2]), fields[0]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def group_members(pgid: int, zombies: bool = False) -> list[int]:
    """Pids of process group `pgid` (zombies, which hold no memory, only when asked)."""
    return [pid for pid, _, group, state in _process_table() if group == pgid and (zombies or state != "Z")]


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP `port` (any address) in this network namespace."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
    except OSError:
        pass
    return found


_instances = itertools.count()


class TritonProcess:
    """One tritonserver (or mpirun) process group that we started and own.

    Its python-backend stubs share its process group and name their shared-memory segments with a
    prefix of this instance alone (`shm_prefix`). `stop()` ends the whole group, and a watcher thread
    does the same when the server dies by itself, so no stub and no segment outlives the server.
    """

    def __init__(self, install: TritonInstall, opts: LaunchOptions, log_path: Path):
        opts.validate()
        self.install = install
        self.opts = opts
        self.log_path = Path(log_path)
        self.shm_prefix = f"tvl{os.getpid()}p{opts.http_port}n{next(_instances)}r"
        self.command = build_command(install, opts, self.shm_prefix)
        self.ready_seconds: float | None = None
        self._proc: subprocess.Popen | None = None
        self._log_start = 0
        self._cleanup_lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._on_stop: list[Callable[[], None]] = []

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def ready_url(self) -> str:
        host = self.opts.probe_host
        return f"http://{f'[{host}]' if ':' in host else host}:{self.opts.http_port}/v2/health/ready"

    def start(self) -> None:
        if self.opts.world_size > 1 and shutil.which("mpirun") is None:
            raise LaunchError(f"world size {self.opts.world_size} needs mpirun, which is not on PATH.")
        if self._proc is not None:
            raise LaunchError("This TritonProcess was started already; make a new one.")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.install.env}
        with open(self.log_path, "ab") as log:
            self._log_start = log.tell()  # the log may hold earlier runs: log_tail reads this run only
            self._proc = subprocess.Popen(  # argv list, no shell
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True,
            )
        # The server runs in its own session, so it would outlive us; stop it when this process exits.
        atexit.register(self.stop)
        self._watcher = threading.Thread(target=self._watch, name=f"tritonserver-{self._proc.pid}-watcher",
                                         daemon=True)
        self._watcher.start()

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _our_pids(self) -> set[int]:
        """The server's process group plus every descendant of the server (mpirun ranks included)."""
        table = _process_table()
        ours = {pid for pid, _, group, _ in table if group == self._proc.pid} | {self._proc.pid}
        grew = True
        while grew:
            more = {pid for pid, ppid, _, _ in table if ppid in ours and pid not in ours}
            ours |= more
            grew = bool(more)
        return ours

    def answers_itself(self) -> bool:
        """The HTTP port is held by our server, not by another process (False only when /proc shows so)."""
        listeners = _listening_inodes(self.opts.http_port)
        if not listeners:
            return True  # nothing to tell from: trust the health check
        return any(_socket_inodes(pid) & listeners for pid in self._our_pids())

    def _exited_error(self) -> LaunchError:
        code = self._proc.returncode if self._proc else None
        return LaunchError(f"tritonserver exited with code {code} before it was ready.\n{self.log_tail()}")

    def wait_ready(self, timeout: float = 120.0, on_wait: Callable[[float], None] | None = None) -> float:
        """Wait until the server we started is alive and answers /v2/health/ready; return seconds waited.

        Our own process is checked before and after each health check, and the port must be held by it:
        a ready answer from another server on the same port never counts. Raises LaunchError with the
        log tail when our server exits first or is not ready in `timeout` seconds.
        """
        start = time.monotonic()
        foreign = False
        while True:
            if not self.is_running():
                raise self._exited_error()
            if _ready(self.ready_url):
                if not self.is_running():
                    raise self._exited_error()
                if self.answers_itself():
                    self.ready_seconds = time.monotonic() - start
                    return self.ready_seconds
                foreign = True
            waited = time.monotonic() - start
            if waited > timeout:
                note = (f" Port {self.opts.http_port} answers, but from a process we did not start."
                        if foreign else "")
                raise LaunchError(f"tritonserver was not ready after {timeout:.0f} s.{note}\n{self.log_tail()}")
            if on_wait:
                on_wait(waited)
            time.sleep(0.25)

    def wait(self) -> int | None:
        """Block until the server exits (and what it left behind is cleaned up); its exit code."""
        if self._proc is None:
            return None
        code = self._proc.wait()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=30)
        return code

    def log_tail(self, lines: int = 30) -> str:
        """The last lines this run wrote to the log."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_start)
                text = log.read().decode(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def add_cleanup(self, action: Callable[[], None]) -> None:
        """Run `action` once the server is stopped by stop() (e.g. remove its repository)."""
        self._on_stop.append(action)

    # -- ending the process group -------------------------------------------------------------------

    def _signal_group(self, sig: int) -> None:
        """Signal our process group, also when its leader has exited (its stubs stay in the group).

        Once the leader is reaped the group id is only ours while some member still carries it.
        """
        pgid = self._proc.pid
        if self._proc.returncode is not None and not group_members(pgid, zombies=True):
            return
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _wait_group_gone(self, timeout: float) -> bool:
        """Wait until no live process of our group remains (reaping the leader on the way)."""
        end = time.monotonic() + timeout
        while True:
            self._proc.poll()
            if not group_members(self._proc.pid):
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.05)

    def _remove_shm(self) -> None:
        for segment in SHM_DIR.glob(f"{self.shm_prefix}*"):
            try:
                segment.unlink()
            except OSError:
                pass

    def _end_group(self, grace: float, leftover_grace: float) -> None:
        """SIGTERM the group; SIGKILL what is left after `grace` s (or `leftover_grace` s once the
        leader is gone); wait until the group is empty; remove our shared-memory segments."""
        self._signal_group(signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end and self._proc.poll() is None:
            time.sleep(0.05)
        leader_gone = self._proc.poll() is not None
        if not self._wait_group_gone(leftover_grace if leader_gone else 0.0):
            self._signal_group(signal.SIGKILL)
            self._wait_group_gone(10)
        if self._proc.poll() is None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._remove_shm()

    def _watch(self) -> None:
        """When the server exits by itself (crash, kill -9), end the rest of its group (the stubs) and
        remove its shared memory. The leader is waited for without reaping, so the group id stays ours."""
        proc = self._proc
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # reaped by someone else already
        except (AttributeError, OSError):
            proc.wait()
        with self._cleanup_lock:
            self._end_group(grace=0.0, leftover_grace=1.0)

    def stop(self, grace: float = 15.0) -> int | None:
        """Stop the whole process group we started: SIGTERM, then SIGKILL after `grace` seconds.

        Returns once no process of the group remains (leader or stubs) and our shared-memory segments
        are removed, whether the leader was alive or had died before.
        """
        if self._proc is None:
            return None
        with self._cleanup_lock:
            self._end_group(grace=grace, leftover_grace=min(grace, 2.0))
            actions, self._on_stop = self._on_stop, []
        for action in actions:
            action()
        return self._proc.returncode

    def __enter__(self) -> TritonProcess:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_triton(install: TritonInstall, options: LaunchOptions, log_path: Path, ready_timeout: float = 120.0,
                 on_wait: Callable[[float], None] | None = None, *, port_flag: str | None = "--{kind}-port",
                 on_start: Callable[[TritonProcess], None] | None = None) -> TritonProcess:
    """Start tritonserver and wait until it is ready; the one way this project starts a server.

    The options are checked and the ports must be free first (LaunchError naming the taken one, with
    `port_flag` as the advice; see check_ports_free). `on_start(process)` runs once the process is
    started, `on_wait(seconds)` while waiting. On any failure or KeyboardInterrupt the server is
    stopped before the exception goes on. The caller stops the returned process.
    """
    options.validate()
    check_ports_free(options, port_flag)
    process = TritonProcess(install, options, Path(log_path))
    try:
        process.start()
        if on_start is not None:
            on_start(process)
        process.wait_ready(timeout=ready_timeout, on_wait=on_wait)
    except BaseException:
        process.stop()
        raise
    return process
