"""The Build page's engine path without Gradio (app/build/engine.py): form fields and help, form -> plan, status,
access rule, saved jobs, the checkpoint source.

The TensorRT-LLM tools are stand-ins (tests/build_standins.py) because TensorRT-LLM needs a GPU.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from app.build import engine as logic
from setup.jobs.store import JobStore
from setup.repo.writer import parameter_specs
from tests.build_standins import make_checkpoint

ISSUE_FIELDS = {"batching_strategy", "batch_scheduler_policy", "kv_cache_free_gpu_mem_fraction",
                "max_tokens_in_paged_kv_cache", "max_attention_window_size", "enable_kv_cache_reuse", "decoupled_mode",
                "max_queue_delay_microseconds", "exclude_input_in_output", "lora_cache_optimal_adapter_size",
                "lora_cache_max_adapter_size", "lora_cache_gpu_memory_fraction", "lora_cache_host_memory_bytes",
                "lora_prefetch_dir", "preprocessing_instance_count", "postprocessing_instance_count",
                "bls_instance_count", "triton_max_batch_size"}  # the Triton batch: #22 (XComposer2 serves 32)


def test_triton_fields_cover_the_issue_with_help_and_default():
    assert {f.name for f in logic.TRITON_FIELDS} == ISSUE_FIELDS
    specs = parameter_specs()
    for field in logic.TRITON_FIELDS:
        text = logic.triton_field_help(field.name)
        assert text.startswith(specs[field.name].help) and "Default:" in text
    assert logic.triton_field_help("kv_cache_free_gpu_mem_fraction").endswith("Default: 0.9.")
    assert logic.triton_field_help("max_attention_window_size").endswith("Default: the backend's own.")


@pytest.mark.parametrize(("host", "auth", "allowed"), [
    ("127.0.0.1", None, True), ("localhost", None, True), ("::1", None, True), ("0.0.0.0", None, False),
    ("192.168.1.5", None, False), ("example.org", None, False), ("0.0.0.0", ("u", "p"), True)])
def test_access_rule(host, auth, allowed):
    assert logic.access_allowed(host, auth) is allowed


def test_form_to_plan_and_problems(tmp_path):
    ckpt = make_checkpoint(tmp_path / "ckpt")
    form = {"family": "llava-1.5", "checkpoint": str(ckpt), "trtllm_version": "0.19", "out": str(tmp_path / "o"),
            "dtype": "float16", "tp": 1.0, "pp": 1, "max_batch_size": 8.0, "max_input_len": 2048, "max_seq_len": 2560,
            "max_num_images": 1, "lora_dir": "", "max_lora_rank": None, "trtllm_root": "/opt/t", "tokenizer_dir": "",
            "vila_path": ""}
    triton = {"batching_strategy": "inflight_fused_batching", "kv_cache_free_gpu_mem_fraction": 0.8,
              "enable_kv_cache_reuse": False, "max_attention_window_size": None, "lora_prefetch_dir": ""}
    config = logic.form_to_config(form, triton)
    assert config.triton == {"kv_cache_free_gpu_mem_fraction": 0.8} and config.max_batch_size == 8
    view = logic.plan_view(form, triton)
    assert view.plan is not None and "4608" in view.summary and "kv_cache_free_gpu_mem_fraction=0.8" in view.shell
    assert "multimodal templates" in view.summary
    bad = logic.plan_view({**form, "dtype": "bfloat16", "checkpoint": str(tmp_path / "none")}, triton)
    assert bad.plan is None and len(bad.problems) == 2 and "Fix these first" in bad.summary
    assert logic.export_name(view.plan) == "build-llava-1.5-0.19.sh"
    script = tmp_path / logic.export_name(view.plan)
    script.write_text(view.shell)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_family_markdown_shows_the_triton_path_first():
    text = logic.family_markdown("cogvlm", "0.19")
    assert text.startswith("**Triton:** Served by this app's runner topology (template multimodal_runner)")
    assert "replies stream token by token" in text and "bfloat16" in text
    assert "whole reply comes at once" in logic.family_markdown("nougat", "0.19")  # an encoder-decoder LLM
    # 0.16.0's runner is the first release read handling qwen2_vl (runner_eras.yaml); before it the plan stops
    assert logic.family_markdown("qwen2-vl", "0.13").startswith("**Triton:** The templates serve Qwen2-VL from "
                                                                 "backend 0.16; with 0.13 the plan stops")
    assert logic.family_markdown("qwen2-vl", "0.19").startswith("**Triton:** Served by this app's runner topology")
    assert logic.family_markdown("llava-1.5", "0.11").startswith("**Triton:** The templates serve LLaVA-1.5 from")
    assert logic.family_defaults("vila")["max_num_images"] == 4


def test_status_html():
    assert logic.status_html(None) == f"<p>{logic.MSG_NO_JOB}</p>"
    status = {"id": "j1", "status": "running", "progress": 0.5, "message": "",
              "steps": [{"id": "convert", "title": "Convert", "status": "done", "elapsed": 65, "message": ""},
                        {"id": "build-llm", "title": "Build <LLM>", "status": "running", "elapsed": 3, "message": ""}]}
    html = logic.status_html(status)
    assert "value='50'" in html and "1:05" in html and "Build &lt;LLM&gt;" in html and "data-status='running'" in html


def test_show_plan_works_before_the_download_and_run_still_refuses(tmp_path):
    form = {"family": "llava-1.5", "checkpoint": str(tmp_path / "later"), "trtllm_version": "0.19",
            "out": str(tmp_path / "o"), "trtllm_root": "/opt/t"}
    shown = logic.plan_view(form, {}, checkpoint_optional=True)
    assert shown.plan is not None and "convert_checkpoint.py" in shown.shell
    assert "does not exist yet" in shown.summary and "llava-hf/llava-1.5-7b-hf" in shown.summary
    refused = logic.plan_view(form, {})
    assert refused.plan is None and refused.problems == [f"Checkpoint {tmp_path / 'later'} does not exist."]


def test_a_saved_config_refills_the_form_and_resumable_jobs_say_so(tmp_path):
    from app.web.pages.build_form import FORM_FIELDS
    from setup.plan.config import PlanConfig

    config = PlanConfig(family="llava-1.5", checkpoint="/c", out="/o", max_batch_size=4,
                        triton={"kv_cache_free_gpu_mem_fraction": 0.5})
    values = logic.form_values(config, FORM_FIELDS)
    assert len(values) == len(FORM_FIELDS) + len(logic.TRITON_FIELDS)
    named = dict(zip(FORM_FIELDS + tuple(f.name for f in logic.TRITON_FIELDS), values, strict=True))
    assert named["family"] == "llava-1.5" and named["max_batch_size"] == 4 and named["checkpoint"] == "/c"
    assert named["kv_cache_free_gpu_mem_fraction"] == 0.5 and named["decoupled_mode"] is True
    records = [{"id": "a", "status": "cancelled", "created": 1, "out": "/o", "config": config.to_mapping()},
               {"id": "b", "status": "done", "created": 2, "out": "/p", "config": config.to_mapping()}]
    (tmp_path / "jobs.json").write_text(json.dumps(records))
    assert logic.job_choices(JobStore(tmp_path / "jobs.json")) == [("b · done", "b"),
                                                                    ("a · cancelled · can resume", "a")]


def test_the_model_id_fills_an_empty_or_missing_checkpoint_folder_and_yields_to_ones_own(tmp_path):
    """The rule the form states (MSG_MODEL_SOURCE_RULE): an existing empty folder gets the download (it once dropped
    the model id, and the build failed at conversion); a folder with a checkpoint of one's own wins."""
    model = "tiny-org/tiny-llava"
    form = {"family": "llava-1.5", "model_id": model, "out": ""}
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder in (empty, tmp_path / "not-yet"):
        settled = logic.model_source({**form, "checkpoint": str(folder)}, tmp_path)
        assert settled["model_id"] == model and settled["checkpoint"] == str(folder)
    named = logic.model_source({**form, "checkpoint": ""}, tmp_path)
    assert named["checkpoint"] == str(tmp_path / "models" / "tiny-org--tiny-llava")
    started = tmp_path / "started"  # a download stopped half-way resumes there
    (started / ".download").mkdir(parents=True)
    (started / "config.json").write_text("{}")
    assert logic.model_source({**form, "checkpoint": str(started)}, tmp_path)["model_id"] == model
    own = tmp_path / "own"
    own.mkdir()
    (own / "config.json").write_text("{}")
    assert logic.model_source({**form, "checkpoint": str(own)}, tmp_path)["model_id"] is None
