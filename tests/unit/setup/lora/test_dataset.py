"""Training data (setup/lora/dataset.py): JSONL pairs or chats, table rows, and one sentence per refusal."""

from __future__ import annotations

import json

import pytest

from setup.lora.dataset import Example, examples_from_pairs, parse_jsonl, read_dataset_file
from setup.lora.train_settings import TrainError, default_limits


def test_jsonl_pairs_and_chats():
    text = "\n".join([
        json.dumps({"prompt": "Hi?", "response": "Arr!"}),
        "",
        json.dumps({"messages": [{"role": "system", "content": "Be a pirate."}, {"role": "user", "content": "Sky?"},
                                 {"role": "assistant", "content": "Blue, matey."}]}),
    ])
    first, second = parse_jsonl(text)
    assert first == Example.from_pair("Hi?", "Arr!")
    assert second.prompt[-1] == {"role": "user", "content": "Sky?"} and second.response == "Blue, matey."


@pytest.mark.parametrize(("line", "expected"), [
    ("{not json", "Line 2 of the dataset is not JSON"),
    ('["a", "b"]', 'Line 2 of the dataset needs "prompt" and "response" text'),
    ('{"prompt": "a", "response": ""}', "Line 2 of the dataset needs"),
    ('{"messages": [{"role": "user", "content": "a"}]}', "Line 2 of the dataset needs"),
    ('{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}', "Line 2"),
    ('{"messages": [{"role": "pirate", "content": "a"}, {"role": "assistant", "content": "b"}]}', "Line 2"),
])
def test_bad_lines_are_named(line, expected):
    with pytest.raises(TrainError, match=expected):
        parse_jsonl(json.dumps({"prompt": "ok", "response": "ok"}) + "\n" + line)


def test_table_rows_skip_empty_ones_and_refuse_half_pairs():
    assert examples_from_pairs([["Hi?", "Arr!"], ["", ""], [None, None]]) == [Example.from_pair("Hi?", "Arr!")]
    with pytest.raises(TrainError, match="Pair 2 has a prompt or a response but not both"):
        examples_from_pairs([["Hi?", "Arr!"], ["Only a prompt", ""]])
    with pytest.raises(TrainError, match="The dataset holds 0 pair"):
        examples_from_pairs([["", ""]])
    with pytest.raises(TrainError, match="holds 65 pairs; the limit is 64"):
        examples_from_pairs([["q", "a"]] * 65)


def test_file_size_is_counted_while_reading(tmp_path):
    path = tmp_path / "big.jsonl"
    line = json.dumps({"prompt": "q" * 1000, "response": "a"}) + "\n"
    path.write_text(line * (default_limits().max_dataset_bytes // len(line) + 1))
    with pytest.raises(TrainError, match="The dataset 'big.jsonl' is larger than the 1.0 MiB limit"):
        read_dataset_file(path)
    path.write_bytes(b"\xff\xfe\x00 not utf-8")
    with pytest.raises(TrainError, match="is not UTF-8 text"):
        read_dataset_file(path, shown="upload.jsonl")
    with pytest.raises(TrainError, match="does not exist"):
        read_dataset_file(tmp_path / "none.jsonl")
