"""scripts/train_demo_adapters.py's partial-adapter trainer: it takes the adapters folder's training lock (the one
the app's training takes) and writes its adapter beside the target, renamed into place (tiny random model)."""

from __future__ import annotations

import importlib.util

import pytest

from setup.lora.train import LOCK_NAME, lock_folder, unlock_folder
from setup.lora.train_settings import TrainError
from setup.paths import PROJECT_ROOT
from tests.lora_training_helpers import write_tiny_base


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("train_demo_adapters", PROJECT_ROOT / "scripts" / "train_demo_adapters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, cpu_model_dir):
    return write_tiny_base(tmp_path_factory.mktemp("tiny-base"), cpu_model_dir)


def partial_spec(script) -> dict:
    spec = dict(script.load_data()["partial_adapters"]["xc2-partial"])
    spec["settings"] = {**spec["settings"], "top_layers": 1, "rank": 2}
    spec["examples"], spec["checks"], spec["rows"] = spec["examples"][:2], spec["checks"][:1], 8
    return spec


def test_the_partial_trainer_refuses_a_held_folder_and_replaces_the_adapter_whole(script, tiny_base, tmp_path):
    spec = partial_spec(script)
    folder = tmp_path / "adapters" / spec["folder"]
    (folder / "xc2-partial").mkdir(parents=True)
    (folder / "xc2-partial" / "old-file").write_text("from an older training")
    held = lock_folder(folder)
    try:
        with pytest.raises(TrainError, match="running already"):
            script.train_partial_adapter(tiny_base, "xc2-partial", spec, tmp_path / "adapters", steps=1)
    finally:
        unlock_folder(folder, held)
    assert (folder / "xc2-partial" / "old-file").is_file()  # nothing touched while another training held it

    script.train_partial_adapter(tiny_base, "xc2-partial", spec, tmp_path / "adapters", steps=1)
    assert sorted(p.name for p in (folder / "xc2-partial").iterdir()) == [
        "README.md", "adapter_config.json", "adapter_model.safetensors"]
    assert [p.name for p in folder.iterdir()] == ["xc2-partial"]  # no staging folder, no lock file left
    assert not (folder / LOCK_NAME).exists()
