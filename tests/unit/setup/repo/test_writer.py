from pathlib import Path

import pytest
import yaml
from tritonclient.grpc import model_config_pb2

from setup.paths import TEMPLATES_DIR
from setup.repo.writer import (
    DeploymentConfig,
    RepoError,
    parameter_specs,
    parse_model_config,
    write_repository,
)

MODELS = {"ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls"}


def gpu_config(**parameters) -> DeploymentConfig:
    base = {"engine_dir": "/engines/llama", "tokenizer_dir": "/hf/llama"}
    return DeploymentConfig(engine="tensorrtllm", parameters={**base, **parameters})


def test_every_template_placeholder_is_documented():
    from setup.repo.fill import placeholders

    specs = parameter_specs()
    for config in (TEMPLATES_DIR / "inflight_batcher_llm").glob("*/config.pbtxt"):
        missing = placeholders(config.read_text()) - set(specs)
        assert not missing, f"{config}: undocumented placeholders {missing}"


def test_writes_complete_valid_repository(tmp_path):
    out = write_repository(gpu_config(), tmp_path / "repo")
    assert {p.name for p in out.iterdir()} == MODELS
    for model in MODELS:
        text = (out / model / "config.pbtxt").read_text()
        assert "${" not in text
        parsed = parse_model_config(text, model)
        assert parsed.name == model
        assert (out / model / "1").is_dir()
    llm = parse_model_config((out / "tensorrt_llm" / "config.pbtxt").read_text(), "llm")
    assert llm.backend == "tensorrtllm"
    assert llm.model_transaction_policy.decoupled is True
    assert llm.parameters["gpt_model_path"].string_value == "/engines/llama"
    assert "max_tokens_in_paged_kv_cache" not in llm.parameters  # optional and unset: dropped
    assert not (out / "tensorrt_llm" / "1" / "model.py").exists()  # GPU engine: no CPU overlay


def test_v019_tensor_contract_of_tensorrt_llm(tmp_path):
    out = write_repository(gpu_config(), tmp_path / "repo")
    llm = parse_model_config((out / "tensorrt_llm" / "config.pbtxt").read_text(), "llm")
    inputs = {i.name: i for i in llm.input}
    kind = {name: model_config_pb2.DataType.Name(i.data_type) for name, i in inputs.items()}
    assert kind["input_ids"] == kind["input_lengths"] == kind["lora_config"] == "TYPE_INT32"
    assert list(inputs["lora_config"].dims) == [-1, 3]
    assert list(inputs["stop_words_list"].dims) == [2, -1]
    assert kind["random_seed"] == kind["lora_task_id"] == "TYPE_UINT64"
    assert kind["lora_weights"] == kind["prompt_embedding_table"] == "TYPE_FP16"
    assert kind["streaming"] == kind["stop"] == "TYPE_BOOL"
    assert not inputs["input_lengths"].optional and inputs["stop"].optional
    assert {o.name for o in llm.output} >= {"output_ids", "sequence_length", "cum_log_probs"}


def test_cpu_engine_overlay(tmp_path):
    config = gpu_config()
    config.engine = "cpu"
    out = write_repository(config, tmp_path / "repo")
    llm = parse_model_config((out / "tensorrt_llm" / "config.pbtxt").read_text(), "llm")
    assert llm.backend == "python"
    assert (out / "tensorrt_llm" / "1" / "model.py").is_file()
    assert (out / "tensorrt_llm" / "1" / "cpu_runtime" / "engine" / "engine.py").is_file()
    assert not (out / "tensorrt_llm" / "1" / "cpu_runtime" / "encoder").exists()  # only the parts it imports
    assert not (out / "preprocessing" / "1" / "cpu_runtime").exists()


def test_streaming_needs_decoupled(tmp_path):
    with pytest.raises(RepoError, match="decoupled_mode"):
        write_repository(gpu_config(decoupled_mode=False), tmp_path / "repo")
    config = gpu_config(decoupled_mode=False)
    config.streaming = False
    assert write_repository(config, tmp_path / "repo2").is_dir()


def test_missing_required_value_names_it_and_writes_nothing(tmp_path):
    config = DeploymentConfig(parameters={"engine_dir": "/e"})
    with pytest.raises(RepoError, match="tokenizer_dir"):
        write_repository(config, tmp_path / "repo")
    assert list(tmp_path.iterdir()) == []  # no half-written repository, no staging left behind


def test_unknown_parameter_and_engine_rejected(tmp_path):
    with pytest.raises(RepoError, match="Unknown parameters: max_bach_size"):
        write_repository(gpu_config(max_bach_size=4), tmp_path / "r")
    config = gpu_config()
    config.engine = "vllm"
    with pytest.raises(RepoError, match="engine must be one of"):
        write_repository(config, tmp_path / "r")


def test_invalid_value_caught_by_protobuf_parse(tmp_path):
    with pytest.raises(RepoError, match=r"ensemble/config.pbtxt: not a valid model config: .*eight"):
        write_repository(gpu_config(triton_max_batch_size="eight"), tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_force(tmp_path):
    out = write_repository(gpu_config(), tmp_path / "repo")
    with pytest.raises(RepoError, match="already exists"):
        write_repository(gpu_config(), out)
    write_repository(gpu_config(triton_max_batch_size=2), out, force=True)
    assert "max_batch_size: 2" in (out / "ensemble" / "config.pbtxt").read_text()


def test_per_model_override_and_yaml_loading(tmp_path):
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump({
        "engine": "tensorrtllm",
        "parameters": {"engine_dir": "/e", "tokenizer_dir": "/t", "gpu_device_ids": "0,1"},
        "models": {"preprocessing": {"preprocessing_instance_count": 3}},
    }))
    out = write_repository(DeploymentConfig.from_yaml(path), tmp_path / "repo")
    pre = parse_model_config((out / "preprocessing" / "config.pbtxt").read_text(), "pre")
    assert pre.instance_group[0].count == 3
    llm = parse_model_config((out / "tensorrt_llm" / "config.pbtxt").read_text(), "llm")
    assert llm.parameters["gpu_device_ids"].string_value == "0,1"


def test_bad_yaml_messages(tmp_path):
    with pytest.raises(RepoError, match="does not exist"):
        DeploymentConfig.from_yaml(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("engine: [unclosed")
    with pytest.raises(RepoError, match="not valid YAML"):
        DeploymentConfig.from_yaml(bad)
    bad.write_text("enigne: cpu\n")
    with pytest.raises(RepoError, match="Unknown keys"):
        DeploymentConfig.from_yaml(bad)


def test_cli_repo_writes_and_reports_errors(tmp_path, capsys):
    from setup.__main__ import main

    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump({"parameters": {"engine_dir": "/e", "tokenizer_dir": "/t"}}))
    assert main(["repo", "--config", str(path), "--out", str(tmp_path / "r")]) == 0
    assert main(["repo", "--config", str(path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "already exists" in err[-1]
    assert Path(tmp_path / "r" / "ensemble" / "config.pbtxt").is_file()
