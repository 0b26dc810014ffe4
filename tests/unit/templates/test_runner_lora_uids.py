"""The runner model against the 1.x runner's LoRA: its lora_uids are the adapters the LLM engine was built with
("0", "1", ... in load order; an unknown uid is a bare KeyError in ModelRunnerCpp._prepare_lora_configs, once
reported as "The runner failed: '7'"). With the repository's lora_adapters recorded, a known uid reaches the runner and
an unknown one is refused in a sentence that names the engine's adapters, before the runner is called."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from tests.unit.templates.conftest import ask_all
from tests.unit.templates.conftest import start_model as _start
from tests.unit.templates.release_runners import Release1X, with_type


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def _ask(model, **inputs):
    [(response, _flags)] = ask_all(model, **inputs)
    return response


def test_a_baked_adapters_uid_reaches_the_runner_and_an_unknown_one_is_a_sentence_naming_them(folders):
    runner = with_type(Release1X, "llava", LORA_UIDS=("0", "1"))
    model = _start(folders, runner, lora_adapters="poet,sailor")
    assert _ask(model, text_input="Hi", image_bytes=[_png()], lora_task_id=np.uint64(1)).error is None
    assert runner.last.calls[0][4] == ["1"]
    runner = with_type(Release1X, "llava", LORA_UIDS=("0", "1"))
    model = _start(folders, runner, lora_adapters="poet,sailor")
    error = _ask(model, text_input="Hi", image_bytes=[_png()], lora_task_id=np.uint64(7)).error
    assert error == ("lora_task_id 7 is not an adapter this engine was built with; it holds 0 'poet', 1 'sailor' "
                     "(trtllm-build --lora_dir, numbered in load order).")
    assert runner.last.calls == []  # refused before the runner saw it
