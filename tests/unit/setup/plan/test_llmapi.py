"""The llmapi deployment kind's plan: the repository it writes, the launch command, refusals in sentences."""

from __future__ import annotations

import shutil

import pytest
import yaml

from setup.launcher import LaunchOptions, TritonInstall, build_command
from setup.plan.llmapi import LlmApiPlanConfig, make_llmapi_plan, write_llmapi_plan
from setup.plan.types import PlanError
from setup.repo.writer import RepoError
from tests.lora_helpers import DEMO_ADAPTERS


def config(tmp_path, **fields) -> LlmApiPlanConfig:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir(exist_ok=True)
    return LlmApiPlanConfig(**{"family": "llama", "checkpoint": str(checkpoint), "out": str(tmp_path / "out"),
                               **fields})


def test_plan_writes_lora_config_from_the_adapters_and_says_where_the_server_reads_them(tmp_path):
    plan = make_llmapi_plan(config(tmp_path, lora_dir=str(DEMO_ADAPTERS), max_batch_size=8))
    assert plan.repo.lora == {"lora_target_modules": ["attn_dense", "attn_k", "attn_q", "attn_v"],
                              "max_lora_rank": 8, "max_loras": 1, "max_cpu_loras": 2}
    script = plan.to_shell()
    assert "python -m setup launch --repo" in script and "--no-mpi" not in script
    assert f"--server-adapters-dir {DEMO_ADAPTERS.resolve()}" in script
    assert "LoRA by path" in script and "give --code-dir" in script


def test_vision_family_turns_images_on_and_block_reuse_off(tmp_path):
    plan = make_llmapi_plan(config(tmp_path, family="qwen2-vl"))
    assert plan.repo.multimodal and plan.repo.block_reuse is False


@pytest.mark.parametrize(("fields", "words"), [
    ({"family": "qwen2-vl", "trtllm_version": "0.19"}, "takes no images"),
    ({"family": "llava-1.5"}, "cannot be deployed with Triton's llmapi model"),
    ({"family": "nope"}, "Unknown model family 'nope'"),
    ({"trtllm_version": "0.18"}, "written for TensorRT-LLM 0.19, 1.0, 1.1, 1.2, 1.3"),
    ({"instances": 2, "gpu_device_ids": "0,1"}, "one group of GPU ids per instance"),
    ({"lora_dir": "/no/such/folder"}, "does not exist"),
])
def test_refusals(tmp_path, fields, words):
    with pytest.raises(PlanError) as caught:
        make_llmapi_plan(config(tmp_path, **fields))
    assert any(words in p for p in caught.value.problems), caught.value.problems


def test_several_instances_launch_without_mpi(tmp_path):
    plan = make_llmapi_plan(config(tmp_path, instances=2, tp=2, gpu_device_ids="0,1;2,3"))
    assert plan.launch_argv()[-1] == "--no-mpi"
    install = TritonInstall(binary=tmp_path / "tritonserver")
    options = LaunchOptions(model_repo=tmp_path, world_size=4, no_mpi=True)
    argv = build_command(install, options)
    assert argv[0] == str(install.binary) and "mpirun" not in argv
    assert build_command(install, LaunchOptions(model_repo=tmp_path, world_size=4))[0] == "mpirun"


def test_build_copies_the_release_code_or_says_where_it_is(tmp_path):
    plan = make_llmapi_plan(config(tmp_path))
    with pytest.raises(RepoError, match="TensorRT-LLM's own code"):
        write_llmapi_plan(plan)
    code = tmp_path / "trtllm" / "triton_backend" / "all_models" / "llmapi" / "tensorrt_llm" / "1"
    code.mkdir(parents=True)
    for name in ("model.py", "helpers.py"):
        (code / name).write_text("# upstream file stand-in for the copy check\n")
    plan = make_llmapi_plan(config(tmp_path, code_dir=str(tmp_path / "trtllm")))
    out = write_llmapi_plan(plan)
    data = yaml.safe_load((out / "tensorrt_llm" / "1" / "model.yaml").read_text())
    assert data["model"] == str((tmp_path / "ckpt").resolve()) and data["triton_config"]["decoupled"] is True
    shutil.rmtree(out)
