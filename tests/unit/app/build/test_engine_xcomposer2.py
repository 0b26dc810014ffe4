"""The Build page for InternLM-XComposer2: the form shows the family's serving defaults, they reach the plan's
repository step (changed ones too), a resumed job refills them, and "Write repository and launch" writes the
community-topology repository and loads only tensorrt_llm on other ranks."""

from __future__ import annotations

import json

import pytest

from app.build import engine as logic
from setup.repo.writer import parse_model_config
from tests.build_standins import make_checkpoint

FAMILY = "internlm-xcomposer2"
SERVING = {"triton_max_batch_size": 32, "batching_strategy": "inflight_fused_batching",
           "batch_scheduler_policy": "max_utilization", "exclude_input_in_output": True,
           "lora_cache_optimal_adapter_size": 256, "lora_cache_max_adapter_size": 256,
           "lora_cache_gpu_memory_fraction": 0.3, "lora_cache_host_memory_bytes": 2147483648}


def form(tmp_path, version="0.19") -> dict:
    return {"family": FAMILY, "checkpoint": str(make_checkpoint(tmp_path / "ckpt")), "trtllm_version": version,
            "out": str(tmp_path / "o"), "dtype": "float16", "tp": 1, "pp": 1, "max_batch_size": 48,
            "max_input_len": 1536, "max_seq_len": 1736, "max_num_images": 1, "trtllm_root": "/opt/t"}


def repository_sets(plan) -> dict[str, str]:
    step = next(s for s in plan.steps if s.phase == "repository")
    argv = list(step.argv)
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


def test_the_form_starts_at_the_family_serving_defaults():
    shown = logic.triton_defaults(FAMILY)
    assert {k: shown[k] for k in SERVING} == SERVING
    other = logic.triton_defaults("llava-1.5")
    assert other["triton_max_batch_size"] is None and other["batch_scheduler_policy"] == "guaranteed_no_evict"
    assert other["lora_cache_max_adapter_size"] is None
    assert logic.triton_defaults("cogvlm")["batch_scheduler_policy"] == "guaranteed_no_evict"  # not served: plain
    assert logic.triton_field_default("lora_cache_gpu_memory_fraction", FAMILY) == 0.3
    assert "engine's max batch size" in logic.triton_field_help("triton_max_batch_size")


def test_defaults_as_shown_reach_the_repository_step(tmp_path):
    config = logic.form_to_config(form(tmp_path), logic.triton_defaults(FAMILY))
    assert config.triton == {}  # nothing changed: the plan stays short, the template's values apply
    view = logic.plan_view(form(tmp_path), logic.triton_defaults(FAMILY))
    assert view.plan is not None, view.problems
    values = repository_sets(view.plan)
    assert values["triton_max_batch_size"] == "32" and values["lora_cache_max_adapter_size"] == "256"
    assert "--template internlm_xcomposer2" in view.shell and "vit_plan_dir=" in view.shell
    assert "internlm_xcomposer2" in view.summary


def test_a_changed_value_wins_even_when_it_is_the_global_default(tmp_path):
    triton = {**logic.triton_defaults(FAMILY), "batch_scheduler_policy": "guaranteed_no_evict",
              "lora_cache_gpu_memory_fraction": 0.2, "triton_max_batch_size": 16.0}
    config = logic.form_to_config(form(tmp_path), triton)
    assert config.triton == {"batch_scheduler_policy": "guaranteed_no_evict", "lora_cache_gpu_memory_fraction": 0.2,
                             "triton_max_batch_size": 16}
    values = repository_sets(logic.plan_view(form(tmp_path), triton).plan)
    assert values["batch_scheduler_policy"] == "guaranteed_no_evict" and values["triton_max_batch_size"] == "16"


def test_a_resumed_job_refills_the_family_defaults():
    from app.web.pages.build_form import FORM_FIELDS
    from setup.plan.config import PlanConfig

    config = PlanConfig(family=FAMILY, checkpoint="/c", out="/o", triton={"lora_cache_gpu_memory_fraction": 0.2})
    named = dict(zip(FORM_FIELDS + tuple(f.name for f in logic.TRITON_FIELDS),
                     logic.form_values(config, FORM_FIELDS), strict=True))
    assert named["lora_cache_gpu_memory_fraction"] == 0.2 and named["batch_scheduler_policy"] == "max_utilization"
    assert named["triton_max_batch_size"] == 32


@pytest.mark.parametrize("version, engine_file", [("0.19", "model.engine"), ("0.11", "visual_encoder.engine")])
def test_write_and_launch_writes_the_repository(tmp_path, monkeypatch, version, engine_file):
    import setup.launcher as launcher

    plan = logic.plan_view(form(tmp_path, version), logic.triton_defaults(FAMILY)).plan
    llm, visual = plan.out / "engines" / "llm", plan.out / "visual_engine"
    llm.mkdir(parents=True)
    visual.mkdir(parents=True)
    (llm / "config.json").write_text(json.dumps({"pretrained_config": {"vocab_size": 92544}, "build_config": {
        "max_batch_size": 48, "max_prompt_embedding_table_size": 48 * 1225,
        "plugin_config": {"lora_plugin": "float16"}, "lora_config": {"max_lora_rank": 256}}}))
    (visual / engine_file).write_bytes(b"plan")
    started = {}
    monkeypatch.setattr(launcher, "check_ports_free", lambda options, port_flag=None: None)
    monkeypatch.setattr(launcher, "find_tritonserver", lambda: "tritonserver")
    monkeypatch.setattr(launcher, "start_triton", lambda install, options, log, timeout, port_flag=None:
                        started.setdefault("options", options))
    options = logic.deploy_plan(plan)
    assert options.engine_model_names == ("tensorrt_llm",)
    repo = options.model_repo
    assert {p.name for p in repo.iterdir()} == {"ensemble", "preprocessing", "postprocessing", "tensorrt_llm",
                                                "tensorrt_llm_bls"}
    pre = parse_model_config((repo / "preprocessing" / "config.pbtxt").read_text(), "preprocessing")
    assert pre.parameters["vit_plan_dir"].string_value == str(visual / engine_file)
    engine = parse_model_config((repo / "tensorrt_llm" / "config.pbtxt").read_text(), "tensorrt_llm")
    assert engine.parameters["batch_scheduler_policy"].string_value == "max_utilization"
    input_ids = next(t for t in engine.input if t.name == "input_ids")
    assert input_ids.optional is (version != "0.11")  # the chosen release's tensors, not only the templates' own
