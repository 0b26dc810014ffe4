"""The written tensorrt_llm model, tensor by tensor, against the backend's own config at each release.

Facts: tests/data/upstream/<tag>/inflight_batcher_llm.yaml (made by scripts/upstream_facts.py from the tag).
Differences must be exactly those setup/data/release_tensors.yaml declares as ignored by that release.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from setup.repo.releases import release_tensor_sets
from setup.repo.writer import DeploymentConfig, dry_run, load_template, parameter_specs, render_model

UPSTREAM = Path(__file__).parents[3] / "data" / "upstream"
RELEASES = {"0.11": "release_0_11", "0.15": "release_0_12", "0.18": "release_0_16", "0.19": "release_0_19",
            "1.2": "release_0_20"}


def written(model: str, version: str, template: str = "inflight_batcher_llm") -> pb.ModelConfig:
    config = DeploymentConfig(template=template, trtllm_version=version,
                              parameters={"engine_dir": "/e", "tokenizer_dir": "/t", "multimodal_model_path": "/v"})
    text = render_model(model, config, parameter_specs(), load_template(template))
    return text_format.Parse(text, pb.ModelConfig())


def upstream(tag: str) -> dict:
    facts = yaml.safe_load((UPSTREAM / tag / "inflight_batcher_llm.yaml").read_text())
    assert facts["tag"] == tag and facts["models"]["tensorrt_llm"]["path"].endswith("tensorrt_llm/config.pbtxt")
    return facts["models"]["tensorrt_llm"]


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_engine_tensors_match_the_release(version):
    edits = release_tensor_sets()[RELEASES[version]]
    facts = upstream(edits["checked_against"])
    ours = written("tensorrt_llm", version)
    for kind, theirs, mine in (("inputs", facts["inputs"], ours.input), ("outputs", facts["outputs"], ours.output)):
        theirs = {t["name"]: t for t in theirs}
        mine = {t.name: t for t in mine}
        assert set(theirs) - set(mine) == set(), f"{kind} the release has and we do not write"
        assert set(mine) - set(theirs) == set(edits.get(f"ignored_{kind}") or ()), kind
        for name in set(theirs) & set(mine):
            if not theirs[name]["data_type"].startswith("${"):
                assert pb.DataType.Name(mine[name].data_type) == theirs[name]["data_type"], name
            assert list(mine[name].dims) == theirs[name]["dims"], name
            if kind == "inputs":
                assert mine[name].optional == theirs[name]["optional"], name


def test_release_names_reach_ensemble_and_bls():
    step = next(s for s in written("ensemble", "1.2").ensemble_scheduling.step if s.model_name == "tensorrt_llm")
    assert "seed" in step.input_map and "min_tokens" in step.input_map and "random_seed" not in step.input_map
    bls = written("tensorrt_llm_bls", "1.2")
    assert json.loads(bls.parameters["engine_input_names"].string_value) == {"random_seed": "seed",
                                                                             "min_length": "min_tokens"}
    old = next(s for s in written("ensemble", "0.19").ensemble_scheduling.step if s.model_name == "tensorrt_llm")
    assert "random_seed" in old.input_map


@pytest.mark.parametrize("version", ["0.11", "0.15", "0.19", "1.0", "1.2"])
@pytest.mark.parametrize("template", ["inflight_batcher_llm", "multimodal"])
def test_every_release_dry_runs(version, template):
    dry_run(DeploymentConfig(template=template, trtllm_version=version,
                             parameters={"engine_dir": "/e", "tokenizer_dir": "/t", "multimodal_model_path": "/v"}))
