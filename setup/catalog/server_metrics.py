"""What OpenAI-compatible servers' own metrics say of their LoRA adapters (setup/data/server_lora_metrics.yaml), with
the release each fact was read at."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from setup.paths import DATA_DIR
from setup.shipped import shipped_yaml

METRICS_FILE = DATA_DIR / "server_lora_metrics.yaml"


@dataclass(frozen=True)
class LoraMetricNames:
    """A server's LoRA gauge: its name and the labels holding running and waiting adapters and the batch limit."""

    server: str
    release: str
    verified_at_tag: bool
    endpoint: str
    metric: str
    running: str
    waiting: str
    max_loras: str
    separator: str


@dataclass(frozen=True)
class NoLoraMetrics:
    """A server whose metrics give no LoRA figures, and what that was read from."""

    server: str
    release: str
    verified_at_tag: bool
    read: tuple[str, ...]


@cache
def _facts() -> dict:
    return shipped_yaml(METRICS_FILE.name)


def vllm_lora_metric() -> LoraMetricNames:
    raw = _facts()["vllm"]
    labels = raw["labels"]
    return LoraMetricNames(server="vLLM", release=str(raw["release"]), verified_at_tag=bool(raw["verified_at_tag"]),
                           endpoint=raw["endpoint"], metric=raw["metric"], running=labels["running"],
                           waiting=labels["waiting"], max_loras=labels["max_loras"], separator=raw["separator"])


def trtllm_serve_metrics() -> NoLoraMetrics:
    raw = _facts()["trtllm-serve"]
    return NoLoraMetrics(server="trtllm-serve", release=str(raw["release"]),
                         verified_at_tag=bool(raw["verified_at_tag"]), read=tuple(raw["read"]))
