"""A tiny random Llama checkpoint with the demo model's tokenizer (built locally, nothing downloaded), and
style pairs, for the LoRA training tests."""

from __future__ import annotations

import shutil
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
