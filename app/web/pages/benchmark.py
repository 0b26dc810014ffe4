"""Benchmark tab: a short benchmark against the current deployment, latency percentiles and tokens/s
plotted over concurrency."""

from __future__ import annotations

import threading

import gradio as gr

from app.bench.sweep import check_deployment, latency_frame, sweep, table_frame, throughput_frame
from app.chat.context import AppConfig, AppContext
from app.core.constants import MSG_BENCH_BUSY
from app.core.errors import ChatError
from app.web.gate import require_access

TITLE = "Benchmark"
LEVELS = (1, 2, 4, 8, 16, 32)
NOTE = ("Sends synthetic prompts straight to the server the chat uses (not through this web app) and "
        "measures time to first token, end-to-end latency and output tokens/s at each concurrency. "
        "Other users' chats slow it down, and it slows them down while it runs. For the full tool: "
        "`python -m app bench --help`.")

_RUNNING = threading.Lock()


def run(ctx: AppContext, model: str, levels: list, requests: float, input_len: float, output_len: float):
    """Generator for the Run button: status text, table and the three charts after each level."""
    if not levels:
        raise gr.Error("Choose at least one concurrency level.", print_exception=False)
    if not _RUNNING.acquire(blocking=False):
        raise gr.Error(MSG_BENCH_BUSY, print_exception=False)
    try:
        deployment = ctx.deployment
        wanted = (model or deployment.model).strip()
        deployment = deployment if wanted == deployment.model else deployment.for_model(wanted)
        try:
            check_deployment(deployment)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        done = []
        order = sorted(int(level) for level in levels)
        yield f"Running concurrency {order[0]}...", gr.skip(), gr.skip(), gr.skip(), gr.skip()
        for level in order:
            try:
                done += sweep(deployment, [level], int(requests), int(input_len), int(output_len))
            except ChatError as exc:
                raise gr.Error(str(exc), print_exception=False) from None
            following = [lv for lv in order if lv > level]
            status = f"Running concurrency {following[0]}..." if following else _finished(done)
            yield status, *_outputs(done)
    finally:
        _RUNNING.release()


def _finished(done: list) -> str:
    errors = sum(s.errors for s in done)
    best = max(done, key=lambda s: s.output_tokens_per_second)
    text = (f"Done: {sum(s.requests for s in done)} requests, best {best.output_tokens_per_second:.1f} tokens/s "
            f"at concurrency {best.settings['concurrency']}.")
    if errors:
        messages = "; ".join(m for s in done for m in s.error_messages)
        text += f" ⚠️ {errors} failed: {messages}"
    return text


def _outputs(done: list) -> tuple:
    """The table, the latency chart's data and the bar chart (bars kept in concurrency order)."""
    order = [str(s.settings["concurrency"]) for s in done]
    return (table_frame(done), latency_frame(done, "ttft"), latency_frame(done, "e2e"),
            gr.BarPlot(value=throughput_frame(done), sort=order))


def build(ctx: AppContext) -> None:
    """Lay out the benchmark tab inside the current Blocks context and wire its events."""
    gr.Markdown(NOTE)
    with gr.Row():
        model = gr.Textbox(value=ctx.deployment.model, label="Model", elem_id="bench-model",
                           info="A model the server serves (Triton: tensorrt_llm_bls, ensemble, or pacing when "
                                "deployed; OpenAI-compatible servers: any id of /v1/models, adapters too).")
        levels = gr.CheckboxGroup([str(x) for x in LEVELS], value=["1", "2", "4", "8"], label="Concurrency",
                                  elem_id="bench-levels")
    with gr.Row():
        requests = gr.Slider(1, 64, value=8, step=1, label="Requests per level (at least the concurrency)",
                             elem_id="bench-requests")
        input_len = gr.Slider(4, 1024, value=32, step=4, label="Prompt words (~tokens)", elem_id="bench-input-len")
        output_len = gr.Slider(1, 512, value=32, step=1, label="Output tokens", elem_id="bench-output-len")
    start = gr.Button("Run benchmark", variant="primary", elem_id="bench-run")
    status = gr.Markdown(elem_id="bench-status")
    table = gr.Dataframe(label="Figures per concurrency", interactive=False, elem_id="bench-table")
    with gr.Row():
        ttft = gr.LinePlot(x="concurrency", y="ms", color="series", title="Time to first token (percentiles)",
                           x_title="concurrency", y_title="ms", elem_id="bench-ttft", height=280)
        e2e = gr.LinePlot(x="concurrency", y="ms", color="series", title="End-to-end latency (percentiles)",
                          x_title="concurrency", y_title="ms", elem_id="bench-latency", height=280)
    with gr.Row():
        throughput = gr.BarPlot(x="concurrency", y="tokens/s", title="Output tokens per second",
                                x_title="concurrency", y_title="tokens/s", elem_id="bench-throughput", height=300,
                                sort=None)
    def on_run(model_name, chosen, count, words, tokens, request: gr.Request):
        require_access(ctx, request)
        yield from run(ctx, model_name, chosen, count, words, tokens)

    start.click(on_run, [model, levels, requests, input_len, output_len], [status, table, ttft, e2e, throughput],
                api_visibility="private", concurrency_limit=1)


if __name__ == "__main__":  # this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
