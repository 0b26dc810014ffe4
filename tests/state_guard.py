"""What a test may not leave behind for the next test in the same worker: a changed working folder or environment,
a build job still running, or a child process it started still alive.

Issue 48's flake (a Build page test that waited for its download step only after other tests in the same worker)
was never reproduced, and each of these is a way one test reaches into the next: a step runs in the worker's working
folder with the worker's environment, and a job or step left running holds ports and folders. The conftest's
autouse fixture takes a `Snapshot` after the test's wider-scoped fixtures are set up and checks it after the test's
own fixtures are torn down, so state owned by module or session fixtures is not counted."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BUILD_THREAD_PREFIX = "build-"  # setup/jobs/store.py names each job's thread so
PYTEST_OWN = {"PYTEST_CURRENT_TEST"}  # pytest sets it for each phase
# Set for the whole process by a library on first use, not by a test: Gradio's launch turns off Hugging Face telemetry,
# PyTorch's inductor names its cache folder for its compile workers.
PROCESS_WIDE = {"HF_HUB_DISABLE_TELEMETRY", "TORCHINDUCTOR_CACHE_DIR"}
# Started once per process by a library and kept until it exits: multiprocessing's tracker of shared memory.
PROCESS_HELPERS = ("multiprocessing.resource_tracker",)
SETTLE_SECONDS = 5.0  # a child or job stopped at teardown may take a moment to be reaped


def child_pids(parent: int | None = None) -> set[int]:
    """Live (not zombie) direct children of `parent` (this process by default), read from /proc."""
    parent = os.getpid() if parent is None else parent
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if fields[0] != "Z" and int(fields[1]) == parent:
            found.add(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    except OSError:
        return "(gone)"


def build_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith(BUILD_THREAD_PREFIX) and t.is_alive()}


@dataclass(frozen=True)
class Snapshot:
    cwd: str
    environ: dict[str, str]
    children: frozenset[int]
    jobs: frozenset[str]

    @classmethod
    def take(cls) -> Snapshot:
        return cls(os.getcwd(), dict(os.environ), frozenset(child_pids()), frozenset(build_threads()))

    def leaks(self) -> list[str]:
        """What differs now, one sentence each (environment values are not shown: they may be tokens)."""
        found = []
        if os.getcwd() != self.cwd:
            found.append(f"the working folder is {os.getcwd()} (was {self.cwd})")
        changed = sorted(k for k in set(os.environ) | set(self.environ) if os.environ.get(k) != self.environ.get(k) and k not in PYTEST_OWN
                         and not (k in PROCESS_WIDE and k not in self.environ))
        if changed:
            found.append("the environment differs in " + ", ".join(changed))
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            children = {p for p in child_pids() - self.children
                        if not any(h in command_line(p) for h in PROCESS_HELPERS)}
            jobs = build_threads() - self.jobs
            if not (children or jobs) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if children:
            found.append("child processes still run: " + "; ".join(f"{pid} {command_line(pid)}" for pid in children))
        if jobs:
            found.append("build jobs still run: " + ", ".join(sorted(jobs)))
        return found
