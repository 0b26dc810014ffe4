"""Stable LoRA task ids: a JSON file per adapters folder maps name -> (task id, content fingerprint).

The file is runtime state, so it lives in the cache folder (keyed by the adapters folder), not beside the
adapters; a `task_ids.json` an older version left in the adapters folder is moved there on first use.

An adapter keeps its id while its files are unchanged; new or changed adapters get the next id. Ids start
at 1 and are never reused, so a server never mixes up an old adapter's cached weights with a new one's.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from setup.lora.convert import CONFIG_FILE, FILE_MODE, PEFT_BIN, PEFT_CONFIG, PEFT_SAFETENSORS, WEIGHTS_FILE
from setup.paths import cache_dir

TASK_IDS_FILE = "task_ids.json"  # the name older versions used inside the adapters folder


def task_ids_path(adapters_folder: Path) -> Path:
    """The ids file of an adapters folder, in the cache; migrates a legacy file from the folder itself."""
    folder = Path(adapters_folder).resolve()
    key = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    target = cache_dir() / "task_ids" / f"{folder.name or 'root'}-{key}.json"
    legacy = folder / TASK_IDS_FILE
    if legacy.is_file() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(legacy.read_bytes())
        try:
            legacy.unlink()
        except OSError:  # a read-only adapters folder keeps its copy; the cache one is used from now on
            pass
    return target


def fingerprint(folder: Path, kind: str) -> str:
    """sha256 over the adapter's weight and config files ('peft' or 'converted' set of files)."""
    names = (PEFT_CONFIG, PEFT_SAFETENSORS, PEFT_BIN) if kind == "peft" else (WEIGHTS_FILE, CONFIG_FILE)
    digest = hashlib.sha256()
    for name in names:
        path = folder / name
        if path.is_file():
            digest.update(name.encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


class TaskIds:
    """name -> (task id, fingerprint), persisted as JSON; ids start at 1 and are never reused."""

    def __init__(self, path: Path):
        self.path = path
        self.next_id = 1
        self.entries: dict[str, dict] = {}
        self._load()

    def _load(self) -> None:
        try:
            raw = json.loads(self.path.read_text())
            self.entries = {k: v for k, v in raw.get("adapters", {}).items() if int(v.get("task_id", 0)) > 0}
            used = [int(v["task_id"]) for v in self.entries.values()]
            self.next_id = max([int(raw.get("next_id", 1)), *(i + 1 for i in used), 1])
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            self.entries, self.next_id = {}, 1

    def save(self) -> None:
        data = {"next_id": self.next_id, "adapters": dict(sorted(self.entries.items()))}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps(data, indent=2) + "\n")
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only adapters folder: ids stay stable for this process only

    def id_for(self, name: str, fingerprint: str) -> int:
        entry = self.entries.get(name)
        if entry is not None and entry.get("fingerprint") == fingerprint:
            return int(entry["task_id"])
        task_id, self.next_id = self.next_id, self.next_id + 1
        self.entries[name] = {"task_id": task_id, "fingerprint": fingerprint}
        self.save()
        return task_id

    def drop(self, name: str) -> None:
        if self.entries.pop(name, None) is not None:
            self.save()
