"""The chat tab's conversations, kept in the browser's local storage: a list to switch between them, New,
Delete, export as JSON or Markdown (made in memory, downloaded by the browser) and import from JSON.
The server stores none of it; an imported file is deleted as soon as it is read."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.api.gradio_api import is_uploaded
from app.chat import history as chats
from app.chat.context import AppContext
from app.chat.messages import MSG_IMPORT_TOO_BIG
from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.web.chat_view import chat_messages
from app.web.download import SAVE_PAYLOAD_JS, download_payload
from app.web.labels import (
    CONVERSATIONS,
    CONVERSATIONS_INFO,
    DELETE_CHAT,
    EXPORT_JSON,
    EXPORT_MARKDOWN,
    IMPORT_JSON,
    NEW_CHAT,
)
from app.web.legacy_chats import conversation_of_file, conversation_of_messages
from app.web.messages import MSG_BUSY_SWITCH, MSG_IMPORTED, MSG_NOTHING_TO_EXPORT

STORAGE_KEY = "triton-vlm-lora-conversations"
# BrowserState encrypts with a key it hands to the page anyway; a fixed one keeps the conversations readable
# after the app restarts (a random one, Gradio's default, would lose them with every restart).
STORAGE_SECRET = "triton-vlm-lora-conversations-v1"
MAX_IMPORT_BYTES = 2 * 1024 * 1024
def image_kept(path: str) -> bool:
    """An image of a kept conversation is shown again only while the server still has the upload."""
    return is_uploaded(path) and Path(path).is_file()


def read_upload(path: str) -> bytes | None:
    """An image's bytes for a Markdown export, while the server still has the upload (else None)."""
    return Path(path).read_bytes() if image_kept(path) else None


def file_name(title: str, suffix: str) -> str:
    stem = "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")[:40] or "conversation"
    return f"{stem}.{suffix}"


class HistoryPanel:
    """Lays out the conversation list where it is created; `build_files` lays out export and import."""

    def __init__(self, ctx: AppContext):
        self._ctx = ctx
        self.store = gr.BrowserState(chats.empty_store(), storage_key=STORAGE_KEY, secret=STORAGE_SECRET)
        with gr.Row(elem_id="conversations"):
            self.chats = gr.Dropdown(choices=[], label=CONVERSATIONS, info=CONVERSATIONS_INFO, elem_id="conversation-list", scale=4,
                                     min_width=160)
            self.new = gr.Button(NEW_CHAT, elem_id="new-chat", size="md", scale=0, min_width=80)
            self.delete = gr.Button(DELETE_CHAT, elem_id="delete-chat", size="md", scale=0, min_width=70)

    def build_files(self) -> None:
        with gr.Accordion("Export / import this conversation", open=False, elem_id="export-import"):
            with gr.Row():
                self.export_json = gr.Button(EXPORT_JSON, elem_id="export-json", min_width=120)
                self.export_markdown = gr.Button(EXPORT_MARKDOWN, elem_id="export-markdown", min_width=120)
                self.import_json = gr.UploadButton(IMPORT_JSON, file_types=[".json"], elem_id="import-json",
                                                   min_width=120)
        self.download = gr.Textbox(visible=False, elem_id="download-payload")

    def _listed(self, store: dict) -> gr.Dropdown:
        return gr.Dropdown(choices=chats.choices(store), value=store["current"])

    def _busy(self, request: gr.Request) -> bool:
        return self._ctx.outbox.busy(request.session_hash)

    def wire(self, app: gr.Blocks | None, conversation: gr.State, chatbot: gr.Chatbot, saved_after: list) -> None:
        """Restore on page load, save after each event in `saved_after`, and the list's own buttons. `conversation`
        holds the typed conversation the chat shows in `chatbot`."""
        store, listed = self.store, self.chats
        shown = [store, conversation, chatbot, listed]
        unchanged = (gr.skip(),) * len(shown)

        def showing(kept: dict) -> tuple:
            current = chats.current_conversation(kept)
            return kept, current, chat_messages(current), self._listed(kept)

        def restore(stored):
            return showing(chats.normalise(stored, image_kept, conversation_of_messages))

        def save(stored, current: Conversation):
            kept = chats.save_current(chats.normalise(stored, image_kept, conversation_of_messages), current,
                                      image_kept)
            return kept, self._listed(kept)

        def switch(stored, chosen, request: gr.Request):
            kept = chats.normalise(stored, image_kept, conversation_of_messages)
            if self._busy(request):
                gr.Warning(MSG_BUSY_SWITCH)
                return gr.skip(), gr.skip(), gr.skip(), self._listed(kept)
            try:
                kept = chats.switch(kept, chosen)
            except ChatError as exc:
                gr.Warning(str(exc))
                return gr.skip(), gr.skip(), gr.skip(), self._listed(kept)
            return showing(kept)

        def change(action):
            def handler(stored, request: gr.Request):
                if self._busy(request):
                    gr.Warning(MSG_BUSY_SWITCH)
                    return unchanged
                return showing(action(chats.normalise(stored, image_kept, conversation_of_messages)))
            return handler

        def export(kind: str):
            def handler(current: Conversation):
                if not current:
                    gr.Warning(MSG_NOTHING_TO_EXPORT)
                    return ""
                title = chats.title_of(current)
                if kind == "json":
                    text, suffix, mime = chats.export_json(current, title), "json", "application/json"
                else:
                    text, suffix, mime = chats.export_markdown(current, title, read_upload), "md", "text/markdown"
                return download_payload(file_name(title, suffix), text, mime)
            return handler

        def import_file(upload, stored, request: gr.Request):
            path = Path(upload if isinstance(upload, str) else getattr(upload, "name", "") or "")
            try:
                if self._busy(request):
                    gr.Warning(MSG_BUSY_SWITCH)
                    return unchanged
                size = path.stat().st_size
                if size > MAX_IMPORT_BYTES:
                    gr.Warning(MSG_IMPORT_TOO_BIG.format(name=path.name, size=size, limit=MAX_IMPORT_BYTES))
                    return unchanged
                text = path.read_text(encoding="utf-8", errors="replace")
                title, imported = chats.import_json(text, path.name, conversation_of_file)
            except ChatError as exc:
                gr.Warning(str(exc))
                return unchanged
            finally:
                if is_uploaded(path):
                    path.unlink(missing_ok=True)  # the conversation stays in the browser only
            kept = chats.add_imported(chats.normalise(stored, image_kept, conversation_of_messages), title, imported)
            gr.Info(MSG_IMPORTED.format(title=title, count=chats.turns_text(chats.turns_count(imported))))
            return showing(kept)

        private = dict(api_visibility="private", show_progress="hidden")
        if app is not None:
            app.load(restore, store, shown, **private)
        for event in saved_after:
            event.then(save, [store, conversation], [store, listed], **private)
        listed.input(switch, [store, listed], shown, **private)
        self.new.click(change(chats.new_chat), store, shown, **private)
        self.delete.click(change(chats.delete_current), store, shown, **private)
        for button, kind in ((self.export_json, "json"), (self.export_markdown, "markdown")):
            button.click(export(kind), conversation, self.download, **private).then(
                None, self.download, None, js=SAVE_PAYLOAD_JS, **private)
        self.import_json.upload(import_file, [self.import_json, store], shown, **private)
