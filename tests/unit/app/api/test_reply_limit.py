"""The app's default limit of replies streamed at once: the served model's batch, at least 256; --concurrency wins."""

from __future__ import annotations

from app.api.reply_limit import DEFAULT_REPLY_LIMIT, reply_limit, served_reply_limit
from app.core.errors import ServerUnreachable
from app.deployments.base import DeploymentDefaults
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.triton.client import ModelInfo


class Batching(DeploymentDefaults):
    def __init__(self, batch: int | None):
        self.batch, self.asked = batch, 0

    def batch_size(self) -> int | None:
        self.asked += 1
        return self.batch


def test_the_default_is_the_served_batch_at_least_256():
    assert DEFAULT_REPLY_LIMIT == 256
    assert served_reply_limit(512) == 512 and served_reply_limit(2048) == 2048
    assert served_reply_limit(64) == 256 and served_reply_limit(None) == 256  # a small batch: the server queues


def test_a_given_concurrency_wins_and_the_server_is_not_asked():
    deployment = Batching(1024)
    assert reply_limit(8, deployment) == 8 and deployment.asked == 0
    assert reply_limit(None, deployment) == 1024 and deployment.asked == 1
    assert reply_limit(None, DeploymentDefaults()) == 256  # a kind that does not say (an OpenAI-compatible server)


class ConfigClient:
    """The Triton client as the engine deployment asks it for model configs."""

    url, model, stall_timeout = "127.0.0.1:1", "tensorrt_llm_bls", 30.0

    def __init__(self, configs: dict, parameters: dict | None = None, down: bool = False):
        self.configs, self.down = configs, down
        self.info = ModelInfo(name=self.model, inputs={}, decoupled=True, accumulated_text=False,
                              parameters=parameters or {})

    def model_info(self, refresh=False):
        if self.down:
            raise ServerUnreachable("down")
        return self.info

    def model_config(self, name):
        if self.down:
            raise ServerUnreachable("down")
        return self.configs[name]


def test_the_engine_topology_reads_the_engine_models_max_batch_size(tmp_path):
    bls = ConfigClient({"tensorrt_llm": {"max_batch_size": 384}, "tensorrt_llm_bls": {"max_batch_size": 8}},
                       parameters={"tensorrt_llm_model_name": "tensorrt_llm"})
    assert TritonEngineDeployment(bls, None).batch_size() == 384
    own = ConfigClient({"tensorrt_llm_bls": {"max_batch_size": 300}})  # e.g. the pacing model: no engine named
    assert TritonEngineDeployment(own, None).batch_size() == 300
    unbatched = ConfigClient({"tensorrt_llm_bls": {}})  # max_batch_size 0 is left out of Triton's JSON
    assert TritonEngineDeployment(unbatched, None).batch_size() is None
    assert TritonEngineDeployment(ConfigClient({}, down=True), None).batch_size() is None
