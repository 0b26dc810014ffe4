"""The written repository, model by model, tensor by tensor and parameter by parameter, against the
backend's own configs at each release tag (tests/data/upstream/<tag>/, made by scripts/upstream_facts.py).

Every difference must be declared, with its reason, in tests/data/upstream/differences.yaml; a
difference that appears or disappears fails the test. The multimodal layout is compared with the
tag's inflight_batcher_llm models overridden by its multimodal ones, which is how upstream builds it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from setup.repo.releases import release_tensor_sets
from setup.repo.writer import DeploymentConfig, load_template, parameter_specs, render_model

UPSTREAM = Path(__file__).parents[3] / "data" / "upstream"
DIFFERENCES = UPSTREAM / "differences.yaml"
PARAMETER_KEY = re.compile(r'parameters:\s*\{\s*key:\s*"(\w+)"')
# (release written, tag its facts come from, layout)
CHECKS = [("0.11", "v0.11.0", "inflight_batcher_llm"), ("0.12", "v0.12.0", "inflight_batcher_llm"),
          ("0.15", "v0.15.0", "inflight_batcher_llm"), ("0.15", "v0.15.0", "multimodal"),
          ("0.18", "v0.18.2", "inflight_batcher_llm"), ("0.18", "v0.18.2", "multimodal"),
          ("0.19", "v0.19.0", "inflight_batcher_llm"), ("0.19", "v0.19.0", "multimodal"),
          ("1.2", "trtllm-0c8de69a", "inflight_batcher_llm")]


def upstream_models(tag: str, layout: str) -> dict[str, dict]:
    models = {}
    for name in ("inflight_batcher_llm", layout):
        path = UPSTREAM / tag / f"{name}.yaml"
        if path.is_file():
            facts = yaml.safe_load(path.read_text())
            assert facts["tag"] == tag
            for model, spec in facts["models"].items():
                assert spec["path"] == f"{'triton_backend/' if tag.startswith('trtllm-') else ''}all_models/{name}/{model}/config.pbtxt"
                models[model] = spec
    return models


def written(model: str, version: str, layout: str) -> tuple[pb.ModelConfig, set[str]]:
    """The config we write for `model`, and every parameter key it can hold (optional ones included)."""
    template = load_template(layout)
    config = DeploymentConfig(template=layout, trtllm_version=version,
                              parameters={"engine_dir": "/e", "tokenizer_dir": "/t", "multimodal_model_path": "/v"})
    parsed = text_format.Parse(render_model(model, config, parameter_specs(), template), pb.ModelConfig())
    keys = set(parsed.parameters) | set(PARAMETER_KEY.findall(template.config_path(model).read_text()))
    return parsed, keys


def _tensor_differences(kind: str, theirs: list[dict], mine, out: dict) -> None:
    by_name = {t["name"]: t for t in theirs}
    ours = {t.name: t for t in mine}
    for key, names in ((f"missing_{kind}", set(by_name) - set(ours)), (f"extra_{kind}", set(ours) - set(by_name))):
        if names:
            out[key] = sorted(names)
    for name in sorted(set(by_name) & set(ours)):
        fact, tensor, changed = by_name[name], ours[name], {}
        data_type = pb.DataType.Name(tensor.data_type)
        if not fact["data_type"].startswith("${") and fact["data_type"] != data_type:
            changed["data_type"] = [fact["data_type"], data_type]
        if fact["dims"] != list(tensor.dims):
            changed["dims"] = [fact["dims"], list(tensor.dims)]
        if kind == "inputs" and fact["optional"] != tensor.optional:
            changed["optional"] = [fact["optional"], tensor.optional]
        if changed:
            out.setdefault(f"changed_{kind}", {})[name] = changed


def differences(version: str, tag: str, layout: str) -> dict[str, dict]:
    """{model: {missing_inputs|extra_inputs|changed_inputs|...|missing_parameters|extra_parameters: ...}}."""
    found = {}
    for model, facts in upstream_models(tag, layout).items():
        config, keys = written(model, version, layout)
        out: dict = {}
        _tensor_differences("inputs", facts["inputs"], config.input, out)
        _tensor_differences("outputs", facts["outputs"], config.output, out)
        if set(facts["parameters"]) - keys:
            out["missing_parameters"] = sorted(set(facts["parameters"]) - keys)
        if keys - set(facts["parameters"]):
            out["extra_parameters"] = sorted(keys - set(facts["parameters"]))
        if out:
            found[model] = out
    return found


def declared(tag: str, layout: str) -> dict[str, dict]:
    """The declared differences with their reasons stripped to names ({model: {kind: sorted names}})."""
    data = yaml.safe_load(DIFFERENCES.read_text())
    reasons = data["reasons"]
    out = {}
    for model, kinds in (data["releases"][tag][layout] or {}).items():
        out[model] = {}
        for kind, entries in kinds.items():
            for name, entry in entries.items():
                reason = entry["reason"] if isinstance(entry, dict) else entry
                assert reason in reasons, f"{tag} {layout} {model} {kind} {name}: unknown reason '{reason}'"
            if kind.startswith("changed_"):
                out[model][kind] = {name: {k: v for k, v in entry.items() if k != "reason"}
                                    for name, entry in entries.items()}
            else:
                out[model][kind] = sorted(entries)
    return out


@pytest.mark.parametrize("version,tag,layout", CHECKS)
def test_written_repository_matches_the_release_but_for_declared_differences(version, tag, layout):
    assert differences(version, tag, layout) == declared(tag, layout)


def test_each_release_era_is_checked_against_its_own_facts():
    """The tag each era's tensor edits were checked against is one of the tags compared here."""
    checked = {tag for _, tag, _ in CHECKS}
    assert {edits["checked_against"] for edits in release_tensor_sets().values()} <= checked


def test_kv_cache_stats_reach_the_0_16_to_0_18_engine_under_its_name():
    """v0.16.0-v0.18.2 tensorrt_llm reads return_kv_cache_reuse_stats; clients keep sending return_perf_metrics."""
    import json

    for tag in ("v0.16.0", "v0.17.0", "v0.18.2"):
        names = {t["name"] for t in upstream_models(tag, "inflight_batcher_llm")["tensorrt_llm"]["inputs"]}
        assert "return_kv_cache_reuse_stats" in names and "return_perf_metrics" not in names
    ensemble, _ = written("ensemble", "0.17", "inflight_batcher_llm")
    step = next(s for s in ensemble.ensemble_scheduling.step if s.model_name == "tensorrt_llm")
    assert step.input_map["return_kv_cache_reuse_stats"] == "return_perf_metrics"
    bls, _ = written("tensorrt_llm_bls", "0.17", "inflight_batcher_llm")
    assert json.loads(bls.parameters["engine_input_names"].string_value) == {
        "return_perf_metrics": "return_kv_cache_reuse_stats"}


def test_input_ids_is_required_up_to_v0_14_only():
    """The fact behind the declared input_ids_optional difference of the 0.12 era."""
    for tag, optional in (("v0.12.0", False), ("v0.13.0", False), ("v0.14.0", False), ("v0.15.0", True)):
        inputs = upstream_models(tag, "inflight_batcher_llm")["tensorrt_llm"]["inputs"]
        assert next(t for t in inputs if t["name"] == "input_ids")["optional"] is optional, tag
    config, _ = written("tensorrt_llm", "0.13", "inflight_batcher_llm")
    assert next(t for t in config.input if t.name == "input_ids").optional
