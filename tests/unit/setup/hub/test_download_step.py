"""A model id in the plan: the first step downloads it (python -m setup download, token from the environment only),
the later steps read the downloaded folder, and the token is in none of the plan, the shell script, the logs, the
job files or the error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from setup.__main__ import main
from setup.hub.names import build_folder, download_folder, hub_defaults
from setup.jobs.store import JobStore
from setup.plan.config import PlanConfig
from setup.plan.planner import make_plan
from tests.build_standins import make_trtllm
from tests.hub_server import HubRepo, LoopbackHub, serve

ROOT = Path(__file__).resolve().parents[4]
MODEL = "tiny-org/tiny-llama"
TOKEN = "hf_neverWRITTENtoken42"
CONFIG = {"num_attention_heads": 32, "hidden_size": 4096, "num_hidden_layers": 2}


@pytest.fixture
def gated_hub(monkeypatch):
    files = {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": os.urandom(4096)}
    state = LoopbackHub(repos={MODEL: HubRepo(files, gated=True, granted={TOKEN})}, tokens={TOKEN})
    server, _ = serve(state)
    monkeypatch.setenv("HF_ENDPOINT", state.url)
    yield state
    server.shutdown()
    server.server_close()


def _config(tmp_path, **fields) -> PlanConfig:
    tools = make_trtllm(tmp_path / "trtllm", "0.19")
    values = hub_defaults({"family": "llama", "model_id": MODEL, "trtllm_version": "0.19", **tools, **fields},
                          tmp_path)
    return PlanConfig.from_mapping(values)


def test_the_plan_downloads_first_and_converts_the_downloaded_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    plan = make_plan(_config(tmp_path))
    folder = download_folder(tmp_path, MODEL)
    assert folder == tmp_path / "models" / "tiny-org--tiny-llama"
    assert plan.out == build_folder(tmp_path, "llama", MODEL) == tmp_path / "builds" / "llama--tiny-org--tiny-llama"
    first, convert = plan.steps[0], next(s for s in plan.steps if s.phase == "convert")
    assert first.argv[1:] == ("-P", "-m", "setup", "download", "--model-id", MODEL, "--revision", "main",
                              "--dest", str(folder))
    assert first.outputs == (str(folder / ".download.json"),)
    assert convert.argv[convert.argv.index("--model_dir") + 1] == str(folder)
    assert any("first step downloads tiny-org/tiny-llama" in w for w in plan.warnings)
    assert TOKEN not in plan.to_shell() and TOKEN not in json.dumps(plan.to_dict())
    assert TOKEN not in json.dumps(plan.config.to_mapping())


def test_the_cli_plan_prints_the_download_without_the_token(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.chdir(tmp_path)
    code = main(["plan", "--family", "llava-1.5", "--model-id", "llava-hf/llava-1.5-7b-hf", "--out",
                 str(tmp_path / "out"), "--trtllm-version", "0.19"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    folder = tmp_path / "models" / "llava-hf--llava-1.5-7b-hf"
    lines = [line for line in printed.out.splitlines() if not line.startswith("#")]
    assert lines[1].endswith(f"-m setup download --model-id llava-hf/llava-1.5-7b-hf --revision main --dest {folder}")
    assert f"convert_checkpoint.py --model_dir {folder} " in printed.out
    assert TOKEN not in printed.out + printed.err


def test_bad_model_ids_are_refused_in_a_sentence(tmp_path):
    with pytest.raises(Exception) as refused:
        make_plan(_config(tmp_path, model_id="not an id", checkpoint=str(tmp_path / "c"), out=str(tmp_path / "o")))
    assert "'not an id' is not a Hugging Face model id: give ORG/NAME" in str(refused.value)


def test_a_job_downloads_with_the_token_then_converts_and_writes_it_nowhere(tmp_path, gated_hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    plan = make_plan(_config(tmp_path))
    store = JobStore(tmp_path / "jobs.json")
    env = {**os.environ, "HF_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    steps = [s for s in plan.build_steps() if s.phase in ("download", "check", "convert")]
    job = store.submit(plan, steps, env=env)
    assert job.wait(300)
    status = store.status(job.id)
    assert status["status"] == "done", store.log_tail(job.id, 40)
    folder = download_folder(tmp_path, MODEL)
    assert json.loads((folder / "config.json").read_text()) == CONFIG
    log = Path(status["log"]).read_text()
    assert f"--model_dir {folder}" in log and "(100%)" in log
    assert gated_hub.seen("GET", "model.safetensors")[-1]["authorization"] == f"Bearer {TOKEN}"
    for written in (Path(status["log"]), tmp_path / "jobs.json", plan.out / ".build_state.json",
                    folder / ".download.json"):
        assert TOKEN not in written.read_text(), written
    again = store.submit(plan, steps, env=env)  # a finished download is skipped, not fetched again
    assert again.wait(300) and store.status(again.id)["steps"][0]["status"] == "skipped"


def test_a_failed_download_says_why_in_the_job_and_leaves_the_token_out(tmp_path, gated_hub):
    plan = make_plan(_config(tmp_path))
    store = JobStore(tmp_path / "jobs.json")
    env = {**os.environ, "HF_TOKEN": "hf_refusedBYtheHUB77", "PYTHONPATH": str(ROOT)}
    job = store.submit(plan, plan.build_steps()[:1], env=env)
    assert job.wait(300)
    status = store.status(job.id)
    assert status["status"] == "failed"
    assert status["message"].startswith("Step 'Download tiny-org/tiny-llama from the Hugging Face Hub' failed with "
                                        "exit code 1. The hub at http://127.0.0.1:")
    assert "refused the token (401" in status["message"]
    for text in (status["message"], Path(status["log"]).read_text(), (tmp_path / "jobs.json").read_text()):
        assert "hf_refusedBYtheHUB77" not in text
    assert not (download_folder(tmp_path, MODEL) / "config.json").exists()


def test_the_download_command_reads_the_token_from_the_environment_only(tmp_path, gated_hub):
    env = {**os.environ, "HF_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "setup", "download", "--model-id", MODEL, "--dest",
                           str(tmp_path / "m")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"Downloaded {MODEL} (0123456789ab): 2 files")
    assert TOKEN not in done.stdout + done.stderr
    flag = subprocess.run([sys.executable, "-m", "setup", "download", "--model-id", MODEL, "--token", TOKEN,
                           "--dest", str(tmp_path / "n")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert flag.returncode == 2 and "unrecognized arguments: --token" in flag.stderr
