"""Training from the app (app/adapters/training.py): a job in a thread, refusals before it starts, cancel."""

from __future__ import annotations

import pytest

from app.adapters.intake import AdapterError
from app.adapters.messages import MSG_CANCELLING, MSG_NOTHING_TO_CANCEL
from app.adapters.training import Trainer, default_base_dir
from setup.lora.dataset import examples_from_pairs
from setup.lora.messages import MSG_BUSY
from setup.lora.train_settings import TrainError, default_settings
from tests.lora_training_helpers import PIRATE_PAIRS, write_tiny_base


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, cpu_model_dir):
    return write_tiny_base(tmp_path_factory.mktemp("tiny-base"), cpu_model_dir)


SETTINGS = default_settings().with_changes(steps=3, learning_rate=0.05)
EXAMPLES = examples_from_pairs(PIRATE_PAIRS[:3])


def test_a_job_trains_in_the_background_into_the_folder(tiny_base, tmp_path):
    trainer = Trainer(tmp_path / "adapters")
    job = trainer.start("mine", tiny_base, EXAMPLES, SETTINGS)
    assert job.wait(120) and job.state == "done", job.message
    assert [s for s, _ in job.losses] == [1, 2, 3] and job.step == 3 and "thread" in job.where
    assert (tmp_path / "adapters" / "mine" / "adapter_model.safetensors").is_file()
    assert trainer.current() is job and trainer.cancel() == MSG_NOTHING_TO_CANCEL


def test_refusals_come_before_anything_runs(tiny_base, tmp_path):
    trainer = Trainer(tmp_path / "adapters")
    with pytest.raises(AdapterError, match="Adapter name '../x' is not allowed"):
        trainer.start("../x", tiny_base, EXAMPLES, SETTINGS)
    (tmp_path / "adapters" / "pirate").mkdir(parents=True)
    with pytest.raises(TrainError, match="An adapter named 'pirate' exists already"):
        trainer.start("pirate", tiny_base, EXAMPLES, SETTINGS)
    with pytest.raises(TrainError, match="Steps must be a whole number from 1 to 300"):
        trainer.start("new", tiny_base, EXAMPLES, SETTINGS.with_changes(steps=1000))
    assert trainer.current() is None and sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["pirate"]


def test_second_start_while_one_runs_is_refused_and_cancel_writes_nothing(tiny_base, tmp_path):
    trainer = Trainer(tmp_path / "adapters")
    job = trainer.start("long", tiny_base, EXAMPLES, SETTINGS.with_changes(steps=300))
    try:
        with pytest.raises(TrainError) as refused:
            trainer.start("other", tiny_base, EXAMPLES, SETTINGS)
        assert str(refused.value) == MSG_BUSY
    finally:
        assert trainer.cancel() == MSG_CANCELLING
    assert job.wait(60) and job.state == "cancelled" and "nothing was written" in job.message
    assert list((tmp_path / "adapters").iterdir()) == []


def test_default_base_is_the_tokenizer_folder_or_the_demo_model(tmp_path):
    from setup.cpu.model import model_dir

    assert default_base_dir(str(tmp_path), demo=True) == tmp_path
    assert default_base_dir(None, demo=True) == model_dir()
    assert default_base_dir(None, demo=False) is None


def test_an_adapter_the_engine_could_not_use_is_refused(tiny_base, tmp_path):
    import json

    engine = tmp_path / "engine"
    engine.mkdir()
    engine.joinpath("config.json").write_text(json.dumps({
        "pretrained_config": {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
                              "intermediate_size": 64, "dtype": "float16"},
        "build_config": {"lora_config": {"lora_target_modules": ["attn_q", "attn_v"], "max_lora_rank": 4}}}))
    trainer = Trainer(tmp_path / "adapters", engine_dir=engine)
    with pytest.raises(TrainError, match="up to rank 4; pick a rank of 4 or less"):
        trainer.start("x", tiny_base, EXAMPLES, SETTINGS)
    with pytest.raises(TrainError, match="built for LoRA on attn_q, attn_v; k_proj cannot be used with it"):
        trainer.start("x", tiny_base, EXAMPLES, SETTINGS.with_changes(rank=4))
    assert trainer.current() is None
