"""Compare tab: the same prompt through the base model and up to three adapters, side by side, streamed."""

from __future__ import annotations

import gradio as gr

from app.chat.compare import CompareRun
from app.chat.context import AppConfig, AppContext
from app.core.constants import MAX_COMPARE_ADAPTERS
from app.core.errors import ChatError
from app.deployments.base import SamplingParams
from app.web.labels import BASE_LABEL, adapter_choices, adapter_of

TITLE = "Compare"
COLUMNS = MAX_COMPARE_ADAPTERS + 1


def build(ctx: AppContext) -> None:
    gr.Markdown("One prompt, streamed at the same time through each chosen model/adapter.")
    prompt = gr.Textbox(label="Prompt", elem_id="compare-prompt", placeholder="What is the capital of France?")
    with gr.Row():
        pickers = [gr.Dropdown(adapter_choices(ctx), value=BASE_LABEL if i == 0 else None, label=f"Column {i + 1}",
                               elem_id=f"compare-adapter-{i}") for i in range(COLUMNS)]
    max_tokens = gr.Slider(1, 512, value=96, step=1, label="Max new tokens", elem_id="compare-max-tokens")
    with gr.Row():
        run = gr.Button("Compare", variant="primary", elem_id="compare-run")
        stop = gr.Button("Stop", variant="stop", elem_id="compare-stop")
    with gr.Row():
        outputs = [gr.Textbox(label=f"Column {i + 1}", lines=10, interactive=False, elem_id=f"compare-out-{i}")
                   for i in range(COLUMNS)]
    runs: dict[str, CompareRun] = {}

    def on_run(text: str, tokens: float, first: str, second: str, third: str, fourth: str, request: gr.Request):
        names = [first, second, third, fourth][:COLUMNS]
        chosen = list(dict.fromkeys(name for name in names if name))
        try:
            compare = CompareRun(ctx, text, [adapter_of(name) for name in chosen], SamplingParams(max_tokens=int(tokens)))
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        runs[request.session_hash] = compare
        try:
            for texts in compare.updates():
                by_name = dict(zip(chosen, texts, strict=True))
                yield [gr.Textbox(value=by_name.get(name, ""), label=name or f"Column {i + 1}")
                       for i, name in enumerate(names)]
        finally:
            runs.pop(request.session_hash, None)

    def on_stop(request: gr.Request):
        compare = runs.pop(request.session_hash, None)
        if compare is not None:
            compare.cancel()

    for picker in pickers:
        picker.focus(lambda: gr.Dropdown(choices=adapter_choices(ctx)), None, picker,
                     api_visibility="private", show_progress="hidden")
    event = run.click(on_run, [prompt, max_tokens, *pickers], outputs, api_visibility="private")
    stop.click(on_stop, None, None, cancels=[event], api_visibility="private")


if __name__ == "__main__":
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
