"""The Triton kinds' adapter probe: the log-probabilities in a response (engine topology: output_log_probs per new
token; llmapi: cumulative_logprob), a probe that asks for them only where the served model declares the input,
and a probe that carries them (or none, when the server returned none, placeholders, or not-a-number).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from tritonclient.grpc import service_pb2
from tritonclient.grpc._infer_result import InferResult

from app.adapters.registry import AdapterRegistry
from app.deployments.llmapi.stream import cumulative_logprob
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.deployments.triton_served import probe_of
from app.triton.client import ModelInfo, output_logprobs
from tests.lora_helpers import TINY, write_peft


def response(**outputs: np.ndarray) -> InferResult:
    """A real gRPC inference response holding `outputs` as raw FP32 tensors."""
    reply = service_pb2.ModelInferResponse(model_name="m", id="1")
    for name, array in outputs.items():
        tensor = reply.outputs.add()
        tensor.name, tensor.datatype = name, "FP32"
        tensor.shape.extend(array.shape)
        reply.raw_output_contents.append(np.ascontiguousarray(array, dtype=np.float32).tobytes())
    return InferResult(reply)


def test_the_engines_response_gives_each_new_tokens_log_probability():
    result = response(output_log_probs=np.array([[[-0.25, -1.5]]]), cum_log_probs=np.array([[-9.0]]))
    assert output_logprobs(result) == [-0.25, -1.5]
    assert output_logprobs(response(cum_log_probs=np.array([[-9.0]]))) == []


def test_the_llmapi_response_gives_the_running_sum():
    assert cumulative_logprob(response(cumulative_logprob=np.array([-3.5]))) == [-3.5]
    assert cumulative_logprob(response(output_log_probs=np.array([[[-0.25]]]))) == []


def test_a_probe_keeps_finite_log_probabilities_only():
    probe = probe_of(" Paris is\n", [-0.25, -1.5])
    assert probe.tokens == ("Paris is",) and probe.text == "Paris is" and probe.chosen_logprobs == (-0.25, -1.5)
    assert probe_of("Paris", []).chosen_logprobs is None
    assert probe_of("Paris", [-0.25, math.nan]).chosen_logprobs is None
    assert probe_of("Paris", [-math.inf]).chosen_logprobs is None
    assert probe_of("Paris", [0.0, 0.0]).chosen_logprobs is None  # placeholders, not log-probabilities
    assert probe_of("Paris", [0.0, -0.5]).chosen_logprobs == (0.0, -0.5)


class TraceStream:
    """A finished greedy reply whose responses carried `trace`."""

    def __init__(self, trace):
        self.text, self.cancelled, self.chunks, self.responses = "", False, 0, 0
        self.logprob_trace, self._parts = list(trace), iter(("The capital", " of France"))

    def __iter__(self):
        return self

    def __next__(self):
        self.text += next(self._parts)
        return self.text

    def cancel(self):
        self.cancelled = True


class EngineClient:
    """What the engine deployment asks of TritonChatClient; records each request's extra inputs."""

    url, model, stall_timeout = "127.0.0.1:1", "tensorrt_llm_bls", 30.0

    def __init__(self, declares_logprobs: bool, trace=(-0.1, -0.7)):
        inputs = {"text_input": ("TYPE_STRING", (1,)), "max_tokens": ("TYPE_INT32", (1,)),
                  "lora_task_id": ("TYPE_UINT64", (1,))}
        if declares_logprobs:
            inputs["return_log_probs"] = ("TYPE_BOOL", (1,))
        self.info = ModelInfo(name=self.model, inputs=inputs, decoupled=True, accumulated_text=False)
        self.trace, self.sent = trace, []

    def model_info(self, refresh=False):
        return self.info

    def model_config(self, name):
        return {}

    def stream(self, prompt, params, extra):
        self.sent.append(dict(extra))
        return TraceStream(self.trace)


@pytest.fixture
def registry(tmp_path):
    write_peft(tmp_path / "pirate", shape=TINY, seed=2)
    return AdapterRegistry(tmp_path)


def test_the_engine_probe_asks_for_log_probabilities_and_returns_them(registry):
    client = EngineClient(declares_logprobs=True)
    probe = TritonEngineDeployment(client, registry).probe("pirate", "What is the capital of France?", 4)
    assert client.sent[0]["return_log_probs"] is True and client.sent[0]["lora_task_id"] == registry.task_id("pirate")
    assert probe.text == "The capital of France" and probe.chosen_logprobs == (-0.1, -0.7)


def test_a_model_that_cannot_be_asked_gives_a_text_only_probe(registry):
    client = EngineClient(declares_logprobs=False)
    probe = TritonEngineDeployment(client, registry).probe(None, "What is the capital of France?", 4)
    assert client.sent[0].get("return_log_probs") is None and probe.chosen_logprobs is None  # not trusted
    assert probe.text == "The capital of France"
