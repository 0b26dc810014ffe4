"""A torch image model run by onnxruntime instead: exported once into a folder, checked against torch.

EfficientNet-Lite0 takes about a third of the CPU time in onnxruntime that it takes in eager torch on one
thread, with the same logits within 1e-5. The export (torch.onnx, which needs the `onnx` package of
requirements.txt) is written at first use beside the encoder's config.json and reused by every later
instance. Whenever the file cannot be written or read, `onnx` is missing, or its logits differ from
torch's by more than TOLERANCE, the caller keeps torch (`onnx_runner` returns None and says why).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

import numpy as np

TOLERANCE = 1e-4
LOG = logging.getLogger(__name__)


def export(model, example, path: Path) -> None:
    """Write `model` (torch, eval mode) as ONNX to `path` atomically (a half-written file is never seen)."""
    import onnx  # noqa: F401  (torch.onnx needs it; fail before tracing when it is missing)
    import torch

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on tracing and constant folding
            torch.onnx.export(model, (example,), str(tmp), dynamo=False, input_names=["pixels"],
                              output_names=["logits"], opset_version=17)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _matches(session, model, example) -> bool:
    import torch

    with torch.inference_mode():
        expected = model(example).numpy()
    got = session.run(None, {session.get_inputs()[0].name: example.numpy()})[0]
    return got.shape == expected.shape and float(np.abs(got - expected).max()) <= TOLERANCE


def onnx_runner(model, example, path: Path, threads: int = 1):
    """`run(x: float32 ndarray) -> logits` through onnxruntime for `model`, exported to `path` when needed;
    None (torch stays) when that is not possible or not faithful."""
    from .text_reader import cpu_session

    for attempt in ("reuse", "export"):
        if attempt == "reuse" and not path.is_file():
            continue
        try:
            if attempt == "export":
                export(model, example, path)
            session = cpu_session(path, threads)
            if _matches(session, model, example):
                name = session.get_inputs()[0].name
                return lambda x: session.run(None, {name: x})[0]
            LOG.warning("ONNX copy %s does not match torch", path)
        except Exception as exc:  # no onnx package, read-only folder, old file: torch it is
            LOG.warning("classifier stays on torch (%s: %s)", type(exc).__name__, exc)
            if attempt == "export":
                return None
    return None
