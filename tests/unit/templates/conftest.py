"""What the template models' tests share: a stand-in for triton_python_backend_utils (the one part that cannot be
real outside tritonserver), the runner model started over stand-in engine folders, and a request's responses."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from tests.template_models import StandInTensor, load_template_model

MODEL = "multimodal_runner/multimodal_runner/1/model.py"


# ---- a stand-in for triton_python_backend_utils ---------------------------------------------------------------
class _Response:
    def __init__(self, output_tensors=(), error=None):
        self.tensors, self.error = {t.name: t.value.reshape(-1)[0] for t in output_tensors}, error


class _Sender:
    def __init__(self):
        self.sent = []

    def send(self, response=None, flags=0):
        self.sent.append((response, flags))


class _Request:
    """A request with `inputs`; with `cancel_after`, the client goes away once that many responses were sent."""

    def __init__(self, inputs, cancel_after: int | None = None):
        self.inputs, self.sender, self.cancel_after = inputs, _Sender(), cancel_after

    def get_response_sender(self):
        return self.sender

    def is_cancelled(self):
        return self.cancel_after is not None and len(self.sender.sent) >= self.cancel_after


def _pb_utils():
    stub = types.ModuleType("triton_python_backend_utils")
    stub.Tensor = StandInTensor
    stub.TritonError = lambda text: text
    stub.InferenceResponse = _Response
    stub.TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
    stub.get_input_tensor_by_name = lambda request, name: (
        StandInTensor(name, request.inputs[name]) if name in request.inputs else None)
    stub.using_decoupled_model_transaction_policy = lambda config: True
    stub.Logger = types.SimpleNamespace(log_info=lambda text: None, log_error=lambda text: None)
    return stub


@pytest.fixture
def folders(tmp_path):
    for name in ("visual", "llm", "hf"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    return tmp_path


def start_model(folders, runner, **parameters):
    module = types.ModuleType("fake_tensorrt_llm_runtime")
    module.MultimodalModelRunner = runner
    sys.modules[module.__name__] = module
    values = {"runner_class": f"{module.__name__}:MultimodalModelRunner",
              "visual_engine_dir": str(folders / "visual"), "llm_engine_dir": str(folders / "llm"),
              "hf_model_dir": str(folders / "hf"), "max_num_images": "1", **parameters}
    config = {"parameters": {k: {"string_value": v} for k, v in values.items()}}
    model = load_template_model(MODEL, _pb_utils(), name="runner_model_under_test").TritonPythonModel()
    model.initialize({"model_config": json.dumps(config)})
    return model


def ask_all(model, cancel_after: int | None = None, **inputs) -> list:
    """Every (response, flags) the model sent for one request with `inputs` (the client going away after
    `cancel_after` responses); the model is finalized after it."""
    request = _Request({k: np.array(v if isinstance(v, list) else [v], dtype=object if isinstance(
        v, str | bytes) or (isinstance(v, list) and isinstance(v[0], str | bytes)) else None) for k, v in inputs.items()},
        cancel_after)
    model.execute([request])
    model.finalize()  # the worker answers the queued request before it stops
    return request.sender.sent
