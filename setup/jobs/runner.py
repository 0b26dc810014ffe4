"""Runner: plan steps as subprocesses (argv, no shell, own process group), logs, progress, cancel, resume.

Resume: after a step succeeds, a hash of its argv, working folder and input fingerprints (path, size,
mtime of every file, not the content) is stored in `<out>/.build_state.json`. A step whose outputs all
exist and whose hash is unchanged is skipped. Cancel kills the running step's process group only;
outputs of earlier steps stay, and the cancelled step's hash is dropped so it runs again.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from setup.catalog import messages as M
from setup.plan.planner import Step

STATE_FILE = ".build_state.json"
PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s*%")
FRACTION = re.compile(r"\[(\d+)\s*/\s*(\d+)\]")
SECONDS_PER_WEIGHT = 30.0  # time scale of the progress estimate when a tool prints no progress
KILL_GRACE = 5.0
ERROR_PREFIX = "error: "  # how our own commands (python -m setup ...) start the sentence they fail with

PENDING, RUNNING, DONE, SKIPPED, FAILED, CANCELLED = "pending", "running", "done", "skipped", "failed", "cancelled"
FINISHED = (DONE, SKIPPED)


def fingerprint(path: str | Path) -> list:
    """(relative path, size, mtime_ns) of a file or of every file under a folder; 'missing' if absent."""
    path = Path(path)
    if path.is_file():
        st = path.stat()
        return [[path.name, st.st_size, st.st_mtime_ns]]
    if not path.is_dir():
        return ["missing"]
    rows = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = Path(root) / name
            try:
                st = full.stat()
            except OSError:
                continue
            rows.append([str(full.relative_to(path)), st.st_size, st.st_mtime_ns])
    return rows


def step_hash(step: Step) -> str:
    """Hash of what determines a step's outputs: argv, working folder and input fingerprints."""
    data = {"argv": list(step.argv), "cwd": step.cwd, "inputs": {p: fingerprint(p) for p in step.inputs}}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class BuildState:
    """The small JSON file in the output folder that remembers which steps finished with which hash."""

    def __init__(self, out: Path):
        self.path = Path(out) / STATE_FILE
        self._lock = threading.Lock()

    def load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data.get("steps", {}) if isinstance(data, dict) else {}

    def _write(self, steps: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"steps": steps}, indent=1))
        tmp.replace(self.path)

    def record(self, step_id: str, digest: str) -> None:
        with self._lock:
            steps = self.load()
            steps[step_id] = {"hash": digest, "finished": time.time()}
            self._write(steps)

    def forget(self, step_id: str) -> None:
        with self._lock:
            steps = self.load()
            if steps.pop(step_id, None) is not None:
                self._write(steps)

    def is_current(self, step: Step) -> bool:
        entry = self.load().get(step.id)
        if not entry or not step.outputs or not all(Path(p).exists() for p in step.outputs):
            return False
        return entry.get("hash") == step_hash(step)


@dataclass
class StepState:
    """Status of one step as the UI shows it."""

    id: str
    title: str
    phase: str
    weight: float
    status: str = PENDING
    started: float | None = None
    finished: float | None = None
    message: str = ""
    reported: float | None = None  # progress the tool printed (0..1), if any

    @property
    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.time()) - self.started

    @property
    def progress(self) -> float:
        """0..1: done/skipped 1; running: what the tool printed, else a time-based estimate below 0.95."""
        if self.status in FINISHED:
            return 1.0
        if self.status != RUNNING:
            return 0.0
        if self.reported is not None:
            return min(self.reported, 0.99)
        return min(0.95, 1 - math.exp(-self.elapsed / (SECONDS_PER_WEIGHT * max(self.weight, 0.1))))

    def to_dict(self) -> dict:
        return {**asdict(self), "elapsed": round(self.elapsed, 1), "progress": round(self.progress, 3)}


def parse_progress(line: str) -> float | None:
    """A fraction printed by a tool: '[3/10]' or '42%'."""
    match = FRACTION.search(line)
    if match and int(match.group(2)) > 0:
        return min(int(match.group(1)) / int(match.group(2)), 1.0)
    match = PERCENT.search(line)
    if match:
        return min(float(match.group(1)) / 100, 1.0)
    return None


class Runner:
    """Runs steps in order; thread-safe `cancel()` and `states` for a UI thread."""

    def __init__(self, steps: Iterable[Step], out: Path, log_path: Path,
                 on_output: Callable[[str], None] | None = None, on_change: Callable[[], None] | None = None,
                 env: dict[str, str] | None = None):
        self.steps = list(steps)
        self.out = Path(out)
        self.log_path = Path(log_path)
        self.on_output = on_output
        self.on_change = on_change
        self.env = env
        self.state = BuildState(self.out)
        self.states = [StepState(s.id, s.title, s.phase, s.weight) for s in self.steps]
        self._proc: subprocess.Popen | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self.message = ""

    @property
    def progress(self) -> float:
        total = sum(s.weight for s in self.states) or 1.0
        return sum(s.weight * s.progress for s in self.states) / total

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _emit(self, log, text: str) -> None:
        log.write(text + "\n")
        log.flush()
        if self.on_output:
            self.on_output(text)

    def _changed(self) -> None:
        if self.on_change:
            self.on_change()

    def run(self) -> bool:
        """Run every step; True when all finished (done or skipped)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8", errors="replace") as log:
            for number, (step, state) in enumerate(zip(self.steps, self.states, strict=True), 1):
                if self.cancelled:
                    break
                self._emit(log, f"==> [{number}/{len(self.steps)}] {step.title}")
                if self.state.is_current(step):
                    state.status, state.message = SKIPPED, M.MSG_SKIPPED.format(title=step.title)
                    self._emit(log, state.message)
                    self._changed()
                    continue
                if not self._run_step(step, state, log):
                    self.message = state.message
                    self._emit(log, state.message)
                    self._changed()
                    return False
                self._changed()
        return not self.cancelled and all(s.status in FINISHED for s in self.states)

    def _run_step(self, step: Step, state: StepState, log) -> bool:
        self.state.forget(step.id)
        state.status, state.started, state.reported = RUNNING, time.time(), None
        self._changed()
        self._emit(log, "$ " + " ".join(step.argv))
        if step.cwd:
            Path(step.cwd).mkdir(parents=True, exist_ok=True)
        try:
            with self._lock:
                if self.cancelled:
                    raise InterruptedError
                self._proc = subprocess.Popen(  # argv list, never a shell; own process group
                    list(step.argv), cwd=step.cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True, env=self.env, text=True, bufsize=1,
                    errors="replace")
        except InterruptedError:
            return self._finish(state, CANCELLED, M.MSG_CANCELLED.format(title=step.title))
        except (FileNotFoundError, PermissionError):
            return self._finish(state, FAILED, M.MSG_STEP_NOT_FOUND.format(title=step.title, program=step.argv[0]))
        assert self._proc.stdout is not None
        said = ""  # the step's last "error: ..." line: the failure's reason in its own words
        for line in self._proc.stdout:
            line = line.rstrip("\n")
            self._emit(log, line)
            if line.startswith(ERROR_PREFIX):
                said = line[len(ERROR_PREFIX):].strip()
            fraction = parse_progress(line)
            if fraction is not None:
                state.reported = fraction
        code = self._proc.wait()
        with self._lock:
            self._proc = None
        if self.cancelled:
            return self._finish(state, CANCELLED, M.MSG_CANCELLED.format(title=step.title))
        if code != 0:
            failed = M.MSG_STEP_FAILED.format(title=step.title, code=code)
            return self._finish(state, FAILED, M.MSG_STEP_SAID.format(failed=failed, said=said) if said else failed)
        missing = [p for p in step.outputs if not Path(p).exists()]
        if missing:
            return self._finish(state, FAILED, M.MSG_STEP_NO_OUTPUT.format(title=step.title, path=missing[0]))
        self.state.record(step.id, step_hash(step))
        return self._finish(state, DONE, "")

    @staticmethod
    def _finish(state: StepState, status: str, message: str) -> bool:
        state.status, state.message, state.finished = status, message, time.time()
        return status == DONE

    def cancel(self) -> None:
        """Stop after killing the running step's process group (SIGTERM, then SIGKILL)."""
        self._cancelled.set()
        with self._lock:
            proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, KILL_GRACE)):
            try:
                os.killpg(proc.pid, sig)  # the group we created (start_new_session): pgid == pid
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
