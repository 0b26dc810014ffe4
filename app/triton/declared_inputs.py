"""Inputs of a Triton model with max_batch_size 0 (the `llmapi` model, the runner topology): 1-D tensors of
the inputs its config declares, each with exactly its declared dims (no batch dimension)."""

from __future__ import annotations

import numpy as np
import tritonclient.grpc as grpcclient

from app.triton.client import NUMPY_TYPES, ModelInfo, _utf8


def tensor(name: str, value: object, data_type: str) -> grpcclient.InferInput:
    """One input with the declared data type as a 1-D tensor (a list for dims [-1], one value otherwise)."""
    items = list(value) if isinstance(value, list | tuple) else [value]
    dtype = NUMPY_TYPES[data_type]
    if dtype is np.object_:
        array = np.array([_utf8(name, v) if isinstance(v, str) else v for v in items], dtype=np.object_)
    else:
        array = np.array(items, dtype=dtype)
    wire = data_type.removeprefix("TYPE_").replace("STRING", "BYTES")
    result = grpcclient.InferInput(name, list(array.shape), wire)
    result.set_data_from_numpy(array)
    return result


def build_inputs(info: ModelInfo, values: dict[str, object]) -> list:
    """Tensors for the values whose names the model declares (others are left out, None means "not sent")."""
    return [tensor(name, value, info.inputs[name][0]) for name, value in values.items()
            if value is not None and name in info.inputs]
