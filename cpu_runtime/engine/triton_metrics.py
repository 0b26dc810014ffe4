"""The CPU engine's figures as the TensorRT-LLM backend's custom Triton metrics (`nv_trt_llm_*`).

Families and labels follow the backend's: request metrics (active, max, scheduled, context, waiting),
KV-cache blocks (max, free, used, tokens_per, fraction), in-flight batcher figures and general ones.
Published at most once per `stats_check_period_ms` (default 100 ms).
"""

from __future__ import annotations

import time

FAMILIES = {
    "request": ("nv_trt_llm_request_metrics", "TRT LLM request metrics", "request_type"),
    "kv": ("nv_trt_llm_kv_cache_block_metrics", "TRT LLM KV cache block metrics", "kv_cache_block_type"),
    "ifb": ("nv_trt_llm_inflight_batcher_metrics", "TRT LLM inflight batcher metrics",
            "inflight_batcher_specific_metric"),
    "general": ("nv_trt_llm_general_metrics", "General TRT LLM metrics", "general_type"),
}


def figures(stats: dict, steps: int) -> dict:
    """{family key: {label value: number}} from Engine.stats()."""
    kv = stats["kv"]
    return {
        "request": {"active": stats["running"], "max": stats["max_batch"], "scheduled": stats["rows"],
                    "context": stats["context_rows"], "waiting": stats["waiting"]},
        "kv": {key: kv[key] for key in ("max", "free", "used", "tokens_per", "fraction")},
        "ifb": {"scheduled_requests": stats["rows"], "total_context_tokens": stats["context_tokens"],
                "generation_requests": stats["rows"] - stats["context_rows"], "micro_batch_id": 0,
                "paused_requests": stats["paused_total"]},
        "general": {"iteration_counter": steps, "timestamp": int(time.time() * 1e6)},
    }


class EngineMetrics:
    def __init__(self, pb_utils, model: str, version: str, params: dict):
        self.period = float(params.get("stats_check_period_ms") or 100) / 1000.0
        self._last = 0.0
        self._gauges = {}
        try:
            kind = pb_utils.MetricFamily.GAUGE
            for key, (name, text, label) in FAMILIES.items():
                family = pb_utils.MetricFamily(name=name, description=text, kind=kind)
                self._gauges[key] = (family, {}, label)
        except Exception as exc:  # an older python backend without custom metrics
            pb_utils.Logger.log_warn(f"cpu engine: no custom metrics ({exc})")
            self._gauges = {}
        self.labels = {"model": model, "version": str(version)}

    def update(self, engine, force: bool = False) -> None:
        now = time.monotonic()
        if not self._gauges or (not force and now - self._last < self.period):
            return
        self._last = now
        for key, values in figures(engine.stats(), engine.steps).items():
            family, metrics, label = self._gauges[key]
            for name, value in values.items():
                if name not in metrics:
                    metrics[name] = [family.Metric(labels={**self.labels, label: name}), None]
                if metrics[name][1] != value:  # each set() is a message to the server: only changes
                    metrics[name][0].set(float(value))
                    metrics[name][1] = value
