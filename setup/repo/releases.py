"""The chosen release's tensor names in a written repository (setup/data/release_tensors.yaml).

Our templates follow backend v0.19.0. For another release the writer renames, adds or re-flags tensorrt_llm
inputs and outputs, renames the ensemble's mappings onto them, and tells the BLS model the names to send.
"""

from __future__ import annotations

import json
from functools import cache

import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from setup.catalog.builds import resolve_version
from setup.paths import DATA_DIR

RELEASE_TENSORS_FILE = DATA_DIR / "release_tensors.yaml"
ENGINE_MODEL = "tensorrt_llm"
BLS_NAMES_PARAMETER = "engine_input_names"  # JSON {template name: release name}, read by the BLS model


@cache
def release_tensor_sets() -> dict[str, dict]:
    return yaml.safe_load(RELEASE_TENSORS_FILE.read_text())


def release_edits(version: str | None) -> dict:
    """The edits for a TensorRT-LLM version ({} for none or for the templates' own release)."""
    if not version:
        return {}
    key = resolve_version(version).era.tensors
    return dict(release_tensor_sets().get(key) or {})


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


def apply_release(model: str, text: str, edits: dict) -> str:
    """Config text of `model` with the release's edits applied (the text unchanged when none apply)."""
    renames = edits.get("rename_inputs") or {}
    touches_engine = any(edits.get(k) for k in ("rename_inputs", "add_inputs", "add_outputs", "set_optional"))
    if not touches_engine or model not in (ENGINE_MODEL, "ensemble", "tensorrt_llm_bls"):
        return text
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    if model == ENGINE_MODEL:
        _edit_engine(config, edits)
    elif model == "ensemble":
        _edit_ensemble(config, edits)
    elif renames:
        config.parameters[BLS_NAMES_PARAMETER].string_value = json.dumps(renames, sort_keys=True)
    return text_format.MessageToString(config)
