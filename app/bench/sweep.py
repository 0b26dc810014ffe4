"""A short benchmark over several concurrency levels, and its figures as chart-ready tables."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from app.bench.cli import run_benchmark
from app.bench.load import synthetic_requests
from app.bench.stats import BenchSummary
from app.triton.client import TritonChatClient

LATENCY_SERIES = {"ttft": "ttft_ms", "e2e": "e2e_ms"}


def sweep(client: TritonChatClient, levels: list[int], requests_per_level: int, input_len: int, output_len: int,
          on_level: Callable[[BenchSummary], None] | None = None) -> list[BenchSummary]:
    """One run per concurrency level (each sends max(level, requests_per_level) requests, after one
    unmeasured warm-up request); `on_level` is called after each."""
    summaries = []
    for level in sorted(set(levels)):
        count = max(level, requests_per_level)
        requests = synthetic_requests(count + 1, input_len, output_len, seed=level)
        summary = run_benchmark(client, requests, level, warmup=1, progress=False,
                                label=f"concurrency {level}")
        summaries.append(summary)
        if on_level:
            on_level(summary)
    return summaries


def _concurrency(summary: BenchSummary) -> int:
    return int(summary.settings.get("concurrency", 0))


def latency_frame(summaries: list[BenchSummary], which: str = "ttft") -> pd.DataFrame:
    """Rows (concurrency, series, ms): p50/p90/p99 of time to first token (`ttft`) or end-to-end
    latency (`e2e`) per level."""
    rows = []
    for s in summaries:
        latency = getattr(s, LATENCY_SERIES[which])
        for pct in ("p50", "p90", "p99"):
            value = getattr(latency, pct)
            if value is not None:
                rows.append({"concurrency": _concurrency(s), "series": pct, "ms": value})
    return pd.DataFrame(rows, columns=["concurrency", "series", "ms"]).astype({"concurrency": "int64", "ms": "float64"})


def throughput_frame(summaries: list[BenchSummary]) -> pd.DataFrame:
    """Rows (concurrency as text, tokens/s) for a bar chart."""
    frame = pd.DataFrame([{"concurrency": str(_concurrency(s)), "tokens/s": s.output_tokens_per_second}
                          for s in summaries], columns=["concurrency", "tokens/s"])
    return frame.astype({"concurrency": "str", "tokens/s": "float64"})


def table_frame(summaries: list[BenchSummary]) -> pd.DataFrame:
    """The figures of each level, one row per level."""
    def ms(value):
        return None if value is None else round(value, 1)

    return pd.DataFrame([{
        "concurrency": _concurrency(s), "requests": s.requests, "errors": s.errors,
        "requests/s": round(s.requests_per_second, 2), "tokens/s": round(s.output_tokens_per_second, 1),
        "TTFT p50 ms": ms(s.ttft_ms.p50), "TTFT p99 ms": ms(s.ttft_ms.p99), "ITL p50 ms": ms(s.itl_ms.p50),
        "e2e p50 ms": ms(s.e2e_ms.p50), "e2e p99 ms": ms(s.e2e_ms.p99),
    } for s in summaries])
