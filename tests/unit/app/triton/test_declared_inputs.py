"""Requests to the llmapi model: exactly the declared inputs, shaped by the served dims (no batch dimension)."""

from __future__ import annotations

from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2

from app.triton.client import ModelInfo
from app.triton.declared_inputs import build_inputs
from setup.repo.llmapi import LlmApiRepoConfig, render_config


def served(version: str) -> ModelInfo:
    """ModelInfo of the config we write for `version`, in the JSON form Triton serves it."""
    from google.protobuf import text_format

    config = text_format.Parse(render_config(LlmApiRepoConfig(model="/m", trtllm_version=version)),
                               model_config_pb2.ModelConfig())
    return ModelInfo.from_config(json_format.MessageToDict(config, preserving_proto_field_name=True))


VALUES = {"text_input": "hi", "streaming": True, "sampling_param_max_tokens": 8, "sampling_param_seed": 3,
          "sampling_param_stop": ["END", "STOP"], "image_url": ["data:image/png;base64,AAAA"] * 2,
          "lora_id": 2**60, "lora_name": "pirate", "lora_path": "/a/pirate", "sampling_param_top_k": None}


def test_inputs_are_the_declared_ones_with_their_dims_and_types():
    tensors = {t.name(): t for t in build_inputs(served("1.3"), VALUES)}
    assert set(tensors) == set(VALUES) - {"sampling_param_top_k"}  # None is "not sent"
    assert tensors["text_input"].shape() == [1] and tensors["text_input"].datatype() == "BYTES"
    assert tensors["sampling_param_stop"].shape() == [2] and tensors["image_url"].shape() == [2]
    assert tensors["lora_id"].datatype() == "UINT64" and tensors["sampling_param_seed"].datatype() == "UINT64"
    assert tensors["streaming"].datatype() == "BOOL" and tensors["sampling_param_max_tokens"].datatype() == "INT32"


def test_an_older_release_gets_only_what_it_declares():
    names = {t.name() for t in build_inputs(served("0.19"), VALUES)}
    assert names == {"text_input", "streaming", "sampling_param_max_tokens", "sampling_param_seed",
                     "sampling_param_stop"}
