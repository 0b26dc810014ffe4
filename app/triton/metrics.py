"""Triton's (and vLLM's) Prometheus metrics: read the text format, keep a short history, derive rates for charts."""

from __future__ import annotations

import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from app.triton.messages import MSG_METRICS_UNREACHABLE

_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
DEFAULT_METRICS_PORT = 8002
GAP_SECONDS = 10.0  # readings further apart than this are a gap in the charts, not a ramp
GAUGES = ("queued", "in flight", "waiting", "KV cache used %")


class MetricsError(RuntimeError):
    """The metrics endpoint cannot be read; the message says where and why."""


def metrics_url_for(triton_url: str, port: int = DEFAULT_METRICS_PORT) -> str:
    """The metrics URL on the same host as a gRPC HOST:PORT address (Triton's default metrics port)."""
    host = triton_url.rsplit(":", 1)[0] if ":" in triton_url else triton_url
    return f"http://{host}:{port}/metrics"


def parse_metrics(text: str) -> dict[tuple[str, frozenset], float]:
    """Prometheus text exposition -> {(name, frozenset(labels)): value}; comments and junk skipped."""
    out = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match or line.startswith("#"):
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        labels = frozenset(_LABEL.findall(match.group(2) or ""))
        out[(match.group(1), labels)] = value
    return out


def fetch_metrics(url: str, timeout: float = 2.0) -> dict[tuple[str, frozenset], float]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - the configured metrics URL
            return parse_metrics(response.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise MetricsError(MSG_METRICS_UNREACHABLE.format(url=url, detail=getattr(exc, "reason", exc))) from None


def total(samples: dict, name: str, **labels: str) -> float | None:
    """Sum of `name` over the series whose labels include `labels`; None when there is none."""
    want = set(labels.items())
    values = [v for (n, ls), v in samples.items() if n == name and want <= ls]
    return sum(values) if values else None


@dataclass(frozen=True)
class Snapshot:
    """One reading, reduced to what the Server page charts."""

    at: float
    success: float = 0.0
    failure: float = 0.0
    request_us: float = 0.0
    queue_us: float = 0.0
    pending: float | None = None
    active: float | None = None  # nv_trt_llm_request_metrics{request_type="active"}
    waiting: float | None = None
    max_requests: float | None = None
    kv_used: float | None = None  # nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used"}
    kv_max: float | None = None
    kv_fraction: float | None = None
    models: tuple[str, ...] = ()

    @classmethod
    def of(cls, samples: dict, at: float | None = None, model: str | None = None) -> Snapshot:
        """`model`: count requests of that model only (the one the app sends to), not the calls an ensemble
        or BLS model makes to preprocessing, the engine and postprocessing for each of them."""
        if any(name.startswith("vllm:") for name, _ in samples):
            return cls.of_vllm(samples, at)
        kv = "nv_trt_llm_kv_cache_block_metrics"
        req = "nv_trt_llm_request_metrics"
        served = {dict(ls).get("model") for (n, ls) in samples if n == "nv_inference_request_success"}
        entry = {"model": model} if model in served else {}
        return cls(
            at=time.monotonic() if at is None else at,
            success=total(samples, "nv_inference_request_success", **entry) or 0.0,
            failure=total(samples, "nv_inference_request_failure", **entry) or 0.0,
            request_us=total(samples, "nv_inference_request_duration_us", **entry) or 0.0,
            queue_us=total(samples, "nv_inference_queue_duration_us", **entry) or 0.0,
            pending=total(samples, "nv_inference_pending_request_count"),
            active=total(samples, req, request_type="active"),
            waiting=total(samples, req, request_type="waiting"),
            max_requests=total(samples, req, request_type="max"),
            kv_used=total(samples, kv, kv_cache_block_type="used"),
            kv_max=total(samples, kv, kv_cache_block_type="max"),
            kv_fraction=total(samples, kv, kv_cache_block_type="fraction"),
            models=tuple(sorted({dict(ls).get("model", "") for (n, ls) in samples
                                 if n == "nv_inference_count"} - {""})),
        )

    @classmethod
    def of_vllm(cls, samples: dict, at: float | None = None) -> Snapshot:
        """The same figures from vLLM's metrics (an OpenAI-compatible server's /metrics)."""
        seconds = 1e6  # vLLM reports seconds; the charts read microseconds like Triton's
        return cls(
            at=time.monotonic() if at is None else at,
            success=sum(v for (n, ls), v in samples.items() if n == "vllm:request_success_total"
                        and dict(ls).get("finished_reason") not in ("abort", "error")),
            failure=total(samples, "vllm:request_success_total", finished_reason="error") or 0.0,
            request_us=(total(samples, "vllm:e2e_request_latency_seconds_sum") or 0.0) * seconds,
            queue_us=(total(samples, "vllm:request_queue_time_seconds_sum") or 0.0) * seconds,
            pending=total(samples, "vllm:num_requests_waiting"),
            active=total(samples, "vllm:num_requests_running"),
            kv_fraction=total(samples, "vllm:kv_cache_usage_perc"),
            models=tuple(sorted({dict(ls).get("model_name", "") for (n, ls) in samples
                                 if n == "vllm:num_requests_running"} - {""})),
        )


@dataclass
class MetricsHistory:
    """The last `size` snapshots of one metrics URL (a ring: older ones are dropped), read at most once per
    `min_interval` seconds however many ask (the app's sampler, and every open browser tab's timer)."""

    url: str
    size: int = 90
    min_interval: float = 1.0
    model: str | None = None  # count this model's requests only (see Snapshot.of)
    snapshots: deque = field(default_factory=deque)
    error: str | None = None
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._read_at = 0.0

    def refresh(self) -> None:
        with self._lock:
            now = self.clock()
            if now - self._read_at < self.min_interval:
                return
            self._read_at = now
            try:
                self.snapshots.append(Snapshot.of(fetch_metrics(self.url), now, self.model))
                self.error = None
            except MetricsError as exc:
                self.error = str(exc)
            while len(self.snapshots) > self.size:
                self.snapshots.popleft()

    def series(self) -> list[dict]:
        """Rows {t, metric, value} for the charts: t in seconds relative to the latest reading. Between readings
        too far apart (unreachable, or no page open) values are NaN, which the charts draw as a gap."""
        with self._lock:
            snaps = list(self.snapshots)
        if not snaps:
            return []
        last = snaps[-1].at
        rows = []
        reported = {m for snap in snaps for m, v in _gauges(snap) if v is not None}
        for before, after in zip(snaps, snaps[1:], strict=False):
            t = round(after.at - last, 1)
            span = max(after.at - before.at, 1e-6)
            if span > GAP_SECONDS:
                middle = round(before.at - last + span / 2, 1)
                rows += [{"t": t, "metric": m, "value": math.nan} for m in ("requests/s", "avg latency ms",
                                                                             "avg queue ms")]
                rows += [{"t": middle, "metric": m, "value": math.nan} for m in GAUGES if m in reported]
                continue
            done = after.success - before.success
            rows.append({"t": t, "metric": "requests/s", "value": done / span})
            rows.append({"t": t, "metric": "avg latency ms", "value": (after.request_us - before.request_us) / done / 1000
                         if done > 0 else 0.0})
            rows.append({"t": t, "metric": "avg queue ms", "value": (after.queue_us - before.queue_us) / done / 1000
                         if done > 0 else 0.0})
        for snap in snaps:
            t = round(snap.at - last, 1)
            for metric, value in _gauges(snap):
                if value is not None:
                    rows.append({"t": t, "metric": metric, "value": value})
        return rows


def _gauges(snap: Snapshot) -> tuple[tuple[str, float | None], ...]:
    """The values a snapshot holds as they are (no rate), by chart name (the names of GAUGES)."""
    kv = None if snap.kv_fraction is None else snap.kv_fraction * 100
    return (("queued", snap.pending), ("in flight", snap.active), ("waiting", snap.waiting), ("KV cache used %", kv))
