"""Build page, trtllm-serve kind, without Gradio (app/build/serve.py): form -> plan, write with one click, start only
where trtllm-serve is installed."""

from __future__ import annotations

import json

import yaml

from app.build import serve as logic


def _form(tmp_path, **extra) -> dict:
    (tmp_path / "ckpt").mkdir(exist_ok=True)
    form = {"family": "llama", "checkpoint": str(tmp_path / "ckpt"), "trtllm_version": "1.2",
            "out": str(tmp_path / "out"), "tp": 1.0, "pp": 1.0, "max_batch_size": 8.0, "max_num_tokens": None,
            "max_seq_len": "", "kv_cache_fraction": 0.9, "block_reuse": None, "lora_dir": "",
            "max_lora_rank": None, "max_loras": None, "max_cpu_loras": None, "lora_target_modules": "",
            "port": 8123.0}
    form.update(extra)
    return form


def test_view_shows_command_and_yaml(tmp_path):
    view = logic.serve_view(_form(tmp_path))
    assert view.plan is not None and not view.problems
    assert "trtllm-serve" in view.text and "--port 8123" in view.text
    assert yaml.safe_load(view.text.split("---\n", 1)[1])["max_batch_size"] == 8
    assert "TensorRT-LLM 1.2" in view.summary


def test_view_lists_problems_and_llava_note(tmp_path):
    view = logic.serve_view(_form(tmp_path, family="llava-1.5", kv_cache_fraction=2))
    assert view.plan is None and "Fix these first" in view.summary
    assert any("LLaVA-1.5" in p for p in view.problems)
    assert "not in the PyTorch backend's support matrix" in logic.family_markdown("llava-1.5", "1.0")
    ids = [v for _, v in logic.family_choices()]
    assert ids.index("llama") < ids.index("llava-1.5")


def test_write_without_trtllm_serve_says_so(tmp_path):
    server = logic.ServeServer(which=lambda _name: None)
    message = server.write_and_start(logic.serve_view(_form(tmp_path)).plan)
    assert "trtllm-serve is not installed on this machine" in message and "nothing was started" in message
    assert (tmp_path / "out" / "extra_llm_api_options.yaml").is_file() and not server.running()


def test_write_starts_trtllm_serve_when_installed(tmp_path):
    started = []

    class FakeProcess:
        pid = 4242

        def poll(self):
            return None

        def terminate(self):
            started.append("terminated")

        def wait(self, timeout=None):
            return 0

    def popen(argv, **_kwargs):
        started.append(argv)
        return FakeProcess()

    adapters = tmp_path / "adapters" / "pirate"
    adapters.mkdir(parents=True)
    (adapters / "adapter_config.json").write_text(json.dumps({"r": 8, "target_modules": ["q_proj"]}))
    server = logic.ServeServer(which=lambda _name: "/opt/bin/trtllm-serve", popen=popen)
    plan = logic.serve_view(_form(tmp_path, lora_dir=str(tmp_path / "adapters"))).plan
    message = server.write_and_start(plan)
    assert "pid 4242" in message and "http://127.0.0.1:8123/v1" in message
    assert started[0][0] == "/opt/bin/trtllm-serve" and "--extra_llm_api_options" in started[0]
    assert server.running() and server.url == "http://127.0.0.1:8123/v1"
    assert server.stop() == "trtllm-serve stopped." and started[-1] == "terminated"
