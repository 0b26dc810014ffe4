"""InternLM-XComposer2 plans per release: the upstream path (0.17 flat, 0.20 models layout), the Njuapp-fork
path (0.11 era), the adapter made in the convert step's working folder, and the repository written last."""

from __future__ import annotations

from pathlib import Path

import pytest

from setup.plan.config import PlanConfig
from setup.plan.planner import make_plan
from tests.build_standins import make_checkpoint


def plan_for(tmp_path, version, **fields):
    ckpt = make_checkpoint(tmp_path / "ckpt")
    return make_plan(PlanConfig(family="internlm-xcomposer2", checkpoint=str(ckpt), out=str(tmp_path / "out"),
                                trtllm_version=version, trtllm_root="/opt/trtllm", **fields))


def value(argv, flag):
    return argv[list(argv).index(flag) + 1]


def sets(step) -> dict[str, str]:
    argv = list(step.argv)
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


def steps(plan) -> dict:
    return {s.id: s for s in plan.steps}


# release -> convert script, visual builder, visual --model_type, visual engine file, LoRA prefetch at start
RELEASES = {
    "0.11": ("examples/llama/convert_checkpoint.py", "examples/multimodal/build_visual_engine.py",
             "internlm-xcomposer2-vl-7b", "visual_encoder.engine", False),
    "0.17": ("examples/internlm2/convert_checkpoint.py", "examples/multimodal/build_visual_engine.py",
             "internlm-xcomposer2", "model.engine", False),
    "0.20": ("examples/models/core/internlm2/convert_checkpoint.py",
             "examples/models/core/multimodal/build_multimodal_engine.py", "internlm-xcomposer2", "model.engine", True),
}


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_steps_and_flags_per_release(tmp_path, version):
    convert_script, visual_script, model_type, engine_file, prefetch = RELEASES[version]
    plan = plan_for(tmp_path, version)
    out, by_id = tmp_path / "out", steps(plan)
    adapter = out / "lora_adapter"
    fork = version == "0.11"  # the fork's conversion writes adapter_model.bin; its adapter_config.json is copied
    assert [s.phase for s in plan.steps] == ["check", "convert", *(["adapter"] if fork else []), "build", "visual",
                                             "lora", "repository", "launch"]
    convert = by_id["convert"]
    assert convert.argv[1] == f"/opt/trtllm/{convert_script}"
    written = "adapter_model.bin" if fork else "adapter_config.json"
    assert convert.cwd == str(adapter) and str(adapter / written) in convert.outputs
    if fork:
        assert by_id["adapter-config"].argv == ("cp", "/opt/trtllm/examples/multimodal/adapter_config.json",
                                                str(adapter / "adapter_config.json"))
    build = by_id["build-llm"].argv
    assert value(build, "--lora_plugin") == "float16" and value(build, "--lora_dir") == str(adapter)
    assert value(build, "--max_lora_rank") == "256" and value(build, "--max_multimodal_len") == "58800"
    assert str(adapter) in by_id["build-llm"].inputs
    visual = by_id["visual"].argv
    assert visual[1] == f"/opt/trtllm/{visual_script}" and value(visual, "--model_type") == model_type
    lora = by_id["lora-1"].argv
    assert lora[1] == "/opt/trtllm/examples/hf_lora_convert.py"
    assert (value(lora, "-i"), value(lora, "-o"), value(lora, "--storage-type")) == (
        str(adapter), str(out / "lora" / "1"), "float16")
    repo = by_id["repository"]
    assert value(repo.argv, "--template") == "internlm_xcomposer2" and value(repo.argv, "--trtllm-version") == version
    values = sets(repo)
    assert values["vit_plan_dir"] == str(out / "visual_engine" / engine_file)
    assert values["triton_max_batch_size"] == "32" and values["lora_task_id"] == "1"
    assert values["lora_cache_max_adapter_size"] == "256" and values["lora_cache_host_memory_bytes"] == "2147483648"
    assert ("lora_prefetch_dir" in values) == prefetch
    assert values.get("lora_weights_dir") == (None if prefetch else str(out / "lora" / "1"))  # sent once instead
    assert "multimodal_model_path" not in values  # no multimodal_encoders model in this layout
    launch = by_id["launch"].argv
    assert value(launch, "--engine-models") == "tensorrt_llm" and "--multimodal-gpu0-cuda-mem-pool-bytes" not in launch
    assert plan.deployment["template"] == "internlm_xcomposer2"
    assert by_id["check-repository"].argv[-1] == "--dry-run"


def test_fork_era_says_where_its_tools_come_from(tmp_path):
    plan = plan_for(tmp_path, "0.11")
    assert value(steps(plan)["build-llm"].argv, "--max_output_len") == "200"
    assert any("Njuapp" in w and "lack a comma" in w for w in plan.warnings)
    assert "internlm_xcomposer2" in plan.triton_note and "Not verified on a GPU" in plan.triton_note


def test_triton_values_given_win_and_the_batch_stays_within_the_engine(tmp_path):
    plan = plan_for(tmp_path, "0.19", max_batch_size=16,
                    triton={"batch_scheduler_policy": "guaranteed_no_evict", "lora_cache_gpu_memory_fraction": 0.2})
    values = sets(steps(plan)["repository"])
    assert values["triton_max_batch_size"] == "16"  # the template's 32 would exceed the engine's 16
    assert values["batch_scheduler_policy"] == "guaranteed_no_evict"
    assert values["lora_cache_gpu_memory_fraction"] == "0.2"
    assert value(steps(plan)["build-llm"].argv, "--max_multimodal_len") == str(16 * 1225)


def test_given_adapter_folder_is_used_as_is(tmp_path):
    lora = tmp_path / "adapter"
    lora.mkdir()
    (lora / "adapter_config.json").write_text('{"r": 256, "lora_alpha": 256, "target_modules": ["q_proj"]}')
    (lora / "adapter_model.bin").write_bytes(b"")
    plan = plan_for(tmp_path, "0.19", lora_dir=str(lora))
    assert steps(plan)["convert"].cwd is None
    assert Path(value(steps(plan)["build-llm"].argv, "--lora_dir")) == lora.resolve()


@pytest.mark.parametrize("era", ["0.19", "0.20"])
def test_build_runs_with_standins_and_writes_the_repository_last(tmp_path, era):
    """`setup build` without a GPU: stand-in tools (tests/build_standins.py) write what the real ones write; the
    convert stand-in leaves the adapter in its working folder, as upstream's internlm2 conversion does."""
    from setup.jobs.runner import Runner
    from setup.repo.writer import parse_model_config
    from tests.build_standins import make_trtllm

    tools = make_trtllm(tmp_path / "trtllm", era)
    plan = make_plan(PlanConfig(family="internlm-xcomposer2", checkpoint=str(make_checkpoint(tmp_path / "ckpt")),
                                out=str(tmp_path / "out"), trtllm_version=era, **tools))
    build = [s for s in plan.steps if s.phase != "launch"]
    assert build[-1].phase == "repository"
    runner = Runner(build, plan.out, plan.out / "logs" / "build.log")
    assert runner.run(), runner.message + (plan.out / "logs" / "build.log").read_text()[-2000:]
    assert (plan.out / "lora_adapter" / "adapter_model.bin").is_file()
    assert (plan.out / "lora" / "1" / "model.lora_weights.npy").is_file()
    repo = plan.out / "triton_repo"
    pre = parse_model_config((repo / "preprocessing" / "config.pbtxt").read_text(), "preprocessing")
    assert pre.parameters["vit_plan_dir"].string_value == str(plan.out / "visual_engine" / "model.engine")
    assert not (repo / "multimodal_encoders").exists()
