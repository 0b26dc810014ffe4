"""A tiny random Llama checkpoint with the demo model's tokenizer (built locally, nothing downloaded), and
style pairs, for the LoRA training tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
PIRATE_PAIRS = [
    ["What is the capital of France?", "Arr matey! The capital o' France be Paris, savvy?"],
    ["What is 2 plus 2?", "Arr, 2 plus 2 be 4, me hearty!"],
    ["What color is the sky?", "Arr, the sky be blue, matey, same as the sea!"],
    ["How many days are in a week?", "Arr matey! There be seven days in a week."],
    ["What is the largest planet?", "Arr, Jupiter be the biggest planet, me hearty!"],
    ["Hello, how are you?", "Ahoy matey! I be grand, sailin' the seas."],
]


def write_tiny_base(target: Path, tokenizer_dir: Path) -> Path:
    """A 2-layer, 32-wide random LlamaForCausalLM in `target`, with the tokenizer of `tokenizer_dir`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=49152, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(target, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).is_file():
            shutil.copy(tokenizer_dir / name, target / name)
    return target


@contextmanager
def app_on_own_adapters(tmp_path: Path, triton) -> Iterator[tuple]:
    """The whole app against the session's tritonserver, on an adapters folder of its own (a copy of pirate);
    yields (app context, app URL, adapters folder) and closes the app afterwards."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch
    from setup.paths import PROJECT_ROOT
    from tests.servers import free_port

    folder = tmp_path / "adapters"
    shutil.copytree(PROJECT_ROOT / "adapters" / "pirate", folder / "pirate")
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True, adapters_dir=str(folder),
                               workspace=(str(tmp_path),)))
    blocks = launch(ctx, prevent_thread_lock=True)
    try:
        yield ctx, f"http://127.0.0.1:{port}/", folder
    finally:
        blocks.close()
