"""Training data for a LoRA adapter: JSONL of {"prompt", "response"} or chat {"messages": [...]}, or a list of
(prompt, response) pairs typed in a table. Read as text and JSON only (never unpickled); a file's size is counted
as its bytes are read, so a file larger than the limit is never read whole.

Imports: setup.lora.messages and setup.lora.train_settings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from setup.lora import messages as msg
from setup.lora.train_settings import TrainError, TrainLimits, default_limits

READ_BLOCK = 64 * 1024
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Example:
    """One training example: the conversation before the answer, and the answer the loss is taken on."""

    prompt: tuple[dict[str, str], ...]  # chat messages ({"role", "content"}), ending with a user message
    response: str

    @classmethod
    def from_pair(cls, prompt: str, response: str) -> Example:
        return cls(({"role": "user", "content": prompt},), response)


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def read_dataset_file(path: Path, limits: TrainLimits | None = None, shown: str | None = None) -> list[Example]:
    """Examples of a JSONL file; TrainError naming `shown` (default: the file's name) for the first problem."""
    limits = limits or default_limits()
    where = f"'{shown or Path(path).name}'"
    if not Path(path).is_file():
        raise TrainError(msg.MSG_DATASET_MISSING.format(where=where))
    chunks, total = [], 0
    try:
        with open(path, "rb") as handle:
            while block := handle.read(READ_BLOCK):
                total += len(block)
                if total > limits.max_dataset_bytes:
                    raise TrainError(msg.MSG_DATASET_TOO_BIG.format(where=where, limit=_size(limits.max_dataset_bytes)))
                chunks.append(block)
    except OSError as exc:
        raise TrainError(msg.MSG_DATASET_UNREADABLE.format(where=where, reason=exc.strerror or exc)) from None
    try:
        text = b"".join(chunks).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TrainError(msg.MSG_DATASET_NOT_TEXT.format(where=where)) from None
    return parse_jsonl(text, where, limits)


def _example(record: object) -> Example | None:
    """The example a JSONL record holds, or None when it has neither accepted shape."""
    if not isinstance(record, dict):
        return None
    prompt, response = record.get("prompt"), record.get("response")
    if isinstance(prompt, str) and isinstance(response, str) and prompt.strip() and response.strip():
        return Example.from_pair(prompt, response)
    turns = record.get("messages")
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    clean = []
    for turn in turns:
        if not isinstance(turn, dict) or turn.get("role") not in ROLES or not isinstance(turn.get("content"), str):
            return None
        clean.append({"role": turn["role"], "content": turn["content"]})
    if clean[-1]["role"] != "assistant" or clean[-2]["role"] != "user" or not clean[-1]["content"].strip():
        return None
    return Example(tuple(clean[:-1]), clean[-1]["content"])


def parse_jsonl(text: str, where: str = "the dataset", limits: TrainLimits | None = None) -> list[Example]:
    """Examples of JSONL text (blank lines skipped); TrainError naming the first bad line."""
    examples = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TrainError(msg.MSG_LINE_NOT_JSON.format(line=number, where=where, reason=exc.msg)) from None
        example = _example(record)
        if example is None:
            raise TrainError(msg.MSG_LINE_SHAPE.format(line=number, where=where))
        examples.append(example)
    return check_count(examples, limits)


def examples_from_pairs(rows: Iterable[Sequence[object]], limits: TrainLimits | None = None) -> list[Example]:
    """Examples of (prompt, response) rows, as a table sends them; empty rows are skipped."""
    examples = []
    for number, row in enumerate(rows, start=1):
        cells = [("" if cell is None else str(cell)).strip() for cell in list(row)[:2]]
        cells += [""] * (2 - len(cells))
        if not any(cells):
            continue
        if not all(cells):
            raise TrainError(msg.MSG_PAIR_HALF.format(row=number))
        examples.append(Example.from_pair(*cells))
    return check_count(examples, limits)


def check_count(examples: list[Example], limits: TrainLimits | None = None) -> list[Example]:
    """The examples when their number is within the limits; TrainError otherwise."""
    limits = limits or default_limits()
    if len(examples) < limits.min_pairs:
        raise TrainError(msg.MSG_TOO_FEW_PAIRS.format(count=len(examples), limit=limits.min_pairs))
    if len(examples) > limits.max_pairs:
        raise TrainError(msg.MSG_TOO_MANY_PAIRS.format(count=len(examples), limit=limits.max_pairs))
    return examples
