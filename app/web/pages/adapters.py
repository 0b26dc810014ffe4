"""Adapters tab: the LoRA adapters the chat can use, with task ids and cache state; add and remove."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.chat.context import AppConfig, AppContext
from app.core.errors import ChatError
from app.web.gate import require_access
from setup.workspace import WorkspaceError

TITLE = "Adapters"
COLUMNS = ["name", "task id", "rank", "target modules", "size", "held by server", "kind"]


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"


def table_rows(ctx: AppContext) -> list[list]:
    rows = [[a.name, a.task_id, a.rank, ", ".join(a.target_modules), _size(a.size_bytes),
             "yes" if a.held_by_server else "no", a.kind] for a in ctx.adapters.list()]
    rows += [[name, "-", "-", problem, "-", "-", "unusable"] for name, problem in ctx.adapters.problems().items()]
    return rows


def build(ctx: AppContext) -> None:
    gr.Markdown("LoRA adapters in `" + str(ctx.adapters.folder) + "`. The first message with an adapter sends its "
                "weights to the server's LoRA cache; later messages send only the task id, and an evicted "
                "adapter is re-sent automatically.")
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
    with gr.Row():
        to_remove = gr.Dropdown(ctx.adapters.names(), label="Remove adapter", elem_id="remove-adapter-name")
        remove = gr.Button("Remove", variant="stop", elem_id="remove-adapter")
    refresh = gr.Button("Refresh", size="sm")

    def outcome(text: str):
        return table_rows(ctx), text, gr.Dropdown(choices=ctx.adapters.names(), value=None)

    def on_add_folder(path: str, name: str, request: gr.Request):
        require_access(ctx, request)
        try:
            folder = ctx.access.workspace.resolve(path or "", what="adapter folder")
            info = ctx.adapters.add_folder(folder, (name or "").strip() or None, shown_name=path.strip())
        except (ChatError, OSError, WorkspaceError) as exc:
            return outcome(f"⚠️ {exc}")
        return outcome(f"Added **{info.name}** (task id {info.task_id}, rank {info.rank}).")

    def on_add_zip(path: str | None, name: str, request: gr.Request):
        require_access(ctx, request)
        if not path:
            return outcome("⚠️ Choose a .zip file first.")
        try:
            info = ctx.adapters.add_zip(Path(path), name.strip() or None)
        except (ChatError, OSError) as exc:
            return outcome(f"⚠️ {exc}")
        return outcome(f"Added **{info.name}** (task id {info.task_id}, rank {info.rank}).")

    def on_remove(name: str | None, request: gr.Request):
        require_access(ctx, request)
        if not name:
            return outcome("⚠️ Pick an adapter to remove.")
        try:
            ctx.adapters.remove(name)
        except (ChatError, OSError) as exc:
            return outcome(f"⚠️ {exc}")
        return outcome(f"Removed **{name}**.")

    outputs = [table, message, to_remove]
    add_folder.click(on_add_folder, [folder, folder_name], outputs, api_name="add_adapter_folder")
    add_zip.click(on_add_zip, [upload, upload_name], outputs, api_name="add_adapter_zip")
    remove.click(on_remove, to_remove, outputs, api_name="remove_adapter")
    refresh.click(lambda: outcome(""), None, outputs, api_name="list_adapters")


if __name__ == "__main__":
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
