"""app/adapters/task_ids.py: where an adapters folder's ids file lives, the content fingerprint of an adapter,
and ids that start at 1, stay while the files stay, and are never reused (real files in tmp_path)."""

from __future__ import annotations

import json
import stat

import pytest

from app.adapters.task_ids import TASK_IDS_FILE, TaskIds, fingerprint, task_ids_path
from setup.lora.convert import CONFIG_FILE, PEFT_BIN, PEFT_CONFIG, PEFT_SAFETENSORS, WEIGHTS_FILE


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(root))
    return root


# ----- the ids file -----

def test_the_ids_file_is_in_the_cache_and_one_per_folder(tmp_path, cache, monkeypatch):
    a, b = tmp_path / "one" / "adapters", tmp_path / "two" / "adapters"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    path_a, path_b = task_ids_path(a), task_ids_path(b)
    assert path_a.parent == cache / "task_ids" and path_a.name.startswith("adapters-")
    assert path_a != path_b  # same folder name, different folders
    monkeypatch.chdir(tmp_path / "one")
    assert task_ids_path("adapters") == path_a  # a relative spelling of the same folder
    (tmp_path / "link").symlink_to(a)
    assert task_ids_path(tmp_path / "link") == path_a  # resolved through symlinks


def test_a_legacy_file_is_not_moved_over_an_existing_cache_file(tmp_path):
    folder = tmp_path / "adapters"
    folder.mkdir()
    target = task_ids_path(folder)
    target.parent.mkdir(parents=True)
    target.write_text('{"next_id": 5, "adapters": {}}')
    (folder / TASK_IDS_FILE).write_text('{"next_id": 2, "adapters": {}}')
    assert task_ids_path(folder) == target
    assert json.loads(target.read_text())["next_id"] == 5
    assert (folder / TASK_IDS_FILE).exists()  # left alone


# ----- fingerprints -----

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


# ----- ids -----

def test_ids_start_at_one_stay_for_unchanged_files_and_persist(tmp_path):
    path = tmp_path / "ids.json"
    ids = TaskIds(path)
    assert ids.id_for("alpha", "f1") == 1 and ids.id_for("beta", "f2") == 2
    assert ids.id_for("alpha", "f1") == 1
    again = TaskIds(path)
    assert again.id_for("beta", "f2") == 2 and again.id_for("gamma", "f3") == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert list(json.loads(path.read_text())["adapters"]) == ["alpha", "beta", "gamma"]  # sorted


def test_changed_or_dropped_adapters_never_get_an_old_id_back(tmp_path):
    path = tmp_path / "ids.json"
    ids = TaskIds(path)
    assert ids.id_for("alpha", "f1") == 1
    assert ids.id_for("alpha", "f1-changed") == 2
    ids.drop("alpha")
    assert "alpha" not in TaskIds(path).entries
    assert TaskIds(path).id_for("alpha", "f1") == 3


def test_a_damaged_ids_file_starts_over_and_is_rewritten(tmp_path):
    path = tmp_path / "ids.json"
    for damaged in ("not json", "[1, 2]", '{"next_id": "x", "adapters": {}}', '{"adapters": {"a": 5}}'):
        path.write_text(damaged)
        ids = TaskIds(path)
        assert ids.id_for("alpha", "f") == 1, damaged
        assert json.loads(path.read_text())["next_id"] == 2


def test_ids_continue_after_the_highest_one_in_use(tmp_path):
    path = tmp_path / "ids.json"
    path.write_text(json.dumps({"next_id": 2, "adapters": {
        "old": {"task_id": 7, "fingerprint": "f"}, "zero": {"task_id": 0, "fingerprint": "z"}}}))
    ids = TaskIds(path)
    assert "zero" not in ids.entries  # 0 is no task id (the server takes it for 'no adapter')
    assert ids.id_for("old", "f") == 7 and ids.id_for("new", "n") == 8


def test_ids_stay_stable_in_memory_when_the_file_cannot_be_written(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    ids = TaskIds(blocker / "ids.json")
    assert ids.id_for("alpha", "f") == 1 and ids.id_for("alpha", "f") == 1 and ids.id_for("beta", "g") == 2
    ids.drop("alpha")  # saving fails quietly
    assert ids.id_for("alpha", "f") == 3
