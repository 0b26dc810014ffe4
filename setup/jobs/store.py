"""Build jobs for a UI thread (start, cancel, status, log tail) and the job list kept in JSON across reloads."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import deque
from pathlib import Path

from setup.catalog import messages as M
from setup.jobs.registry import EngineRegistry
from setup.jobs.runner import CANCELLED, DONE, FAILED, RUNNING, Runner
from setup.paths import cache_dir
from setup.plan.planner import Plan, Step

QUEUED, INTERRUPTED = "queued", "interrupted"
RESUMABLE = (CANCELLED, FAILED, INTERRUPTED)
TAIL_LINES = 400


class JobError(RuntimeError):
    """A job cannot be started (another one is building into the same folder)."""


class BuildJob:
    """One run of plan steps in a background thread."""

    def __init__(self, job_id: str, steps: list[Step], out: Path, family: str, version: str, config_hash: str,
                 registry: EngineRegistry | None = None, on_change=None, env: dict[str, str] | None = None,
                 dtype: str = "", world_size: int = 1, config: dict | None = None):
        self.id = job_id
        self.config = config  # the PlanConfig fields, kept so the job can be resumed without its form
        self.out = Path(out)
        self.family, self.version, self.config_hash = family, version, config_hash
        self.dtype, self.world_size = dtype, world_size
        self.log_path = self.out / "logs" / f"build-{job_id}.log"
        self.registry = registry
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._on_change = on_change
        self.runner = Runner(steps, self.out, self.log_path, on_output=self._tail.append, on_change=self._changed,
                             env=env)
        self.status_text = QUEUED
        self.created = time.time()
        self.finished: float | None = None
        self._thread: threading.Thread | None = None

    def _changed(self) -> None:
        if self._on_change:
            self._on_change(self)

    def start(self) -> BuildJob:
        self.status_text = RUNNING
        self._thread = threading.Thread(target=self._run, name=f"build-{self.id}", daemon=True)
        self._thread.start()
        self._changed()
        return self

    def _run(self) -> None:
        try:
            ok = self.runner.run()
        except Exception as exc:  # noqa: BLE001 - reported in the job status, never lost in a thread
            self.runner.message = f"{type(exc).__name__}: {exc}"
            ok = False
        if ok:
            self.status_text = DONE
            self._register_engines()
        else:
            self.status_text = CANCELLED if self.runner.cancelled else FAILED
        self.finished = time.time()
        self._changed()

    def _register_engines(self) -> None:
        if self.registry is None:
            return
        for step, state in zip(self.runner.steps, self.runner.states, strict=True):
            if step.phase == "build" and state.status == DONE and step.outputs:
                self.registry.record(Path(step.outputs[0]).parent, self.family, self.config_hash, self.version,
                                     self.dtype, self.world_size)

    def cancel(self) -> None:
        self.runner.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """True when the job has finished within `timeout`."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(list(self._tail)[-lines:])

    def status(self) -> dict:
        return {"id": self.id, "family": self.family, "version": self.version, "out": str(self.out),
                "status": self.status_text, "progress": round(self.runner.progress, 3),
                "message": self.runner.message, "created": self.created, "finished": self.finished,
                "log": str(self.log_path), "config_hash": self.config_hash, "config": self.config,
                "steps": [s.to_dict() for s in self.runner.states]}


def default_store_path() -> Path:
    return cache_dir() / "build_jobs.json"


class JobStore:
    """Live jobs of this process plus the records of earlier ones, persisted to a JSON file."""

    def __init__(self, path: Path | None = None, registry: EngineRegistry | None = None):
        self.path = Path(path) if path else default_store_path()
        self.registry = registry
        self._lock = threading.Lock()
        self._live: dict[str, BuildJob] = {}
        self._records: dict[str, dict] = {}
        for record in self._read():
            if record.get("status") in (RUNNING, QUEUED):
                record["status"] = INTERRUPTED  # its process is gone; run the plan again to resume
            self._records[record["id"]] = record

    def _read(self) -> list[dict]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        return [r for r in data if isinstance(r, dict) and "id" in r] if isinstance(data, list) else []

    def _save(self, job: BuildJob) -> None:
        with self._lock:
            self._records[job.id] = job.status()
            records = sorted(self._records.values(), key=lambda r: r.get("created", 0))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(records, indent=1))
            tmp.replace(self.path)

    def submit(self, plan: Plan, steps: list[Step] | None = None, env: dict[str, str] | None = None) -> BuildJob:
        """Start `steps` (default: the plan's build steps) in the background."""
        with self._lock:
            busy = [j for j in self._live.values() if j.running and j.out == plan.out]
        if busy:
            raise JobError(M.MSG_JOB_RUNNING.format(out=plan.out))
        job_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{plan.family.id}-{secrets.token_hex(2)}"
        job = BuildJob(job_id, steps if steps is not None else plan.build_steps(), plan.out, plan.family.id,
                       plan.version.text, plan.config_hash(), registry=self.registry, on_change=self._save, env=env,
                       dtype=plan.derived["dtype"], world_size=plan.derived["world_size"],
                       config=plan.config.to_mapping())
        with self._lock:
            self._live[job.id] = job
        return job.start()

    def get(self, job_id: str) -> BuildJob | None:
        with self._lock:
            return self._live.get(job_id)

    def status(self, job_id: str) -> dict | None:
        """Live status, or the persisted record of a job from an earlier process."""
        job = self.get(job_id)
        if job is not None:
            return job.status()
        with self._lock:
            return self._records.get(job_id)

    def log_tail(self, job_id: str, lines: int = 40) -> str:
        job = self.get(job_id)
        if job is not None:
            return job.log_tail(lines)
        record = self.status(job_id)
        try:
            text = Path(record["log"]).read_text(errors="replace").splitlines() if record else []
        except OSError:
            text = []
        return "\n".join(text[-lines:])

    def saved_config(self, job_id: str) -> dict | None:
        """The PlanConfig fields a job was started with (None: unknown job, or one from before they were kept)."""
        record = self.status(job_id)
        return dict(record["config"]) if record and isinstance(record.get("config"), dict) else None

    def resumable(self) -> list[dict]:
        """Jobs that stopped before the end (cancelled, failed, interrupted) and kept their config, newest first;
        only the newest job of each output folder (a later run there resumed or replaced the older ones)."""
        newest: dict[str, dict] = {}
        for record in self.list():
            newest.setdefault(record["out"], record)
        return [r for r in newest.values() if r["status"] in RESUMABLE and isinstance(r.get("config"), dict)]

    def list(self) -> list[dict]:
        """Every job, newest first."""
        with self._lock:
            ids = set(self._records) | set(self._live)
        rows = [self.status(i) for i in ids]
        return sorted((r for r in rows if r), key=lambda r: r.get("created", 0), reverse=True)
