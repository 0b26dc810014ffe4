"""The chosen release's tensor names in a written repository (setup/data/release_tensors.yaml).

Our templates follow backend v0.19.0. For another release the writer renames, adds or re-flags tensorrt_llm
inputs and outputs, renames the ensemble's mappings onto them, and tells the BLS model the names to send.

The ensemble keeps only the outputs the release's engine produces (`engine_outputs`, per release): Triton's
ensemble scheduler answers once every output a request asks for has data, and a client that names no outputs asks
for all of them, so one output the engine never makes (sequence_index, kv_cache_*, *_time_ns, the draft counts
before the releases that added them) leaves a decoupled ensemble without its text and a non-decoupled one stopped
with "unexpected deadlock". A step input fed only by a dropped output loses its mapping (those inputs are
optional: postprocessing's BATCH_INDEX, SEQUENCE_INDEX), and postprocessing's echo of it (OUT_<NAME>, which it
returns only when it gets <NAME>) goes too.
"""

from __future__ import annotations

import json
from functools import cache

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from setup.catalog.builds import resolve_version, version_key
from setup.paths import DATA_DIR
from setup.shipped import shipped_yaml

RELEASE_TENSORS_FILE = DATA_DIR / "release_tensors.yaml"
ENGINE_MODEL = "tensorrt_llm"
ECHO_PREFIX = "OUT_"  # postprocessing returns OUT_<NAME> for each optional <NAME> it receives (its PASSTHROUGH)
BLS_NAMES_PARAMETER = "engine_input_names"  # JSON {template name: release name}, read by the BLS model


@cache
def release_tensor_sets() -> dict[str, dict]:
    return shipped_yaml(RELEASE_TENSORS_FILE.name)


def release_edits(version: str | None) -> dict:
    """The edits for a TensorRT-LLM version ({} for none or for the templates' own release)."""
    if not version:
        return {}
    resolved = resolve_version(version)
    edits = dict(release_tensor_sets().get(resolved.era.tensors) or {})
    produced = engine_outputs(edits, resolved.text)
    if produced is not None:
        edits["produced_outputs"] = produced
    return edits


def engine_outputs(edits: dict, version: str) -> list[str] | None:
    """The outputs the release's tensorrt_llm produces: its `engine_outputs` entry, the newest not above `version`
    (None when the era records none: then every output the templates declare is kept)."""
    recorded = edits.get("engine_outputs") or {}
    chosen = [k for k in recorded if version_key(k) <= version_key(version)]
    if not chosen:
        return None
    return list(recorded[max(chosen, key=version_key)]["names"])


def _tensor(kind, spec: dict):
    tensor = kind(name=spec["name"], data_type=model_config_pb2.DataType.Value(spec["data_type"]),
                  dims=spec["dims"])
    if "reshape" in spec:
        tensor.reshape.shape.extend(spec["reshape"])
    if spec.get("optional"):
        tensor.optional = True
    return tensor


def _edit_engine(config: model_config_pb2.ModelConfig, edits: dict) -> None:
    renames = edits.get("rename_inputs") or {}
    optional = edits.get("set_optional") or {}
    for tensor in config.input:
        if tensor.name in optional:
            tensor.optional = bool(optional[tensor.name])
        tensor.name = renames.get(tensor.name, tensor.name)
    config.input.extend(_tensor(model_config_pb2.ModelInput, s) for s in edits.get("add_inputs") or ())
    config.output.extend(_tensor(model_config_pb2.ModelOutput, s) for s in edits.get("add_outputs") or ())


def _edit_ensemble(config: model_config_pb2.ModelConfig, edits: dict) -> None:
    renames = edits.get("rename_inputs") or {}
    for step in config.ensemble_scheduling.step:
        if step.model_name != ENGINE_MODEL:
            continue
        for old, new in renames.items():
            if old in step.input_map:
                step.input_map[new] = step.input_map.pop(old)
    if edits.get("produced_outputs") is not None:
        _keep_produced_outputs(config, set(edits["produced_outputs"]) | {
            s["name"] for s in edits.get("add_outputs") or ()})


def _keep_produced_outputs(config: model_config_pb2.ModelConfig, produced: set[str]) -> None:
    """Drop the ensemble tensors the release's engine never makes, and everything fed only by them."""
    missing: set[str] = set()
    for step in config.ensemble_scheduling.step:
        if step.model_name == ENGINE_MODEL:
            for key in [k for k in step.output_map if k not in produced]:
                missing.add(step.output_map.pop(key))
    changed = bool(missing)
    while changed:
        changed = False
        for step in config.ensemble_scheduling.step:
            for key in [k for k, tensor in step.input_map.items() if tensor in missing]:
                del step.input_map[key]
                echo = ECHO_PREFIX + key
                if echo in step.output_map:
                    missing.add(step.output_map.pop(echo))
                    changed = True
    kept = [tensor for tensor in config.output if tensor.name not in missing]
    del config.output[:]
    config.output.extend(kept)


def apply_release(model: str, text: str, edits: dict) -> str:
    """Config text of `model` with the release's edits applied (the text unchanged when none apply)."""
    renames = edits.get("rename_inputs") or {}
    touches_engine = any(edits.get(k) for k in ("rename_inputs", "add_inputs", "add_outputs", "set_optional"))
    touches_ensemble = touches_engine or edits.get("produced_outputs") is not None
    if not (touches_ensemble if model == "ensemble" else touches_engine) \
            or model not in (ENGINE_MODEL, "ensemble", "tensorrt_llm_bls"):
        return text
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    if model == ENGINE_MODEL:
        _edit_engine(config, edits)
    elif model == "ensemble":
        _edit_ensemble(config, edits)
    elif renames:
        config.parameters[BLS_NAMES_PARAMETER].string_value = json.dumps(renames, sort_keys=True)
    return text_format.MessageToString(config)
