"""Server tab: Triton's live metrics (requests/s, latency, queue, in flight, KV cache) as small charts."""

from __future__ import annotations

import json

import gradio as gr
import pandas as pd

from app.chat.context import AppConfig, AppContext
from app.triton.metrics import MetricsHistory

TITLE = "Server"
REFRESH_SECONDS = 2.0
RATE_METRICS = ("requests/s",)
LATENCY_METRICS = ("avg latency ms", "avg queue ms")
LOAD_METRICS = ("queued", "in flight", "waiting")
KV_METRICS = ("KV cache used %",)
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


def charts(history: MetricsHistory) -> tuple:
    """Read the metrics (at most once a second) and return the summary and the four charts' data
    (the KV-cache chart is hidden when the server reports no KV-cache metrics)."""
    history.refresh()
    rows = history.series()
    has_kv = any(r["metric"] in KV_METRICS for r in rows)
    return (summary_markdown(history), _frame(rows, RATE_METRICS), _frame(rows, LATENCY_METRICS),
            _frame(rows, LOAD_METRICS), gr.LinePlot(value=_frame(rows, KV_METRICS), visible=has_kv))


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


def build(ctx: AppContext, history: MetricsHistory | None = None) -> None:
    """Lay out the server tab inside the current Blocks context and wire its timer."""
    url = metrics_url(ctx)
    if history is None and url is None:
        gr.Markdown("This deployment publishes no metrics.", elem_id="server-summary")
        return
    history = history or MetricsHistory(url)
    summary = gr.Markdown(f"Reading {history.url}...", elem_id="server-summary")
    with gr.Accordion("Use this deployment from code", open=False, elem_id="server-api"):
        gr.Markdown(lambda: api_markdown(ctx.config, ctx.deployment.adapter_names(), ctx.deployment.model),
                    elem_id="server-api-text")
    common = dict(x="t", y="value", color="metric", x_title="seconds (0 = now)", height=220)
    with gr.Row():
        rate = gr.LinePlot(title="Requests per second", y_title="requests/s", elem_id="server-rate", **common)
        latency = gr.LinePlot(title="Average time in Triton per request", y_title="ms", elem_id="server-latency",
                              **common)
    with gr.Row():
        load = gr.LinePlot(title="Queue and requests in flight", y_title="requests", elem_id="server-load", **common)
        kv = gr.LinePlot(title="KV cache", y_title="% used", y_lim=[0, 100], elem_id="server-kv", visible=False,
                         **common)
    outputs = [summary, rate, latency, load, kv]
    timer = gr.Timer(REFRESH_SECONDS)
    timer.tick(lambda: charts(history), None, outputs, api_visibility="private", show_progress="hidden")


if __name__ == "__main__":  # this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
