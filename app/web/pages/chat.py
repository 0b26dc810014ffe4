"""Chat tab: streaming chatbot, messages queued while a reply runs, Stop that cancels on the server,
Regenerate, Clear, the Greedy / Sample choice, conversations kept in the browser."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

import gradio as gr

from app.chat.messages import (
    MSG_BUSY_CONTINUE,
    MSG_BUSY_REGENERATE,
    MSG_BUSY_VERSIONS,
    MSG_NOTHING_TO_CONTINUE,
)
from app.chat.outbox import Queued
from app.chat.reply_run import ReplySettings
from app.chat.sampling import GREEDY, ChatSampling
from app.chat.server_choice import session_status
from app.chat.turns import check_new_turn, without_last_reply
from app.context import AppConfig, AppContext
from app.core.constants import CONTEXT_MODES, CPU_DEMO_NOTE, CPU_OCR_NOTE, STATUS_REFRESH_SECONDS
from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.core.sampling import SAMPLING_LIMITS
from app.deployments.base import DeploymentStatus
from app.web import history_panel, kept_settings, server_picker
from app.web.chat_view import chat_messages
from app.web.labels import (
    ABOUT_DEMO,
    CHAT_PLACEHOLDER,
    CLEAR,
    CONTINUE,
    DECODING_CHOICES,
    DECODING_INFO,
    DECODING_LABEL,
    FREQUENCY_INFO,
    KEEP_PICTURES_INFO,
    KEEP_PICTURES_LABEL,
    NEWER_VERSION,
    OLDER_VERSION,
    PDF_PAGES_INFO,
    PDF_PAGES_LABEL,
    PRESENCE_INFO,
    REGENERATE,
    SEED_INFO,
    SEED_PLACEHOLDER,
    STOP,
    TEMPERATURE_INFO,
    TOP_K_INFO,
    TOP_P_INFO,
    adapter_of,
    base_label,
    marked_choices,
)
from app.web.messages import MSG_GREEDY_REGENERATE, MSG_SERVER_BACK, MSG_SERVER_WAITING
from app.web.pages import chat_edit
from app.web.pages.chat_replies import REPLY_OUTPUTS, ReplyOutputs, refuse, replies, reply_controls

TITLE = "Chat"
SAMPLE_ONLY = ("temperature", "top_k", "top_p", "seed")  # the settings greedy decoding ignores
UPLOAD_TYPES = ["image", ".mp4", ".webm", ".gif", ".pdf"]  # pictures, videos (frames sampled), PDFs (pages rendered)
# what a desktop screen has below the title, tabs, status and conversations list, so the message box is in view on a
# first screen (1280x900: the box ends near 880 px); style.py makes it shorter on a phone
CHAT_HEIGHT = "max(260px, calc(100vh - 470px))"


def status_markdown(ctx: AppContext, session: str | None = None) -> str:
    """The status line of the server `session` talks to (the app's own without a session); it says so when the
    session's chosen server went away and the chat is back on the app's own."""
    return status_line(*session_status(ctx, session))


def status_line(view: AppContext, status: DeploymentStatus, note: str | None) -> str:
    deployment = view.deployment
    deployment.observe(status)
    where = f"`{deployment.url}`"
    back = f"**{MSG_SERVER_BACK}** · {note} · " if note else ""
    if not status.live:
        return back + "**Waiting** · " + MSG_SERVER_WAITING.format(url=where) + \
            (f" {status.detail}" if status.detail else "")
    if not status.ready:
        return back + f"**Starting** · {status.server} at {where} is up; model `{deployment.model}` is not ready yet."
    return back + f"**Ready** · {status.server} at {where} · model `{deployment.model}` ready"


def on_send(ctx: AppContext, session: str, message: dict | None, conversation: Conversation, adapter_label: str,
            sampling: ChatSampling, pdf_pages: str = "") -> Iterator[tuple]:
    """Send the message box's text and files (pictures, videos, PDFs: `pdf_pages` picks a PDF's pages):
    answered now, or queued behind the reply that runs."""
    text, files = (message or {}).get("text", ""), (message or {}).get("files", [])
    ctx = ctx.for_session(session)  # the server this browser session chose
    try:
        media = check_new_turn(ctx, text, files, (pdf_pages or "").strip() or None)
        sampling.params()  # refuse bad values now, not in the middle of the run
        settings = ReplySettings(sampling, adapter_of(adapter_label))
        queued = Queued(text.strip(), media, settings)
        start = ctx.outbox.offer(session, queued)
    except ChatError as exc:
        yield refuse(str(exc))
        return
    emptied = gr.MultimodalTextbox(value=None)
    if not start:  # a reply is running: it sends this one when it ends, and shows it as waiting meanwhile
        yield emptied, *(gr.skip(),) * (REPLY_OUTPUTS - 1)
        return
    yield from replies(ctx, session, conversation or Conversation(), queued, settings, emptied)


def on_regenerate(ctx: AppContext, session: str, conversation: Conversation, adapter_label: str,
                  sampling: ChatSampling) -> Iterator[tuple]:
    """Answer the last message again; the reply it replaces keeps its versions."""
    conversation, ctx = conversation or Conversation(), ctx.for_session(session)
    try:
        earlier = without_last_reply(conversation)
        sampling.params()
    except ChatError as exc:
        yield refuse(str(exc))
        return
    if not ctx.outbox.start(session):
        yield refuse(MSG_BUSY_REGENERATE)
        return
    if sampling.decoding == GREEDY:  # the same words again, unless the server, adapter or history changed
        gr.Info(MSG_GREEDY_REGENERATE)
    settings = ReplySettings(sampling, adapter_of(adapter_label))
    yield from replies(ctx, session, earlier, None, settings, gr.skip(), earlier=conversation.last_reply)


def on_continue(ctx: AppContext, session: str, conversation: Conversation, adapter_label: str,
                sampling: ChatSampling) -> Iterator[tuple]:
    """Go on with the last reply, cut at the token limit, with its own adapter."""
    reply, ctx = conversation.last_reply if conversation else None, ctx.for_session(session)
    if reply is None or not reply.current.can_continue:
        yield refuse(MSG_NOTHING_TO_CONTINUE)
        return
    try:
        sampling.params()
    except ChatError as exc:
        yield refuse(str(exc))
        return
    if not ctx.outbox.start(session):
        yield refuse(MSG_BUSY_CONTINUE)
        return
    settings = ReplySettings(sampling, adapter_of(adapter_label))
    yield from replies(ctx, session, conversation, None, settings, gr.skip(), continuing=True)


def on_step(ctx: AppContext, session: str, conversation: Conversation, by: int) -> tuple:
    """Show the last reply's version `by` places later (earlier when negative): (chatbot, conversation)."""
    if ctx.outbox.busy(session):
        gr.Warning(MSG_BUSY_VERSIONS)
        return gr.skip(), gr.skip()
    reply = conversation.last_reply if conversation else None
    if reply is None:
        return gr.skip(), gr.skip()
    stepped = conversation.with_last_reply(reply.stepped(by))
    return chat_messages(stepped), stepped


def on_stop(ctx: AppContext, session: str) -> None:
    ctx.active.cancel(session)  # the run ends this reply with "(stopped)", then sends what waits


def on_clear(ctx: AppContext, session: str) -> tuple[list, Conversation]:
    """Empty the conversation: waiting messages go, a running reply writes nothing more. (chatbot, conversation)"""
    ctx.outbox.clear(session)
    ctx.active.cancel(session)
    return [], Conversation()


def build(ctx: AppContext, app: gr.Blocks | None = None, tab: gr.Tab | None = None) -> None:
    """Lay out the chat tab inside the current Blocks context and wire its events (`app`: the Blocks whose
    load restores the conversations kept in the browser; `tab`: the chat's tab, whose selection, by a click or by
    the Build page's "Chat with this server", shows the session's server again)."""
    # read again on each page load (below), without the progress label a callable value shows over the line while
    # the load event waits in the queue ("0.3s" before "Ready")
    status = gr.Markdown(status_markdown(ctx) if app is not None else (lambda: status_markdown(ctx)), elem_id="status")
    # The conversation list: a column at the left of the chat on a wide screen (>= 1000 px), above it on a narrower
    # one (app/web/style.py). A Row of two Columns, not gr.Sidebar: Gradio's sidebar is the page's, beside every tab,
    # and lies over the page on a phone.
    with gr.Row(elem_id="chat-layout", equal_height=False):
        with gr.Column(scale=0, min_width=240, elem_id="chat-sidebar"):
            history = history_panel.HistoryPanel(ctx)
        with gr.Column(scale=1, elem_id="chat-main"):
            if ctx.config.demo:
                with gr.Accordion(ABOUT_DEMO, open=False, elem_id="demo-note"):
                    gr.Markdown(CPU_DEMO_NOTE + "\n\n" + CPU_OCR_NOTE)
            # editable: an edit is a new version of the message (app.web.pages.chat_edit)
            chatbot = gr.Chatbot(elem_id="chatbot", label="Conversation", height=CHAT_HEIGHT,
                                 buttons=["copy", "copy_all"], editable="user")
            box = gr.MultimodalTextbox(elem_id="chat-input", placeholder=CHAT_PLACEHOLDER, file_types=UPLOAD_TYPES,
                                       file_count="multiple", show_label=False)
            with gr.Row(elem_id="chat-controls"):
                server = server_picker.build(ctx)
                adapter = gr.Dropdown(marked_choices(ctx), value=base_label(ctx), label="Adapter", elem_id="adapter",
                                      info="LoRA adapter for the next message.", scale=2, min_width=180)
                older = gr.Button(OLDER_VERSION, elem_id="older-version", visible=False, min_width=40, scale=0)
                version = gr.Button("", elem_id="reply-version", visible=False, interactive=False, min_width=60,
                                    scale=0)
                newer = gr.Button(NEWER_VERSION, elem_id="newer-version", visible=False, min_width=40, scale=0)
                older_branch = gr.Button(OLDER_VERSION, elem_id="older-branch", visible=False, min_width=40, scale=0)
                branch = gr.Button("", elem_id="branch-version", visible=False, interactive=False, min_width=120,
                                   scale=0)
                newer_branch = gr.Button(NEWER_VERSION, elem_id="newer-branch", visible=False, min_width=40, scale=0)
                resume = gr.Button(CONTINUE, elem_id="continue", interactive=False, min_width=90)
                stop = gr.Button(STOP, elem_id="stop", interactive=False, min_width=90)
                regenerate = gr.Button(REGENERATE, elem_id="regenerate", min_width=90)
                clear = gr.Button(CLEAR, elem_id="clear", min_width=90)
            with gr.Accordion("Sampling", open=False):
                decoding = gr.Radio(DECODING_CHOICES, value=GREEDY, label=DECODING_LABEL, info=DECODING_INFO,
                                    elem_id="decoding")

                def slider(name, label, step, info, interactive=True):
                    default, low, high = SAMPLING_LIMITS[name]
                    return gr.Slider(low, high, value=default, step=step, label=label, info=info,
                                     interactive=interactive, elem_id=name.replace("_", "-"))
                max_tokens = slider("max_tokens", "Max new tokens", 1, "Upper bound on the reply length.")
                temperature = slider("temperature", "Temperature", 0.01, TEMPERATURE_INFO, interactive=False)
                top_k = slider("top_k", "Top-k", 1, TOP_K_INFO, interactive=False)
                top_p = slider("top_p", "Top-p", 0.01, TOP_P_INFO, interactive=False)
                seed = gr.Textbox(value="", label="Seed", info=SEED_INFO, placeholder=SEED_PLACEHOLDER, elem_id="seed",
                                  interactive=False, max_lines=1)  # a text box: a Number cannot be left empty
                repetition_penalty = slider("repetition_penalty", "Repetition penalty", 0.01,
                                            "Above 1 discourages repeats.")
                presence_penalty = slider("presence_penalty", "Presence penalty", 0.05, PRESENCE_INFO)
                frequency_penalty = slider("frequency_penalty", "Frequency penalty", 0.05, FREQUENCY_INFO)
                pdf_pages = gr.Textbox(value="", label=PDF_PAGES_LABEL, info=PDF_PAGES_INFO, placeholder="1-3,5",
                                       elem_id="pdf-pages", max_lines=1)
                system_prompt = gr.Textbox(value=ctx.config.system_prompt, label="System prompt", lines=2,
                                           elem_id="system-prompt")
                context_mode = gr.Radio(list(CONTEXT_MODES), value="same adapter",
                                        label="Earlier turns sent with each message",
                                        info=" / ".join(f"{k}: {v}" for k, v in CONTEXT_MODES.items()),
                                        elem_id="context-mode")
                keep_pictures = gr.Checkbox(value=False, label=KEEP_PICTURES_LABEL, info=KEEP_PICTURES_INFO,
                                            elem_id="keep-pictures")
            address, add_server, server_note = server_picker.build_add_form(ctx)
            history.build_files()
    conversation = gr.State(Conversation())
    widgets = dict(decoding=decoding, max_tokens=max_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                   repetition_penalty=repetition_penalty, seed=seed, presence_penalty=presence_penalty,
                   frequency_penalty=frequency_penalty, system_prompt=system_prompt, context_mode=context_mode,
                   keep_pictures=keep_pictures)
    sampling = [widgets[f.name] for f in fields(ChatSampling)]  # ChatSampling.from_values takes them in this order

    # Gradio passes the request first (its annotation), then the inputs; the Sampling widgets' values last.
    def send(request: gr.Request, message, shown, adapter_label, pages, *values):
        yield from on_send(ctx, request.session_hash, message, shown, adapter_label, ChatSampling.from_values(*values),
                           pages)

    def regenerate_reply(request: gr.Request, shown, adapter_label, *values):
        yield from on_regenerate(ctx, request.session_hash, shown, adapter_label, ChatSampling.from_values(*values))

    def continue_reply(request: gr.Request, shown, adapter_label, *values):
        yield from on_continue(ctx, request.session_hash, shown, adapter_label, ChatSampling.from_values(*values))

    def step(by: int):
        def handler(request: gr.Request, shown):
            return on_step(ctx, request.session_hash, shown, by)
        return handler

    def stop_reply(request: gr.Request):
        on_stop(ctx, request.session_hash)

    shown_controls = [resume, older, version, newer, older_branch, branch, newer_branch]
    outputs = ReplyOutputs(box, chatbot, conversation, stop, regenerate, tuple(shown_controls)).components()
    # "multiple": a message sent while a reply streams reaches the server (and waits in the outbox) instead
    # of being dropped by the browser while the first event is still running.
    sent = box.submit(send, [box, conversation, adapter, pdf_pages, *sampling], outputs, trigger_mode="multiple",
                      api_visibility="private")
    regenerated = regenerate.click(regenerate_reply, [conversation, adapter, *sampling], outputs,
                                   api_visibility="private")
    continued = resume.click(continue_reply, [conversation, adapter, *sampling], outputs, api_visibility="private")
    stepped = [button.click(step(by), conversation, [chatbot, conversation], api_visibility="private",
                            show_progress="hidden")
               for button, by in ((older, -1), (newer, 1))]
    # Stop cancels the server request; the run then ends that reply by itself and shows "(stopped)".
    # (Gradio's `cancels=` would race with that last update and could drop it.)
    stop.click(stop_reply, None, None, api_visibility="private")
    decoding.change(lambda mode: [gr.update(interactive=mode != GREEDY)] * len(SAMPLE_ONLY), decoding,
                    [temperature, top_k, top_p, seed], api_visibility="private", show_progress="hidden")
    if app is not None:  # the Sampling settings and the system prompt survive a reload
        kept_settings.wire(app, {**widgets, "pdf_pages": pdf_pages}, [temperature, top_k, top_p, seed])
    edited, branch_steps = chat_edit.wire(ctx, chatbot, conversation, adapter, sampling, outputs,
                                          (older_branch, newer_branch))
    stepped += branch_steps
    shows_another = history.wire(app, conversation, chatbot,
                                 saved_after=[sent, regenerated, continued, *edited, *stepped], clear=clear,
                                 stop_session=lambda session: on_clear(ctx, session))  # Clear asks first
    for event in (*stepped, *shows_another):
        event.then(reply_controls, conversation, shown_controls, api_visibility="private", show_progress="hidden")

    server_picker.wire(ctx, server, adapter, status, address, add_server, server_note, status_markdown)

    def adapters_again(request: gr.Request, shown):
        return server_picker.kept_adapter(ctx.for_session(request.session_hash), shown)

    adapter.focus(adapters_again, adapter, adapter, api_visibility="private", show_progress="hidden")

    def tick(request: gr.Request, shown):
        """The status line; after a fall back to the app's own server, the pickers too (and an adapter removed
        meanwhile is no longer picked)."""
        view, state, note = session_status(ctx, request.session_hash)
        line = status_line(view, state, note)
        if note:
            return line, server_picker.picker(ctx, request.session_hash), server_picker.adapters_of(view)
        gone = adapter_of(shown) is not None and adapter_of(shown) not in view.deployment.adapter_names()
        return line, gr.skip(), server_picker.kept_adapter(view, shown) if gone else gr.skip()

    timer = gr.Timer(STATUS_REFRESH_SECONDS)
    timer.tick(tick, adapter, [status, server, adapter], api_visibility="private", show_progress="hidden")
    if tab is not None:
        def shown(request: gr.Request, adapter_shown):
            view = ctx.for_session(request.session_hash)
            return (status_markdown(ctx, request.session_hash), server_picker.picker(ctx, request.session_hash),
                    server_picker.kept_adapter(view, adapter_shown))
        tab.select(shown, adapter, [status, server, adapter], api_visibility="private", show_progress="hidden")
    if app is not None:
        def loaded(request: gr.Request):
            return status_markdown(ctx, request.session_hash), server_picker.picker(ctx, request.session_hash)
        app.load(loaded, None, [status, server], api_visibility="private", show_progress="hidden")


if __name__ == "__main__":  # launch this tab alone against a running server
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()), page)
    page.queue().launch(server_name="127.0.0.1")
