"""The chat's Server picker: which deployment this browser session talks to (the app's own, a server the Build page
launched, an address added here), beside the adapter picker; the adapters listed are that server's."""

from __future__ import annotations

import gradio as gr

from app.chat.server_choice import add_server, choose_server
from app.context import AppContext
from app.core.errors import ChatError
from app.web.gate import require_access
from app.web.labels import (
    ADD_SERVER,
    ADD_SERVER_BUTTON,
    ADD_SERVER_INFO,
    ADD_SERVER_LABEL,
    ADD_SERVER_PLACEHOLDER,
    SERVER_INFO,
    SERVER_LABEL,
    base_label,
    marked_choices,
)
from app.web.messages import MSG_SERVER_ADDED

PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}


def picker(ctx: AppContext, session: str | None = None) -> gr.Dropdown:
    """The picker's entries, showing `session`'s choice."""
    return gr.Dropdown(choices=ctx.servers.choices(), value=ctx.servers.chosen_id(session))


def adapters_of(view: AppContext) -> gr.Dropdown:
    """The adapter picker for a server just chosen: its adapters, the base model picked."""
    return gr.Dropdown(choices=marked_choices(view), value=base_label(view))


def kept_adapter(view: AppContext, shown: str | None):
    """The adapter picker refreshed: its entries again, and the base model picked when the shown adapter is gone
    (removed in the Adapters tab, or the session's server changed)."""
    choices = marked_choices(view)
    known = shown in [value for _, value in choices]
    return gr.Dropdown(choices=choices) if known else gr.Dropdown(choices=choices, value=base_label(view))


def on_pick(ctx: AppContext, session: str, server_id: str, status_of) -> tuple:
    """(picker, adapter picker, status line) after the person picked `server_id`."""
    try:
        choose_server(ctx, session, server_id)
    except ChatError as exc:
        gr.Warning(str(exc))
    return picker(ctx, session), adapters_of(ctx.for_session(session)), status_of(ctx, session)


def on_add(ctx: AppContext, request: gr.Request, address: str, status_of) -> tuple:
    """(picker, adapter picker, status line, address box, note) after the person added `address`: the server is
    checked, listed for every session and chosen for this one."""
    require_access(ctx, request)  # the app connects to the address: only callers who may act
    session = request.session_hash
    try:
        server = add_server(ctx, address)
        choose_server(ctx, session, server.id)
    except ChatError as exc:
        gr.Warning(str(exc))
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), str(exc)
    return (picker(ctx, session), adapters_of(ctx.for_session(session)), status_of(ctx, session), "",
            MSG_SERVER_ADDED.format(server=server.label))


def build(ctx: AppContext) -> gr.Dropdown:
    """The picker (in the current layout context)."""
    return gr.Dropdown(ctx.servers.choices(), value=ctx.servers.own.id, label=SERVER_LABEL, info=SERVER_INFO,
                       elem_id="server", scale=2, min_width=180)


def build_add_form(ctx: AppContext) -> tuple[gr.Textbox, gr.Button, gr.Markdown]:
    """The "Add a server" form (closed at first)."""
    with gr.Accordion(ADD_SERVER, open=False, elem_id="add-server"):
        with gr.Row():
            address = gr.Textbox(label=ADD_SERVER_LABEL, info=ADD_SERVER_INFO, placeholder=ADD_SERVER_PLACEHOLDER,
                                 elem_id="server-address", max_lines=1, scale=3)
            add = gr.Button(ADD_SERVER_BUTTON, elem_id="server-add", scale=1, min_width=100)
        note = gr.Markdown(elem_id="server-note")
    return address, add, note


def wire(ctx: AppContext, server: gr.Dropdown, adapter: gr.Dropdown, status: gr.Markdown, address: gr.Textbox,
         add: gr.Button, note: gr.Markdown, status_of) -> None:
    """Wire the picker and the form; `status_of(ctx, session)` makes the status line."""

    def pick(request: gr.Request, server_id):
        return on_pick(ctx, request.session_hash, server_id, status_of)

    def added(request: gr.Request, typed):
        return on_add(ctx, request, typed, status_of)

    def refreshed(request: gr.Request):
        return picker(ctx, request.session_hash)

    server.input(pick, server, [server, adapter, status], **PRIVATE)
    server.focus(refreshed, None, server, **PRIVATE)
    add.click(added, address, [server, adapter, status, address, note], api_visibility="private")
    address.submit(added, address, [server, adapter, status, address, note], api_visibility="private")
