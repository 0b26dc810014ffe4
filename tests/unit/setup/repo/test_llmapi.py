"""The llmapi repository writer: model.yaml keys, refusals in plain sentences, atomic writes, model code."""

from __future__ import annotations

import pytest
import yaml

from setup.repo.llmapi import (
    LlmApiRepoConfig,
    check_config,
    dry_run,
    model_yaml,
    write_llmapi_repository,
)
from setup.repo.writer import RepoError


def test_model_yaml_holds_the_llm_arguments_and_triton_config():
    config = LlmApiRepoConfig(model="/models/llama", tp=2, max_batch_size=8, max_num_tokens=512, max_seq_len=4096,
                              kv_cache_fraction=0.8, block_reuse=False, multimodal=True,
                              lora={"max_lora_rank": 16, "max_loras": 2, "max_cpu_loras": 4})
    data = model_yaml(config)
    assert data["model"] == "/models/llama" and data["backend"] == "pytorch"
    assert (data["tensor_parallel_size"], data["pipeline_parallel_size"]) == (2, 1)
    assert (data["max_batch_size"], data["max_num_tokens"], data["max_seq_len"]) == (8, 512, 4096)
    assert data["kv_cache_config"] == {"free_gpu_memory_fraction": 0.8, "enable_block_reuse": False}
    assert data["lora_config"]["max_cpu_loras"] == 4
    assert data["triton_config"] == {"max_batch_size": 0, "decoupled": True, "cancellation_check_period_ms": 100,
                                     "multimodal": True}


def test_old_release_gets_only_the_keys_it_reads():
    data = model_yaml(LlmApiRepoConfig(model="m", trtllm_version="0.19"))
    assert data["triton_config"] == {"max_batch_size": 0, "decoupled": True}
    assert "kv_cache_config" not in data and "lora_config" not in data


@pytest.mark.parametrize(("fields", "words"), [
    ({"trtllm_version": "1.1"}, "written for TensorRT-LLM 0.19, 1.3"),
    ({"trtllm_version": "0.19", "lora": {"max_lora_rank": 8}}, "takes no adapter inputs"),
    ({"trtllm_version": "0.19", "multimodal": True}, "takes no images"),
    ({"instances": 2, "gpu_device_ids": "0;0"}, "no id twice"),
    ({"instances": 2, "tp": 2, "gpu_device_ids": "0;1"}, "tp x pp = 2 ids per group"),
    ({"kv_cache_fraction": 1.5}, "kv_cache_fraction must be above 0"),
    ({"max_batch_size": 0}, "max_batch_size must be a whole number"),
    ({"extra": {"triton_config": {}}}, "'triton_config' is written from the form"),
    ({"engine": "vllm"}, "engine must be one of"),
])
def test_bad_configs_are_refused_with_a_sentence(fields, words):
    problems = check_config(LlmApiRepoConfig(model="m", **fields))
    assert any(words in p for p in problems), problems


def test_gpu_repository_needs_the_release_code(tmp_path):
    with pytest.raises(RepoError, match="TensorRT-LLM's own code"):
        dry_run(LlmApiRepoConfig(model="m", code_dir=str(tmp_path)))
    code = tmp_path / "triton_backend" / "all_models" / "llmapi" / "tensorrt_llm" / "1"
    code.mkdir(parents=True)
    for name in ("model.py", "helpers.py"):
        (code / name).write_text(f"# {name} of the user's checkout\n")
    out = write_llmapi_repository(LlmApiRepoConfig(model="m", code_dir=str(tmp_path)), tmp_path / "repo")
    assert (out / "tensorrt_llm" / "1" / "model.py").read_text() == "# model.py of the user's checkout\n"
    assert yaml.safe_load((out / "tensorrt_llm" / "1" / "model.yaml").read_text())["model"] == "m"


def test_cpu_repository_carries_the_stand_in_and_the_shared_engine(tmp_path):
    out = write_llmapi_repository(LlmApiRepoConfig(model="/m", engine="cpu"), tmp_path / "repo")
    version = out / "tensorrt_llm" / "1"
    assert (version / "model.py").is_file() and (version / "engine_lib" / "engine.py").is_file()
    assert (version / "encoder_lib" / "ocr.py").is_file() and (out / "tensorrt_llm" / "config.pbtxt").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]  # no staging folder left behind


def test_failed_write_leaves_the_old_repository(tmp_path):
    out = write_llmapi_repository(LlmApiRepoConfig(model="/m", engine="cpu"), tmp_path / "repo")
    with pytest.raises(RepoError, match="already exists"):
        write_llmapi_repository(LlmApiRepoConfig(model="/m", engine="cpu"), out)
    with pytest.raises(RepoError, match="takes no images"):
        write_llmapi_repository(LlmApiRepoConfig(model="/m", engine="cpu", trtllm_version="0.19", multimodal=True),
                                out, force=True)
    assert (out / "tensorrt_llm" / "1" / "model.yaml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]
