"""A copy of a tokenizer folder with changed tokenizer_config.json settings, for the tests of which folders count as
plain tokenizers. Only the test suite imports this module; it imports nothing of the app."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def tokenizer_copy(source: Path, folder: Path, **settings) -> Path:
    """`folder` holding `source`'s tokenizer.json and its tokenizer_config.json updated with `settings`."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, folder / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, **settings}))
    return folder
