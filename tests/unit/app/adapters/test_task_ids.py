"""app/adapters/task_ids.py: the content fingerprint of an adapter and the task id taken from it (real files in
tmp_path)."""

from __future__ import annotations

from app.adapters.task_ids import fingerprint, task_id_of
from setup.lora.convert import CONFIG_FILE, PEFT_BIN, PEFT_CONFIG, PEFT_SAFETENSORS, WEIGHTS_FILE


def write(folder, files: dict[str, bytes]):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_fingerprint_follows_the_files_of_its_kind(tmp_path):
    peft = write(tmp_path / "p", {PEFT_CONFIG: b"{}", PEFT_SAFETENSORS: b"w1", "README.md": b"x"})
    before = fingerprint(peft, "peft")
    (peft / "README.md").write_bytes(b"changed")
    (peft / WEIGHTS_FILE).write_bytes(b"converted files are not part of a peft adapter")
    assert fingerprint(peft, "peft") == before
    (peft / PEFT_SAFETENSORS).write_bytes(b"w2")
    assert fingerprint(peft, "peft") != before
    with_bin = fingerprint(peft, "peft")
    (peft / PEFT_BIN).write_bytes(b"b")
    assert fingerprint(peft, "peft") != with_bin

    converted = write(tmp_path / "c", {WEIGHTS_FILE: b"w", CONFIG_FILE: b"c"})
    first = fingerprint(converted, "converted")
    (converted / CONFIG_FILE).write_bytes(b"c2")
    assert fingerprint(converted, "converted") != first


def test_fingerprint_counts_which_file_holds_the_bytes(tmp_path):
    one = write(tmp_path / "a", {PEFT_SAFETENSORS: b"same"})
    other = write(tmp_path / "b", {PEFT_BIN: b"same"})
    assert fingerprint(one, "peft") != fingerprint(other, "peft")
    assert fingerprint(write(tmp_path / "c", {PEFT_SAFETENSORS: b"same"}), "peft") == fingerprint(one, "peft")


def test_the_task_id_is_the_first_52_bits_and_never_zero():
    assert task_id_of("f" * 64) == 2 ** 52 - 1
    assert task_id_of("0000000000001" + "f" * 51) == 1
    assert task_id_of("0" * 13 + "a" * 51) == 1  # 0 means "no adapter" to the backends
    assert task_id_of("abc" + "0" * 61) == 0xABC << 40
