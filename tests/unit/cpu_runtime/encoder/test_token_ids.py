"""The encoder's text ids (cpu_runtime/encoder/token_ids.py): the `tokenizers` library alone for a plain tokenizer
folder, id for id what transformers' AutoTokenizer gives; AutoTokenizer for any other folder."""

from __future__ import annotations

import shutil

import pytest

from cpu_runtime.encoder import token_ids
from tests.tokenizer_folders import tokenizer_copy

TEXTS = ["[Image text: The secret code is 4711]", "\n", "[Image 2: It shows a cat (a tabby).]", "  two  spaces ",
         "Text: \"OPEN DAILY 9-17\" — café, naïve, 東京, 🙂", "<|im_end|> ends a turn<|im_start|>user\n", "tab\tand\r\n"]


@pytest.fixture(scope="module")
def reference(cpu_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(cpu_model_dir)


def test_the_demo_model_is_read_without_transformers_and_gives_its_ids(cpu_model_dir, reference):
    assert token_ids.plain_tokenizer_file(cpu_model_dir) == cpu_model_dir / "tokenizer.json"
    encode = token_ids.text_encoder(cpu_model_dir)
    for text in TEXTS:
        assert encode(text) == reference.encode(text, add_special_tokens=False), text


def test_a_tokenizer_class_of_its_own_keeps_autotokenizer(cpu_model_dir, reference, tmp_path):
    remote = tokenizer_copy(cpu_model_dir, tmp_path, auto_map={"AutoTokenizer": ["tok.MyTokenizer", None]})
    assert token_ids.plain_tokenizer_file(remote) is None
    llama = tokenizer_copy(cpu_model_dir, tmp_path, tokenizer_class="LlamaTokenizerFast")
    assert token_ids.plain_tokenizer_file(llama) is None
    assert token_ids.text_encoder(llama)(TEXTS[0]) == reference.encode(TEXTS[0], add_special_tokens=False)


def test_a_folder_without_its_config_keeps_autotokenizer(cpu_model_dir, tmp_path):
    shutil.copy(cpu_model_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    assert token_ids.plain_tokenizer_file(tmp_path) is None
    (tmp_path / "tokenizer_config.json").write_text("{not json")
    assert token_ids.plain_tokenizer_file(tmp_path) is None
