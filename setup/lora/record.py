"""The training pairs an adapter was trained on, kept beside it (`training_pairs.json`), so the adapter-applied check
can probe the adapter with its own prompts and recognise its own answers.

Only the last user message of each example and its answer are kept, the first MAX_RECORDED of them. Reading is
forgiving: a missing or damaged file means "no record" (the check then uses its fixed probe).

Imports: setup.lora.dataset.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from setup.lora.dataset import Example

RECORD_FILE = "training_pairs.json"
MAX_RECORDED = 16
MAX_RECORD_BYTES = 256 * 1024  # a bigger file is not read (it was not written by this module)


@dataclass(frozen=True)
class TrainingPair:
    """One recorded pair: the user's last message and the answer the adapter was trained to give."""

    prompt: str
    response: str


def last_user_text(example: Example) -> str:
    """The content of the example's last user message ("" when it has none)."""
    return next((turn["content"] for turn in reversed(example.prompt) if turn.get("role") == "user"), "")


def record_pairs(examples: Sequence[Example]) -> list[TrainingPair]:
    """The pairs to keep: the first MAX_RECORDED examples that have a user message."""
    pairs = [TrainingPair(last_user_text(e).strip(), e.response.strip()) for e in examples]
    return [p for p in pairs if p.prompt and p.response][:MAX_RECORDED]


def write_record(folder: Path, examples: Sequence[Example]) -> None:
    """Write RECORD_FILE into `folder` (an adapter folder being staged)."""
    data = {"pairs": [{"prompt": p.prompt, "response": p.response} for p in record_pairs(examples)]}
    (Path(folder) / RECORD_FILE).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_record(folder: Path) -> tuple[TrainingPair, ...]:
    """The pairs recorded in `folder`; () when there is no readable record."""
    path = Path(folder) / RECORD_FILE
    try:
        if not path.is_file() or path.stat().st_size > MAX_RECORD_BYTES:
            return ()
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return ()
    rows = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return ()
    pairs = [TrainingPair(row["prompt"], row["response"]) for row in rows
             if isinstance(row, dict) and isinstance(row.get("prompt"), str) and isinstance(row.get("response"), str)
             and row["prompt"].strip() and row["response"].strip()]
    return tuple(pairs[:MAX_RECORDED])
