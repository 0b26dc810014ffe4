"""Benchmark tab: a short benchmark against the current deployment, latency percentiles and tokens/s
plotted over concurrency."""

from __future__ import annotations

import threading

import gradio as gr

from app.bench.sweep import check_deployment, latency_frame, sweep, table_frame, throughput_frame
from app.context import AppConfig, AppContext
from app.core.errors import ChatError
from app.deployments.base import check_adapter_name
from app.web.gate import require_access
from app.web.labels import adapter_choices, adapter_of, base_label
from app.web.messages import (
    MSG_BENCH_BUSY,
    MSG_BENCH_NO_LEVELS,
    MSG_BENCH_NOTHING_TO_STOP,
    MSG_BENCH_RUNNING,
    MSG_BENCH_STOPPED_AT,
    MSG_BENCH_STOPPING,
)

TITLE = "Benchmark"
TTFT_TITLE = "Time to first token (percentiles)"
E2E_TITLE = "End-to-end latency (percentiles)"
LEVELS = (1, 2, 4, 8, 16, 32)
STOP_POLL_SECONDS = 0.2  # how soon a Stop shows as "Stopping" in the status line
NOTE = ("Sends synthetic prompts straight to the server the chat uses (not through this web app) and "
        "measures time to first token, end-to-end latency and output tokens/s at each concurrency. "
        "Other users' chats slow it down, and it slows them down while it runs. For the full tool: "
        "`python -m app bench --help`.")

CHART_OUTPUTS = 6  # the table, two charts per latency, the bar chart: what `_outputs` returns
_RUNNING = threading.Lock()
_STOPS: list[threading.Event] = []  # the stop switch of the run under way (at most one: _RUNNING)


def _kept(status: str, stop=None) -> tuple:
    """An update of the status line (and of Stop, unless None) that leaves the table and charts as they are."""
    return status, *[gr.skip()] * CHART_OUTPUTS, gr.skip() if stop is None else stop


def _stop_button(active: bool) -> gr.Button:
    """Live and red only while a run is under way (grey and off otherwise, as the chat's Stop)."""
    return gr.Button(interactive=active, variant="stop" if active else "secondary")


def _problem(text: str) -> tuple:
    """A problem shown as a toast and in the status line; the table and charts keep what they show. It ends the
    run, so Stop goes inactive."""
    gr.Warning(text)
    return _kept(f"⚠️ {text}", _stop_button(False))


def _target(ctx: AppContext, model: str, adapter: str | None, image: str | None):
    """The deployment to measure, checked (ready, adapter known, image accepted); ChatError says why not."""
    deployment = ctx.deployment
    wanted = (model or deployment.model).strip()
    deployment = deployment if wanted == deployment.model else deployment.for_model(wanted)
    check_deployment(deployment)
    if adapter is not None:
        check_adapter_name(adapter, deployment.adapter_names())
    if image:
        deployment.check_images([image], "")
    return deployment


def run(ctx: AppContext, model: str, levels: list, requests: float, input_len: float, output_len: float,
        adapter: str | None = None, image: str | None = None):
    """Generator for the Run button: status text, table, the charts (see `_outputs`) after each level and Stop's
    state (active from the first level until the run's last word). Problems are a toast and a status line (never
    an error over the tab); Stop cuts the level under way and ends the run.

    The status line has this one writer, so its last word is the run's: Stop only sets the switch, and the run says
    "Stopping" while its requests are cancelled."""
    if not levels:
        yield _problem(MSG_BENCH_NO_LEVELS)
        return
    if not _RUNNING.acquire(blocking=False):
        yield _problem(MSG_BENCH_BUSY)
        return
    stop = threading.Event()
    _STOPS.append(stop)
    try:
        try:
            deployment = _target(ctx, model, adapter, image)
        except ChatError as exc:
            yield _problem(str(exc))
            return
        done = []
        order = sorted(int(level) for level in levels)
        yield _kept(MSG_BENCH_RUNNING.format(level=order[0]), _stop_button(True))
        for level in order:
            measure = _Level(lambda level=level: sweep(
                deployment, [level], int(requests), int(input_len), int(output_len), adapter=adapter,
                images=[image] if image else None, stop=stop))
            try:
                announced = False
                while not measure.finished(STOP_POLL_SECONDS):
                    if stop.is_set() and not announced:
                        announced = True
                        yield _kept(MSG_BENCH_STOPPING)
                done += measure.result()
            except ChatError as exc:
                yield _problem(str(exc))
                return
            finally:
                if not measure.finished(0):  # closed at the "Stopping" update: let the level end first
                    stop.set()
                    measure.join()
            if stop.is_set():
                yield MSG_BENCH_STOPPED_AT.format(level=level, done=len(done)), *_outputs(done), _stop_button(False)
                return
            following = [lv for lv in order if lv > level]
            if following:
                yield MSG_BENCH_RUNNING.format(level=following[0]), *_outputs(done), gr.skip()
            else:
                yield _finished(done), *_outputs(done), _stop_button(False)
    finally:
        _STOPS.remove(stop)
        _RUNNING.release()


class _Level:
    """One level's sweep in a thread of its own, so the run can report "Stopping" while it waits. A daemon thread,
    not an executor's, so a benchmark under way never holds up the app's exit."""

    def __init__(self, work) -> None:
        self._value, self._error = None, None
        self._thread = threading.Thread(target=self._run, args=(work,), name="benchmark-level", daemon=True)
        self._thread.start()

    def _run(self, work) -> None:
        try:
            self._value = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the run, which reports it
            self._error = exc

    def finished(self, wait: float) -> bool:
        self._thread.join(wait)
        return not self._thread.is_alive()

    def join(self) -> None:
        self._thread.join()

    def result(self) -> list:
        if self._error is not None:
            raise self._error
        return self._value


def stop_run():
    """Ask the run under way to stop: the run itself then says so in the status line (so no reply of this one can
    land after the run's last word); with no run, say there is none."""
    if not _STOPS:
        return MSG_BENCH_NOTHING_TO_STOP
    _STOPS[0].set()
    return gr.skip()


def _finished(done: list) -> str:
    errors = sum(s.errors for s in done)
    best = max(done, key=lambda s: s.output_tokens_per_second)
    text = (f"Done: {sum(s.requests for s in done)} requests, best {best.output_tokens_per_second:.1f} tokens/s "
            f"at concurrency {best.settings['concurrency']}.")
    if errors:
        messages = "; ".join(m for s in done for m in s.error_messages)
        text += f" ⚠️ {errors} failed: {messages}"
    return text


def _top(values) -> float:
    """Upper end of a y axis that starts at 0: a little above the highest value (1 when there is none)."""
    known = [float(v) for v in values if v == v]  # NaN != NaN
    return max([1.0, *known]) * 1.15


def _latency(done: list, which: str) -> tuple[gr.LinePlot, gr.ScatterPlot]:
    """The line chart and the point chart of one latency, one of them shown: a line needs two levels, so the
    figures of a single level are drawn as points (a line chart of one level is empty)."""
    # Concurrency as text in run order: the axis shows 1, 2, 4, 8 - not 1.0, 1.1 ... 2.0.
    frame = latency_frame(done, which).astype({"concurrency": "str"})
    chart = dict(value=frame, sort=[str(s.settings["concurrency"]) for s in done], y_lim=[0, _top(frame["ms"])])
    lines = len(done) > 1
    return gr.LinePlot(**chart, visible=lines), gr.ScatterPlot(**chart, visible=not lines)


def _outputs(done: list) -> tuple:
    """The table, the latency charts (TTFT line and points, then end-to-end line and points) and the bar chart
    (bars from 0, kept in concurrency order)."""
    if not done:
        return table_frame([]), *[gr.skip()] * (CHART_OUTPUTS - 1)
    order = [str(s.settings["concurrency"]) for s in done]
    bars = throughput_frame(done)
    return (table_frame(done), *_latency(done, "ttft"), *_latency(done, "e2e"),
            gr.BarPlot(value=bars, sort=order, y_lim=[0, _top(bars["tokens/s"])]))


def build(ctx: AppContext) -> None:
    """Lay out the benchmark tab inside the current Blocks context and wire its events."""
    gr.Markdown(NOTE)
    with gr.Row():
        model = gr.Textbox(value=ctx.deployment.model, label="Model", elem_id="bench-model",
                           info="A model the server serves (Triton: tensorrt_llm_bls, ensemble, or pacing when "
                                "deployed; OpenAI-compatible servers: any id of /v1/models, adapters too).")
        adapter = gr.Dropdown(adapter_choices(ctx), value=base_label(ctx), label="Adapter", elem_id="bench-adapter",
                              info="Every request of the run uses it.")
        levels = gr.CheckboxGroup([str(x) for x in LEVELS], value=["1", "2", "4", "8"], label="Concurrency",
                                  elem_id="bench-levels")
    with gr.Row():
        requests = gr.Slider(1, 64, value=8, step=1, label="Requests per level (at least the concurrency)",
                             elem_id="bench-requests")
        input_len = gr.Slider(4, 1024, value=32, step=4, label="Prompt words (~tokens)", elem_id="bench-input-len")
        output_len = gr.Slider(1, 512, value=32, step=1, label="Output tokens", elem_id="bench-output-len")
        image = gr.Image(type="filepath", sources=["upload"], label="Image with every request (optional)",
                         height=140, elem_id="bench-image")
    with gr.Row():
        start = gr.Button("Run benchmark", variant="primary", elem_id="bench-run")
        stop = gr.Button("Stop", variant="secondary", elem_id="bench-stop", interactive=False)  # on while a run is under way
    status = gr.Markdown(elem_id="bench-status")
    table = gr.Dataframe(value=table_frame([]), label="Figures per concurrency", interactive=False,
                         elem_id="bench-table")
    axes = {"x_title": "concurrency", "y_axis_format": "~r"}
    latency = dict(x="concurrency", y="ms", color="series", y_title="ms", height=280, **axes)
    with gr.Row():
        with gr.Column():
            ttft = gr.LinePlot(title=TTFT_TITLE, elem_id="bench-ttft", **latency)
            ttft_points = gr.ScatterPlot(title=TTFT_TITLE, elem_id="bench-ttft-points", visible=False, **latency)
        with gr.Column():
            e2e = gr.LinePlot(title=E2E_TITLE, elem_id="bench-latency", **latency)
            e2e_points = gr.ScatterPlot(title=E2E_TITLE, elem_id="bench-latency-points", visible=False, **latency)
    with gr.Row():
        throughput = gr.BarPlot(x="concurrency", y="tokens/s", title="Output tokens per second",
                                y_title="tokens/s", elem_id="bench-throughput", height=300, sort=None, **axes)

    def on_run(model_name, adapter_label, chosen, count, words, tokens, image_path, request: gr.Request):
        require_access(ctx, request)
        view = ctx.for_session(request.session_hash)  # the server this browser session talks to
        model_name = view.deployment.model if model_name == ctx.deployment.model else model_name
        yield from run(view, model_name, chosen, count, words, tokens, adapter_of(adapter_label), image_path)

    def on_stop(request: gr.Request):
        require_access(ctx, request)
        return stop_run()

    outputs = [status, table, ttft, ttft_points, e2e, e2e_points, throughput, stop]
    ran = start.click(on_run, [model, adapter, levels, requests, input_len, output_len, image], outputs,
                      api_visibility="private", concurrency_limit=1)
    # The run's last word turns Stop off; this also does when the run failed or was cancelled.
    ran.then(lambda: _stop_button(False), None, stop, api_visibility="private", show_progress="hidden")
    stop.click(on_stop, None, status, api_visibility="private")
    def adapters_again(request: gr.Request):
        return gr.Dropdown(choices=adapter_choices(ctx.for_session(request.session_hash)))

    adapter.focus(adapters_again, None, adapter, api_visibility="private", show_progress="hidden")


if __name__ == "__main__":  # this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
