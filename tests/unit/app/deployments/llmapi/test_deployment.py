"""The llmapi kind as a configuration names it: the served model, the server's adapters folder, ids by content."""

from __future__ import annotations

from app.adapters.registry import AdapterRegistry
from app.chat.context import AppConfig
from app.deployments.connect import connect
from app.deployments.llmapi.deployment import LlmApiDeployment
from tests.lora_helpers import DEMO_ADAPTERS


def test_connect_picks_the_llmapi_kind_and_the_servers_adapters_folder(tmp_path):
    config = AppConfig(deployment="llmapi", model="tensorrt_llm", server_adapters_dir=str(tmp_path))
    deployment = connect(config, AdapterRegistry(DEMO_ADAPTERS))
    assert isinstance(deployment, LlmApiDeployment) and deployment.model == "tensorrt_llm"
    assert deployment.server_folder() == tmp_path.resolve()
    assert {a.path for a in deployment.adapters()} >= {tmp_path.resolve() / "pirate"}
    ids = {a.name: a.task_id for a in deployment.adapters()}
    assert ids["pirate"] != ids["french"] and ids["pirate"] == deployment.lora_id("pirate")  # from the content
