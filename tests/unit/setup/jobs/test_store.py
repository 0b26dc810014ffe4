"""Build jobs keep their config: a cancelled or interrupted job resumes after a reload, from the page or the CLI.

The runner and the job threads are real; the TensorRT-LLM tools are stand-ins (tests/build_standins.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from setup.jobs.runner import CANCELLED, DONE, SKIPPED
from setup.jobs.store import INTERRUPTED, JobStore
from setup.paths import PROJECT_ROOT
from setup.plan.config import PlanConfig
from setup.plan.planner import make_plan
from tests.unit.setup.jobs.test_runner import standin_plan


def _step(job, step_id: str) -> str:
    return next(s["status"] for s in job.status()["steps"] if s["id"] == step_id)


def _cancel_after_convert(job) -> None:
    deadline = time.monotonic() + 60
    while _step(job, "convert") != DONE and time.monotonic() < deadline:
        time.sleep(0.1)
    job.cancel()
    assert job.wait(30) and job.status()["status"] == CANCELLED


def test_a_cancelled_job_resumes_from_its_saved_config_after_a_reload(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_DELAY", "2")
    plan = standin_plan(tmp_path, "llama", "0.19")
    job = JobStore(tmp_path / "jobs.json").submit(plan)
    _cancel_after_convert(job)

    reloaded = JobStore(tmp_path / "jobs.json")  # what a page reload or a new app process reads
    assert [r["id"] for r in reloaded.resumable()] == [job.id]
    config = PlanConfig.from_mapping(reloaded.saved_config(job.id))
    assert config == plan.config
    monkeypatch.setenv("STANDIN_DELAY", "0.01")
    again = reloaded.submit(make_plan(config))
    assert again.wait(60)
    steps = {s["id"]: s["status"] for s in again.status()["steps"]}
    assert (steps["convert"], steps["build-llm"]) == (SKIPPED, DONE)  # what was done stays done
    assert reloaded.resumable() == []  # the folder's newest job finished: nothing left to resume


def test_jobs_without_a_saved_config_or_finished_are_not_resumable(tmp_path):
    records = [{"id": "old-format", "status": "failed", "created": 1, "out": "/a", "steps": []},
               {"id": "finished", "status": "done", "created": 2, "out": "/b", "config": {"family": "llama"}},
               {"id": "older", "status": "cancelled", "created": 3, "out": "/c", "config": {"family": "llama"}},
               {"id": "newer", "status": "running", "created": 4, "out": "/c", "config": {"family": "llama"}}]
    (tmp_path / "jobs.json").write_text(json.dumps(records))
    store = JobStore(tmp_path / "jobs.json")
    assert [r["id"] for r in store.resumable()] == ["newer"]  # interrupted; "older" is superseded in /c
    assert store.status("newer")["status"] == INTERRUPTED
    assert store.saved_config("old-format") is None and store.saved_config("nope") is None


def test_cli_lists_jobs_and_resumes_one_without_its_flags(tmp_path):
    plan = standin_plan(tmp_path, "llama", "0.19")
    cache = tmp_path / "cache"
    cache.mkdir()
    record = {"id": "20260101-000000-llama-abcd", "status": "running", "created": 1, "out": str(plan.out),
              "steps": [], "config": plan.config.to_mapping()}  # a page job whose process died
    (cache / "build_jobs.json").write_text(json.dumps([record]))
    env = {**os.environ, "TRITON_DEMO_CACHE": str(cache), "STANDIN_DELAY": "0.01"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "setup", "build", *args], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=300)

    listed = cli("--list-jobs")
    assert listed.returncode == 0 and f"--resume {record['id']}" in listed.stdout and "interrupted" in listed.stdout
    unknown = cli("--resume", "no-such-job")
    assert unknown.returncode == 2 and "Job no-such-job cannot be resumed" in unknown.stderr
    resumed = cli("--resume", record["id"], "--no-launch")
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr
    assert (plan.out / "engines/llm/config.json").is_file() and "Convert the checkpoint" in resumed.stdout
