"""A fake InternLM-XComposer2 deployment for unit tests: the served config's inputs and parameters, a client that
records each request's prompt and extra inputs, and an adapters folder with the model's own adapter and pirate."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.adapters.registry import AdapterRegistry
from app.core.streams import StreamDefaults
from app.triton.client import ModelInfo
from tests.lora_helpers import TINY, write_peft

XC2_INPUTS = {
    "text_input": ("TYPE_STRING", (1,)), "max_tokens": ("TYPE_INT32", (1,)),
    "image_input": ("TYPE_FP16", (3, 490, 490)),
    "lora_task_id": ("TYPE_UINT64", (1,)), "lora_weights": ("TYPE_FP16", (-1, -1)),
    "lora_config": ("TYPE_INT32", (-1, 3)),
}
CLIP_MEAN = np.array([0.48145466, 0.4578275, 0.40821073], np.float32)
CLIP_STD = np.array([0.26862954, 0.26130258, 0.27577711], np.float32)


class FakeStream(StreamDefaults):
    def __init__(self, parts: tuple[str, ...] = ("In the picture", ", a cat.")):
        self.text, self.cancelled, self.request_id, self.chunks, self.responses = "", False, "r1", 0, 0
        self._parts = iter(parts)

    def __iter__(self):
        return self

    def __next__(self):
        part = next(self._parts)
        self.text += part
        return part

    def cancel(self):
        self.cancelled = True


class FakeClient:
    """What the deployment asks of TritonChatClient; records each request's prompt and extra inputs."""

    url, model, stall_timeout = "127.0.0.1:1", "ensemble", 30.0

    def __init__(self, **parameters):
        self.info = ModelInfo(name="ensemble", inputs=XC2_INPUTS, decoupled=True, accumulated_text=False,
                              parameters={"multimodal_family": "internlm-xcomposer2", "max_num_images": "1",
                                          **parameters})
        self.sent: list[tuple[str, dict]] = []

    def model_info(self):
        return self.info

    def model_config(self, name):
        return {}  # no tokenizer_dir: the named template

    def stream(self, prompt, params, extra):
        self.sent.append((prompt, dict(extra)))
        return FakeStream()

    def image_descriptions(self, extra):
        return None


def xc2_registry(root: Path) -> AdapterRegistry:
    """An adapters folder with the model's own adapter (xc2-partial) and another one (pirate)."""
    write_peft(root / "xc2-partial", shape=TINY, seed=1)
    write_peft(root / "pirate", shape=TINY, seed=2)
    return AdapterRegistry(root)
