"""What the planner reads from disk: checkpoint config.json facts, sizes, and LoRA adapters."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from setup.catalog.messages import MSG_LORA_BAD_CONFIG, MSG_LORA_EMPTY
from setup.shipped import shipped_yaml

HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")
NESTED_KEYS = ("text_config", "llm_config", "language_config", "decoder")
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


def read_config(checkpoint: Path) -> dict | None:
    """The checkpoint's config.json, or None when it is absent or unreadable."""
    try:
        data = json.loads((Path(checkpoint) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _lookup(config: dict, keys: tuple[str, ...]) -> int | None:
    for where in (config, *(config.get(k) for k in NESTED_KEYS)):
        if isinstance(where, dict):
            for key in keys:
                if isinstance(where.get(key), int):
                    return where[key]
    return None


def head_count(config: dict | None) -> int | None:
    """Attention heads of the language model (top level or text_config/llm_config)."""
    return _lookup(config, HEAD_KEYS) if config else None


def hidden_size(config: dict | None) -> int | None:
    return _lookup(config, HIDDEN_KEYS) if config else None


def tree_size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@cache
def lora_module_map() -> dict[str, str]:
    return shipped_yaml("lora_modules.yaml")


@dataclass(frozen=True)
class Adapter:
    """One PEFT adapter folder."""

    name: str
    path: Path
    rank: int
    target_modules: tuple[str, ...]
    weight_bytes: int

    @property
    def trt_modules(self) -> tuple[str, ...]:
        mapping = lora_module_map()
        return tuple(sorted({mapping[m] for m in self.target_modules if m in mapping}))


def target_modules(value: object) -> list[str]:
    """PEFT's target_modules as module names: a list as it is; a string is a regular expression PEFT
    matches against whole module paths (model.layers.0.self_attn.q_proj), so it is matched against each
    known module name at its usual places (and, leniently, against the bare name)."""
    if not value:
        return []
    if not isinstance(value, str):
        return [str(m) for m in value]
    pattern = re.compile(value)
    places = ("{}", "model.layers.0.self_attn.{}", "model.layers.0.mlp.{}", "model.layers.0.{}")
    return [name for name in lora_module_map() if any(pattern.fullmatch(p.format(name)) for p in places)]


def scan_adapters(folder: Path) -> tuple[list[Adapter], list[str]]:
    """Adapters in `folder` (the folder itself, or its direct subfolders); plus problems found."""
    folder = Path(folder)
    candidates = [folder] if (folder / "adapter_config.json").is_file() else sorted(
        p for p in folder.iterdir() if p.is_dir() and (p / "adapter_config.json").is_file())
    adapters, problems = [], []
    for path in candidates:
        try:
            raw = json.loads((path / "adapter_config.json").read_text())
            rank = raw["r"]
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
                raise ValueError(f"r is {rank!r}, not a positive whole number")
            modules = target_modules(raw.get("target_modules"))
        except (OSError, ValueError, KeyError, TypeError, re.error) as exc:
            problems.append(MSG_LORA_BAD_CONFIG.format(path=path, reason=exc))
            continue
        weights = sum((path / w).stat().st_size for w in ADAPTER_WEIGHTS if (path / w).is_file())
        adapters.append(Adapter(path.name, path, rank, tuple(modules), weights))
    if not candidates:
        problems.append(MSG_LORA_EMPTY.format(path=folder))
    return adapters, problems
