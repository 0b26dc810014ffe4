"""What the Triton `llmapi` model of each TensorRT-LLM release serves (setup/data/llmapi_releases.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from setup.catalog.messages import MSG_RELEASE
from setup.paths import DATA_DIR
from setup.shipped import shipped_yaml

RELEASES_FILE = DATA_DIR / "llmapi_releases.yaml"
FEATURES = {"text": "text", "stop": "Stop by request id", "lora_by_path": "LoRA by path",
            "image_url": "images (image_url)", "perf_outputs": "KV-cache and timing outputs",
            "multi_instance": "several instances (gpu_device_ids)"}


@dataclass(frozen=True)
class LlmApiModelRelease:
    """One release's llmapi model: features, tensor edits from our template, where its code lives."""

    key: str
    label: str
    checked_against: str | None  # facts under tests/data/upstream/<tag>/llmapi.yaml; None: config from a checkout
    code_repository: str
    model_code: str
    serves: dict[str, bool]
    rename_inputs: dict[str, str]
    drop_inputs: tuple[str, ...]
    drop_outputs: tuple[str, ...]
    triton_config_keys: tuple[str, ...]
    config_from_checkout: bool = False
    commit: str | None = None  # the TensorRT-LLM commit of the release (tensorrtllm_backend's submodule)
    sources: tuple[str, ...] = ()  # what the row's facts were read from, and what could not be read

    def has(self, feature: str) -> bool:
        return bool(self.serves.get(feature))

    def summary(self) -> str:
        """'text, LoRA by path, ...' (what this release serves), for the release picker and plans."""
        served = [FEATURES[name] for name in FEATURES if self.has(name)]
        missing = [FEATURES[name] for name in FEATURES if not self.has(name)]
        return ", ".join(served) + (f"; not: {', '.join(missing)}" if missing else "")


@cache
def llmapi_releases() -> dict[str, LlmApiModelRelease]:
    raw = shipped_yaml(RELEASES_FILE.name)
    return {str(key): LlmApiModelRelease(
        key=str(key), label=entry["label"], checked_against=entry["checked_against"],
        code_repository=entry["code_repository"], model_code=entry["model_code"], serves=dict(entry["serves"]),
        rename_inputs=dict(entry.get("rename_inputs") or {}), drop_inputs=tuple(entry.get("drop_inputs") or ()),
        drop_outputs=tuple(entry.get("drop_outputs") or ()),
        triton_config_keys=tuple(entry["triton_config_keys"]),
        config_from_checkout=bool(entry.get("config_from_checkout")), commit=entry.get("commit"),
        sources=tuple(entry.get("sources") or ())) for key, entry in raw.items()}


def resolve_llmapi_release(version: str | None) -> LlmApiModelRelease:
    """'1.3', '1.3.0rc4', 'v0.19.0' -> the recorded release; ValueError with a plain sentence otherwise."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:rc\d+)?(?:\.post\d+)?", str(version or "").strip())
    key = f"{int(match.group(1))}.{int(match.group(2))}" if match else None
    if key not in llmapi_releases():
        raise ValueError(MSG_RELEASE.format(choices=", ".join(llmapi_releases()), version=version))
    return llmapi_releases()[key]


LATEST = "1.3"
