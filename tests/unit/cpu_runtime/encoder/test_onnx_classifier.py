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


def test_a_checked_copy_then_runs_without_torch(lib, classifier, tmp_path):
    """The first start checks the copy against torch and records it; later starts run the recorded copy alone (no
    torch model, no torch import: a subprocess shows it)."""
    import json
    import subprocess

    import pytest

    pytest.importorskip("onnx")
    first = lib.classifier.ImageClassifier(onnx_folder=tmp_path)
    record = tmp_path / "efficientnet-lite0.onnx.verified.json"
    assert first.model is not None and record.is_file()
    again = lib.classifier.ImageClassifier(onnx_folder=tmp_path)
    assert again.onnx is not None and again.model is None and again.torch is None
    np.testing.assert_allclose(again.probabilities(photo("chelsea")), classifier.probabilities(photo("chelsea")),
                               atol=1e-5)
    code = ("import sys, json; from cpu_runtime.encoder.classifier import ImageClassifier; "
            f"c = ImageClassifier(onnx_folder={str(tmp_path)!r}); "
            "print(json.dumps([c.onnx is not None, sys.modules.get('torch') is not None]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [True, False]


def test_a_record_that_no_longer_describes_the_files_is_not_trusted(lib, tmp_path):
    import pytest

    pytest.importorskip("onnx")
    from cpu_runtime.encoder.onnx_model import verified_runner

    lib.classifier.ImageClassifier(onnx_folder=tmp_path)
    copy = tmp_path / "efficientnet-lite0.onnx"
    weights = lib.classifier.weights_path()
    assert verified_runner(copy, weights) is not None
    other = tmp_path / "other-weights.pth"
    other.write_bytes(weights.read_bytes()[:1000])
    assert verified_runner(copy, other) is None  # not the weights it was checked against
    copy.write_bytes(copy.read_bytes() + b"\0")
    assert verified_runner(copy, weights) is None  # the copy changed since
    checked = lib.classifier.ImageClassifier(onnx_folder=tmp_path)  # checked against torch again, and replaced
    assert checked.model is not None and checked.onnx is not None and verified_runner(copy, weights) is not None
