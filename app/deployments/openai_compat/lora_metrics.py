"""A server's own LoRA figures from its Prometheus text: vLLM's `vllm:lora_requests_info` gauge (its name and labels
as recorded with the release they were read at in setup/data/server_lora_metrics.yaml).

vLLM keeps one series of the gauge per (running, waiting) set of adapters it has seen, each set to the time that set
was last current; it never removes one. So the newest series is the state now, and the others say which adapters
were in use lately. max_lora is --max-loras, the adapters a batch may use at once.
"""

from __future__ import annotations

from app.deployments.base import ServerLoraFigures
from app.triton.metrics import parse_metrics
from setup.catalog.server_metrics import LoraMetricNames

RECENT_SECONDS = 15 * 60.0  # the Server tab's window (the app's own cache counts cover the same)


def _names(value: str, separator: str) -> tuple[str, ...]:
    return tuple(name for name in (part.strip() for part in value.split(separator)) if name)


def _integer(value: str | None) -> int | None:
    try:
        return int(float(value)) if value not in (None, "") else None
    except ValueError:
        return None


def parse_lora_info(text: str, names: LoraMetricNames, now: float, recent_seconds: float = RECENT_SECONDS
                    ) -> ServerLoraFigures | None:
    """The server's LoRA figures from its /metrics text (None when it has no such gauge); `now`: this machine's
    time (seconds since the epoch), against which the states' times are read."""
    series = [(dict(labels), value) for (metric, labels), value in parse_metrics(text).items()
              if metric == names.metric]
    if not series:
        return None
    series.sort(key=lambda s: s[1])
    newest, at = series[-1]
    recent: dict[str, None] = {}
    for labels, value in reversed(series):
        if value >= at - recent_seconds:
            for label in (names.running, names.waiting):
                recent.update(dict.fromkeys(_names(labels.get(label, ""), names.separator)))
    return ServerLoraFigures(
        source=f"{names.metric} ({names.server} {names.release})",
        running=_names(newest.get(names.running, ""), names.separator),
        waiting=_names(newest.get(names.waiting, ""), names.separator),
        recent=tuple(recent), recent_seconds=recent_seconds, max_loras=_integer(newest.get(names.max_loras)),
        age_seconds=max(0.0, now - at) if at > 0 else None, states=len(series))
