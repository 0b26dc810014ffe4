"""Benchmark figures: per-request timings in, requests/s, tokens/s and latency percentiles out."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

PERCENTILES = (50, 90, 99)


@dataclass
class RequestRecord:
    """One request's timings (time.monotonic seconds) and output; `error` is None when it succeeded."""

    started: float
    ended: float = 0.0
    first_token: float | None = None
    tokens: int = 0
    gaps: list[float] = field(default_factory=list)  # seconds between consecutive streamed chunks
    error: str | None = None
    text: str = ""

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.started

    @property
    def latency(self) -> float:
        return self.ended - self.started


def percentile(values: list[float], pct: float) -> float | None:
    """Linear-interpolated percentile (numpy's default method); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Latency:
    """Milliseconds: average and the PERCENTILES; None where nothing was measured."""

    avg: float | None
    p50: float | None
    p90: float | None
    p99: float | None

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        ms = [s * 1000.0 for s in seconds]
        return cls(sum(ms) / len(ms) if ms else None, *(percentile(ms, p) for p in PERCENTILES))


@dataclass(frozen=True)
class BenchSummary:
    """What a run reports (the figures of the backend's benchmark tools plus TTFT and inter-token)."""

    label: str
    requests: int
    completed: int
    errors: int
    wall_seconds: float
    requests_per_second: float
    output_tokens_per_second: float
    avg_output_tokens: float
    ttft_ms: Latency
    itl_ms: Latency
    e2e_ms: Latency
    error_messages: dict[str, int] = field(default_factory=dict)
    settings: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(records: list[RequestRecord], wall_seconds: float, label: str = "",
              settings: dict[str, object] | None = None) -> BenchSummary:
    """Figures over finished requests; failed ones count only as errors."""
    ok = [r for r in records if r.error is None]
    wall = max(wall_seconds, 1e-9)
    tokens = sum(r.tokens for r in ok)
    return BenchSummary(
        label=label, requests=len(records), completed=len(ok), errors=len(records) - len(ok),
        wall_seconds=wall_seconds, requests_per_second=len(ok) / wall, output_tokens_per_second=tokens / wall,
        avg_output_tokens=tokens / len(ok) if ok else 0.0,
        ttft_ms=Latency.of([r.ttft for r in ok if r.ttft is not None]),
        itl_ms=Latency.of([g for r in ok for g in r.gaps]),
        e2e_ms=Latency.of([r.latency for r in ok]),
        error_messages=dict(Counter(r.error for r in records if r.error is not None).most_common(5)),
        settings=dict(settings or {}),
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_summary(summary: BenchSummary) -> str:
    """The plain-text table the CLI prints."""
    lines = [summary.label] if summary.label else []
    lines += [
        f"{'Requests':<26}{summary.completed} ok / {summary.requests} sent in {summary.wall_seconds:.2f} s",
        f"{'Requests/s':<26}{summary.requests_per_second:.2f}",
        f"{'Output tokens/s':<26}{summary.output_tokens_per_second:.1f}",
        f"{'Avg. output tokens':<26}{summary.avg_output_tokens:.1f}",
        f"{'(ms)':<26}{'avg':>9}{'p50':>9}{'p90':>9}{'p99':>9}",
    ]
    for name, lat in (("Time to first token", summary.ttft_ms), ("Inter-token latency", summary.itl_ms),
                      ("End-to-end latency", summary.e2e_ms)):
        lines.append(f"{name:<26}" + "".join(f"{_ms(v):>9}" for v in (lat.avg, lat.p50, lat.p90, lat.p99)))
    lines.append(f"{'Errors':<26}{summary.errors}")
    lines += [f"  {count} x {message}" for message, count in summary.error_messages.items()]
    return "\n".join(lines)
