"""Server tab: what the app's users live through (replies in progress, output tokens/s, time to first token,
waiting) beside the server's own metrics (requests/s, time per request, queue, in flight, KV cache)."""

from __future__ import annotations

import json
import math

import gradio as gr
import pandas as pd

from app.chat import live
from app.chat.figures import size_text
from app.context import AppConfig, AppContext
from app.deployments.base import LoraCacheReport, ServerLoraFigures
from app.triton.metrics import MetricsHistory
from app.triton.metrics_sampler import Sampler
from app.web.cache_view import cache_fields, cache_markdown
from app.web.pages.messages import (
    MSG_CACHE_AGE,
    MSG_CACHE_AGE_UNKNOWN,
    MSG_CACHE_NO_FIGURES,
    MSG_CACHE_NONE,
    MSG_CACHE_SERVER_FIGURES,
)

TITLE = "Server"
REFRESH_SECONDS = 2.0
SAMPLE_SECONDS = REFRESH_SECONDS  # the app's sampler reads the metrics and the users' figures this often
HISTORY_SECONDS = 15 * 60  # the server's readings kept (the users' figures keep LiveReplies' own ring)
RATE_METRICS = ("requests/s",)
LATENCY_METRICS = ("avg latency ms", "avg queue ms")
LOAD_METRICS = ("queued", "in flight", "waiting")
KV_METRICS = ("KV cache used %",)
USER_LOAD = (live.IN_PROGRESS, live.WAITING)
USER_RATE = (live.TOKENS_PER_SECOND,)
USER_LATENCY = (live.FIRST_TOKEN_MS,)
WINDOW_SECONDS = 180  # the charts' x axis: at least the last three minutes, more when more is kept; 0 = now
AXES = {"x_axis_format": "~r", "y_axis_format": "~r", "x_lim": [-WINDOW_SECONDS, 0]}  # 0, 0.5, 12 - not 0.000000
USERS_NOTE = ("**Your users**, counted by this app where replies open and end (chat, Compare and both APIs; "
              "not the Benchmark tab): what a person at the chat would quote.")
SERVER_NOTE = ("**The server's own figures** for `{model}`: an ensemble or BLS model also calls preprocessing, "
               "the engine and postprocessing for each request, and those calls are not counted here.")
NO_TRTLLM = ("This server reports no `nv_trt_llm_*` metrics (the CPU engine stands in for TensorRT-LLM), so "
             "in-flight requests and KV-cache use are not shown; queue, rates and latencies are Triton's own.")
DECOUPLED_NOTE = ("Times are Triton's per-request durations: for streaming (decoupled) models they end when the "
                  "model has taken the request, not when its last token is sent.")


def metrics_url(ctx: AppContext) -> str | None:
    """Where the deployment publishes Prometheus metrics (None: it publishes none)."""
    return ctx.deployment.metrics_url()


def _frame(rows: list[dict], metrics: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.DataFrame([r for r in rows if r["metric"] in metrics], columns=["t", "metric", "value"])
    return frame if not frame.empty else pd.DataFrame({"t": [0.0], "metric": [metrics[0]], "value": [0.0]})


def _known(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _x_lim(rows: list[dict]) -> list[float]:
    """The x axis: from the oldest reading held (at least WINDOW_SECONDS ago) to now."""
    return [min([-WINDOW_SECONDS, *(r["t"] for r in rows)]), 0]


def _plot(rows: list[dict], metrics: tuple[str, ...], floor: float = 1.0, **options) -> gr.LinePlot:
    """A chart update whose y axis starts at 0 and reaches just above the highest value (at least `floor`,
    so an idle chart shows 0 ... 1, not a squashed axis of zeros), and whose x axis spans the readings held.
    NaN values are gaps."""
    frame = _frame(rows, metrics)
    values = [v for v in frame["value"] if _known(v)]
    top = max([floor, *values]) * 1.15
    return gr.LinePlot(value=frame, y_lim=[0, top], x_lim=_x_lim(rows), **options)


def user_summary(reading: live.LiveReading, rows: list[dict]) -> str:
    """The users' figures now, in one line."""
    rates = [r["value"] for r in rows if r["metric"] == live.TOKENS_PER_SECOND and _known(r["value"])]
    firsts = [r["value"] for r in rows if r["metric"] == live.FIRST_TOKEN_MS and _known(r["value"])]
    parts = [f"{reading.in_progress} repl{'y' if reading.in_progress == 1 else 'ies'} in progress",
             f"{reading.waiting} waiting for a first token",
             f"{rates[-1]:.1f} output tokens/s" if rates else "0.0 output tokens/s"]
    if firsts:
        parts.append(f"first token after {firsts[-1]:.0f} ms (last {live.FIRST_TOKEN_WINDOW:.0f} s)")
    if reading.lora_total:
        what = "weights" if reading.lora_last_weights else "task id only" if reading.lora_last else "no adapter"
        parts.append(f"adapter data: {size_text(reading.lora_last)} with the last request ({what}), "
                     f"{size_text(reading.lora_total)} in all")
    return "Your users: " + " · ".join(parts)


def summary_markdown(history: MetricsHistory) -> str:
    """The current numbers in one line (or the reason there are none)."""
    if history.error:
        return f"⚠️ {history.error}"
    if not history.snapshots:
        return f"Reading {history.url}..."
    snap = history.snapshots[-1]
    parts = [f"models: {', '.join(snap.models) or 'none'}", f"succeeded {snap.success:.0f}",
             f"failed {snap.failure:.0f}", f"queued {snap.pending or 0:.0f}"]
    if snap.active is not None:
        parts.append(f"in flight {snap.active:.0f}" + (f" of {snap.max_requests:.0f}" if snap.max_requests else ""))
    if snap.kv_fraction is not None:
        parts.append(f"KV cache {snap.kv_fraction:.0%} used")
    text = " · ".join(parts) + f"  \nfrom `{history.url}`. {DECOUPLED_NOTE}"
    return text if snap.active is not None or snap.kv_fraction is not None else text + "\n\n" + NO_TRTLLM


def user_charts(replies: live.LiveReplies) -> tuple:
    """Take a reading of the users' figures; their summary line and three charts."""
    reading = replies.read()
    rows = replies.series()
    return (user_summary(reading, rows), _plot(rows, USER_LOAD), _plot(rows, USER_RATE),
            _plot(rows, USER_LATENCY, floor=10.0))


def charts(history: MetricsHistory) -> tuple:
    """Read the metrics (unless the sampler just did) and return the summary and the four charts' data
    (the KV-cache chart is hidden when the server reports no KV-cache metrics)."""
    history.refresh()
    rows = history.series()
    has_kv = any(r["metric"] in KV_METRICS and _known(r["value"]) for r in rows)
    kv = gr.LinePlot(value=_frame(rows, KV_METRICS), x_lim=_x_lim(rows), visible=has_kv)
    return (summary_markdown(history), _plot(rows, RATE_METRICS), _plot(rows, LATENCY_METRICS, floor=10.0),
            _plot(rows, LOAD_METRICS), kv)


def api_markdown(config: AppConfig, adapters: list[str], served_model: str | None = None) -> str:
    """How to reach this deployment from code through the app's OpenAI-compatible API."""
    base = f"http://{config.host}:{config.port}/v1"
    served_model = served_model or config.model
    model = adapters[0] if adapters else served_model
    names = ", ".join(f"`{name}`" for name in adapters) or "none yet"
    key = "USER:PASSWORD" if config.auth else "unused"
    request = json.dumps({"model": model, "stream": True, "messages": [{"role": "user", "content": "Hello!"}]})
    return (
        f"The app serves an **OpenAI-compatible API** at `{base}` (`GET /models`, `POST /chat/completions`). "
        f"`model` is `{served_model}` for the base model or an adapter's name ({names}); images go as "
        "`image_url` parts with `data:image/...;base64,` URLs; `stream: true` streams tokens, and closing the "
        "connection cancels the request on the server."
        + (" Send a login from the auth file as `Authorization: Bearer USER:PASSWORD`." if config.auth else "")
        + f"\n\n```bash\ncurl -N {base}/chat/completions -H 'Content-Type: application/json'"
        + (" -H 'Authorization: Bearer USER:PASSWORD'" if config.auth else "") + f" \\\n  -d '{request}'\n```\n\n"
        f"```python\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=\"{base}\", api_key=\"{key}\")\n"
        f"for chunk in client.chat.completions.create(model=\"{model}\", stream=True,\n"
        "        messages=[{\"role\": \"user\", \"content\": \"Hello!\"}]):\n"
        "    print(chunk.choices[0].delta.content or \"\", end=\"\", flush=True)\n```"
    )


def users_figures(replies: live.LiveReplies) -> dict:
    """The users' figures now, for the API (`server_figures`): what the Server tab's first line says."""
    reading = replies.read()
    rows = replies.series()
    rates = [r["value"] for r in rows if r["metric"] == live.TOKENS_PER_SECOND and _known(r["value"])]
    firsts = [r["value"] for r in rows if r["metric"] == live.FIRST_TOKEN_MS and _known(r["value"])]
    return {"replies_in_progress": reading.in_progress, "waiting_for_first_token": reading.waiting,
            "output_tokens_per_second": round(rates[-1], 2) if rates else 0.0,
            "time_to_first_token_ms": round(firsts[-1], 1) if firsts else None,
            "output_tokens_total": reading.tokens, "lora_bytes_last_request": reading.lora_last,
            "lora_weights_last_request": reading.lora_last_weights, "lora_bytes_total": reading.lora_total}


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names) or MSG_CACHE_NONE


def figures_markdown(server: str, figures: ServerLoraFigures) -> str:
    """A server's own LoRA figures (vLLM's gauge) in the cache section."""
    age = MSG_CACHE_AGE.format(seconds=figures.age_seconds) if figures.age_seconds is not None else \
        MSG_CACHE_AGE_UNKNOWN
    return MSG_CACHE_SERVER_FIGURES.format(
        server=server, source=figures.source, in_use=_names(figures.in_use), minutes=round(figures.recent_seconds / 60), recent=_names(figures.recent),
        max_loras=figures.max_loras if figures.max_loras is not None else "?", age=age, states=figures.states)


def session_view(ctx: AppContext, request: gr.Request | None) -> AppContext:
    """The context as the caller's browser session sees it (an API caller that chose nothing: the app's own)."""
    return ctx.for_session(request.session_hash if request is not None else None)


def cache_report(view: AppContext) -> LoraCacheReport:
    return view.deployment.lora_cache()


def cache_section(view: AppContext) -> str:
    """The adapter-cache section for the view's server: what the app saw of the cache (the engine topology, e.g. the
    CPU demo), the server's own LoRA figures (vLLM), or a sentence saying it shows none."""
    report = cache_report(view)
    server = f"{view.deployment.kind} at `{view.deployment.url}`"
    if report.seen is not None:
        return cache_markdown(report.seen)
    if report.figures is not None:
        return figures_markdown(server, report.figures)
    return MSG_CACHE_NO_FIGURES.format(server=server, note=report.note)


def cache_api_fields(view: AppContext) -> dict:
    """The cache section for the API (`adapter_cache`): `source` says whose figures these are ("app": what the app
    sent and saw, as before; "server": the server's own metrics; "none": `note` says why there are none)."""
    report = cache_report(view)
    if report.seen is not None:
        return {"source": "app", **cache_fields(report.seen)}
    if report.figures is not None:
        f = report.figures
        return {"source": "server", "metric": f.source, "in_use": list(f.in_use), "running": list(f.running),
                "waiting": list(f.waiting), "recent": list(f.recent), "recent_seconds": f.recent_seconds, "max_loras": f.max_loras,
                "age_seconds": f.age_seconds, "states": f.states}
    return {"source": "none", "note": report.note}


def server_history(url: str, model: str) -> MetricsHistory:
    """The server's readings for the charts: HISTORY_SECONDS of them at the sampler's pace."""
    return MetricsHistory(url, size=int(HISTORY_SECONDS / SAMPLE_SECONDS) + 1, min_interval=SAMPLE_SECONDS,
                          model=model)


def build(ctx: AppContext, history: MetricsHistory | None = None, app: gr.Blocks | None = None,
          tab: gr.Tab | None = None) -> Sampler:
    """Lay out the server tab inside the current Blocks context and wire its timer. Returns the sampler that
    takes the charts' readings whether a page is open or not; whoever launches the app starts it (ui.launch).
    The adapter-cache section follows the server the browser session chose in the chat (read on every tick, on
    page load and when the tab is selected)."""
    url = metrics_url(ctx)
    common = dict(x="t", y="value", color="metric", x_title="seconds (0 = now)", height=220, **AXES)
    with gr.Accordion("Use this deployment from code", open=False, elem_id="server-api"):
        gr.Markdown(lambda: api_markdown(ctx.config, ctx.deployment.adapter_names(), ctx.deployment.model),
                    elem_id="server-api-text")
    gr.Markdown(USERS_NOTE)
    users = gr.Markdown("Your users: no reply yet.", elem_id="server-users")
    with gr.Row():
        replies = gr.LinePlot(title="Replies", y_title="replies", elem_id="server-user-load", **common)
        tokens = gr.LinePlot(title="Output tokens per second", y_title="tokens/s", elem_id="server-user-tokens",
                             **common)
        first = gr.LinePlot(title="Time to first token", y_title="ms", elem_id="server-user-first-token", **common)
    timer = gr.Timer(REFRESH_SECONDS)
    timer.tick(lambda: user_charts(ctx.live), None, [users, replies, tokens, first], api_visibility="private",
               show_progress="hidden")

    def server_figures() -> dict:
        """Replies in progress, waiting for a first token, output tokens/s, time to first token (ms), and the bytes of
        adapter data (LoRA task id, weights on first use) the last request and all requests sent."""
        return users_figures(ctx.live)

    gr.api(server_figures, api_name="server_figures")
    cache = gr.Markdown(elem_id="server-adapter-cache")

    def cache_shown(request: gr.Request):
        return cache_section(session_view(ctx, request))

    quiet = {"api_visibility": "private", "show_progress": "hidden"}
    timer.tick(cache_shown, None, cache, **quiet)
    for event in ([tab.select] if tab is not None else []) + ([app.load] if app is not None else []):
        event(cache_shown, None, cache, **quiet)

    def adapter_cache(request: gr.Request) -> dict:
        """The adapter cache of the server the caller's session chose (the app's own unless it picked one). source
        "app": the adapters the server's LoRA cache holds as this app saw them (resident now, evictions seen) and, per
        adapter over the last 15 minutes, hits, misses ("not found in cache") and re-sends of the weights; "server":
        the server's own LoRA figures (vLLM: running, waiting and recent adapters, max_loras); "none": a note why."""
        return cache_api_fields(session_view(ctx, request))

    gr.api(adapter_cache, api_name="adapter_cache")
    if history is None and url is None:
        gr.Markdown("This deployment publishes no metrics.", elem_id="server-summary")
        return Sampler([ctx.live.read], SAMPLE_SECONDS)
    history = history or server_history(url, ctx.deployment.model)
    gr.Markdown(SERVER_NOTE.format(model=history.model or ctx.deployment.model))
    summary = gr.Markdown(f"Reading {history.url}...", elem_id="server-summary")
    with gr.Row():
        rate = gr.LinePlot(title="Requests per second", y_title="requests/s", elem_id="server-rate", **common)
        latency = gr.LinePlot(title="Average time in Triton per request", y_title="ms", elem_id="server-latency",
                              **common)
    with gr.Row():
        load = gr.LinePlot(title="Queue and requests in flight", y_title="requests", elem_id="server-load", **common)
        kv = gr.LinePlot(title="KV cache", y_title="% used", y_lim=[0, 100], elem_id="server-kv", visible=False,
                         **common)
    outputs = [summary, rate, latency, load, kv]
    timer.tick(lambda: charts(history), None, outputs, api_visibility="private", show_progress="hidden")
    return Sampler([ctx.live.read, history.refresh], SAMPLE_SECONDS)


if __name__ == "__main__":  # this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        sampler = build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1", prevent_thread_lock=True)
    sampler.start(alive=lambda: page.is_running)
    page.block_thread()
