"""A torch image model run by onnxruntime instead: exported once into a folder, checked against torch.

EfficientNet-Lite0 takes about a third of the CPU time in onnxruntime that it takes in eager torch on one
thread, with the same logits within 1e-5. The export (torch.onnx, which needs the `onnx` package of
requirements.txt) is written at first use beside the encoder's config.json and reused by every later
instance. Whenever the file cannot be written or read, `onnx` is missing, or its logits differ from
torch's by more than TOLERANCE, the caller keeps torch (`onnx_runner` returns None and says why).

A copy that matched is recorded beside it (`<copy>.verified.json`: the copy's SHA-256 and the size and time of the
weights it came from): `verified_runner` then runs it without loading torch or the torch model at all, which saves
an encoder about 2.5 CPU s per start. A record that no longer describes both files is not trusted.
"""

from __future__ import annotations

import hashlib
import json
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


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _record(path: Path, source: Path) -> dict:
    """What a verified copy's record says: the copy's SHA-256 and the identity of the weights it came from."""
    stat = source.stat()
    return {"onnx_sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "source": str(source),
            "source_size": stat.st_size, "source_mtime_ns": stat.st_mtime_ns, "tolerance": TOLERANCE}


def _write_record(path: Path, source: Path) -> None:
    record = _record_path(path)
    tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(_record(path, source)), encoding="utf-8")
        os.replace(tmp, record)
    finally:
        tmp.unlink(missing_ok=True)


def _session_runner(session):
    name = session.get_inputs()[0].name
    return lambda x: session.run(None, {name: x})[0]


def verified_runner(path: Path, source: Path, threads: int = 1):
    """`run(x)` through onnxruntime for a copy recorded as matching the model of `source` (its weights file), without
    torch; None when there is no such record or it does not describe the files as they are now."""
    from .text_reader import cpu_session

    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
        if record != _record(path, source):
            return None
        return _session_runner(cpu_session(path, threads))
    except Exception:  # noqa: BLE001 - no record, a changed file, an unreadable copy: load and check as before
        return None


def onnx_runner(model, example, path: Path, threads: int = 1, source: Path | None = None):
    """`run(x: float32 ndarray) -> logits` through onnxruntime for `model`, exported to `path` when needed;
    None (torch stays) when that is not possible or not faithful. With `source` (the weights file), a copy that matches
    is recorded for verified_runner."""
    from .text_reader import cpu_session

    for attempt in ("reuse", "export"):
        if attempt == "reuse" and not path.is_file():
            continue
        try:
            if attempt == "export":
                export(model, example, path)
            session = cpu_session(path, threads)
            if _matches(session, model, example):
                if source is not None:
                    _write_record(path, source)
                return _session_runner(session)
            LOG.warning("ONNX copy %s does not match torch", path)
        except Exception as exc:  # no onnx package, read-only folder, old file: torch it is
            LOG.warning("classifier stays on torch (%s: %s)", type(exc).__name__, exc)
            if attempt == "export":
                return None
    return None
