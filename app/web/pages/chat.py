"""Chat tab: streaming chatbot, Stop that cancels on the server, Regenerate, Clear, sampling panel."""

from __future__ import annotations

import gradio as gr

from app.chat.context import AppConfig, AppContext
from app.chat.turns import add_user_message, check_new_turn, stream_reply, without_last_reply
from app.core.constants import (
    CPU_DEMO_NOTE,
    CPU_OCR_NOTE,
    HISTORY_MODES,
    MSG_SERVER_WAITING,
    SAMPLING_LIMITS,
    STATUS_REFRESH_SECONDS,
)
from app.core.errors import ChatError
from app.deployments.base import SamplingParams
from app.web.labels import BASE_LABEL, adapter_choices, adapter_of

TITLE = "Chat"


def status_markdown(ctx: AppContext) -> str:
    deployment = ctx.deployment
    status = deployment.status()
    deployment.observe(status)
    where = f"`{deployment.url}`"
    if not status.live:
        return "**Waiting** · " + MSG_SERVER_WAITING.format(url=where) + (f" {status.detail}" if status.detail else "")
    if not status.ready:
        return f"**Starting** · {status.server} at {where} is up; model `{deployment.model}` is not ready yet."
    return f"**Ready** · {status.server} at {where} · model `{deployment.model}` ready"


def _sampling(max_tokens, temperature, top_k, top_p, repetition_penalty, seed) -> SamplingParams:
    return SamplingParams(max_tokens=int(max_tokens), temperature=float(temperature), top_k=int(top_k),
                          top_p=float(top_p), repetition_penalty=float(repetition_penalty), seed=int(seed))


def build(ctx: AppContext) -> None:
    """Lay out the chat tab inside the current Blocks context and wire its events."""
    status = gr.Markdown(lambda: status_markdown(ctx), elem_id="status")  # evaluated on each page load
    if ctx.config.demo:
        gr.Markdown(CPU_DEMO_NOTE + "\n\n" + CPU_OCR_NOTE, elem_id="demo-note")
    chatbot = gr.Chatbot(elem_id="chatbot", label="Conversation", height=460, buttons=["copy", "copy_all"])
    with gr.Row(equal_height=True):
        box = gr.MultimodalTextbox(elem_id="chat-input", placeholder="Ask something and press Enter",
                                   file_types=["image"], file_count="multiple", show_label=False, scale=5)
        adapter = gr.Dropdown(adapter_choices(ctx), value=BASE_LABEL, label="Adapter", elem_id="adapter",
                              info="LoRA adapter for the next message.", scale=1, min_width=160)
    with gr.Row():
        stop = gr.Button("Stop", elem_id="stop", variant="stop")
        regenerate = gr.Button("Regenerate", elem_id="regenerate")
        clear = gr.Button("Clear", elem_id="clear")
    with gr.Accordion("Sampling", open=False):
        def slider(name, label, step, info):
            default, low, high = SAMPLING_LIMITS[name]
            return gr.Slider(low, high, value=default, step=step, label=label, info=info, elem_id=name.replace("_", "-"))
        max_tokens = slider("max_tokens", "Max new tokens", 1, "Upper bound on the reply length.")
        temperature = slider("temperature", "Temperature", 0.01, "Randomness; used only when top-k > 1 or top-p > 0.")
        top_k = slider("top_k", "Top-k", 1, "Sample from the k likeliest tokens (0 or 1 = greedy).")
        top_p = slider("top_p", "Top-p", 0.01, "Sample from the smallest set with this probability (0 = off).")
        repetition_penalty = slider("repetition_penalty", "Repetition penalty", 0.01, "Above 1 discourages repeats.")
        seed = gr.Number(value=0, precision=0, label="Seed", info="Same seed and settings give the same reply.",
                         elem_id="seed")
        system_prompt = gr.Textbox(value=ctx.config.system_prompt, label="System prompt", lines=2,
                                   elem_id="system-prompt")
        history_mode = gr.Radio(list(HISTORY_MODES), value="same adapter", label="History sent with each message",
                                info=" / ".join(f"{k}: {v}" for k, v in HISTORY_MODES.items()), elem_id="history-mode")
    sampling_inputs = [max_tokens, temperature, top_k, top_p, repetition_penalty, seed]

    def on_submit(message: dict, history: list):
        text, files = (message or {}).get("text", ""), (message or {}).get("files", [])
        try:
            check_new_turn(ctx, text, files)
            history = add_user_message(history or [], text, files)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return gr.MultimodalTextbox(value=None), history

    def on_reply(history: list, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                 adapter_name: str, mode: str, request: gr.Request):
        try:
            params = _sampling(max_tokens, temperature, top_k, top_p, repetition_penalty, seed)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        yield from stream_reply(ctx, request.session_hash, history, params, system or None, adapter_of(adapter_name),
                                mode)

    def on_regenerate(history: list):
        try:
            return without_last_reply(history or [])
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def on_stop(request: gr.Request):
        ctx.active.cancel(request.session_hash)

    def on_clear(request: gr.Request):
        ctx.active.cancel(request.session_hash)
        return []

    reply_args = dict(fn=on_reply, inputs=[chatbot, *sampling_inputs, system_prompt, adapter, history_mode],
                      outputs=chatbot,
                      api_visibility="private")
    submitted = box.submit(on_submit, [box, chatbot], [box, chatbot], api_visibility="private")
    replying = submitted.success(**reply_args)
    regenerating = regenerate.click(on_regenerate, chatbot, chatbot, api_visibility="private",
                                    cancels=[replying]).success(**reply_args)
    # Stop cancels the server request; the reply generator then ends by itself and shows "(stopped)".
    # (Gradio's `cancels=` would race with that last update and could drop it.)
    stop.click(on_stop, None, None, api_visibility="private")
    clear.click(on_clear, None, chatbot, cancels=[replying, regenerating], api_visibility="private")

    adapter.focus(lambda: gr.Dropdown(choices=adapter_choices(ctx)), None, adapter,
                  api_visibility="private", show_progress="hidden")

    timer = gr.Timer(STATUS_REFRESH_SECONDS)
    timer.tick(lambda: status_markdown(ctx), None, status, api_visibility="private", show_progress="hidden")


if __name__ == "__main__":  # launch this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
