"""Chat tab: streaming chatbot, messages queued while a reply runs, Stop that cancels on the server,
Regenerate, Clear, the Greedy / Sample choice, conversations kept in the browser."""

from __future__ import annotations

import gradio as gr

from app.chat.context import AppConfig, AppContext
from app.chat.conversation import ReplySettings, run_replies, without_pending
from app.chat.messages import MSG_BUSY_REGENERATE
from app.chat.outbox import Queued
from app.chat.sampling import GREEDY, panel_sampling
from app.chat.turns import check_new_turn, without_last_reply
from app.core.constants import CPU_DEMO_NOTE, CPU_OCR_NOTE, HISTORY_MODES, STATUS_REFRESH_SECONDS
from app.core.errors import ChatError
from app.core.sampling import SAMPLING_LIMITS
from app.web import history_panel
from app.web.labels import (
    ABOUT_DEMO,
    CHAT_PLACEHOLDER,
    CLEAR,
    DECODING_CHOICES,
    DECODING_INFO,
    DECODING_LABEL,
    FREQUENCY_INFO,
    PRESENCE_INFO,
    REGENERATE,
    SEED_INFO,
    SEED_PLACEHOLDER,
    STOP,
    TEMPERATURE_INFO,
    TOP_K_INFO,
    TOP_P_INFO,
    adapter_choices,
    adapter_of,
    base_label,
)
from app.web.messages import MSG_SERVER_WAITING

TITLE = "Chat"
SAMPLE_ONLY = ("temperature", "top_k", "top_p", "seed")  # the settings greedy decoding ignores
CHAT_HEIGHT = "min(460px, 42vh)"  # on a phone the input stays in view below it


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


def controls(running: bool) -> tuple[gr.Button, gr.Button]:
    """Stop and Regenerate: Stop only while a reply runs, Regenerate only when none does."""
    return (gr.Button(interactive=running, variant="stop" if running else "secondary"),
            gr.Button(interactive=not running))


def refuse(message: str, outputs: int) -> tuple:
    """A toast, and every output left as it was: the conversation and the input stay usable."""
    gr.Warning(message)
    return (gr.skip(),) * outputs


def build(ctx: AppContext, app: gr.Blocks | None = None) -> None:
    """Lay out the chat tab inside the current Blocks context and wire its events (`app`: the Blocks whose
    load restores the conversations kept in the browser)."""
    status = gr.Markdown(lambda: status_markdown(ctx), elem_id="status")  # evaluated on each page load
    history = history_panel.HistoryPanel(ctx)
    if ctx.config.demo:
        with gr.Accordion(ABOUT_DEMO, open=False, elem_id="demo-note"):
            gr.Markdown(CPU_DEMO_NOTE + "\n\n" + CPU_OCR_NOTE)
    chatbot = gr.Chatbot(elem_id="chatbot", label="Conversation", height=CHAT_HEIGHT, buttons=["copy", "copy_all"])
    box = gr.MultimodalTextbox(elem_id="chat-input", placeholder=CHAT_PLACEHOLDER, file_types=["image"],
                               file_count="multiple", show_label=False)
    with gr.Row(elem_id="chat-controls"):
        adapter = gr.Dropdown(adapter_choices(ctx), value=base_label(ctx), label="Adapter", elem_id="adapter",
                              info="LoRA adapter for the next message.", scale=2, min_width=180)
        stop = gr.Button(STOP, elem_id="stop", interactive=False, min_width=90)
        regenerate = gr.Button(REGENERATE, elem_id="regenerate", min_width=90)
        clear = gr.Button(CLEAR, elem_id="clear", min_width=90)
    with gr.Accordion("Sampling", open=False):
        decoding = gr.Radio(DECODING_CHOICES, value=GREEDY, label=DECODING_LABEL, info=DECODING_INFO,
                            elem_id="decoding")

        def slider(name, label, step, info, interactive=True):
            default, low, high = SAMPLING_LIMITS[name]
            return gr.Slider(low, high, value=default, step=step, label=label, info=info, interactive=interactive,
                             elem_id=name.replace("_", "-"))
        max_tokens = slider("max_tokens", "Max new tokens", 1, "Upper bound on the reply length.")
        temperature = slider("temperature", "Temperature", 0.01, TEMPERATURE_INFO, interactive=False)
        top_k = slider("top_k", "Top-k", 1, TOP_K_INFO, interactive=False)
        top_p = slider("top_p", "Top-p", 0.01, TOP_P_INFO, interactive=False)
        seed = gr.Textbox(value="", label="Seed", info=SEED_INFO, placeholder=SEED_PLACEHOLDER, elem_id="seed",
                          interactive=False, max_lines=1)  # a text box: a Number cannot be left empty
        repetition_penalty = slider("repetition_penalty", "Repetition penalty", 0.01, "Above 1 discourages repeats.")
        presence_penalty = slider("presence_penalty", "Presence penalty", 0.05, PRESENCE_INFO)
        frequency_penalty = slider("frequency_penalty", "Frequency penalty", 0.05, FREQUENCY_INFO)
        system_prompt = gr.Textbox(value=ctx.config.system_prompt, label="System prompt", lines=2,
                                   elem_id="system-prompt")
        history_mode = gr.Radio(list(HISTORY_MODES), value="same adapter", label="History sent with each message",
                                info=" / ".join(f"{k}: {v}" for k, v in HISTORY_MODES.items()), elem_id="history-mode")
    history.build_files()
    settings_inputs = [decoding, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system_prompt,
                       adapter, history_mode, presence_penalty, frequency_penalty]

    def reply_settings(mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system, adapter_name,
                       history_mode, presence, frequency) -> ReplySettings:
        def sampling():
            return panel_sampling(mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed,
                                  presence, frequency)
        sampling()  # refuse bad values now, not in the middle of the run
        return ReplySettings(sampling, system or None, adapter_of(adapter_name), history_mode)

    def replies(session: str, shown: list, first: Queued | None, settings: ReplySettings, box_value):
        """The run's updates as (box, chatbot, stop, regenerate); the box is touched once, at the start."""
        updates = run_replies(ctx, session, shown, first, settings)
        conversation, running = next(updates)
        yield box_value, conversation, *controls(running)
        for conversation, running in updates:
            yield gr.skip(), conversation, *(controls(False) if not running else (gr.skip(), gr.skip()))

    def on_send(message: dict, shown: list, mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed,
                system, adapter_name, history_mode, presence, frequency, request: gr.Request):
        text, files = (message or {}).get("text", ""), (message or {}).get("files", [])
        try:
            check_new_turn(ctx, text, files)
            chosen = reply_settings(mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                                    adapter_name, history_mode, presence, frequency)
            queued = Queued(text.strip(), tuple(files), chosen)
            start = ctx.outbox.offer(request.session_hash, queued)
        except ChatError as exc:
            yield refuse(str(exc), 4)
            return
        emptied = gr.MultimodalTextbox(value=None)
        if not start:  # a reply is running: it sends this one when it ends, and shows it as waiting meanwhile
            yield emptied, gr.skip(), gr.skip(), gr.skip()
            return
        yield from replies(request.session_hash, shown or [], queued, chosen, emptied)

    def on_regenerate(shown: list, mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                      adapter_name, history_mode, presence, frequency, request: gr.Request):
        try:
            earlier = without_last_reply(without_pending(shown or []))
            chosen = reply_settings(mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                                    adapter_name, history_mode, presence, frequency)
        except ChatError as exc:
            yield refuse(str(exc), 4)
            return
        if not ctx.outbox.start(request.session_hash):
            yield refuse(MSG_BUSY_REGENERATE, 4)
            return
        yield from replies(request.session_hash, earlier, None, chosen, gr.skip())

    def on_stop(request: gr.Request):
        ctx.active.cancel(request.session_hash)  # the run ends this reply with "(stopped)", then sends what waits

    def on_clear(request: gr.Request):
        ctx.outbox.clear(request.session_hash)  # waiting messages go; a running reply writes nothing more
        ctx.active.cancel(request.session_hash)
        return []

    outputs = [box, chatbot, stop, regenerate]
    # "multiple": a message sent while a reply streams reaches the server (and waits in the outbox) instead
    # of being dropped by the browser while the first event is still running.
    sent = box.submit(on_send, [box, chatbot, *settings_inputs], outputs, trigger_mode="multiple",
                      api_visibility="private")
    regenerated = regenerate.click(on_regenerate, [chatbot, *settings_inputs], outputs, api_visibility="private")
    # Stop cancels the server request; the run then ends that reply by itself and shows "(stopped)".
    # (Gradio's `cancels=` would race with that last update and could drop it.)
    stop.click(on_stop, None, None, api_visibility="private")
    cleared = clear.click(on_clear, None, chatbot, api_visibility="private")
    trashed = chatbot.clear(on_clear, None, chatbot, api_visibility="private")  # the built-in trash icon
    decoding.change(lambda mode: [gr.update(interactive=mode != GREEDY)] * len(SAMPLE_ONLY), decoding,
                    [temperature, top_k, top_p, seed], api_visibility="private", show_progress="hidden")
    history.wire(app, chatbot, saved_after=[sent, regenerated, cleared, trashed])

    adapter.focus(lambda: gr.Dropdown(choices=adapter_choices(ctx)), None, adapter,
                  api_visibility="private", show_progress="hidden")

    timer = gr.Timer(STATUS_REFRESH_SECONDS)
    timer.tick(lambda: status_markdown(ctx), None, status, api_visibility="private", show_progress="hidden")


if __name__ == "__main__":  # launch this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()), page)
    page.queue().launch(server_name="127.0.0.1")
