"""LoRA task ids from adapter content: the id is 52 bits of the sha256 over the adapter's weight and config files.

A server's LoRA cache is keyed by task id for every client it has: two apps with their own adapters folders, a
CLI run and the app, or an app before and after a restart. An id derived from the files means the same weights
get the same id everywhere, and different weights never share one, so no client can be answered with another
client's adapter. 52 bits keep the id exact in JSON read by a browser (2**53) and far from the backend's UINT64
limit; 0 is never used (the backends take it for "no adapter").
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from setup.lora.convert import CONFIG_FILE, PEFT_BIN, PEFT_CONFIG, PEFT_SAFETENSORS, WEIGHTS_FILE

ID_HEX_DIGITS = 13  # 52 bits


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


def task_id_of(fingerprint_hex: str) -> int:
    """The task id for a fingerprint: its first 52 bits, and 1 in the one case they are all zero."""
    return int(fingerprint_hex[:ID_HEX_DIGITS], 16) or 1
