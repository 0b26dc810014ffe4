"""app/web/pages/build_cache.py: the Build page's LoRA cache calculator for the served engine or a folder."""

from __future__ import annotations

from types import SimpleNamespace

from app.web.pages.build_cache import fit_text
from setup.lora.audit import engine_target
from setup.lora.cache_size import GIB
from setup.workspace import Workspace
from tests.lora_helpers import TRT_ALL, write_engine_config


def test_the_served_engine_with_the_backends_defaults_and_a_folder_outside_the_workspace(tmp_path):
    target = engine_target(write_engine_config(tmp_path / "engine", max_rank=64, modules=TRT_ALL))
    ctx = SimpleNamespace(deployment=SimpleNamespace(lora_target=lambda: target),
                          access=SimpleNamespace(workspace=Workspace.from_paths((str(tmp_path / "ws"),))))
    answer = fit_text(ctx, "", GIB, 0.05, 0, 8, 64, 0, 0)
    assert "| 8 | 1 | 195 | ? (give the free GPU memory) |" in answer and "| 64 | 8 | 24 |" in answer
    assert "holds 3600 slots" in answer and "holds 27 adapters of max_adapter_size" in answer
    assert "| 64 | 8 | 24 | 48 |" in fit_text(ctx, "", GIB, 0.05, 40, 8, 64, 0, 0)
    refused = fit_text(ctx, str(tmp_path / "engine"), GIB, 0.05, 0, 8, 64, 0, 0)
    assert refused.startswith("⚠️") and "engine folder" in refused
