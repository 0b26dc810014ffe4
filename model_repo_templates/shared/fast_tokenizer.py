"""The tokenizer the pre/postprocessing models load: a plain tokenizer.json read with the `tokenizers` library alone,
else transformers' AutoTokenizer.

Importing transformers and loading a tokenizer costs about 2.3 CPU s per stub process (0.2 with `tokenizers`), and
every server start loads two. A folder is plain when its tokenizer_config.json names a class that is tokenizer.json
and nothing more, holds no setting beyond PLAIN_SETTINGS, and each named special token is a special added token of
tokenizer.json: AutoTokenizer then changes nothing in the file's tokenizer, and PlainTokenizer gives what it gives for
what these models use (ids, tokens, text, the special tokens; tests/unit/templates/test_fast_tokenizer.py compares).
Any other folder keeps AutoTokenizer.

Copied by the repository writer into each model's 1/ folder that lists it under `shared` (template.yaml).
"""

import json
from pathlib import Path

PLAIN_CLASSES = frozenset({"TokenizersBackend", "PreTrainedTokenizerFast"})
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
# settings that change nothing these models use (clean_up_tokenization_spaces only when false: see plain_tokenizer)
PLAIN_SETTINGS = frozenset({"tokenizer_class", "backend", "model_max_length", "is_local", "local_files_only",
                            "clean_up_tokenization_spaces", "chat_template", *SPECIAL_TOKENS})


def _token_text(value):
    return value.get("content") if isinstance(value, dict) else value


def plain_tokenizer(folder: Path):
    """The folder's tokenizer as a PlainTokenizer when it is plain, else None. tokenizer.json is read once: its added
    tokens are asked of the loaded tokenizer (parsing the file as JSON too cost 0.13 CPU s, more than half the load)."""
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (config.get("tokenizer_class") not in PLAIN_CLASSES or set(config) - PLAIN_SETTINGS
            or config.get("clean_up_tokenization_spaces")):
        return None
    named = {name: _token_text(config[name]) for name in SPECIAL_TOKENS if config.get(name) is not None}
    if not all(isinstance(text, str) for text in named.values()):
        return None
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception:  # noqa: BLE001 - no or no readable tokenizer.json: AutoTokenizer then says what is wrong
        return None
    special = {token.content for token in tokenizer.get_added_tokens_decoder().values() if token.special}
    if not all(text in special for text in named.values()):
        return None
    return PlainTokenizer(tokenizer, named)


class PlainTokenizer:
    """The part of a transformers tokenizer the pre/postprocessing models use, over a `tokenizers.Tokenizer`."""

    def __init__(self, tokenizer, named: dict) -> None:
        self._tokenizer = tokenizer
        self._tokenizer.no_truncation()  # as transformers encodes without truncation or padding unless asked
        self._tokenizer.no_padding()
        for name in SPECIAL_TOKENS:
            setattr(self, name, named.get(name))

    def _id(self, text):
        return None if text is None else self._tokenizer.token_to_id(text)

    @property
    def bos_token_id(self):
        return self._id(self.bos_token)

    @property
    def eos_token_id(self):
        return self._id(self.eos_token)

    @property
    def pad_token_id(self):
        return self._id(self.pad_token)

    @property
    def unk_token_id(self):
        return self._id(self.unk_token)

    @property
    def all_special_ids(self) -> list[int]:
        texts = dict.fromkeys(getattr(self, name) for name in SPECIAL_TOKENS if getattr(self, name) is not None)
        return [self._id(text) for text in texts]

    def __len__(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self._tokenizer.id_to_token(ids)
        return [self._tokenizer.id_to_token(int(i)) for i in ids]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        ids = [int(ids)] if isinstance(ids, int) else [int(i) for i in ids]
        return self._tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)


def load_tokenizer(folder, **auto_settings):
    """The folder's tokenizer: PlainTokenizer when it is plain, else AutoTokenizer.from_pretrained(folder,
    **auto_settings) (a model that imports tokenizer_only first loads it without PyTorch)."""
    plain = plain_tokenizer(Path(folder))
    if plain is not None:
        return plain
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), **auto_settings)
