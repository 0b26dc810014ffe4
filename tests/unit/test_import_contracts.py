"""The import contracts of pyproject.toml hold for the tree, and a wrong arrow makes `lint-imports` fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from setup.paths import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300)


@pytest.fixture
def tree_copy(tmp_path) -> Path:
    for name in ("app", "setup", "benchmarks", "cpu_runtime"):
        shutil.copytree(PROJECT_ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_tree_keeps_every_contract():
    result = lint(PROJECT_ROOT)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("app/core/errors.py", "from app.chat import turns", "imports point down only"),
    ("app/chat/turns.py", "import gradio", "Gradio only in app.web"),
    ("setup/repo/fill.py", "from app.core import errors", "setup never imports app"),
    ("app/triton/client.py", "from app import __main__", "No module imports a __main__"),
    ("app/chat/compare.py", "import fastapi", "FastAPI and Starlette only in app.api"),
    ("cpu_runtime/engine/kv.py", "from setup import paths", "cpu_runtime (the code the CPU tritonserver runs) never"),
    ("cpu_runtime/encoder/margins.py", "from app.core import errors", "never imports app, setup, benchmarks"),
    ("cpu_runtime/encoder/margins.py", "from cpu_runtime.engine import kv", "cpu_runtime's parts stand alone"),
])
def test_a_wrong_arrow_breaks_its_contract(tree_copy, module, line, contract):
    with open(tree_copy / module, "a") as handle:
        handle.write(f"\n{line}  # noqa\n")
    result = lint(tree_copy)
    assert result.returncode != 0
    report = " ".join(result.stdout.split())  # the report wraps long contract names
    assert contract in report.split("Broken contracts")[-1], report[-2000:]


def test_an_import_loop_between_siblings_breaks(tree_copy):
    with open(tree_copy / "app/triton/transport.py", "a") as handle:
        handle.write("\nfrom app.triton import client  # noqa\n")
    result = lint(tree_copy)
    assert result.returncode != 0 and "No cycles are allowed in app.triton" in result.stdout
