"""model_repo_templates/shared/fast_tokenizer.py: a plain tokenizer folder is read with the `tokenizers` library alone
and gives what transformers' AutoTokenizer gives for everything the pre/postprocessing models use; any other folder
keeps AutoTokenizer."""

from __future__ import annotations

import json
import random
import types

import pytest

from setup.repo.writer import load_template
from tests.template_models import load_shared_helper, load_template_model
from tests.tokenizer_folders import tokenizer_copy

TEXTS = ["What is the capital of France?", "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
         "  two  spaces ", "Text: \"OPEN DAILY 9-17\" — café, naïve, 東京, 🙂", "tab\tand\r\n", "", " a",
         "<|endoftext|><image>\n[Image: a cat]", "ends with a marker <|im_end|>"]


@pytest.fixture(scope="module")
def fast():
    return load_shared_helper("fast_tokenizer.py", types.ModuleType("triton_python_backend_utils"))


@pytest.fixture(scope="module")
def reference(cpu_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(cpu_model_dir)


def test_the_demo_models_tokenizer_is_plain_and_read_without_transformers(fast, cpu_model_dir):
    tokenizer = fast.load_tokenizer(cpu_model_dir, padding_side="left")
    assert isinstance(tokenizer, fast.PlainTokenizer)


def test_it_gives_what_autotokenizer_gives(fast, cpu_model_dir, reference):
    plain = fast.load_tokenizer(cpu_model_dir)
    for name in ("bos_token", "eos_token", "pad_token", "unk_token", "bos_token_id", "eos_token_id", "pad_token_id"):
        assert getattr(plain, name) == getattr(reference, name), name
    assert len(plain) == len(reference) and plain.all_special_ids == reference.all_special_ids
    for text in TEXTS:
        for special in (True, False):
            assert plain.encode(text, add_special_tokens=special) == reference.encode(
                text, add_special_tokens=special), (text, special)
    every_id = list(range(len(reference) + 2))  # two past the end: None, as transformers gives
    assert plain.convert_ids_to_tokens(every_id) == reference.convert_ids_to_tokens(every_id)
    draw = random.Random(7)
    for _ in range(200):
        ids = [draw.randrange(len(reference)) for _ in range(draw.randrange(1, 12))] + draw.sample(range(17), 2)
        for skip in (True, False):
            assert plain.decode(ids, skip_special_tokens=skip) == reference.decode(ids, skip_special_tokens=skip)
    assert plain.decode(plain.encode(TEXTS[3])) == TEXTS[3]


def test_the_detokenizers_byte_table_is_the_same(cpu_model_dir, reference, fast):
    """postprocessing's token_byte_table over either tokenizer (the CPU demo sets token_bytes)."""
    post = load_template_model("inflight_batcher_llm/postprocessing/1/model.py",
                               types.ModuleType("triton_python_backend_utils"), name="postprocessing_under_test")
    plain = fast.load_tokenizer(cpu_model_dir)
    for skip in (True, False):
        assert post.token_byte_table(plain, skip) == post.token_byte_table(reference, skip)


@pytest.mark.parametrize("settings", [
    {"auto_map": {"AutoTokenizer": ["tok.MyTokenizer", None]}},  # code of its own
    {"tokenizer_class": "LlamaTokenizerFast"},  # a class that changes the tokenizer it loads
    {"add_bos_token": True},  # transformers would rewrite the post-processor
    {"clean_up_tokenization_spaces": True},  # decode would change the text after the tokenizer
    {"additional_special_tokens": ["<repo_name>"]},  # special tokens beyond the named ones
    {"eos_token": "</s>"},  # a named special token tokenizer.json does not hold as special
], ids=["auto_map", "class", "add_bos_token", "clean_up", "more_special", "unknown_eos"])
def test_any_other_folder_keeps_autotokenizer(fast, cpu_model_dir, tmp_path, settings):
    folder = tokenizer_copy(cpu_model_dir, tmp_path, **settings)
    assert fast.plain_tokenizer(folder) is None
    if "auto_map" not in settings:  # its code does not exist here
        assert not isinstance(fast.load_tokenizer(folder), fast.PlainTokenizer)


def test_a_folder_without_tokenizer_json_is_not_plain(fast, tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    assert fast.plain_tokenizer(tmp_path) is None


def test_the_writer_copies_it_beside_both_tokenizer_models():
    shared = load_template("inflight_batcher_llm").shared
    assert "fast_tokenizer.py" in shared["preprocessing"] and "fast_tokenizer.py" in shared["postprocessing"]
