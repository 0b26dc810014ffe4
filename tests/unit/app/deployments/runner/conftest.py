"""The runner kind against the served config the repository writer uses (model_repo_templates/multimodal_runner's
config.pbtxt with its parameters filled in), a client that answers with that config, and the streams it opens
recorded instead of dialled (no server in unit tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import deserialize_bytes_tensor

from app.triton.client import ModelInfo

TEMPLATE = Path(__file__).resolve().parents[5] / "model_repo_templates/multimodal_runner/multimodal_runner/config.pbtxt"
PARAMETERS = {"decoupled_mode": "true", "multimodal_family": "neva", "max_num_images": "1",
              "takes_video": "false", "takes_lora": "false", "hf_model_dir": "", "runner_class": "x:Y",
              "visual_engine_dir": "/v", "llm_engine_dir": "/l", "runner_settings": "", "runner_max_tokens": "1024",
              "runner_default_max_tokens": "128", "lora_adapters": ""}


def served_info(drop_inputs: tuple[str, ...] = (), **parameters: str) -> ModelInfo:
    """ModelInfo of the template's config with `parameters` filled in (others as PARAMETERS), less `drop_inputs`."""
    text = TEMPLATE.read_text()
    for name, value in {**PARAMETERS, **parameters}.items():
        text = text.replace("${" + name + "}", value)
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    kept = [i for i in config.input if i.name not in drop_inputs]
    del config.input[:]
    config.input.extend(kept)
    return ModelInfo.from_config(json_format.MessageToDict(config, preserving_proto_field_name=True))


class ServedClient:
    """TritonChatClient's surface the runner kind uses: url, model, stall_timeout, model_info()."""

    def __init__(self, info: ModelInfo, url: str = "127.0.0.1:1"):
        self.info, self.url, self.model, self.stall_timeout = info, url, info.name, 60.0

    def model_info(self) -> ModelInfo:
        return self.info


def sent_values(inputs: list) -> dict[str, list]:
    """{input name: its values} of grpc InferInputs (strings and bytes decoded from Triton's BYTES layout)."""
    from app.triton.client import NUMPY_TYPES

    values = {}
    for item in inputs:
        raw = item._get_content()
        if item.datatype() == "BYTES":
            values[item.name()] = [v for v in deserialize_bytes_tensor(raw)]
        else:
            dtype = NUMPY_TYPES["TYPE_" + item.datatype()]
            values[item.name()] = np.frombuffer(raw, dtype=dtype).tolist()
    return values


class OpenedStream:
    """Stands where RunnerStream dials the server: records what it was opened with."""

    opened: list = []

    def __init__(self, url, info, inputs, stall_timeout, notes=(), family=""):
        self.url, self.info, self.inputs, self.stall_timeout, self.notes = url, info, inputs, stall_timeout, notes
        self.family = family
        OpenedStream.opened.append(self)


@pytest.fixture
def opened(monkeypatch):
    """The streams open_reply opened (their inputs), newest last."""
    import app.deployments.runner.deployment as module

    OpenedStream.opened = []
    monkeypatch.setattr(module, "RunnerStream", OpenedStream)
    return OpenedStream.opened
