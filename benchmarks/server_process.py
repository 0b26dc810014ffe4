"""One server process for benchmarks and tests: started in its own session (its process group is ours to
stop), output to a log file, ready when a check passes, stopped through the pid we started. The launcher's
reaper watches each one, so a starter killed without cleaning up (SIGKILL, SIGTERM) leaves no server behind.

Used by the app process of the overhead/soak runs and by the peers (vLLM's CPU build, Dynamo); free ports and
on_free_ports (a tritonserver start tried again on new ports) serve the benchmarks' servers and the tests' alike.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from setup.launcher import reaper
from setup.paths import PROJECT_ROOT


class PeerStartError(RuntimeError):
    """A server process that could not start; the message is one line saying why (and where its log is)."""


# The lines a failing server leaves that say why: a Python exception's last line, or a plain error line.
_REASON = re.compile(r"(?:^|\s)((?:[A-Z]\w*(?:Error|Exception)|error|ERROR)\b:?\s.+)$")


def failure_reason(log_path: Path, tail_bytes: int = 64_000) -> str | None:
    """The last line of `log_path` that says why the process failed (an exception or an error line), trimmed
    of the logger's prefix; None when the log says nothing of the kind."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - tail_bytes))
            lines = log.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        match = _REASON.search(line.strip())
        if match:
            return match.group(1)[:400]
    return None


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def require_memory(name: str, needed: int, what: str) -> None:
    """PeerStartError in one line when less than `needed` bytes are available to start `name`."""
    free = available_memory_bytes()
    if free is not None and free < needed:
        raise PeerStartError(f"{name} cannot start: it needs about {needed / 2**30:.1f} GiB of memory ({what}); "
                             f"{free / 2**30:.1f} GiB is available.")


def free_port() -> int:
    """A free TCP port on loopback (free now; the caller binds it soon after)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` different free TCP ports on loopback, held together while they are picked: picked one after
    another, the kernel may hand the same port out twice (a run's family-outputs server once got the same one for
    HTTP and metrics)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def on_free_ports(start):
    """(ports, start(http, grpc, metrics)) on free ports. Another process may take a port between the pick and the
    bind (other runs share the machine), so a start refused for a taken port is tried again on new ones (twice). A
    server that was not ready in time is tried once more too: once in a loaded run, one Python model of the
    XComposer2 repository never finished loading (no line in 300 s, the other three loaded in 36 s) and its nine
    tests failed; the launcher stops such a server before it raises. (The Python backend's intermittent abort as its
    stubs start is tried once more by the demo start itself: setup/cpu/demo.py BACKEND_ABORT.)"""
    from setup.launcher.options import LaunchError

    # what the launcher's error says -> tries left
    retries = {"already in use": 2, "was not ready after": 1}
    while True:
        ports = free_ports(3)
        try:
            return ports, start(*ports)
        except LaunchError as exc:
            reason = next((r for r in retries if r in str(exc)), None)
            if reason is None or retries[reason] == 0:
                raise
            retries[reason] -= 1
            print(f"\nStarting again on new ports: {str(exc).splitlines()[0]}", flush=True)


class ServerProcess:
    """`argv` in its own session, stdout and stderr appended to `log_path`."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None,
                 cwd: Path = PROJECT_ROOT):
        self.name, self.argv, self.log_path, self.env, self.cwd = name, argv, Path(log_path), env, cwd
        self._proc: subprocess.Popen | None = None
        self._reaper: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> ServerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = None if self.env is None else {**os.environ, **self.env}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        leader_start = reaper.start_time(self._proc.pid)
        if leader_start is not None:  # it reads EOF on its stdin when we are gone, then ends the group
            self._reaper = subprocess.Popen([sys.executable, reaper.__file__, str(self._proc.pid), leader_start, ""],
                                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        return self

    def exited(self) -> int | None:
        """The exit code once the process has ended, else None."""
        return None if self._proc is None else self._proc.poll()

    def exit_error(self, code: int) -> PeerStartError:
        """The one-line error for a process that exited while starting: its code and the reason in its log."""
        reason = failure_reason(self.log_path)
        return PeerStartError(f"{self.name} exited with code {code}" + (f": {reason}" if reason else "")
                              + f" (log: {self.log_path})")

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> float:
        """Poll `ready` until it holds; seconds waited. Stops the process and raises PeerStartError when it
        exits or `timeout` passes first, with the reason its log gives and the log's path."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            code = self.exited()
            if code is not None:
                self.stop()  # what it left in its group
                raise self.exit_error(code)
            if ready():
                return time.monotonic() - started
            time.sleep(interval)
        self.stop()
        reason = failure_reason(self.log_path)
        raise PeerStartError(f"{self.name} did not {what} within {timeout:.0f} s"
                             + (f"; its log's last error: {reason}" if reason else "") + f" (log: {self.log_path})")

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM to the process group we started, SIGKILL after `grace` seconds; children left in the
        group after the leader ended are killed too."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)  # its own session: pgid == pid
            try:
                self._proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._proc.wait(timeout=10)
        watcher, self._reaper = self._reaper, None
        if watcher is not None:  # the group is gone: closing the pipe lets the reaper exit
            watcher.stdin.close()
            watcher.wait(timeout=30)


@contextmanager
def started(server, timeout: float, log: Callable[[str], None] = print):
    """`server` (a peer with start(timeout), stop(), url) started, then stopped on exit; logs the wait."""
    began = time.monotonic()
    server.start(timeout)
    log(f"{type(server).__name__} ready on {server.url} in {time.monotonic() - began:.0f} s")
    try:
        yield server
    finally:
        server.stop()


def serve_until_interrupted(server) -> None:
    """Keep a started peer running for manual use until Ctrl-C or until it stops listing models."""
    print(f"Serving {server.models} at {server.url}; Ctrl-C stops it.", flush=True)
    try:
        while server.served():
            time.sleep(5)
    except KeyboardInterrupt:
        pass
