"""The python-backend stubs of a session's tritonserver, watched between tests: when one has died (a segfault in the
stub: Triton then answers "Stub process ... is not healthy" to every request for that model), the tests after it on
the same server fail at once with that reason instead of each waiting out its own timeouts."""

from __future__ import annotations

from pathlib import Path

STUB_BINARY = "triton_python_backend_stub"


def python_stubs(server_pid: int) -> dict[int, str]:
    """{pid: model name} of the stubs `server_pid` started (a stub's first argument is its model's 1/model.py)."""
    stubs = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == server_pid and argv and argv[0].decode(errors="replace").endswith(STUB_BINARY) and len(argv) > 1:
            stubs[int(proc.name)] = Path(argv[1].decode(errors="replace")).parent.parent.name
    return stubs


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class StubWatch:
    """The stubs seen at a server's first check; later checks name those that have died since."""

    def __init__(self) -> None:
        self._seen: dict[int, dict[int, str]] = {}

    def dead_models(self, server_pid: int | None) -> list[str]:
        if server_pid is None:
            return []
        if server_pid not in self._seen:
            self._seen[server_pid] = python_stubs(server_pid)
            return []
        return sorted({model for pid, model in self._seen[server_pid].items() if not _alive(pid)})
