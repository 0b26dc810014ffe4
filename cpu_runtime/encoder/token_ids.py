"""The LLM tokenizer's ids for a piece of text, as the encoder needs them (no special tokens added).

A folder whose tokenizer is a plain `tokenizers` one (tokenizer.json, no Python tokenizer class of its own) is read
with the `tokenizers` library alone: transformers' AutoTokenizer gives the same ids but costs about 3 CPU s per
process start (1.9 without PyTorch), and every CPU demo server starts an encoder. Other folders keep AutoTokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

# tokenizer_config.json classes that are the tokenizer.json file and nothing more for encoding
PLAIN_CLASSES = frozenset({"TokenizersBackend", "PreTrainedTokenizerFast", "GPT2TokenizerFast", "GPT2Tokenizer"})


def plain_tokenizer_file(hf_dir: Path) -> Path | None:
    """The folder's tokenizer.json when its tokenizer class adds nothing to it, else None."""
    file, config = hf_dir / "tokenizer.json", hf_dir / "tokenizer_config.json"
    if not file.is_file() or not config.is_file():
        return None
    try:
        settings = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    plain = settings.get("tokenizer_class") in PLAIN_CLASSES and not settings.get("auto_map")
    return file if plain else None


def text_encoder(hf_dir: str | Path) -> Callable[[str], list[int]]:
    """A function from text to the folder's token ids, without special tokens."""
    hf_dir = Path(hf_dir)
    file = plain_tokenizer_file(hf_dir)
    if file is not None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(file))
        return lambda text: tokenizer.encode(text, add_special_tokens=False).ids
    from transformers import AutoTokenizer

    auto = AutoTokenizer.from_pretrained(str(hf_dir))
    return lambda text: auto.encode(text, add_special_tokens=False)
