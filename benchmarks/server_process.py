"""One server process for benchmarks and tests: started in its own session (its process group is ours to
stop), output to a log file, ready when a check passes, stopped through the pid we started.

Used by the app process of the overhead/soak runs and by the peers (vLLM's CPU build, Dynamo).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from setup.paths import PROJECT_ROOT


def free_port() -> int:
    """A free TCP port on loopback (free now; the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`argv` in its own session, stdout and stderr appended to `log_path`."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None,
                 cwd: Path = PROJECT_ROOT):
        self.name, self.argv, self.log_path, self.env, self.cwd = name, argv, Path(log_path), env, cwd
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> ServerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = None if self.env is None else {**os.environ, **self.env}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        return self

    def exited(self) -> int | None:
        """The exit code once the process has ended, else None."""
        return None if self._proc is None else self._proc.poll()

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> float:
        """Poll `ready` until it holds; seconds waited. Stops the process and raises when it exits or
        `timeout` passes first, naming the log to read."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            code = self.exited()
            if code is not None:
                self.stop()  # what it left in its group
                raise RuntimeError(f"{self.name} exited with code {code}; see {self.log_path}.")
            if ready():
                return time.monotonic() - started
            time.sleep(interval)
        self.stop()
        raise RuntimeError(f"{self.name} did not {what} within {timeout:.0f} s; see {self.log_path}.")

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
