"""What the tensorrt_llm_bls template asks tensorrt_llm for, against the tensorrt_llm model the writer renders for each
release (whose outputs tests/unit/setup/repo/test_release_contract.py checks against the release's own config): Triton
refuses a request for an output the model does not declare, so every name the BLS may ask for must be declared at
every release, including outputs that release's engine never produces (the BLS reads those only when present)."""

from __future__ import annotations

import types

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from setup.repo.writer import DeploymentConfig, load_template, parameter_specs, render_model
from tests.template_models import load_template_model
from tests.unit.setup.repo.test_release_contract import RELEASES

BLS = "inflight_batcher_llm/tensorrt_llm_bls/1/model.py"


@pytest.fixture(scope="module")
def bls():
    return load_template_model(BLS, types.ModuleType("triton_python_backend_utils"), name="bls_under_test")


class ClientRequest:
    """A client's request to the BLS that names `outputs` (None: names none, which means all of them)."""

    def __init__(self, outputs: list[str] | None):
        self._outputs = outputs

    def requested_output_names(self):
        return self._outputs


def engine_outputs(version: str) -> set[str]:
    config = DeploymentConfig(template="inflight_batcher_llm", trtllm_version=version,
                              parameters={"engine_dir": "/e", "tokenizer_dir": "/t"})
    text = render_model("tensorrt_llm", config, parameter_specs(), load_template("inflight_batcher_llm"))
    return {output.name for output in text_format.Parse(text, pb.ModelConfig()).output}


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_everything_the_bls_asks_the_engine_for_is_declared_at_each_release(bls, version):
    declared = engine_outputs(version)
    for client_asks in (None, ["text_output"], ["text_output", "output_log_probs", "kv_cache_reused_blocks"]):
        asked = {"output_ids", "sequence_length", *bls._passthrough_wanted(ClientRequest(client_asks))}
        assert asked <= declared, (version, client_asks, sorted(asked - declared))


def test_the_bls_asks_only_for_what_it_reads_and_its_client_named(bls):
    assert bls._passthrough_wanted(ClientRequest(["text_output"])) == ["sequence_index"]
    named = bls._passthrough_wanted(ClientRequest(["text_output", "cum_log_probs", "sequence_index"]))
    assert named == ["sequence_index", "cum_log_probs"]
    assert set(bls._passthrough_wanted(ClientRequest(None))) == set(bls.PASSTHROUGH)  # a client naming none: all
