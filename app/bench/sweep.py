"""A short benchmark over several concurrency levels, and its figures as chart-ready tables."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from app.bench.load import run_load, synthetic_requests
from app.bench.messages import MSG_NOT_LIVE, MSG_NOT_READY
from app.bench.stats import BenchSummary, summarize
from app.bench.targets import DeploymentSender
from app.core.errors import ModelNotReady, ServerUnreachable

LATENCY_SERIES = {"ttft": "ttft_ms", "e2e": "e2e_ms"}
TABLE_COLUMNS = ["concurrency", "requests", "errors", "requests/s", "tokens/s", "TTFT p50 ms", "TTFT p99 ms",
                 "ITL p50 ms", "e2e p50 ms", "e2e p99 ms"]




def check_deployment(deployment) -> None:
    """ServerUnreachable / ModelNotReady with a one-line message unless the deployment is ready."""
    status = deployment.status()
    if not status.live:
        raise ServerUnreachable(MSG_NOT_LIVE.format(url=deployment.url, detail=status.detail or "not live"))
    if not status.ready:
        raise ModelNotReady(MSG_NOT_READY.format(model=deployment.model, url=deployment.url))


def run_level(deployment, requests: list, concurrency: int, label: str = "", adapter: str | None = None,
              images: list | None = None, stop=None) -> BenchSummary:
    """requests[0] unmeasured, then the rest at `concurrency` through the deployment (with `adapter` and
    `images` on each; `stop`: see DeploymentSender)."""
    send = DeploymentSender(deployment, adapter=adapter, images=images, stop=stop)
    send(requests[0])
    records, wall = run_load(send, requests[1:], concurrency, None, seed=0, progress=None)
    settings = {"server": deployment.url, "model": deployment.model, "concurrency": concurrency,
                "request_rate": None, "num_requests": len(requests) - 1, "adapter": adapter,
                "images": len(images or ())}
    return summarize(records, wall, label=label, settings=settings)


def sweep(deployment, levels: list[int], requests_per_level: int, input_len: int, output_len: int,
          on_level: Callable[[BenchSummary], None] | None = None, adapter: str | None = None,
          images: list | None = None, stop=None) -> list[BenchSummary]:
    """One run per concurrency level through a deployment of any kind (each sends max(level,
    requests_per_level) requests, after one unmeasured warm-up request); `on_level` is called after each.

    Once `stop` (a threading.Event) is set the level under way is cut short and left out, and no other starts."""
    summaries = []
    for level in sorted(set(levels)):
        if stop is not None and stop.is_set():
            break
        count = max(level, requests_per_level)
        requests = synthetic_requests(count + 1, input_len, output_len, seed=level)
        summary = run_level(deployment, requests, level, label=f"concurrency {level}", adapter=adapter,
                            images=images, stop=stop)
        if stop is not None and stop.is_set():
            break
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
    } for s in summaries], columns=TABLE_COLUMNS)
