"""runner_lib.requests.check_lora_task: the 1.x runner knows the engine's adapters as "0", "1", ... in load order
(LoraManager), and an unknown uid is a bare KeyError inside ModelRunnerCpp; the model refuses it first, in a sentence
that names the adapters the repository records (lora_adapters). The model-level test (the 1.x stand-in runner) is
test_runner_lora_uids.py."""

from __future__ import annotations

import sys

import pytest

from setup.paths import TEMPLATES_DIR

sys.path.insert(0, str(TEMPLATES_DIR / "multimodal_runner" / "multimodal_runner" / "1"))

from runner_lib.requests import RunnerRequest, baked_adapters, check_lora_task  # noqa: E402


def test_a_known_uid_passes_and_an_unknown_one_is_a_sentence_naming_the_engines_adapters():
    adapters = baked_adapters(" poet, sailor ,")
    assert adapters == ("poet", "sailor")
    for uid in (None, 0, 1):
        check_lora_task(RunnerRequest(text="Hi", lora_task_id=uid), adapters)
    with pytest.raises(ValueError) as caught:
        check_lora_task(RunnerRequest(text="Hi", lora_task_id=7), adapters)
    assert str(caught.value) == ("lora_task_id 7 is not an adapter this engine was built with; it holds 0 'poet', "
                                 "1 'sailor' (trtllm-build --lora_dir, numbered in load order).")
    check_lora_task(RunnerRequest(text="Hi", lora_task_id=7), ())  # nothing recorded: the runner's own answer
