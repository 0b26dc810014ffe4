"""The adapter cache as the pages show it: the Server tab's resident adapters and events (and its API's fields),
and the Build page's calculator of how many adapters fit."""

from __future__ import annotations

from dataclasses import asdict

from app.adapters.cache_watch import CacheView
from setup.lora.cache_size import CacheFit

CACHE_NOTE = ("**Adapters in the server's LoRA cache**, as this app saw them: an adapter is resident once its weights "
              "were sent and answered, until the server answers \"not found in cache\" (an eviction). Counts are over "
              "the last {minutes} minutes: hits (task id alone answered), misses (evictions seen), re-sends (weights "
              "again after a miss), first sends.")
FIT_NOTE = ("TensorRT-LLM splits each cache into pages of slots {width} values wide (the smallest in + out of the "
            "engine's LoRA modules); a page holds {slots} slots, and an adapter takes whole pages: one slot row per "
            "rank for each layer and module, ceil(rank x (in + out) / {width}) slots. Host: {host_pages} pages; "
            "GPU: {gpu_pages}. TensorRT-LLM's log line says the host cache holds {host_max} adapters of "
            "max_adapter_size on every module{gpu_max}. Counts assume an adapter on every module the engine was "
            "built for; one on fewer modules takes fewer slots. Formula: TensorRT-LLM peftCacheManager.cpp "
            "(getPageManagerConfig) and loraCache.cpp (determineNumPages), see setup/lora/cache_size.py.")
TOO_SMALL = "⚠️ The host cache cannot hold one adapter of max_adapter_size: TensorRT-LLM refuses to start with it."


def cache_markdown(view: CacheView) -> str:
    """The Server tab's cache section."""
    head = CACHE_NOTE.format(minutes=view.window_seconds // 60)
    if not view.rows:
        return head + "\n\nNo adapter request yet."
    resident = ", ".join(view.resident) or "none"
    held = f" · the cache holds about {view.capacity} (from the evictions seen)" if view.capacity else ""
    lines = [head, "", f"Resident now: **{resident}** · evictions seen: {view.evictions}{held}", "",
             "| adapter | task id | resident | hits | misses | re-sends | first sends |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.name} | {r.task_id} | {'yes' if r.resident else 'no'} | {r.hits} | {r.misses} | {r.resent} | "
              f"{r.sent} |" for r in view.rows]
    return "\n".join(lines)


def cache_fields(view: CacheView) -> dict:
    """The Server tab's cache section for the API (`adapter_cache`)."""
    return {"resident": list(view.resident), "evictions": view.evictions, "window_seconds": view.window_seconds,
            "capacity_estimate": view.capacity, "adapters": [asdict(r) for r in view.rows]}


def fit_markdown(fit: CacheFit) -> str:
    """The Build page's calculator answer: adapters of each rank on the GPU and in host memory, and why."""
    gpu_known = fit.gpu_pages is not None
    lines = ["| rank | pages per adapter | in host memory | on the GPU |", "|---|---|---|---|"]
    lines += [f"| {r.rank} | {r.pages} | {r.host} | {r.gpu if gpu_known else '? (give the free GPU memory)'} |"
              for r in fit.ranks]
    note = FIT_NOTE.format(width=fit.page_width, slots=fit.slots_per_page, host_pages=fit.host_pages,
                           gpu_pages=fit.gpu_pages if gpu_known else "unknown",
                           host_max=fit.host_max_sized,
                           gpu_max=f" and the GPU cache {fit.gpu_max_sized}" if gpu_known else "")
    return "\n".join(lines) + "\n\n" + note + (f"\n\n{TOO_SMALL}" if fit.host_too_small else "")
