"""Issue #47 item 13: LoRA inputs only for families that take LoRA. The repository of a family whose file says LoRA
is unsupported (blip2-opt, llava-1.5, vila) declares no lora_* inputs on its ensemble and tensorrt_llm_bls, and the
app, reading the deployed model's config, offers no adapters for it (it offered every adapter, each failing)."""

from __future__ import annotations

import pytest
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as pb

from app.core.errors import InvalidRequest
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.triton.client import ModelInfo
from setup.catalog.builds import families
from setup.repo.writer import (
    DeploymentConfig,
    family_deployment,
    load_template,
    parameter_specs,
    render_model,
)
from tests.xcomposer2_fakes import xc2_registry

LORA = {"lora_task_id", "lora_weights", "lora_config"}
NO_LORA = ["blip2-opt", "llava-1.5", "vila"]
CLIENT_MODELS = ["ensemble", "tensorrt_llm_bls"]


def written(family: str | None, model: str, template: str = "multimodal", release: str | None = None):
    if family is None:
        parameters = {}
    else:
        template, parameters = family_deployment(family)
    parameters = {**parameters, "engine_dir": "/e", "tokenizer_dir": "/t", "multimodal_model_path": "/v"}
    config = DeploymentConfig(template=template, trtllm_version=release, parameters=parameters)
    return text_format.Parse(render_model(model, config, parameter_specs(), load_template(template)), pb.ModelConfig())


@pytest.mark.parametrize("family", NO_LORA)
def test_the_family_files_say_lora_is_unsupported(family):
    assert families()[family].raw["lora"]["supported"] is False


@pytest.mark.parametrize("release", [None, "0.13", "0.15"])
@pytest.mark.parametrize("model", CLIENT_MODELS)
@pytest.mark.parametrize("family", NO_LORA)
def test_a_family_without_lora_gets_no_lora_inputs(family, model, release):
    config = written(family, model, release=release)
    assert {i.name for i in config.input} & LORA == set()
    for step in config.ensemble_scheduling.step:
        assert set(step.input_map.values()) & LORA == set(), step.model_name
    assert {i.name for i in written(family, "tensorrt_llm", release=release).input} >= LORA  # the backend's own


@pytest.mark.parametrize("model", CLIENT_MODELS)
def test_lora_inputs_stay_where_lora_is_not_refused(model):
    for config in (written(None, model), written("gpt", model), written(None, model, template="inflight_batcher_llm")):
        assert {i.name for i in config.input} >= LORA


class ServedModel:
    """The deployed model's config as the app reads it (what TritonChatClient.model_info gives)."""

    url, model, stall_timeout = "127.0.0.1:1", "tensorrt_llm_bls", 30.0

    def __init__(self, config: pb.ModelConfig):
        as_json = json_format.MessageToDict(config, preserving_proto_field_name=True)
        as_json["model_transaction_policy"] = {"decoupled": True}
        self.info = ModelInfo.from_config(as_json)

    def model_info(self):
        return self.info

    def model_config(self, name):
        return {}


@pytest.mark.parametrize("model", CLIENT_MODELS)
@pytest.mark.parametrize("family", NO_LORA)
def test_the_app_offers_no_adapters_for_a_family_without_lora(tmp_path, monkeypatch, family, model):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    registry = xc2_registry(tmp_path / "adapters")  # two adapters in the folder
    deployment = TritonEngineDeployment(ServedModel(written(family, model)), registry)
    assert deployment.adapter_names() == []
    with pytest.raises(InvalidRequest):
        deployment.check_adapter("pirate")


def test_the_app_offers_the_adapters_where_the_model_takes_lora(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    deployment = TritonEngineDeployment(ServedModel(written(None, "tensorrt_llm_bls")), xc2_registry(tmp_path / "a"))
    assert sorted(deployment.adapter_names()) == ["pirate", "xc2-partial"]
    assert deployment.check_adapter("pirate") == "pirate"
