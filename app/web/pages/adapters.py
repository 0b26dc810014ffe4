"""Adapters tab: the LoRA adapters the chat can use, with task ids and cache state; add and remove.

Each browser session sees the server it chose in the chat (`AppContext.for_session`): its deployment, its adapters
folder and its checks, read again on page load, when the tab is selected and on Refresh. An API caller's session is
the app's own server unless it picked one."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.context import AppConfig, AppContext
from app.core.errors import ChatError
from app.web.audit_view import applied_cell, audit_lines, dropped_cell, notes_cell
from app.web.gate import require_access
from app.web.labels import NO_ADAPTERS
from app.web.messages import (
    MSG_CONFIRM_REMOVE,
    MSG_NO_ADAPTER,
    MSG_PICK_TO_CHECK,
    MSG_PICK_TO_REMOVE,
    MSG_REMOVE_KEPT,
)
from app.web.pages import adapter_training
from setup.workspace import WorkspaceError

TITLE = "Adapters"
COLUMNS = ["name", "task id", "rank", "target modules", "size", "held by server", "kind", "applied", "dropped",
           "audit notes"]
HELD = {True: "yes", False: "no", None: "unknown"}


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"


def _known(value, shown=str) -> object:
    return "-" if value is None else shown(value)


def table_rows(view: AppContext) -> list[list]:
    deployment = view.deployment
    rows = []
    for a in deployment.adapters():
        audit = deployment.adapter_audit(a.name) if a.path is not None else None
        rows.append([a.name, _known(a.task_id), _known(a.rank), ", ".join(a.target_modules) or "-",
                     _known(a.size_bytes, _size), HELD.get(a.held_by_server), a.kind, applied_cell(audit),
                     dropped_cell(audit), notes_cell(audit)])
    rows += [[name, "-", "-", problem, "-", "-", "unusable", "-", "-", "-"]
             for name, problem in deployment.adapter_problems().items()]
    return rows


def header(view: AppContext) -> str:
    """The tab's first line: whose adapters these are and where added ones go."""
    return (f"LoRA adapters of the {view.deployment.kind} at `{view.deployment.url}`; adapters added here go "
            f"to `{view.adapters.folder}` and are made known to the server as it allows (Triton: weights on "
            "first use, re-sent after eviction; vLLM: registered at run time).")


def unknown(name: str, action: str, known: list[str]) -> str | None:
    """The sentence for a name that is not among `known` (the list read now), else None."""
    if name in known:
        return None
    return MSG_NO_ADAPTER.format(name=name, action=action, names=", ".join(known) or NO_ADAPTERS)


def added(view: AppContext, name: str, detail: str) -> str:
    """The message after adding an adapter to the folder, once the deployment has been told, with its audit."""
    try:
        note = view.deployment.register_adapter(name, view.adapters.folder / name)
    except ChatError as exc:
        note = f"⚠️ {exc}"
    audit = view.deployment.adapter_audit(name)
    lines = "".join(f"\n- {line}" for line in audit_lines(audit)) if audit else ""
    return f"Added **{name}** ({detail}). {note}{lines}"


def remove_choices(view: AppContext, value: str | None = None) -> gr.Dropdown:
    """The Remove list: the adapters in the view's folder; `value` kept when it is among them, else nothing picked."""
    names = view.adapters.names()
    return gr.Dropdown(choices=names, value=value if value in names else None)


def check_choices(view: AppContext, value: str | None = None) -> gr.Dropdown:
    """The Check list: the adapters the view's deployment knows; `value` kept when it is among them."""
    names = view.deployment.adapter_names()
    return gr.Dropdown(choices=names, value=value if value in names else None)


def outcome(view: AppContext, text: str) -> tuple:
    """(table, message, Remove list) after an action or a Refresh: the API's outputs."""
    return table_rows(view), text, remove_choices(view)


def shown(view: AppContext, removing: str | None = None, checking: str | None = None) -> tuple:
    """(header, table, Remove list, Check list) as the view sees them, the names picked kept while listed."""
    return header(view), table_rows(view), remove_choices(view, removing), check_choices(view, checking)


def on_add_folder(view: AppContext, path: str, name: str) -> tuple:
    try:
        folder = view.access.workspace.resolve(path or "", what="adapter folder")
        info = view.adapters.add_folder(folder, (name or "").strip() or None, shown_name=(path or "").strip(),
                                        target=view.deployment.lora_target())
    except (ChatError, OSError, WorkspaceError) as exc:
        return outcome(view, f"⚠️ {exc}")
    return outcome(view, added(view, info.name, f"task id {info.task_id}, rank {info.rank}"))


def on_add_zip(view: AppContext, path: str | None, name: str) -> tuple:
    if not path:
        return outcome(view, "⚠️ Choose a .zip file first.")
    try:
        info = view.adapters.add_zip(Path(path), (name or "").strip() or None, target=view.deployment.lora_target())
    except (ChatError, OSError) as exc:
        return outcome(view, f"⚠️ {exc}")
    return outcome(view, added(view, info.name, f"task id {info.task_id}, rank {info.rank}"))


def on_ask_remove(view: AppContext, name: str | None) -> tuple:
    """(confirm row, question, message): the question names the adapter and the folder it goes from."""
    name = (name or "").strip()
    if not name:
        return gr.Row(visible=False), "", MSG_PICK_TO_REMOVE
    problem = unknown(name, "remove", view.adapters.names())
    if problem:
        return gr.Row(visible=False), "", problem
    return gr.Row(visible=True), MSG_CONFIRM_REMOVE.format(name=name, folder=view.adapters.folder / name), gr.skip()


def on_remove(view: AppContext, name: str | None) -> tuple:
    name = (name or "").strip()
    if not name:
        return outcome(view, MSG_PICK_TO_REMOVE)
    problem = unknown(name, "remove", view.adapters.names())
    if problem:
        return outcome(view, problem)
    try:
        view.adapters.remove(name)
    except (ChatError, OSError) as exc:
        return outcome(view, f"⚠️ {exc}")
    return outcome(view, f"Removed **{name}**.")


def on_check(view: AppContext, name: str | None) -> str:
    name = (name or "").strip()
    if not name:
        return MSG_PICK_TO_CHECK
    own = view.deployment.built_in_adapter()  # not in the list, but its check says why it cannot tell
    problem = unknown(name, "check", [*view.deployment.adapter_names(), *([own] if own else [])])
    return problem or view.adapter_checks.run_now(view.deployment, name).message


def build(ctx: AppContext, app: gr.Blocks | None = None, tab: gr.Tab | None = None) -> None:
    """Lay out the tab and wire its events (`app`: the Blocks whose load shows each session its server's adapters;
    `tab`: this tab, whose selection reads them again, as the session may have picked another server meanwhile)."""
    intro = gr.Markdown(header(ctx), elem_id="adapters-header")
    # a callable value is read on each page load; with `app` the load below reads the session's server instead
    table = gr.Dataframe(value=table_rows(ctx) if app is not None else (lambda: table_rows(ctx)), headers=COLUMNS,
                         interactive=False, elem_id="adapter-table")
    message = gr.Markdown("", elem_id="adapter-message")
    with gr.Row():
        with gr.Column():
            folder = gr.Textbox(label="Add from a folder on the server", placeholder="/path/to/peft_adapter",
                                info="A PEFT folder (adapter_config.json + adapter_model.safetensors) or a "
                                     "converted pair (model.lora_weights.npy + model.lora_config.npy).")
            folder_name = gr.Textbox(label="Name (optional)", info="Defaults to the folder name.")
            add_folder = gr.Button("Add folder", elem_id="add-adapter-folder")
        with gr.Column():
            upload = gr.File(label="Or upload a .zip of an adapter folder", file_types=[".zip"], type="filepath",
                             elem_id="adapter-zip")
            upload_name = gr.Textbox(label="Name (optional)", info="Defaults to the zip's name.")
            add_zip = gr.Button("Add zip", elem_id="add-adapter-zip")
    # value=None: a Dropdown would otherwise preselect its first adapter. Removing asks first (the confirm row).
    # allow_custom_value: Gradio would check API input against the start-up choices; the handlers check the names
    # the session's server knows when the call comes (an adapter trained or added since is taken, an unknown one
    # named).
    with gr.Row():
        to_remove = gr.Dropdown(ctx.adapters.names(), value=None, label="Remove adapter", allow_custom_value=True,
                                elem_id="remove-adapter-name")
        remove = gr.Button("Remove…", variant="stop", elem_id="remove-adapter")
    with gr.Row(visible=False, elem_id="remove-adapter-confirm") as confirm_row:
        question = gr.Markdown(elem_id="remove-adapter-question")
        confirm = gr.Button("Yes, remove", variant="stop", elem_id="remove-adapter-yes")
        keep = gr.Button("Keep it", elem_id="remove-adapter-keep")
    with gr.Row():
        to_check = gr.Dropdown(ctx.deployment.adapter_names(), value=None, label="Is the adapter really applied?",
                               info="Compares its greedy first tokens and their log-probabilities with the base model's, on "
                                    "its training prompts when this app trained it, else on a fixed prompt.",
                               allow_custom_value=True, elem_id="check-adapter-name")
        check = gr.Button("Check adapter", elem_id="check-adapter")
    refresh = gr.Button("Refresh", size="sm")
    trained = adapter_training.build(
        ctx, ([tab.select] if tab is not None else []) + ([app.load] if app is not None else []))

    def view_of(request: gr.Request) -> AppContext:
        return ctx.for_session(request.session_hash if request is not None else None)

    def add_folder_clicked(path: str, name: str, request: gr.Request):
        require_access(ctx, request)
        return on_add_folder(view_of(request), path, name)

    def add_zip_clicked(path: str | None, name: str, request: gr.Request):
        require_access(ctx, request)
        return on_add_zip(view_of(request), path, name)

    def remove_asked(name: str | None, request: gr.Request):
        return on_ask_remove(view_of(request), name)

    def remove_confirmed(name: str | None, request: gr.Request):
        require_access(ctx, request)
        return on_remove(view_of(request), name)

    def check_clicked(name: str | None, request: gr.Request):
        return on_check(view_of(request), name)

    def refreshed(request: gr.Request):
        return outcome(view_of(request), "")

    def checks_again(request: gr.Request):  # the check list follows every change to the folder, nothing picked
        return check_choices(view_of(request))

    def hide_question():
        return gr.Row(visible=False)

    def removed(request: gr.Request):
        return hide_question(), checks_again(request)

    def check_opened(request: gr.Request):  # the choices read now, the name picked kept
        return gr.Dropdown(choices=view_of(request).deployment.adapter_names())

    def remove_opened(request: gr.Request):
        return gr.Dropdown(choices=view_of(request).adapters.names())

    def after_training(request: gr.Request):
        view = view_of(request)
        return table_rows(view), remove_choices(view)

    def after_refresh(request: gr.Request):  # the line above the table too: Refresh reads the session's server
        return header(view_of(request)), checks_again(request)

    outputs = [table, message, to_remove]
    quiet = {"api_visibility": "private", "show_progress": "hidden"}
    check.click(check_clicked, to_check, message, api_name="check_adapter")
    # Lists are read again when opened: another tab, the API or a second browser may have changed the folder.
    to_check.focus(check_opened, None, to_check, **quiet)
    to_remove.focus(remove_opened, None, to_remove, **quiet)
    to_remove.change(hide_question, None, confirm_row, **quiet)  # a question always names the chosen adapter
    add_folder.click(add_folder_clicked, [folder, folder_name], outputs, api_name="add_adapter_folder").then(
        checks_again, None, to_check, **quiet)
    add_zip.click(add_zip_clicked, [upload, upload_name], outputs, api_name="add_adapter_zip").then(
        checks_again, None, to_check, **quiet)
    remove.click(remove_asked, to_remove, [confirm_row, question, message], **quiet)
    confirm.click(remove_confirmed, to_remove, outputs, api_name="remove_adapter").then(
        removed, None, [confirm_row, to_check], **quiet)
    keep.click(lambda: (hide_question(), MSG_REMOVE_KEPT), None, [confirm_row, message], **quiet)
    # after a training: the table and both lists show the new adapter (the message keeps what it said)
    trained.then(after_training, None, [table, to_remove], **quiet).then(checks_again, None, to_check, **quiet)
    refresh.click(refreshed, None, outputs, api_name="list_adapters").then(
        after_refresh, None, [intro, to_check], **quiet)

    def shown_now(removing: str | None, checking: str | None, request: gr.Request):
        return shown(view_of(request), removing, checking)

    # each session's server: on page load and whenever the tab is selected (it may have picked another meanwhile)
    for event in ([tab.select] if tab is not None else []) + ([app.load] if app is not None else []):
        # a Remove question still open was asked of the server shown before: it is asked again, not confirmed
        event(shown_now, [to_remove, to_check], [intro, table, to_remove, to_check], **quiet).then(
            hide_question, None, confirm_row, **quiet)


if __name__ == "__main__":
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()), page)
    page.queue().launch(server_name="127.0.0.1")
