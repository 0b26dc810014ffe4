"""Chat tab: streaming chatbot, messages queued while a reply runs, Stop that cancels on the server,
Regenerate, Clear, the Greedy / Sample choice, conversations kept in the browser."""

from __future__ import annotations

import gradio as gr

from app.chat.context import AppConfig, AppContext
from app.chat.conversation import ReplySettings, run_replies, without_pending
from app.chat.messages import (
    MSG_BUSY_CONTINUE,
    MSG_BUSY_REGENERATE,
    MSG_BUSY_VERSIONS,
    MSG_NOTHING_TO_CONTINUE,
)
from app.chat.outbox import Queued
from app.chat.sampling import GREEDY, panel_sampling
from app.chat.turns import check_new_turn, without_last_reply
from app.chat.versions import any_reply, reply_message, reply_of
from app.core.constants import CPU_DEMO_NOTE, CPU_OCR_NOTE, HISTORY_MODES, STATUS_REFRESH_SECONDS
from app.core.errors import ChatError
from app.core.sampling import SAMPLING_LIMITS
from app.web import history_panel
from app.web.labels import (
    ABOUT_DEMO,
    CHAT_PLACEHOLDER,
    CLEAR,
    CONTINUE,
    DECODING_CHOICES,
    DECODING_INFO,
    DECODING_LABEL,
    FREQUENCY_INFO,
    NEWER_VERSION,
    OLDER_VERSION,
    PRESENCE_INFO,
    REGENERATE,
    SEED_INFO,
    SEED_PLACEHOLDER,
    STOP,
    TEMPERATURE_INFO,
    TOP_K_INFO,
    TOP_P_INFO,
    VERSION_OF,
    adapter_choices,
    adapter_of,
    base_label,
)
from app.web.messages import MSG_SERVER_WAITING

TITLE = "Chat"
SAMPLE_ONLY = ("temperature", "top_k", "top_p", "seed")  # the settings greedy decoding ignores
CHAT_HEIGHT = "62vh"  # most of a desktop screen; style.py makes it shorter on a phone, with the input in view


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


def last_reply(conversation: list) -> tuple[int, dict] | None:
    """(index, message) of the conversation's last message when it is a reply with its record, else None."""
    shown = without_pending(conversation or [])
    if shown and reply_of(shown[-1]) is not None:
        return len(shown) - 1, shown[-1]
    return None


def reply_controls(conversation: list) -> tuple:
    """Continue (enabled for a last reply cut at max tokens) and the version stepper ‹ n/m › of the last reply
    (shown when it has more than one version)."""
    found = last_reply(conversation)
    reply = reply_of(found[1]) if found else None
    count = len(reply.versions) if reply else 0
    stepper = count > 1
    return (gr.Button(interactive=bool(reply and reply.current.cut_at)),
            gr.Button(visible=stepper, interactive=stepper and reply.shown > 0),
            gr.Button(visible=stepper, value=VERSION_OF.format(shown=reply.shown + 1, count=count) if stepper else ""),
            gr.Button(visible=stepper, interactive=stepper and reply.shown < count - 1))


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
        older = gr.Button(OLDER_VERSION, elem_id="older-version", visible=False, min_width=40, scale=0)
        version = gr.Button("", elem_id="reply-version", visible=False, interactive=False, min_width=60, scale=0)
        newer = gr.Button(NEWER_VERSION, elem_id="newer-version", visible=False, min_width=40, scale=0)
        resume = gr.Button(CONTINUE, elem_id="continue", interactive=False, min_width=90)
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

    def replies(session: str, shown: list, first: Queued | None, settings: ReplySettings, box_value, **run):
        """The run's updates as (box, chatbot, stop, regenerate); the box is touched once, at the start."""
        updates = run_replies(ctx, session, shown, first, settings, **run)
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
            conversation = without_pending(shown or [])
            earlier = without_last_reply(conversation)
            chosen = reply_settings(mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                                    adapter_name, history_mode, presence, frequency)
        except ChatError as exc:
            yield refuse(str(exc), 4)
            return
        if not ctx.outbox.start(request.session_hash):
            yield refuse(MSG_BUSY_REGENERATE, 4)
            return
        replaced = any_reply(conversation[-1]) if conversation[-1].get("role") == "assistant" else None
        yield from replies(request.session_hash, earlier, None, chosen, gr.skip(), earlier=replaced)

    def on_continue(shown: list, mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                    adapter_name, history_mode, presence, frequency, request: gr.Request):
        found = last_reply(shown)
        if found is None or not reply_of(found[1]).current.cut_at:
            yield refuse(MSG_NOTHING_TO_CONTINUE, 4)
            return
        try:
            chosen = reply_settings(mode, max_tokens, temperature, top_k, top_p, repetition_penalty, seed, system,
                                    adapter_name, history_mode, presence, frequency)
        except ChatError as exc:
            yield refuse(str(exc), 4)
            return
        if not ctx.outbox.start(request.session_hash):
            yield refuse(MSG_BUSY_CONTINUE, 4)
            return
        yield from replies(request.session_hash, without_pending(shown), None, chosen, gr.skip(), continuing=True)

    def on_step(by: int):
        def handler(shown: list, request: gr.Request):
            found = last_reply(shown)
            if ctx.outbox.busy(request.session_hash):
                gr.Warning(MSG_BUSY_VERSIONS)
                return gr.skip()
            if found is None:
                return gr.skip()
            index, message = found
            conversation = without_pending(shown)
            return [*conversation[:index], reply_message(reply_of(message).stepped(by))]
        return handler

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
    continued = resume.click(on_continue, [chatbot, *settings_inputs], outputs, api_visibility="private")
    stepped = [button.click(on_step(by), chatbot, chatbot, api_visibility="private", show_progress="hidden")
               for button, by in ((older, -1), (newer, 1))]
    chatbot.change(reply_controls, chatbot, [resume, older, version, newer], api_visibility="private",
                   show_progress="hidden")
    # Stop cancels the server request; the run then ends that reply by itself and shows "(stopped)".
    # (Gradio's `cancels=` would race with that last update and could drop it.)
    stop.click(on_stop, None, None, api_visibility="private")
    cleared = clear.click(on_clear, None, chatbot, api_visibility="private")
    trashed = chatbot.clear(on_clear, None, chatbot, api_visibility="private")  # the built-in trash icon
    decoding.change(lambda mode: [gr.update(interactive=mode != GREEDY)] * len(SAMPLE_ONLY), decoding,
                    [temperature, top_k, top_p, seed], api_visibility="private", show_progress="hidden")
    history.wire(app, chatbot, saved_after=[sent, regenerated, continued, *stepped, cleared, trashed])

    adapter.focus(lambda: gr.Dropdown(choices=adapter_choices(ctx)), None, adapter,
                  api_visibility="private", show_progress="hidden")

    timer = gr.Timer(STATUS_REFRESH_SECONDS)
    timer.tick(lambda: status_markdown(ctx), None, status, api_visibility="private", show_progress="hidden")


if __name__ == "__main__":  # launch this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()), page)
    page.queue().launch(server_name="127.0.0.1")
