"""The llmapi repository writer: model.yaml keys, refusals in plain sentences, atomic writes, model code."""

from __future__ import annotations

import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from setup.repo.llmapi import (
    LlmApiRepoConfig,
    check_config,
    dry_run,
    model_yaml,
    render_config,
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
    ({"trtllm_version": "0.18"}, "written for TensorRT-LLM 0.19, 1.0, 1.1, 1.2, 1.3"),
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
    runtime = version / "cpu_runtime"
    assert (version / "model.py").is_file() and (runtime / "engine" / "engine.py").is_file()
    assert (runtime / "encoder" / "ocr.py").is_file() and (runtime / "llmapi_standin" / "peft.py").is_file()
    assert (out / "tensorrt_llm" / "config.pbtxt").is_file() and not list(version.rglob("__pycache__"))
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


def _checkout(root, config_text: str | None):
    """A stand-in for a TensorRT-LLM checkout at a 1.x release: the llmapi folder with its own files."""
    model = root / "triton_backend" / "all_models" / "llmapi" / "tensorrt_llm"
    (model / "1").mkdir(parents=True)
    for name in ("model.py", "helpers.py"):
        (model / "1" / name).write_text(f"# {name} of the checkout\n")
    if config_text is not None:
        (model / "config.pbtxt").write_text(config_text)
    return root


def test_a_release_without_recorded_tensors_takes_config_pbtxt_from_the_checkout(tmp_path):
    # upstream's file at such a release, as the checkout holds it (here: the 0.19 contract plus an input of its own)
    theirs = render_config(LlmApiRepoConfig(model="m", trtllm_version="0.19")) + (
        'input { name: "sampling_param_only_in_this_release" data_type: TYPE_INT32 dims: 1 optional: true }\n')
    checkout = _checkout(tmp_path / "trtllm", theirs)
    config = LlmApiRepoConfig(model="m", trtllm_version="1.1.0", code_dir=str(checkout))
    out = write_llmapi_repository(config, tmp_path / "repo")
    written = text_format.Parse((out / "tensorrt_llm" / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    expected = text_format.Parse(theirs, model_config_pb2.ModelConfig())
    assert [t.name for t in written.input] == [t.name for t in expected.input]  # upstream's tensors, untouched
    assert written.input == expected.input and written.output == expected.output
    assert (out / "tensorrt_llm" / "1" / "model.py").read_text() == "# model.py of the checkout\n"
    assert "cancellation_check_period_ms" not in yaml.safe_load(
        (out / "tensorrt_llm" / "1" / "model.yaml").read_text())["triton_config"]


@pytest.mark.parametrize("config_text, words", [
    (None, "is not an llmapi config"),
    ('name: "tensorrt_llm" backend: "python"', "is not an llmapi config with text_input and text_output"),
])
def test_a_checkout_without_a_usable_config_is_refused_in_a_sentence(tmp_path, config_text, words):
    checkout = _checkout(tmp_path / "trtllm", config_text)
    with pytest.raises(RepoError, match=words):
        dry_run(LlmApiRepoConfig(model="m", trtllm_version="1.1", code_dir=str(checkout)))


def test_releases_without_recorded_tensors_need_a_checkout_and_serve_text_only(tmp_path):
    with pytest.raises(RepoError, match="TensorRT-LLM's own code"):
        dry_run(LlmApiRepoConfig(model="m", trtllm_version="1.0"))
    problems = check_config(LlmApiRepoConfig(model="m", trtllm_version="1.1", engine="cpu",
                                             lora={"max_lora_rank": 8}))
    assert any("copies config.pbtxt from a checkout" in p and "follows 0.19, 1.2, 1.3" in p for p in problems)
    assert any("takes no adapter inputs" in p for p in problems)


def test_1_2_writes_its_recorded_tensors_and_takes_only_the_model_code_from_the_checkout(tmp_path):
    checkout = _checkout(tmp_path / "trtllm", None)  # no config.pbtxt: 1.2's tensors are ours to write
    out = write_llmapi_repository(LlmApiRepoConfig(model="m", trtllm_version="1.2.1", code_dir=str(checkout),
                                                   cancellation_check_period_ms=50), tmp_path / "repo")
    written = text_format.Parse((out / "tensorrt_llm" / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    inputs, outputs = {t.name for t in written.input}, {t.name for t in written.output}
    assert "stop" in inputs and not inputs & {"image_url", "lora_id", "lora_name", "lora_path"}
    assert {"kv_cache_hit_rate", "first_token_time_ns", "acceptance_rate"} <= outputs
    triton = yaml.safe_load((out / "tensorrt_llm" / "1" / "model.yaml").read_text())["triton_config"]
    assert triton == {"max_batch_size": 0, "decoupled": True, "cancellation_check_period_ms": 50}
    assert (out / "tensorrt_llm" / "1" / "model.py").read_text() == "# model.py of the checkout\n"
    assert check_config(LlmApiRepoConfig(model="m", trtllm_version="1.2", engine="cpu")) == []
