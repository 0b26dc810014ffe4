"""The classifier through onnxruntime (exported once into a folder) gives torch's answers, or torch stays."""

from __future__ import annotations

import sys

import numpy as np

from tests.unit.cpu_runtime.encoder.conftest import photo


def test_onnx_copy_is_made_once_and_agrees_with_torch(lib, classifier, tmp_path):
    import pytest

    pytest.importorskip("onnx")
    fast = lib.classifier.ImageClassifier(onnx_folder=tmp_path)
    exported = tmp_path / "efficientnet-lite0.onnx"
    assert fast.onnx is not None and exported.is_file()
    for name in ("chelsea", "coffee", "rocket"):
        np.testing.assert_allclose(fast.probabilities(photo(name)), classifier.probabilities(photo(name)), atol=1e-5)
        assert [label.name for label in fast.top(photo(name))] == [label.name for label in classifier.top(photo(name))]
    written = exported.stat().st_mtime_ns
    assert lib.classifier.ImageClassifier(onnx_folder=tmp_path).onnx is not None
    assert exported.stat().st_mtime_ns == written  # reused, not exported again


def test_without_the_onnx_package_torch_stays(lib, classifier, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    slow = lib.classifier.ImageClassifier(onnx_folder=tmp_path)
    assert slow.onnx is None and not list(tmp_path.iterdir())  # nothing half-written left behind
    assert slow.top(photo("coffee"), k=1)[0].name == classifier.top(photo("coffee"), k=1)[0].name


def test_a_copy_that_does_not_match_is_replaced(lib, tmp_path):
    import pytest

    pytest.importorskip("onnx")
    (tmp_path / "efficientnet-lite0.onnx").write_bytes(b"not a model")
    fast = lib.classifier.ImageClassifier(onnx_folder=tmp_path)
    assert fast.onnx is not None and (tmp_path / "efficientnet-lite0.onnx").stat().st_size > 1_000_000
