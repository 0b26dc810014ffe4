"""Load a Python model of model_repo_templates/ in a test, as the repository writer would lay it out: beside the
shared helpers it is given (model_repo_templates/shared/), with a stand-in for triton_python_backend_utils."""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np

from setup.paths import TEMPLATES_DIR
from setup.repo.writer import SHARED_DIR


class StandInTensor:
    """pb_utils.Tensor as the template models use it: a name and an array."""

    def __init__(self, name, value):
        self.name, self.value = name, np.asarray(value)

    def as_numpy(self):
        return self.value


def load_template_model(relative: str, pb_utils: types.ModuleType, name: str | None = None):
    """Import model_repo_templates/`relative` with `pb_utils` as triton_python_backend_utils (the shared helpers are
    imported afresh, so they see this stand-in too)."""
    _use_stand_in(pb_utils)
    path = TEMPLATES_DIR / relative
    spec = importlib.util.spec_from_file_location(name or f"template_{path.parent.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_shared_helper(file_name: str, pb_utils: types.ModuleType):
    """Import model_repo_templates/shared/`file_name` as the models see it (with `pb_utils` as the stand-in)."""
    _use_stand_in(pb_utils)
    return importlib.import_module(file_name.removesuffix(".py"))


def _use_stand_in(pb_utils: types.ModuleType) -> None:
    """`pb_utils` as triton_python_backend_utils, and the shared helpers importable afresh (so they see it)."""
    sys.modules["triton_python_backend_utils"] = pb_utils
    for shared in SHARED_DIR.glob("*.py"):
        sys.modules.pop(shared.stem, None)
    # tokenizer_only.py hides PyTorch from the whole process: in a test process the stand-in does nothing
    sys.modules["tokenizer_only"] = types.ModuleType("tokenizer_only")
    if str(SHARED_DIR) not in sys.path:
        sys.path.append(str(SHARED_DIR))
