"""A throwaway PostgreSQL server for a test: Debian's binaries (/usr/lib/postgresql/<version>/bin), a data folder in
the run's temporary folder, listening only on 127.0.0.1 (a free port) and a unix socket in that folder, trust
authentication for a superuser `arena`.

PostgreSQL refuses to run as root: as root the server runs as the `postgres` system user (Debian's package makes
it), which is given the folder (and the right to pass through the folders above it for the test's life). The
server runs in a session of its own, watched by the launcher's reaper (setup/launcher/reaper.py): a test run killed
outright leaves no server behind. `stop()` ends it by the pid it started (pg_ctl stop -m fast) and removes the
folder.

Only the test suite imports this module; it imports nothing of the app but the reaper."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from setup.launcher import reaper

PG_ROOT = Path("/usr/lib/postgresql")
SERVER_USER = "postgres"
SUPERUSER = "arena"
START_SECONDS = 60


class PostgresUnavailable(RuntimeError):
    """PostgreSQL is not installed here (or there is no user to run it as); the message says why in one line."""


class PostgresStartError(RuntimeError):
    """PostgreSQL is installed but the server did not start; one line with the reason and the log's path."""


def binaries() -> Path:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and postgres."""
    found = sorted((p.parent for p in PG_ROOT.glob("*/bin/initdb") if (p.parent / "postgres").exists()),
                   key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not found:
        raise PostgresUnavailable(f"PostgreSQL is not installed (no {PG_ROOT}/<version>/bin/initdb; `make test` "
                                  "installs Debian's postgresql package)")
    return found[-1]


def _as_server_user() -> dict:
    """Popen keywords that run a command as the postgres user when we are root (nothing otherwise)."""
    if os.geteuid() != 0:
        return {}
    try:
        user = pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise PostgresUnavailable(f"running as root and there is no {SERVER_USER!r} user to run PostgreSQL "
                                  "as") from None
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class PostgresServer:
    """One server: its folder, port, process and watcher."""

    folder: Path
    port: int = 0
    process: subprocess.Popen | None = None
    watcher: subprocess.Popen | None = None
    opened: list[tuple[Path, int]] = field(default_factory=list)  # folders above made passable, their old modes

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def last_log_line(self) -> str:
        """The server log's last line (the folder goes when a failed start is cleaned up)."""
        try:
            return (self.log.read_text(errors="replace").strip().splitlines() or ["empty log"])[-1]
        except OSError:
            return "no log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _give_folder(self, owner: dict) -> None:
        """The server's user owns the folder and may pass through the (private) folders above it."""
        if not owner:
            return
        os.chown(self.folder, owner["user"], owner["group"])
        for above in self.folder.parents:
            mode = above.stat().st_mode
            if above.stat().st_uid == os.geteuid() and not mode & stat.S_IXOTH:
                os.chmod(above, stat.S_IMODE(mode) | stat.S_IXOTH)
                self.opened.append((above, stat.S_IMODE(mode)))

    def start(self) -> PostgresServer:
        """initdb, then the server on a free port; PostgresStartError (one line, the log's last) when it fails."""
        bin_dir, owner = binaries(), _as_server_user()
        self._give_folder(owner)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        made = subprocess.run([str(bin_dir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-A", "trust",
                               "-E", "UTF8", "--locale=C", "--no-sync"], cwd=self.folder, env=env,
                              capture_output=True, text=True, timeout=120, check=False, **owner)
        if made.returncode:
            last = ((made.stderr or made.stdout).strip().splitlines() or ["no output"])[-1]
            raise PostgresStartError(f"initdb exited with code {made.returncode}: {last}")
        self.port = _free_port()
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(bin_dir / "postgres"), "-D", str(self.data), "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}",
                 "-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=20"],
                cwd=self.folder, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, **owner)
        began = reaper.start_time(self.process.pid)
        if began is not None:  # ends the server's group if this process dies without stopping it
            self.watcher = subprocess.Popen([sys.executable, reaper.__file__, str(self.process.pid), began, ""],
                                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        self._wait_ready(bin_dir, env, owner)
        return self

    def _wait_ready(self, bin_dir: Path, env: dict, owner: dict) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PostgresStartError(f"postgres exited with code {self.process.returncode}: {self.last_log_line()}")
            ready = subprocess.run([str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
                                   env=env, check=False, timeout=30, **owner)
            if ready.returncode == 0:
                return
            time.sleep(0.2)
        raise PostgresStartError(f"postgres did not accept connections within {START_SECONDS} s: "
                                 f"{self.last_log_line()}")

    def stop(self) -> None:
        """pg_ctl stop -m fast for the server we started (SIGKILL to its group if that fails), then remove the
        folder and put back the modes of the folders above it."""
        try:
            if self.process is not None and self.process.poll() is None:
                subprocess.run([str(binaries() / "pg_ctl"), "stop", "-D", str(self.data), "-m", "fast", "-w",
                                "-t", "30"], capture_output=True, check=False, timeout=60, **_as_server_user())
                try:
                    self.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait(timeout=10)
        finally:
            if self.watcher is not None:  # the server is gone: closing the pipe lets the reaper exit
                self.watcher.stdin.close()
                self.watcher.wait(timeout=30)
            shutil.rmtree(self.folder, ignore_errors=True)
            for above, mode in reversed(self.opened):
                if above.exists():
                    os.chmod(above, mode)


def start_postgres() -> PostgresServer:
    """A server in a new folder of the run's temporary folder; PostgresUnavailable or PostgresStartError when none
    starts (the folder is removed then)."""
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="arena-pg-")))
    try:
        return server.start()
    except BaseException:
        server.stop()
        raise
