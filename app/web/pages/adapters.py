"""Adapters tab: the LoRA adapters the chat can use, with task ids and cache state; add and remove."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.chat.context import AppConfig, AppContext
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


def table_rows(ctx: AppContext) -> list[list]:
    deployment = ctx.deployment
    rows = []
    for a in deployment.adapters():
        audit = deployment.adapter_audit(a.name) if a.path is not None else None
        rows.append([a.name, _known(a.task_id), _known(a.rank), ", ".join(a.target_modules) or "-",
                     _known(a.size_bytes, _size), HELD.get(a.held_by_server), a.kind, applied_cell(audit),
                     dropped_cell(audit), notes_cell(audit)])
    rows += [[name, "-", "-", problem, "-", "-", "unusable", "-", "-", "-"]
             for name, problem in deployment.adapter_problems().items()]
    return rows


def unknown(name: str, action: str, known: list[str]) -> str | None:
    """The sentence for a name that is not among `known` (the list read now), else None."""
    if name in known:
        return None
    return MSG_NO_ADAPTER.format(name=name, action=action, names=", ".join(known) or NO_ADAPTERS)


def added(ctx: AppContext, name: str, detail: str) -> str:
    """The message after adding an adapter to the folder, once the deployment has been told, with its audit."""
    try:
        note = ctx.deployment.register_adapter(name, ctx.adapters.folder / name)
    except ChatError as exc:
        note = f"⚠️ {exc}"
    audit = ctx.deployment.adapter_audit(name)
    lines = "".join(f"\n- {line}" for line in audit_lines(audit)) if audit else ""
    return f"Added **{name}** ({detail}). {note}{lines}"


def build(ctx: AppContext) -> None:
    gr.Markdown(f"LoRA adapters of the {ctx.deployment.kind} at `{ctx.deployment.url}`; adapters added here go "
                f"to `{ctx.adapters.folder}` and are made known to the server as it allows (Triton: weights on "
                "first use, re-sent after eviction; vLLM: registered at run time).")
    table = gr.Dataframe(value=lambda: table_rows(ctx), headers=COLUMNS, interactive=False, elem_id="adapter-table")
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
    # the app knows when the call comes (an adapter trained or added since is taken, an unknown one named).
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
    trained = adapter_training.build(ctx)

    def outcome(text: str):
        return table_rows(ctx), text, gr.Dropdown(choices=ctx.adapters.names(), value=None)

    def on_add_folder(path: str, name: str, request: gr.Request):
        require_access(ctx, request)
        try:
            folder = ctx.access.workspace.resolve(path or "", what="adapter folder")
            info = ctx.adapters.add_folder(folder, (name or "").strip() or None, shown_name=path.strip(),
                                           target=ctx.deployment.lora_target())
        except (ChatError, OSError, WorkspaceError) as exc:
            return outcome(f"⚠️ {exc}")
        return outcome(added(ctx, info.name, f"task id {info.task_id}, rank {info.rank}"))

    def on_add_zip(path: str | None, name: str, request: gr.Request):
        require_access(ctx, request)
        if not path:
            return outcome("⚠️ Choose a .zip file first.")
        try:
            info = ctx.adapters.add_zip(Path(path), name.strip() or None, target=ctx.deployment.lora_target())
        except (ChatError, OSError) as exc:
            return outcome(f"⚠️ {exc}")
        return outcome(added(ctx, info.name, f"task id {info.task_id}, rank {info.rank}"))

    def on_ask_remove(name: str | None):
        name = (name or "").strip()
        if not name:
            return gr.Row(visible=False), "", MSG_PICK_TO_REMOVE
        problem = unknown(name, "remove", ctx.adapters.names())
        if problem:
            return gr.Row(visible=False), "", problem
        return (gr.Row(visible=True), MSG_CONFIRM_REMOVE.format(name=name, folder=ctx.adapters.folder / name),
                gr.skip())

    def on_remove(name: str | None, request: gr.Request):
        require_access(ctx, request)
        name = (name or "").strip()
        if not name:
            return outcome(MSG_PICK_TO_REMOVE)
        problem = unknown(name, "remove", ctx.adapters.names())
        if problem:
            return outcome(problem)
        try:
            ctx.adapters.remove(name)
        except (ChatError, OSError) as exc:
            return outcome(f"⚠️ {exc}")
        return outcome(f"Removed **{name}**.")

    def on_check(name: str | None):
        name = (name or "").strip()
        if not name:
            return MSG_PICK_TO_CHECK
        own = ctx.deployment.built_in_adapter()  # not in the list, but its check says why it cannot tell
        problem = unknown(name, "check", [*ctx.deployment.adapter_names(), *([own] if own else [])])
        return problem or ctx.adapter_checks.run_now(ctx.deployment, name).message

    outputs = [table, message, to_remove]
    quiet = {"api_visibility": "private", "show_progress": "hidden"}

    def check_choices():  # the check list follows every change to the folder, nothing picked
        return gr.Dropdown(choices=ctx.deployment.adapter_names(), value=None)

    def hide_question():
        return gr.Row(visible=False)

    check.click(on_check, to_check, message, api_name="check_adapter")
    # Lists are read again when opened: another tab, the API or a second browser may have changed the folder.
    to_check.focus(lambda: gr.Dropdown(choices=ctx.deployment.adapter_names()), None, to_check, **quiet)
    to_remove.focus(lambda: gr.Dropdown(choices=ctx.adapters.names()), None, to_remove, **quiet)
    to_remove.change(hide_question, None, confirm_row, **quiet)  # a question always names the chosen adapter
    add_folder.click(on_add_folder, [folder, folder_name], outputs, api_name="add_adapter_folder").then(
        check_choices, None, to_check, **quiet)
    add_zip.click(on_add_zip, [upload, upload_name], outputs, api_name="add_adapter_zip").then(
        check_choices, None, to_check, **quiet)
    remove.click(on_ask_remove, to_remove, [confirm_row, question, message], **quiet)
    confirm.click(on_remove, to_remove, outputs, api_name="remove_adapter").then(
        lambda: (hide_question(), check_choices()), None, [confirm_row, to_check], **quiet)
    keep.click(lambda: (hide_question(), MSG_REMOVE_KEPT), None, [confirm_row, message], **quiet)
    # after a training: the table and both lists show the new adapter (the message keeps what it said)
    trained.then(lambda: (table_rows(ctx), gr.Dropdown(choices=ctx.adapters.names(), value=None)), None,
                 [table, to_remove], **quiet).then(check_choices, None, to_check, **quiet)
    refresh.click(lambda: outcome(""), None, outputs, api_name="list_adapters").then(
        check_choices, None, to_check, **quiet)


if __name__ == "__main__":
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
