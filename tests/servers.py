"""Starting the servers the tests talk to: tritonserver with a written repository on free ports (within the run's
server memory budget, tests/server_memory.py), the demo kinds' repositories, and one-line failures when a server or
peer cannot start.

Only the test suite imports this module; it imports the app's setup code lazily, inside the functions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# the tests take these from here; the benchmarks from benchmarks/server_process.py, never from tests/
from benchmarks.server_process import free_port, free_ports, on_free_ports  # noqa: F401
from tests.run_folder import run_folder
from tests.server_lifetimes import stop_unused_demo
from tests.server_memory import BudgetedProcess, MemoryLedger, repository_gib

DEMO_PACING_RATE = 40.0  # the demo servers in tests carry the pacing model too (`--pacing-rate`)


class TritonEndpoints:
    def __init__(self, process, http_port: int, grpc_port: int, metrics_port: int, repo: Path):
        self.process = process
        self.http_port, self.grpc_port, self.metrics_port = http_port, grpc_port, metrics_port
        self.repo = repo
        self.grpc_url = f"127.0.0.1:{grpc_port}"
        self.http_url = f"http://127.0.0.1:{http_port}"


def memory_ledger() -> MemoryLedger:
    """The run's server memory budget, shared by its workers (tests/server_memory.py)."""
    return MemoryLedger(run_folder(), make_room=stop_unused_demo)


def serve_repository(tmp: Path, repo: Path, lasting: bool = False) -> TritonEndpoints:
    """tritonserver on free ports for a written demo repository (its log in `tmp`), once the run's server memory
    budget has room for it (`lasting`: kept for the whole session); its process's stop() gives the room back."""
    from setup.cpu.demo import start_demo_triton

    ledger, key = memory_ledger(), f"triton {tmp}"

    def start_on(*ports):
        return start_demo_triton(*ports, repo=repo, log_path=tmp / "triton.log", log=lambda *_: None,
                                 ready_timeout=TRITON_READY_TIMEOUT)

    gib = repository_gib(repo)
    ports, process = ledger.start_held(key, gib, lambda: on_free_ports(start_on), lasting=lasting)
    return TritonEndpoints(BudgetedProcess(process, ledger, key, gib), *ports, repo)


def start_triton(tmp: Path, overrides: dict | None = None, lasting: bool = False) -> TritonEndpoints:
    """Write the demo repository into `tmp` and start tritonserver on free ports."""
    from setup.cpu.demo import write_demo_repository

    repo = write_demo_repository(tmp / "repo", overrides=overrides, log=lambda *_: None, pacing_rate=DEMO_PACING_RATE)
    return serve_repository(tmp, repo, lasting=lasting)


TRITON_READY_TIMEOUT = 300.0  # the demo's models load in ~20 s idle; a loaded 2-core machine takes several times that


def triton_or_fail(start):
    """start() of a tritonserver for the session; when it cannot start, the tests that need it fail with one
    line (the launcher's reason and the last error in the server's log) instead of a traceback."""
    from setup.launcher.options import LaunchError

    try:
        return start()
    except LaunchError as exc:
        lines = str(exc).splitlines()
        errors = [line.strip() for line in lines[1:] if "error" in line.lower()]
        pytest.fail(lines[0] + (f" Its log: {errors[-1]}" if errors else ""), pytrace=False)


FAMILY_OUTPUT_TWINS = ("nougat", "deplot", "kosmos-2", "video-neva")  # the families whose own output the chat renders
DEMO_KINDS = ("engine", "llmapi")  # `python -m app --demo --deployment KIND`: the CPU demo's two kinds


def start_llmapi_triton(tmp: Path, overrides: dict | None = None) -> TritonEndpoints:
    """Write the llmapi demo repository into `tmp` and start tritonserver on free ports."""
    from setup.cpu.llmapi_demo import write_llmapi_demo_repository

    repo = write_llmapi_demo_repository(tmp / "repo", overrides=overrides, log=lambda *_: None,
                                        pacing_rate=DEMO_PACING_RATE)
    return serve_repository(tmp, repo)


def start_xcomposer2_triton(tmp: Path) -> TritonEndpoints:
    """Write the InternLM-XComposer2 twin's repository into `tmp` and start tritonserver on free ports."""
    from setup.cpu.xcomposer2_demo import write_xcomposer2_demo_repository

    repo = write_xcomposer2_demo_repository(tmp / "repo", log=lambda *_: None)
    return serve_repository(tmp, repo)


def peer_or_fail(start):
    """start() of a peer server; when it cannot start, the tests that need it fail with its one-line reason
    (which resource, how much, where the log is) instead of a traceback."""
    from benchmarks.server_process import PeerStartError

    try:
        return start()
    except PeerStartError as exc:
        pytest.fail(str(exc), pytrace=False)
