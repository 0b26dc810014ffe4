"""The llmapi kind as a configuration names it: the served model, the server's adapters folder, ids by content."""

from __future__ import annotations

from app.adapters.registry import AdapterRegistry
from app.context import AppConfig
from app.deployments.connect import connect
from app.deployments.llmapi.deployment import LlmApiDeployment
from tests.lora_helpers import DEMO_ADAPTERS, SMOL, write_model_config


def test_connect_picks_the_llmapi_kind_and_the_servers_adapters_folder(tmp_path):
    config = AppConfig(deployment="llmapi", model="tensorrt_llm", server_adapters_dir=str(tmp_path))
    deployment = connect(config, AdapterRegistry(DEMO_ADAPTERS))
    assert isinstance(deployment, LlmApiDeployment) and deployment.model == "tensorrt_llm"
    assert deployment.server_folder() == tmp_path.resolve()
    assert {a.path for a in deployment.adapters()} >= {tmp_path.resolve() / "pirate"}
    ids = {a.name: a.task_id for a in deployment.adapters()}
    assert ids["pirate"] != ids["french"] and ids["pirate"] == deployment.lora_id("pirate")  # from the content


def test_the_audit_checks_adapters_against_the_model_folders_shapes(tmp_path):
    registry = AdapterRegistry(DEMO_ADAPTERS)
    served = LlmApiDeployment(client=None, registry=registry,
                              tokenizer_dir=str(write_model_config(tmp_path / "smollm2-135m-instruct")))
    pirate = served.adapter_audit("pirate")
    assert not pirate.refused and pirate.applied_percent == 100 and pirate.served_model == "smollm2-135m-instruct"
    wider = {**SMOL, "hidden": 1024}
    other = LlmApiDeployment(client=None, registry=registry, tokenizer_dir=str(write_model_config(tmp_path / "wide",
                                                                                                   wider)))
    assert other.adapter_audit("pirate").refused  # made for a 576-wide model
    unknown = LlmApiDeployment(client=None, registry=registry, tokenizer_dir=str(tmp_path / "missing"))
    assert not unknown.adapter_audit("pirate").refused and unknown.lora_target().num_layers is None
