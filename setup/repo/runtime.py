"""The CPU runtime in written repositories: the parts of the cpu_runtime package a template's Python models
import, copied into each model's 1/ folder as cpu_runtime/<part> (the model puts its 1/ folder on sys.path), so
a repository stands alone at run time, as the TensorRT-LLM backend's own models do.

The parts each model needs are declared beside the templates: `runtime: {<model>: [<part>, ...]}` in a
template.yaml (the CPU engine overlay's, the XComposer2 twin's, the llmapi stand-in's).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

import cpu_runtime

RUNTIME_DIR = Path(cpu_runtime.__file__).resolve().parent
PACKAGE = RUNTIME_DIR.name
DECLARATION = "template.yaml"  # its `runtime` key: model -> parts


def runtime_parts() -> tuple[str, ...]:
    """The parts (subpackages) of cpu_runtime a model can be given."""
    return tuple(sorted(p.name for p in RUNTIME_DIR.iterdir() if (p / "__init__.py").is_file()))


def declared_runtime(folder: Path) -> dict[str, tuple[str, ...]]:
    """The `runtime` section of `folder`/template.yaml: model -> parts (empty when it has none)."""
    path = folder / DECLARATION
    raw = (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}
    return {str(model): tuple(str(p) for p in parts) for model, parts in (raw.get("runtime") or {}).items()}


def unknown_parts(parts: tuple[str, ...]) -> list[str]:
    """The names in `parts` that are no part of cpu_runtime."""
    known = runtime_parts()
    return [part for part in parts if part not in known]


def copy_runtime(version_dir: Path, parts: tuple[str, ...]) -> None:
    """Copy cpu_runtime's __init__ and `parts` into `version_dir`/cpu_runtime (a model's 1/ folder)."""
    target = version_dir / PACKAGE
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RUNTIME_DIR / "__init__.py", target / "__init__.py")
    for part in parts:
        shutil.copytree(RUNTIME_DIR / part, target / part, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
