"""The training pairs kept beside an adapter the app trained (setup/lora/record.py): the last user message and the
answer of the first few examples, read back forgivingly (no record rather than an error)."""

from __future__ import annotations

import json

from setup.lora.dataset import Example
from setup.lora.record import MAX_RECORDED, RECORD_FILE, TrainingPair, read_record, write_record


def test_the_last_user_message_and_the_answer_of_the_first_examples_are_kept(tmp_path):
    chat = Example(({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"},
                    {"role": "assistant", "content": "Arr."}, {"role": "user", "content": " Again? "}), "Arr! ")
    pairs = [Example.from_pair(f"Say {n}.", f"{n}!") for n in range(MAX_RECORDED + 4)]
    write_record(tmp_path, [chat, *pairs])
    record = read_record(tmp_path)
    assert record[0] == TrainingPair("Again?", "Arr!") and len(record) == MAX_RECORDED
    assert record[1:] == tuple(TrainingPair(f"Say {n}.", f"{n}!") for n in range(MAX_RECORDED - 1))


def test_no_record_or_a_damaged_one_reads_as_none(tmp_path):
    assert read_record(tmp_path) == ()
    path = tmp_path / RECORD_FILE
    for text in ("not json", "[1, 2]", '{"pairs": "x"}', b"\xff\xfe".decode("latin-1")):
        path.write_text(text)
        assert read_record(tmp_path) == (), text
    path.write_text(json.dumps({"pairs": [{"prompt": "Hi", "response": "Yo"}, {"prompt": 3, "response": "x"},
                                          {"prompt": " ", "response": "blank"}, "row"]}))
    assert read_record(tmp_path) == (TrainingPair("Hi", "Yo"),)
