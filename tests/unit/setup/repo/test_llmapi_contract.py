"""The written llmapi config.pbtxt, tensor by tensor, against upstream's at each release.

Facts: tests/data/upstream/<tag>/llmapi.yaml (v0.19.0 from triton-inference-server/tensorrtllm_backend,
trtllm-c8c6df08 and trtllm-0a710573 from stored copies of NVIDIA/TensorRT-LLM: 1.2 and 2026 main), with the
path they came from.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from setup.catalog.llmapi_releases import llmapi_releases
from setup.repo.llmapi import LlmApiRepoConfig, render_config

UPSTREAM = Path(__file__).parents[3] / "data" / "upstream"


def upstream(tag: str) -> dict:
    facts = yaml.safe_load((UPSTREAM / tag / "llmapi.yaml").read_text())
    model = facts["models"]["tensorrt_llm"]
    assert facts["tag"] == tag and model["path"].endswith("llmapi/tensorrt_llm/config.pbtxt")
    return model


def written(version: str, **fields) -> pb.ModelConfig:
    text = render_config(LlmApiRepoConfig(model="/m", trtllm_version=version, **fields))
    return text_format.Parse(text, pb.ModelConfig())


def as_facts(tensors, inputs: bool) -> list[dict]:
    rows = []
    for t in tensors:
        row = {"name": t.name, "data_type": pb.DataType.Name(t.data_type), "dims": list(t.dims)}
        if inputs:
            row["optional"] = t.optional
        rows.append(row)
    return rows


PERF_OUTPUTS = {"kv_cache_reused_block", "kv_cache_missed_block", "kv_cache_alloc_new_blocks",
                "kv_cache_alloc_total_blocks", "kv_cache_hit_rate", "arrival_time_ns", "first_scheduled_time_ns",
                "first_token_time_ns", "last_token_time_ns", "acceptance_rate", "total_accepted_draft_tokens",
                "total_draft_tokens"}
RECORDED = sorted(key for key, release in llmapi_releases().items() if not release.config_from_checkout)
RECORDED_TAGS = {path.parent.name for path in UPSTREAM.glob("*/llmapi.yaml")}


@pytest.mark.parametrize("version", RECORDED)
def test_tensors_match_upstream_exactly(version):
    facts = upstream(llmapi_releases()[version].checked_against)
    ours = written(version)
    assert as_facts(ours.input, True) == facts["inputs"]  # same names, types, dims, optional flags, same order
    assert as_facts(ours.output, False) == facts["outputs"]
    assert ours.backend == "python" and ours.name == "tensorrt_llm"
    assert [g.kind for g in ours.instance_group] == [pb.ModelInstanceGroup.KIND_CPU]


def test_release_features_follow_the_facts():
    for release in (llmapi_releases()[key] for key in RECORDED):
        names = {t["name"] for t in upstream(release.checked_against)["inputs"]}
        assert release.has("lora_by_path") == ({"lora_id", "lora_name", "lora_path"} <= names), release.key
        assert release.has("image_url") == ("image_url" in names), release.key
        assert release.has("stop") == ("stop" in names), release.key
        outputs = {t["name"] for t in upstream(release.checked_against)["outputs"]}
        assert release.has("perf_outputs") == (PERF_OUTPUTS <= outputs), release.key


def test_1_2_is_recorded_from_upstream_and_its_model_code_agrees():
    release = llmapi_releases()["1.2"]
    assert not release.config_from_checkout and release.checked_against in RECORDED_TAGS
    assert release.has("stop") and release.has("perf_outputs") and not release.has("lora_by_path")
    facts = yaml.safe_load((UPSTREAM / release.checked_against / "llmapi.yaml").read_text())
    code, config = facts["model_code"], facts["models"]["tensorrt_llm"]
    assert code["version"].startswith("1.2.")
    assert sorted(code["reads_inputs"]) == sorted(t["name"] for t in config["inputs"])
    assert sorted(code["sends_outputs"]) == sorted(t["name"] for t in config["outputs"])
    assert release.triton_config_keys == tuple(code["triton_config_keys"])
    assert "cancellation_check_period_ms" in release.triton_config_keys


def test_1x_releases_name_the_commit_they_came_from():
    for key in ("1.0", "1.1", "1.2"):
        release = llmapi_releases()[key]
        assert re.fullmatch(r"[0-9a-f]{40}", release.commit or ""), key
        assert any(release.commit[:8] in source for source in release.sources), key


def test_streaming_and_instances_reach_the_config():
    config = written("1.3", instances=2, tp=2, gpu_device_ids="0,1;2,3")
    assert config.model_transaction_policy.decoupled and config.max_batch_size == 0
    assert config.instance_group[0].count == 2
    assert config.parameters["gpu_device_ids"].string_value == "0,1;2,3"
    assert not written("0.19", streaming=False).model_transaction_policy.decoupled
