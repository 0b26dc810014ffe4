"""Prompt sets: a JSONL file of prompts, one object per line ({"prompt": "...", "images": ["a.png"]}), with an
optional zip holding the pictures they name. Every fault names the file and the line."""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from app.arena.messages import (
    MSG_SET_BAD_IMAGES,
    MSG_SET_BAD_ZIP,
    MSG_SET_EMPTY,
    MSG_SET_LINE,
    MSG_SET_MISSING_PICTURE,
    MSG_SET_NAME,
    MSG_SET_NO_PROMPT,
    MSG_SET_NOT_JSON,
    MSG_SET_TOO_BIG,
    MSG_SET_TOO_MANY,
)
from app.core.errors import InvalidRequest

MAX_PROMPTS = 1000
MAX_FILE_MB = 50  # the JSONL, the zip, and the pictures the zip holds once unpacked
SET_NAME = re.compile(r"[A-Za-z0-9 _\-]{1,80}")


@dataclass(frozen=True)
class SetPrompt:
    text: str
    pictures: tuple[str, ...] = ()


@dataclass(frozen=True)
class PromptSet:
    """A parsed set: its prompts in order and the pictures they name (name -> bytes)."""

    name: str
    prompts: tuple[SetPrompt, ...]
    pictures: dict[str, bytes] = field(default_factory=dict)


def check_name(value: object) -> str:
    text = str(value or "").strip()
    if not SET_NAME.fullmatch(text):
        raise InvalidRequest(MSG_SET_NAME.format(value=value))
    return text


def _size_ok(path: Path) -> None:
    if path.stat().st_size > MAX_FILE_MB * 2**20:
        raise InvalidRequest(MSG_SET_TOO_BIG.format(name=path.name, limit_mb=MAX_FILE_MB))


def read_zip(path: Path) -> dict[str, bytes]:
    """The files of the zip by name (and by base name), within MAX_FILE_MB unpacked."""
    _size_ok(path)
    try:
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            if sum(m.file_size for m in members) > MAX_FILE_MB * 2**20:
                raise InvalidRequest(MSG_SET_TOO_BIG.format(name=path.name, limit_mb=MAX_FILE_MB))
            files = {m.filename: archive.read(m) for m in members}
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidRequest(MSG_SET_BAD_ZIP.format(name=path.name, detail=exc)) from None
    return {**{Path(n).name: data for n, data in files.items()}, **files}


def parse_line(line: str, pictures: dict[str, bytes]) -> SetPrompt:
    """One JSONL line as a prompt; InvalidRequest with what is wrong (the caller adds the line number)."""
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(MSG_SET_NOT_JSON.format(detail=exc.msg)) from None
    if not isinstance(item, dict):
        raise InvalidRequest(MSG_SET_NOT_JSON.format(detail=type(item).__name__))
    text = item.get("prompt")
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest(MSG_SET_NO_PROMPT)
    names = item.get("images", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise InvalidRequest(MSG_SET_BAD_IMAGES)
    for name in names:
        if name not in pictures:
            raise InvalidRequest(MSG_SET_MISSING_PICTURE.format(picture=name))
    return SetPrompt(text.strip(), tuple(names))


def read_prompt_set(name: str, jsonl: Path, zip_path: Path | None = None) -> PromptSet:
    """The set in `jsonl` (pictures from `zip_path`); InvalidRequest naming the file and line of the first fault."""
    name = check_name(name)
    _size_ok(jsonl)
    files = read_zip(zip_path) if zip_path else {}
    prompts = []
    for number, line in enumerate(jsonl.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            prompts.append(parse_line(line, files))
        except InvalidRequest as exc:
            raise InvalidRequest(MSG_SET_LINE.format(name=jsonl.name, line=number, detail=exc)) from None
        if len(prompts) > MAX_PROMPTS:
            raise InvalidRequest(MSG_SET_TOO_MANY.format(name=jsonl.name, limit=MAX_PROMPTS))
    if not prompts:
        raise InvalidRequest(MSG_SET_EMPTY.format(name=jsonl.name))
    used = {p for prompt in prompts for p in prompt.pictures}
    return PromptSet(name, tuple(prompts), {p: files[p] for p in sorted(used)})
