"""LoRA training (setup/lora/train.py): a tiny adapter whose loss falls and that peft loads, cancel, one at a time."""

from __future__ import annotations

import os
import threading

import pytest

from setup.lora import messages as msg
from setup.lora.dataset import Example, examples_from_pairs
from setup.lora.record import TrainingPair, read_record
from setup.lora.train import install_adapter, prepare_training, train, training_running
from setup.lora.train_settings import TrainCancelled, TrainError, default_settings
from tests.lora_training_helpers import PIRATE_PAIRS, write_tiny_base


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, cpu_model_dir):
    return write_tiny_base(tmp_path_factory.mktemp("tiny-base"), cpu_model_dir)


def settings(**changes):
    return default_settings().with_changes(**{"steps": 8, "learning_rate": 0.05, **changes})


def examples(count: int = 3) -> list[Example]:
    return examples_from_pairs(PIRATE_PAIRS[:count])


def test_loss_falls_and_peft_loads_the_folder(tiny_base, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    seen = []
    result = train(tiny_base, examples(), tmp_path / "adapters" / "tiny", settings(),
                   on_step=lambda step, steps, loss: seen.append((step, steps, loss)))
    assert [s[0] for s in seen] == list(range(1, 9)) and all(s[1] == 8 for s in seen)
    assert result.losses[-1] < result.losses[0] - 0.1 and min(result.losses) == result.losses[-1], result.losses
    folder = tmp_path / "adapters" / "tiny"
    assert result.path == folder and {"adapter_config.json", "adapter_model.safetensors", "README.md"} <= {
        p.name for p in folder.iterdir()}
    assert [p.name for p in folder.parent.iterdir()] == ["tiny"]  # no temporary folder left
    umask = os.umask(0)
    os.umask(umask)
    assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {oct(0o666 & ~umask)}  # not mkdtemp's 600
    assert folder.stat().st_mode & 0o777 == 0o777 & ~umask
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_base), folder)
    assert model.peft_config["default"].r == 8
    assert set(model.peft_config["default"].target_modules) == {"q_proj", "k_proj", "v_proj"}
    assert "Trained" in result.summary() and not training_running()


def test_chat_examples_train_too(tiny_base, tmp_path):
    chat = Example(({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}), "Arr!")
    result = train(tiny_base, [chat, *examples(1)], tmp_path / "chat", settings(steps=2))
    assert len(result.losses) == 2 and (tmp_path / "chat" / "adapter_config.json").is_file()
    # the pairs it learnt are kept beside it, for the adapter-applied check's probes
    assert read_record(tmp_path / "chat") == (TrainingPair("Hi?", "Arr!"), TrainingPair(*PIRATE_PAIRS[0]))


def test_cancel_stops_at_once_and_writes_nothing(tiny_base, tmp_path):
    cancel = threading.Event()

    def on_step(step, steps, loss):
        if step == 2:
            cancel.set()

    with pytest.raises(TrainCancelled, match="cancelled at step 3 of 50; nothing was written"):
        train(tiny_base, examples(), tmp_path / "adapters" / "gone", settings(steps=50), on_step=on_step,
              cancel=cancel)
    assert list((tmp_path / "adapters").iterdir()) == [] and not training_running()


def test_cancel_inside_a_step_stops_in_the_pass(tiny_base, tmp_path):
    """Set while a forward pass runs: the hooks stop it there, and the step is not finished."""
    cancel, seen = threading.Event(), []
    run = prepare_training(tiny_base, examples(), tmp_path / "mid", settings(steps=5))
    original = run._model

    def model_that_cancels(device):
        model = original(device)
        layer = model.base_model.model.model.layers[1]
        layer.register_forward_pre_hook(lambda *_: cancel.set())
        return model

    run._model = model_that_cancels
    with pytest.raises(TrainCancelled, match="step 1 of 5"):
        run.run(on_step=lambda *a: seen.append(a), cancel=cancel)
    assert seen == [] and not (tmp_path / "mid").exists() and list(tmp_path.iterdir()) == []


def test_second_training_at_once_is_refused(tiny_base, tmp_path):
    first = prepare_training(tiny_base, examples(), tmp_path / "one", settings())
    try:
        with pytest.raises(TrainError) as refused:
            prepare_training(tiny_base, examples(), tmp_path / "two", settings())
        assert str(refused.value) == msg.MSG_BUSY
    finally:
        first.release()
    assert not training_running()
    prepare_training(tiny_base, examples(), tmp_path / "two", settings()).release()  # free again


@pytest.mark.parametrize(("changes", "expected"), [
    ({"rank": 0}, "Rank must be a whole number from 1 to 64, got 0."),
    ({"rank": 65}, "Rank must be a whole number from 1 to 64, got 65."),
    ({"rank": 2.5}, "Rank must be a whole number from 1 to 64, got 2.5."),
    ({"steps": 301}, "Steps must be a whole number from 1 to 300, got 301."),
    ({"max_len": 4096}, "The sequence length must be a whole number from 16 to 1024 tokens, got 4096."),
    ({"learning_rate": 1.0}, "The learning rate must be between 1e-06 and 0.1, got 1.0."),
    ({"threads": 99}, "Threads must be a whole number from 1 to 8, got 99."),
    ({"target_modules": ()}, "Pick at least one target module"),
    ({"target_modules": ("q_proj", "lm_head")}, "Target module(s) lm_head cannot be trained here"),
])
def test_settings_beyond_the_limits_are_refused_before_anything_starts(tiny_base, tmp_path, changes, expected):
    with pytest.raises(TrainError) as refused:
        prepare_training(tiny_base, examples(), tmp_path / "x", settings(**changes))
    assert str(refused.value).startswith(expected) and not training_running()
    assert list(tmp_path.iterdir()) == []


def test_too_long_example_missing_base_and_existing_output_are_refused(tiny_base, tmp_path):
    long = [Example.from_pair("Tell me a story. " * 40, "Arr.")]
    with pytest.raises(TrainError, match=r"Pair 1 is \d+ tokens long with the chat template, above the sequence "
                                         r"length 64"):
        prepare_training(tiny_base, long, tmp_path / "x", settings(max_len=64))
    with pytest.raises(TrainError, match="holds no config.json"):
        prepare_training(tmp_path / "nowhere", examples(), tmp_path / "x", settings())
    (tmp_path / "taken").mkdir()
    with pytest.raises(TrainError, match="exists already; pick another name"):
        prepare_training(tiny_base, examples(), tmp_path / "taken", settings())
    with pytest.raises(TrainError, match="training needs at least 1"):
        prepare_training(tiny_base, [], tmp_path / "x", settings())
    assert not training_running()


HOLD_THE_LOCK = """
import sys, time
from pathlib import Path
from setup.lora.train import lock_folder
lock_folder(Path(sys.argv[1]))
print("locked", flush=True)
time.sleep(120)
"""


def test_a_training_in_another_process_holds_the_folder(tiny_base, tmp_path):
    """A second process (the CLI, another app) training into the same adapters folder: refused with the same
    sentence, nothing written; when that process dies without cleaning up, the folder is free again."""
    import signal
    import subprocess
    import sys

    from setup.lora.train import LOCK_NAME
    from setup.paths import PROJECT_ROOT

    folder = tmp_path / "adapters"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_LOCK, str(folder)], cwd=PROJECT_ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(TrainError) as refused:
            prepare_training(tiny_base, examples(), folder / "mine", settings())
        assert str(refused.value) == msg.MSG_BUSY and not training_running()
        assert [p.name for p in folder.iterdir()] == [LOCK_NAME]  # the holder's file only; nothing of ours
        other = prepare_training(tiny_base, examples(), tmp_path / "elsewhere" / "mine", settings())
        other.release()  # another folder is not locked
    finally:
        holder.send_signal(signal.SIGKILL)  # a crash: no cleanup runs in the holder
        holder.wait(timeout=30)
        holder.stdout.close()
    result = train(tiny_base, examples(), folder / "mine", settings(steps=1))
    assert result.path == folder / "mine" and sorted(p.name for p in folder.iterdir()) == ["mine"]


def test_the_lock_file_is_gone_after_a_refusal_and_after_a_training(tiny_base, tmp_path):
    from setup.lora.train import LOCK_NAME, lock_folder, unlock_folder

    with pytest.raises(TrainError, match="Pair 1 is"):
        prepare_training(tiny_base, [Example.from_pair("Tell me a story. " * 40, "Arr.")], tmp_path / "x",
                         settings(max_len=64))
    assert list(tmp_path.iterdir()) == []
    fd = lock_folder(tmp_path)
    assert (tmp_path / LOCK_NAME).read_text().strip().isdigit()
    with pytest.raises(TrainError, match="one training at a time"):
        lock_folder(tmp_path)  # flock excludes a second descriptor in the same process too
    unlock_folder(tmp_path, fd)
    assert list(tmp_path.iterdir()) == []


def adapter_folder(path, config: str | None):
    """`path` holding an adapter_config.json with `config` (None: no folder at all)."""
    if config is not None:
        path.mkdir()
        (path / "adapter_config.json").write_text(config)
    return path


def test_an_install_that_is_refused_removes_the_staged_folder_and_keeps_the_old_adapter(tmp_path):
    staged = adapter_folder(tmp_path / ".training-style-x", "{}")
    out = adapter_folder(tmp_path / "style", '{"old": true}')
    with pytest.raises(TrainError):
        install_adapter(staged, out, replace=False)
    assert not staged.exists() and (out / "adapter_config.json").read_text() == '{"old": true}'


def test_a_replacement_whose_rename_fails_puts_the_old_adapter_back(tmp_path):
    staged = adapter_folder(tmp_path / ".training-style-gone", None)  # staged folder missing: the rename fails
    out = adapter_folder(tmp_path / "style", '{"old": true}')
    with pytest.raises(TrainError, match="style"):
        install_adapter(staged, out, replace=True)
    assert (out / "adapter_config.json").read_text() == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["style"]


def test_a_replacement_swaps_the_adapter_and_leaves_nothing_beside_it(tmp_path):
    staged = adapter_folder(tmp_path / ".training-style-x", '{"new": true}')
    out = adapter_folder(tmp_path / "style", '{"old": true}')
    install_adapter(staged, out, replace=True)
    assert (out / "adapter_config.json").read_text() == '{"new": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["style"]
