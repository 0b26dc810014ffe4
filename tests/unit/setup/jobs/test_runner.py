"""Runner, jobs, preflight and engine registry with real subprocesses.

The runner is real; only the TensorRT-LLM tools are stand-ins (tests/build_standins.py: exactly the
documented flags, progress lines, expected output files), because TensorRT-LLM needs a GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from setup.catalog import messages as M
from setup.jobs.registry import EngineRegistry, same_version
from setup.jobs.runner import CANCELLED, DONE, FAILED, PENDING, SKIPPED, BuildState, Runner, parse_progress
from setup.jobs.store import INTERRUPTED, JobError, JobStore
from setup.paths import PROJECT_ROOT
from setup.plan.config import PlanConfig
from setup.plan.planner import Step, make_plan
from setup.plan.preflight import (
    Gpu,
    host_available_bytes,
    memory_warnings,
    parse_nvidia_smi,
    preflight,
    tool_warnings,
)
from tests.build_standins import make_adapter, make_checkpoint, make_trtllm

ROOT = PROJECT_ROOT
PY = sys.executable


def py_step(step_id: str, code: str, outputs=(), inputs=(), cwd=None, weight=1.0) -> Step:
    return Step(step_id, "build", f"Step {step_id}", (PY, "-c", code), tuple(map(str, inputs)),
                tuple(map(str, outputs)), cwd=cwd, weight=weight)


def write_code(path: Path, text: str) -> str:
    return f"import pathlib, time; print('writing', flush=True); pathlib.Path({str(path)!r}).write_text({text!r})"


def test_streams_output_to_log_and_callback(tmp_path):
    lines: list[str] = []
    out = tmp_path / "a.txt"
    code = "import sys\nfor i in range(3): print(f'[{i+1}/3] line', flush=True)\nprint('err', file=sys.stderr)\n" \
           + write_code(out, "ok")
    runner = Runner([py_step("a", code, outputs=[out])], tmp_path, tmp_path / "log.txt", on_output=lines.append)
    assert runner.run()
    assert "[2/3] line" in lines and "err" in lines and "writing" in lines
    assert "[2/3] line" in (tmp_path / "log.txt").read_text()
    assert runner.states[0].status == DONE and runner.progress == 1.0
    assert runner.states[0].reported == 1.0


def test_failure_and_missing_output_and_missing_program(tmp_path):
    runner = Runner([py_step("a", "raise SystemExit(3)"), py_step("b", "print(1)")], tmp_path, tmp_path / "l")
    assert not runner.run()
    assert runner.states[0].status == FAILED and runner.states[1].status == PENDING
    assert runner.message == M.MSG_STEP_FAILED.format(title="Step a", code=3)
    missing = tmp_path / "never"
    runner = Runner([py_step("a", "print(1)", outputs=[missing])], tmp_path, tmp_path / "l")
    assert not runner.run() and runner.message == M.MSG_STEP_NO_OUTPUT.format(title="Step a", path=missing)
    gone = Step("x", "build", "Ghost", ("/no/such/tool", "--flag"))
    runner = Runner([gone], tmp_path, tmp_path / "l")
    assert not runner.run() and runner.message == M.MSG_STEP_NOT_FOUND.format(title="Ghost", program="/no/such/tool")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_cancel_kills_the_process_group_and_keeps_earlier_outputs(tmp_path):
    first = tmp_path / "first.txt"
    child_pid = tmp_path / "child.pid"
    slow = ("import subprocess, sys, time, pathlib\n"
            f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            f"pathlib.Path({str(child_pid)!r}).write_text(str(p.pid))\n"
            "print('started', flush=True)\ntime.sleep(120)\n")
    lines: list[str] = []
    runner = Runner([py_step("one", write_code(first, "1"), outputs=[first]),
                     py_step("two", slow, outputs=[tmp_path / "two.txt"]), py_step("three", "print(3)")],
                    tmp_path, tmp_path / "log", on_output=lines.append)
    import threading

    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(runner.run()))
    thread.start()
    deadline = time.monotonic() + 30
    while "started" not in lines and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(child_pid.read_text())
    started = time.monotonic()
    runner.cancel()
    thread.join(20)
    assert result == [False] and time.monotonic() - started < 10
    assert [s.status for s in runner.states] == [DONE, CANCELLED, PENDING]
    assert runner.message == M.MSG_CANCELLED.format(title="Step two")
    assert first.read_text() == "1"
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the step's own children die with its process group"
    assert set(BuildState(tmp_path).load()) == {"one"}


def test_resume_skips_unchanged_steps_and_reruns_changed_ones(tmp_path):
    source = tmp_path / "input.txt"
    source.write_text("v1")
    out1, out2 = tmp_path / "o1", tmp_path / "o2"
    counter = tmp_path / "count"

    def steps(extra=""):
        bump = f"p = pathlib.Path({str(counter)!r}); p.write_text(p.read_text() + 'x' if p.exists() else 'x')"
        return [py_step("a", f"import pathlib; {bump}; pathlib.Path({str(out1)!r}).write_text('a')",
                        outputs=[out1], inputs=[source]),
                py_step("b", f"import pathlib; pathlib.Path({str(out2)!r}).write_text('b'){extra}", outputs=[out2],
                        inputs=[out1])]

    assert Runner(steps(), tmp_path, tmp_path / "log").run()
    again = Runner(steps(), tmp_path, tmp_path / "log")
    assert again.run() and [s.status for s in again.states] == [SKIPPED, SKIPPED]
    assert counter.read_text() == "x"
    changed_argv = Runner(steps("  # changed"), tmp_path, tmp_path / "log")
    assert changed_argv.run() and [s.status for s in changed_argv.states] == [SKIPPED, DONE]
    time.sleep(0.01)
    source.write_text("v2, a different size")
    changed_input = Runner(steps("  # changed"), tmp_path, tmp_path / "log")
    assert changed_input.run() and [s.status for s in changed_input.states] == [DONE, DONE]
    out2.unlink()
    lost_output = Runner(steps("  # changed"), tmp_path, tmp_path / "log")
    assert lost_output.run() and [s.status for s in lost_output.states] == [SKIPPED, DONE]
    assert json.loads((tmp_path / ".build_state.json").read_text())["steps"].keys() == {"a", "b"}


def test_progress_parsing_and_estimate():
    assert parse_progress("[3/4] building") == 0.75
    assert parse_progress("Timing graph nodes 42%") == 0.42
    assert parse_progress("/tmp/rank0/x") is None


# ----- stand-in TensorRT-LLM tools -------------------------------------------------------------------------


def standin_plan(tmp_path, family="llama", era="0.19", **fields):
    tools = make_trtllm(tmp_path / "trtllm", era)
    ckpt = make_checkpoint(tmp_path / "ckpt")
    return make_plan(PlanConfig(family=family, checkpoint=str(ckpt), out=str(tmp_path / "out"), trtllm_version=era,
                                **tools, **fields))


@pytest.mark.parametrize("era", ["0.11", "0.19"])
def test_llava_plan_runs_with_standins(tmp_path, era):
    plan = standin_plan(tmp_path, "llava-1.5", era, tp=2)
    runner = Runner(plan.build_steps(), plan.out, plan.out / "logs" / "build.log")
    assert runner.run(), runner.message
    engine = json.loads((plan.out / "engines/llm/config.json").read_text())
    assert engine["build_config"]["max_prompt_embedding_table_size"] == 4608
    assert (plan.out / "engines/llm/rank1.engine").is_file()
    log = (plan.out / "logs" / "build.log").read_text()
    assert "[3/3] trtllm-build working" in log


def test_text_plan_runs_through_the_repository_step(tmp_path):
    lora = tmp_path / "adapters"
    make_adapter(lora / "a", 8)
    plan = standin_plan(tmp_path, "llama", "0.19", lora_dir=str(lora))
    steps = [s for s in plan.steps if s.phase != "launch"]
    runner = Runner(steps, plan.out, plan.out / "logs" / "build.log")
    assert runner.run(), runner.message + (plan.out / "logs/build.log").read_text()[-2000:]
    text = (plan.out / "triton_repo/tensorrt_llm/config.pbtxt").read_text()
    assert str(plan.out / "engines/llm") in text and str(plan.out / "lora") in text
    assert (plan.out / "lora/1/model.lora_weights.npy").is_file()


def test_standin_rejects_an_undocumented_flag(tmp_path):
    plan = standin_plan(tmp_path, "llama", "0.11", extra_build_args=["--max_seq_len", "10"])
    runner = Runner(plan.build_steps(), plan.out, plan.out / "log")
    assert not runner.run()
    assert "unrecognized arguments: --max_seq_len" in (plan.out / "log").read_text()


def test_cli_build_runs_resumes_and_records_engines(tmp_path, monkeypatch):
    tools = make_trtllm(tmp_path / "trtllm", "0.19")
    ckpt = make_checkpoint(tmp_path / "ckpt")
    args = ["build", "--family", "llava-1.5", "--checkpoint", str(ckpt), "--out", str(tmp_path / "out"),
            "--trtllm-version", "0.19", "--trtllm-root", tools["trtllm_root"], "--trtllm-build",
            tools["trtllm_build"], "--trtllm-python", PY, "--no-launch"]
    env = {**os.environ, "TRITON_DEMO_CACHE": str(tmp_path / "cache")}
    first = subprocess.run([PY, "-m", "setup", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    # The repository step runs the project's multimodal writer against the stand-in engines.
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    assert "Convert the checkpoint" in first.stdout
    assert (tmp_path / "out/engines/llm/config.json").is_file()
    assert (tmp_path / "out/triton_repo/multimodal_encoders/config.pbtxt").is_file()
    second = subprocess.run([PY, "-m", "setup", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert second.returncode == 0 and second.stdout.count("Skipped") == 4, second.stdout
    registry = EngineRegistry(tmp_path / "cache" / "engine_registry.json")
    (entry,) = registry.entries()
    assert entry.family == "llava-1.5" and entry.trtllm_version == "0.19"
    assert entry.engine_dir == str(tmp_path / "out/engines/llm")


# ----- jobs --------------------------------------------------------------------------------------------------


def test_job_runs_in_background_and_is_persisted(tmp_path):
    plan = standin_plan(tmp_path, "llama", "0.19")
    registry = EngineRegistry(tmp_path / "registry.json")
    store = JobStore(tmp_path / "jobs.json", registry=registry)
    job = store.submit(plan)
    assert job.wait(120) and job.status()["status"] == DONE, job.status()
    status = job.status()
    # the repository dry run, convert, build
    assert [s["status"] for s in status["steps"]] == [DONE, DONE, DONE] and status["progress"] == 1.0
    assert "trtllm-build working" in job.log_tail()
    reloaded = JobStore(tmp_path / "jobs.json")
    assert reloaded.list()[0]["id"] == job.id and reloaded.list()[0]["status"] == DONE
    assert "trtllm-build working" in reloaded.log_tail(job.id)
    assert registry.find(plan.out / "engines/llm").config_hash == plan.config_hash()


def test_job_cancel_then_resume(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_DELAY", "2")
    plan = standin_plan(tmp_path, "llama", "0.19")
    store = JobStore(tmp_path / "jobs.json")
    job = store.submit(plan)
    deadline = time.monotonic() + 60
    while job.status()["steps"][0]["status"] != DONE and time.monotonic() < deadline:
        time.sleep(0.1)
    while "trtllm-build working" not in job.log_tail() and time.monotonic() < deadline:
        time.sleep(0.1)
    with pytest.raises(JobError):
        store.submit(plan)
    job.cancel()
    assert job.wait(30)
    assert job.status()["status"] == CANCELLED
    assert [s["status"] for s in job.status()["steps"]] == [DONE, DONE, CANCELLED]
    monkeypatch.setenv("STANDIN_DELAY", "0.01")
    again = store.submit(plan)
    assert again.wait(60)
    steps = again.status()["steps"]
    assert [s["status"] for s in steps[1:]] == [SKIPPED, DONE]  # the finished convert is not run again
    assert steps[0]["status"] == DONE  # the dry run is cheap and runs again


def test_running_record_from_an_earlier_process_is_interrupted(tmp_path):
    (tmp_path / "jobs.json").write_text(json.dumps([{"id": "old", "status": "running", "created": 1, "steps": []}]))
    assert JobStore(tmp_path / "jobs.json").status("old")["status"] == INTERRUPTED


# ----- registry and preflight --------------------------------------------------------------------------------


def test_registry_flags_stale_engines(tmp_path):
    registry = EngineRegistry(tmp_path / "r.json")
    entry = registry.record(tmp_path / "e", "llama", "abc", "0.19")
    assert registry.status(entry, "0.19.0") == M.ENGINE_CURRENT
    assert registry.status(entry, "0.20.0") == M.ENGINE_STALE.format(built="0.19", installed="0.20.0")
    assert registry.is_stale(entry, None) is None
    assert registry.status(entry, None, probe=False) == M.ENGINE_UNKNOWN
    registry.record(tmp_path / "e", "llama", "def", "0.19.1")
    (only,) = registry.entries()
    assert only.config_hash == "def"
    assert same_version("0.19", "0.19.1") and not same_version("0.19.0", "0.19.1")


def test_memory_warnings():
    gib = 2**30
    out = Path("/x")
    assert memory_warnings(10 * gib, 2, 30 * gib, [Gpu(0, 20 * gib, 24 * gib), Gpu(1, 20 * gib, 24 * gib)],
                           100 * gib, out) == []
    warnings = memory_warnings(10 * gib, 2, 8 * gib, [Gpu(0, 2 * gib, 24 * gib)], 5 * gib, out)
    assert warnings == [M.WARN_HOST_MEMORY.format(need=20.0, ckpt=10.0, free=8.0),
                        M.WARN_GPU_COUNT.format(world=2, count=1),
                        M.WARN_GPU_MEMORY.format(index=0, need=6.0, ckpt=10.0, world=2, free=2.0),
                        M.WARN_DISK.format(need=20.0, path=out, free=5.0)]
    assert M.WARN_GPU_MISSING in memory_warnings(1, 1, None, None, None, out)


def test_nvidia_smi_and_meminfo_parsing(tmp_path):
    assert parse_nvidia_smi("0, 20000, 24576\n1, 100, 24576\n") == [
        Gpu(0, 20000 * 2**20, 24576 * 2**20), Gpu(1, 100 * 2**20, 24576 * 2**20)]
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    assert host_available_bytes(meminfo) == 2048 * 1024
    assert host_available_bytes(tmp_path / "none") is None


def test_preflight_names_missing_tools(tmp_path):
    ckpt = make_checkpoint(tmp_path / "ckpt")
    plan = make_plan(PlanConfig(family="llama", checkpoint=str(ckpt), out=str(tmp_path / "o"), trtllm_version="0.19",
                                trtllm_root=str(tmp_path / "no-trtllm"), trtllm_build="no-such-trtllm-build"))
    warnings = tool_warnings(plan)
    assert M.WARN_TOOL_MISSING.format(what="Program", path="no-such-trtllm-build") in warnings
    assert any(w.startswith("Script not found") for w in warnings)
    assert set(warnings) <= set(preflight(plan, gpus=[Gpu(0, 80 * 2**30, 80 * 2**30)]))
