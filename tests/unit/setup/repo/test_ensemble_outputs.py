"""Issue #47 item 11: an ensemble written for a release declares only outputs that release's engine produces, and the
app asks only for the outputs it reads.

Triton's ensemble scheduler answers once every output a request asks for has data (a request naming none asks for
all); backends up to 0.13 never produce sequence_index, kv_cache_*, *_time_ns or the draft counts, so an ensemble
declaring them, asked by a client for everything, ended with no text (decoupled) or "unexpected deadlock".
The release's outputs are read from setup/data/release_tensors.yaml `engine_outputs`, which must equal the tag's
tensorrt_llm config (tests/data/upstream/<tag>/inflight_batcher_llm.yaml, from scripts/upstream_facts.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as pb
from tritonclient.grpc import service_pb2

from app.core.sampling import SamplingParams
from app.triton import transport
from app.triton.client import ModelInfo, TritonChatClient
from setup.repo.releases import release_tensor_sets
from setup.repo.writer import (
    DeploymentConfig,
    family_deployment,
    load_template,
    parameter_specs,
    render_model,
)

UPSTREAM = Path(__file__).parents[3] / "data" / "upstream"
ENGINE = "tensorrt_llm"
# postprocessing's outputs and the inputs each one is made from (OUT_<NAME> echoes <NAME>)
TEXT_SOURCES = ("TOKENS_BATCH", "SEQUENCE_LENGTH")
# (family, release) as the issue names them: blip2-opt from 0.12, llava-1.5 from 0.13; vila (0.15) for the era's
# later lists (sequence_index from 0.14)
READ = ["text_output", "output_log_probs"]  # what the app's TokenStream reads (app/triton/client.py READ_OUTPUTS)
SERVED = [("blip2-opt", "0.12"), ("blip2-opt", "0.13"), ("llava-1.5", "0.13"), ("vila", "0.15")]


def recorded(release: str) -> set[str]:
    """The release's engine outputs as setup/data/release_tensors.yaml records them."""
    names = next((entry["engine_outputs"][release]["names"] for entry in release_tensor_sets().values()
                  if release in (entry.get("engine_outputs") or {})), None)
    assert names is not None, f"release_tensors.yaml records no engine outputs for {release}"
    return set(names)


def family_ensemble(family: str, release: str) -> pb.ModelConfig:
    template, parameters = family_deployment(family)
    parameters = {**parameters, "engine_dir": "/e", "tokenizer_dir": "/t", "multimodal_model_path": "/v"}
    config = DeploymentConfig(template=template, trtllm_version=release, parameters=parameters)
    text = render_model("ensemble", config, parameter_specs(), load_template(template))
    return text_format.Parse(text, pb.ModelConfig())


def made_from_engine(ensemble: pb.ModelConfig, produced: set[str]) -> dict[str, bool]:
    """Ensemble tensor -> whether the release's engine (or the request, or a non-engine step) makes it."""
    made = {t.name: True for t in ensemble.input}
    for step in ensemble.ensemble_scheduling.step:
        for key, tensor in step.output_map.items():
            if step.model_name == ENGINE:
                made[tensor] = key in produced
            elif step.model_name == "postprocessing":
                sources = TEXT_SOURCES if key == "OUTPUT" else (key.removeprefix("OUT_"),)
                made[tensor] = all(made.get(step.input_map.get(s, ""), False) for s in sources)
            else:
                made[tensor] = True
    return made


@pytest.mark.parametrize("release,tag", [(release, spec["tag"]) for entry in release_tensor_sets().values()
                                         for release, spec in (entry.get("engine_outputs") or {}).items()])
def test_recorded_engine_outputs_are_the_tags_tensorrt_llm_outputs(release, tag):
    facts = yaml.safe_load((UPSTREAM / tag / "inflight_batcher_llm.yaml").read_text())
    assert facts["tag"] == tag
    assert recorded(release) == {o["name"] for o in facts["models"][ENGINE]["outputs"]}


@pytest.mark.parametrize("family,release", SERVED)
def test_the_family_ensemble_declares_only_outputs_the_release_produces(family, release):
    produced = recorded(release)
    ensemble = family_ensemble(family, release)
    made = made_from_engine(ensemble, produced)
    engine_step = next(s for s in ensemble.ensemble_scheduling.step if s.model_name == ENGINE)
    assert set(engine_step.output_map) <= produced
    for step in ensemble.ensemble_scheduling.step:  # every step input is fed by something that exists
        for key, tensor in step.input_map.items():
            assert made.get(tensor), (step.model_name, key, tensor)
    declared = {o.name for o in ensemble.output}
    assert {name for name in declared if not made.get(name)} == set()
    assert "text_output" in declared and "output_log_probs" in declared
    if release in ("0.12", "0.13"):
        assert declared == {"text_output", "cum_log_probs", "output_log_probs", "context_logits", "generation_logits",
                            "batch_index"}


def test_the_templates_own_release_keeps_every_output():
    ensemble = family_ensemble("llava-1.5", "0.19")
    assert {"sequence_index", "kv_cache_reused_blocks", "total_draft_tokens"} <= {o.name for o in ensemble.output}


# ---- the app: it asks for the outputs it reads, by name ----------------------------------------------------------
class RecordingStub:
    """The gRPC stub the stream gets (app.triton.transport.stub_for): records the request it sends and answers it
    with one final, empty response."""

    def __init__(self):
        self.requests: list = []

    def ModelStreamInfer(self, request_iterator):  # noqa: N802 - the gRPC method name
        self.requests.append(next(request_iterator))
        response = service_pb2.ModelInferResponse(model_name="ensemble", id=self.requests[-1].id)
        response.parameters["triton_final_response"].bool_param = True
        return _Responses([service_pb2.ModelStreamInferResponse(infer_response=response)])


class _Responses:
    def __init__(self, items):
        self._items = iter(items)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._items)

    def cancel(self):
        pass


@pytest.fixture
def server(monkeypatch):
    stub = RecordingStub()
    monkeypatch.setattr(transport, "stub_for", lambda url: stub)
    return "127.0.0.1:1", stub


@pytest.mark.parametrize("family,release", SERVED)
def test_the_app_asks_the_family_ensemble_only_for_outputs_the_release_produces(server, family, release):
    url, servicer = server
    ensemble = family_ensemble(family, release)
    as_json = json_format.MessageToDict(ensemble, preserving_proto_field_name=True)
    as_json["model_transaction_policy"] = {"decoupled": True}  # as tritonserver reports a streaming ensemble
    client = TritonChatClient(url, model="ensemble")
    client._info["ensemble"] = ModelInfo.from_config(as_json)
    stream = client.stream("Question: what is this? Answer:", SamplingParams(max_tokens=4))
    assert list(stream) == []
    asked = [o.name for o in servicer.requests[0].outputs]
    made = made_from_engine(ensemble, recorded(release))
    assert asked == READ and all(made[name] for name in asked)
