"""One tritonserver (or mpirun) process group we started: start, wait ready, watch, stop, clean up."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from setup.launcher.command import build_command
from setup.launcher.options import (
    SHM_DIR,
    LaunchError,
    LaunchOptions,
    TritonInstall,
    check_ports_free,
    check_shared_memory,
)
from setup.launcher.procfs import group_members, health_ok, listening_inodes, process_table, socket_inodes
from setup.launcher.reaper import python_env_dirs, ready_line, remove_empty_dirs, start_time

REAPER = Path(__file__).with_name("reaper.py")

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
        self._reaper: subprocess.Popen | None = None
        self._env_before: set[Path] = set()
        self._started_at = 0.0  # time.time() just before the server started (the reaper's SINCE)
        self._env_dirs: set[Path] | None = None  # the backend folders this server made (known once it is ready)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def backend_folders(self) -> frozenset[Path]:
        """The python backend's /tmp folders this server made (empty until it is ready)."""
        return frozenset(self._env_dirs or ())

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
        self._env_before = python_env_dirs()
        self._started_at = time.time()
        with open(self.log_path, "ab") as log:
            self._log_start = log.tell()  # the log may hold earlier runs: log_tail reads this run only
            self._proc = subprocess.Popen(  # argv list, no shell
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True,
            )
        # The server runs in its own session, so it would outlive us: stop it when this process exits,
        # and have the reaper end it when this process dies without running atexit (SIGKILL, SIGTERM).
        atexit.register(self.stop)
        self._reaper = self._start_reaper()
        self._watcher = threading.Thread(target=self._watch, name=f"tritonserver-{self._proc.pid}-watcher",
                                         daemon=True)
        self._watcher.start()

    def _start_reaper(self) -> subprocess.Popen | None:
        """reaper.py watching a pipe from us; its write end lives only in this process (close_fds)."""
        leader_start = start_time(self._proc.pid)
        if leader_start is None:
            return None  # already gone: the watcher cleans up
        return subprocess.Popen([sys.executable, str(REAPER), str(self._proc.pid), leader_start, self.shm_prefix,
                                 repr(self._started_at)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)

    def _tell_reaper(self, message: bytes) -> None:
        reaper = self._reaper
        if reaper is None:
            return
        try:
            reaper.stdin.write(message)
            reaper.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the reaper is gone or its pipe closed: it falls back to its time window

    def _release_reaper(self) -> None:
        """After our own stop: close the pipe; the reaper finds the group gone and exits."""
        reaper, self._reaper = self._reaper, None
        if reaper is None:
            return
        reaper.stdin.close()
        try:
            reaper.wait(timeout=15)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait(timeout=5)

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _our_pids(self) -> set[int]:
        """The server's process group plus every descendant of the server (mpirun ranks included)."""
        table = process_table()
        ours = {pid for pid, _, group, _ in table if group == self._proc.pid} | {self._proc.pid}
        grew = True
        while grew:
            more = {pid for pid, ppid, _, _ in table if ppid in ours and pid not in ours}
            ours |= more
            grew = bool(more)
        return ours

    def answers_itself(self) -> bool:
        """The HTTP port is held by our server, not by another process (False only when /proc shows so)."""
        listeners = listening_inodes(self.opts.http_port)
        if not listeners:
            return True  # nothing to tell from: trust the health check
        return any(socket_inodes(pid) & listeners for pid in self._our_pids())

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
            if health_ok(self.ready_url):
                if not self.is_running():
                    raise self._exited_error()
                if self.answers_itself():
                    self._env_dirs = python_env_dirs() - self._env_before
                    self._tell_reaper(ready_line(self._env_dirs))
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
        remove_empty_dirs(self._env_dirs if self._env_dirs is not None else python_env_dirs() - self._env_before)

    def _watch(self) -> None:
        """When the server exits by itself (crash, kill -9), end the rest of its group (the stubs), remove its
        shared memory and let its reaper go. The leader is waited for without reaping, so the group id stays ours."""
        proc = self._proc
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # reaped by someone else already
        except (AttributeError, OSError):
            proc.wait()
        with self._cleanup_lock:
            self._end_group(grace=0.0, leftover_grace=1.0)
            self._release_reaper()  # the group is gone: the reaper would otherwise wait for our own exit

    def stop(self, grace: float = 15.0) -> int | None:
        """Stop the whole process group we started: SIGTERM, then SIGKILL after `grace` seconds.

        Returns once no process of the group remains (leader or stubs) and our shared-memory segments
        are removed, whether the leader was alive or had died before.
        """
        if self._proc is None:
            return None
        with self._cleanup_lock:
            self._end_group(grace=grace, leftover_grace=min(grace, 2.0))
            self._release_reaper()
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
    check_shared_memory()
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
