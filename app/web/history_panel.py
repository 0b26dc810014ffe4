"""The chat tab's conversations, kept in the browser's local storage: a list to switch between them (a search box
narrows it to the conversations that mention some words), New, Delete, Rename, export as JSON or Markdown (made in
memory, downloaded by the browser) and import from JSON.
The server stores none of it; an imported file is deleted as soon as it is read."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import gradio as gr

from app.api.gradio_api import is_uploaded
from app.chat import chat_files
from app.chat import history as chats
from app.chat.media_intake import upload_root
from app.chat.messages import MSG_IMPORT_TOO_BIG
from app.context import AppContext
from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.vision.images import load_image
from app.web.chat_view import chat_messages
from app.web.download import SAVE_PAYLOAD_JS, download_payload
from app.web.labels import (
    CHAT_TITLE,
    CONFIRM_KEEP,
    CONFIRM_YES,
    CONVERSATIONS,
    CONVERSATIONS_INFO,
    DELETE_CHAT,
    EXPORT_JSON,
    EXPORT_MARKDOWN,
    IMPORT_JSON,
    NEW_CHAT,
    RENAME_CHAT,
    SEARCH_CHATS,
    SEARCH_CHATS_INFO,
    SEARCH_NONE,
    SEARCH_TOGGLE,
    UNDO,
)
from app.web.legacy_chats import conversation_of_file, conversation_of_messages
from app.web.messages import (
    MSG_ASK_CLEAR,
    MSG_ASK_DELETE,
    MSG_BUSY_SWITCH,
    MSG_IMPORTED,
    MSG_IMPORTED_AGAIN,
    MSG_NOTHING_TO_EXPORT,
)

STORAGE_KEY = "triton-vlm-lora-conversations"
# BrowserState encrypts with a key it hands to the page anyway; a fixed one keeps the conversations readable
# after the app restarts (a random one, Gradio's default, would lose them with every restart).
STORAGE_SECRET = "triton-vlm-lora-conversations-v1"
MAX_IMPORT_BYTES = 12 * 1024 * 1024  # a conversation file with its pictures embedded (8 MB as base64, and text)
IMPORTED_FOLDER = "imported"  # under the upload folder: the pictures of imported conversations
DATA_URL_PREFIX = "data:"
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~])")  # a query shown in a note as typed, not as Markdown
SEARCH_OPEN_CLASS = "shown"  # on the search column while a phone shows the search box (app/web/style.py)
# The phone's search button (only shown at <= 600 px): it shows or hides the search box at once, in the page, and
# focuses it; hidden again, the box is emptied (the value returned goes to the box), so the list is whole again.
# The class goes on the column, inside the app: Gradio puts its container before every selector of the app's style
# sheet, a rule on <body> included, so a class on <body> would match nothing.
TOGGLE_SEARCH_JS = f"""(query) => {{
    const column = document.querySelector("#chat-search-column");
    const open = column ? column.classList.toggle("{SEARCH_OPEN_CLASS}") : false;
    if (open) setTimeout(() => document.querySelector("#chat-search textarea, #chat-search input")?.focus(), 50);
    return open ? query : "";
}}"""


def image_kept(path: str) -> bool:
    """An image of a kept conversation is shown again only while the server still has the upload."""
    return is_uploaded(path) and Path(path).is_file()


def read_upload(path: str) -> bytes | None:
    """An image's bytes for a Markdown export, while the server still has the upload (else None)."""
    return Path(path).read_bytes() if image_kept(path) else None


def keep_picture(data_url: str, name: str) -> str:
    """Store a picture an imported conversation embeds where uploads are (named by its content, so importing the
    same file twice stores it once); its path. ValueError when it is not a picture the chat takes."""
    head, _, encoded = data_url.partition(",")
    if not head.startswith(DATA_URL_PREFIX) or not head.endswith(";base64"):
        raise ValueError(f"{name} is not embedded as a base64 data URL")
    try:
        data = base64.b64decode(encoded, validate=True)
        picture = load_image(data, name)  # every check an upload gets (size, pixels, format)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{name} is not a picture ({exc})") from None
    except ChatError as exc:
        raise ValueError(str(exc)) from None
    folder = upload_root() / IMPORTED_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:24]}.png"
    if not path.is_file():
        partial = path.with_suffix(".part")
        picture.save(partial, format="PNG")
        partial.replace(path)  # never a half-written picture
    return str(path)


def file_name(title: str, suffix: str) -> str:
    stem = "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")[:40] or "conversation"
    return f"{stem}.{suffix}"


class HistoryPanel:
    """Lays out the conversation list where it is created; `build_files` lays out export and import."""

    def __init__(self, ctx: AppContext):
        self._ctx = ctx
        self.store = gr.BrowserState(chats.empty_store(), storage_key=STORAGE_KEY, secret=STORAGE_SECRET)
        with gr.Row(elem_id="conversations"):
            # always open, one click per conversation (Open WebUI's sidebar): a column of entries beside the chat
            # on a wide screen, one scrolling line of them above it on a narrow one (app/web/style.py)
            self.chats = gr.Radio(choices=[], label=CONVERSATIONS, info=CONVERSATIONS_INFO,
                                  elem_id="conversation-list", scale=4, min_width=160)
            # its own column, so the list keeps its whole line at 400 px; there the column is hidden until the
            # search button (the last of the row, shown at <= 600 px only) shows it, on a line of its own
            # (app/web/style.py): a line for it would push the message box out of the first screen
            with gr.Column(scale=2, min_width=140, elem_id="chat-search-column"):
                self.search = gr.Textbox(label=SEARCH_CHATS, placeholder=SEARCH_CHATS, info=SEARCH_CHATS_INFO,
                                         elem_id="chat-search", max_lines=1, show_label=False)
            self.new = gr.Button(NEW_CHAT, elem_id="new-chat", size="md", scale=0, min_width=80)
            self.delete = gr.Button(DELETE_CHAT, elem_id="delete-chat", size="md", scale=0, min_width=70)
            self.rename = gr.Button(RENAME_CHAT, elem_id="rename-chat", size="md", scale=0, min_width=80)
            self.search_toggle = gr.Button(SEARCH_TOGGLE, elem_id="chat-search-toggle", size="md", scale=0,
                                           min_width=44)
        # what a search that found nothing says (a line of its own: the list's info is hidden at 400 px)
        self.search_note = gr.Markdown(visible=False, elem_id="chat-search-note")
        with gr.Row(visible=False, elem_id="rename-row") as self.rename_row:
            self.title = gr.Textbox(label=CHAT_TITLE, elem_id="chat-title", max_lines=1)
        # Clear and Delete ask first; what they removed can be brought back with Undo until the next change
        with gr.Row(visible=False, elem_id="chat-confirm") as self.confirm_row:
            self.question = gr.Markdown(elem_id="chat-confirm-question")
            self.yes = gr.Button(CONFIRM_YES, variant="stop", elem_id="chat-confirm-yes", scale=0, min_width=90)
            self.keep = gr.Button(CONFIRM_KEEP, elem_id="chat-confirm-keep", scale=0, min_width=90)
        self.undo = gr.Button(UNDO, visible=False, elem_id="chat-undo", size="sm")
        self.pending = gr.State(None)  # "clear" or "delete", while the question is asked
        self.before = gr.State(None)  # the store before the last Clear or Delete (for Undo)

    def build_files(self) -> None:
        with gr.Accordion("Export / import this conversation", open=False, elem_id="export-import"):
            with gr.Row():
                self.export_json = gr.Button(EXPORT_JSON, elem_id="export-json", min_width=120)
                self.export_markdown = gr.Button(EXPORT_MARKDOWN, elem_id="export-markdown", min_width=120)
                self.import_json = gr.UploadButton(IMPORT_JSON, file_types=[".json"], elem_id="import-json",
                                                   min_width=120)
        self.download = gr.Textbox(visible=False, elem_id="download-payload")

    def wire(self, app: gr.Blocks | None, conversation: gr.State, chatbot: gr.Chatbot, saved_after: list,
             clear: gr.Button | None = None, stop_session: Callable[[str], None] = lambda _session: None) -> list:
        """Restore on page load, save after each event in `saved_after`, and the list's own buttons; `clear` (the
        chat's Clear) asks first as Delete does, and `stop_session(session)` ends what a cleared conversation still
        runs or queues. `conversation` holds the typed conversation the chat shows in `chatbot`. Returns the events
        that may show another conversation (the chat sets its reply buttons after them)."""
        busy = self._ctx.outbox.busy
        shown = [self.store, conversation, chatbot, self.chats]
        asked = [self.confirm_row, self.question, self.pending]
        undone = [self.undo, self.before]

        # Each takes the conversation shown too, and saves it first: the save that follows a reply may not have
        # reached the browser's store yet when New, a pick in the list or an import comes right after the reply
        # (the conversation was lost: a loaded run's search found nothing of it).
        def switch(request: gr.Request, stored, chosen, current):
            return on_pick(stored, chosen, busy(request.session_hash), current)

        def change(action):
            def handler(request: gr.Request, stored, current):
                return on_change(stored, action, busy(request.session_hash), current)
            return handler

        def import_file(request: gr.Request, upload, stored, current):
            return on_import(upload, stored, busy(request.session_hash), current)

        private = dict(api_visibility="private", show_progress="hidden")
        showing_events = [app.load(on_restore, self.store, shown, **private)] if app is not None else []
        for event in saved_after:
            event.then(on_save, [self.store, conversation], [self.store, self.chats], **private)
        def confirmed(request: gr.Request, pending, stored, current):
            if pending == "clear":
                stop_session(request.session_hash)
            return on_confirmed(pending, stored, current, busy(request.session_hash))

        def trashed(request: gr.Request, stored, current):  # the chatbot's own trash icon: cleared, then Undo
            stop_session(request.session_hash)
            return on_confirmed("clear", stored, current, False)

        switched = self.chats.input(switch, [self.store, self.chats, conversation], [*shown, self.search], **private)
        # The search narrows the list's choices; picking one of them is the switch above (which empties the box,
        # whose change then hides the note). On `.change`, not `.input`: Gradio's Textbox sends `.input` for typed
        # keys only, not for text set otherwise (a browser test's fill: the list did not follow the query).
        self.search.change(on_search, [self.store, self.search], [self.chats, self.search_note],
                           trigger_mode="always_last", **private)
        self.search_toggle.click(lambda query: query, self.search, self.search, js=TOGGLE_SEARCH_JS, **private)
        made_new = self.new.click(change(chats.new_chat), [self.store, conversation], shown, **private)
        showing_events += [switched, made_new,
                           self.yes.click(confirmed, [self.pending, self.store, conversation],
                                          [*shown, *asked, *undone], **private),
                           chatbot.clear(trashed, [self.store, conversation], [*shown, *asked, *undone], **private),
                           self.undo.click(on_undo, self.before, [*shown, *undone], **private)]
        self.delete.click(partial(on_ask, "delete"), conversation, asked, **private)
        self.rename.click(on_rename_open, [self.store, conversation], [self.rename_row, self.title], **private)
        self.title.submit(on_rename, [self.store, conversation, self.title], [self.store, self.chats, self.rename_row],
                          **private)
        if clear is not None:
            clear.click(partial(on_ask, "clear"), conversation, asked, **private)
        self.keep.click(lambda: (gr.Row(visible=False), "", None), None, asked, **private)
        for event in (*saved_after, switched, made_new):  # a later change ends the chance to undo
            event.then(lambda: (gr.Button(visible=False), None), None, undone, **private)
        for button, kind in ((self.export_json, "json"), (self.export_markdown, "markdown")):
            button.click(partial(on_export, kind=kind), conversation, self.download, **private).then(
                None, self.download, None, js=SAVE_PAYLOAD_JS, **private)
        showing_events.append(self.import_json.upload(import_file, [self.import_json, self.store, conversation], shown,
                                                      **private))
        return showing_events


# The handlers: each takes the browser's store (and the typed conversation) and returns what the panel shows
# (store, conversation, chatbot messages, list), or gr.skip() for what stays. `busy`: a reply is streaming in this
# session, so the shown conversation must not change under it.

UNCHANGED = (gr.skip(),) * 4


def kept_store(stored, current: Conversation | None = None) -> dict:
    """The browser's store made current: older layouts read, pictures the server no longer has dropped; with
    `current` (the conversation the page shows), that conversation saved into it."""
    kept = chats.normalise(stored, image_kept, conversation_of_messages)
    return kept if current is None else chats.save_current(kept, current, image_kept)


def listed(store: dict) -> gr.Radio:
    return gr.Radio(choices=chats.choices(store), value=store["current"])


def on_search(stored, query: str | None) -> tuple[gr.Radio, gr.Markdown]:
    """(the list, the note under it): the list narrowed to the conversations whose title or any text holds every word
    of `query` (all of them for an empty query), the shown conversation still chosen when it is found, else none (the
    chat still shows it: choosing another would say the list shows what the chat does not); nothing found: an empty
    list, and the note says so. The value is one of the choices or none (the list refuses a value it does not offer)."""
    kept = kept_store(stored)
    words = " ".join((query or "").split())
    hits = chats.found(kept, words)
    if not hits:
        said = SEARCH_NONE.format(query=MARKDOWN_SPECIAL.sub(r"\\\1", words))
        return gr.Radio(choices=[], value=None), gr.Markdown(said, visible=True)
    ids = [chat_id for _, chat_id in hits]
    chosen = kept["current"] if kept["current"] in ids else None
    return gr.Radio(choices=hits, value=chosen), gr.Markdown(visible=False)


def showing(kept: dict) -> tuple:
    current = chats.current_conversation(kept)
    return kept, current, chat_messages(current), listed(kept)


def on_rename_open(stored, current: Conversation) -> tuple:
    """The title box, shown with the shown conversation's title. The conversation is saved into the store first: the
    save that follows a reply may not have landed yet when Rename is pressed right after it."""
    kept = kept_store(stored, current)
    title = next(c for c in kept["chats"] if c["id"] == kept["current"])["title"]
    return gr.Row(visible=True), title


def on_rename(stored, current: Conversation, title: str) -> tuple:
    """The shown conversation named `title`: (store, list, title box hidden)."""
    kept = kept_store(stored, current)
    kept = chats.rename(kept, kept["current"], title or "")
    return kept, listed(kept), gr.Row(visible=False)


def on_restore(stored) -> tuple:
    return showing(kept_store(stored))


def on_save(stored, current: Conversation) -> tuple:
    kept = kept_store(stored, current)
    return kept, listed(kept)


def on_switch(stored, chosen: str | None, busy: bool, current: Conversation | None = None) -> tuple:
    """The chosen conversation shown (the one shown before saved first), refused while a reply streams. Nothing
    chosen (the list emptied by a search that found nothing, then left) changes nothing."""
    if not chosen:
        return UNCHANGED
    kept = kept_store(stored, None if busy else current)
    if busy:
        gr.Warning(MSG_BUSY_SWITCH)
        return gr.skip(), gr.skip(), gr.skip(), listed(kept)
    try:
        return showing(chats.switch(kept, chosen))
    except ChatError as exc:
        gr.Warning(str(exc))
        return gr.skip(), gr.skip(), gr.skip(), listed(kept)


def on_pick(stored, chosen: str | None, busy: bool, current: Conversation | None = None) -> tuple:
    """A pick in the list (the whole list or a search's): on_switch, and the search box emptied in the same update,
    since the list it shows holds every conversation again; nothing chosen leaves the query as it is."""
    done = on_switch(stored, chosen, busy, current)
    return (*done, gr.skip() if done is UNCHANGED else "")


def on_change(stored, action: Callable[[dict], dict], busy: bool, current: Conversation | None = None) -> tuple:
    """New or Delete (`action`) after saving the conversation shown, refused while a reply streams."""
    if busy:
        gr.Warning(MSG_BUSY_SWITCH)
        return UNCHANGED
    return showing(action(kept_store(stored, current)))


def on_ask(action: str, current: Conversation) -> tuple:
    """The question before Clear or Delete: (row shown, question, pending action)."""
    question = MSG_ASK_CLEAR if action == "clear" else MSG_ASK_DELETE.format(title=chats.title_of(current or
                                                                                                  Conversation()))
    return gr.Row(visible=True), question, action


def on_confirmed(action: str | None, stored, current: Conversation, busy: bool) -> tuple:
    """Clear or Delete done: what the panel shows, the question hidden, Undo offered with the store before it."""
    hidden = (gr.Row(visible=False), "", None)
    if action not in ("clear", "delete"):
        return (*UNCHANGED, *hidden, gr.skip(), gr.skip())
    if busy and action == "delete":
        gr.Warning(MSG_BUSY_SWITCH)
        return (*UNCHANGED, *hidden, gr.skip(), gr.skip())
    before = kept_store(stored, current or Conversation())
    after = chats.delete_current(before) if action == "delete" else chats.save_current(before, Conversation(),
                                                                                        image_kept)
    return (*showing(after), *hidden, gr.Button(visible=True), before)


def on_undo(before) -> tuple:
    """The store as it was before the last Clear or Delete, shown again; Undo hidden."""
    if not isinstance(before, dict):
        return (*UNCHANGED, gr.Button(visible=False), None)
    return (*showing(kept_store(before)), gr.Button(visible=False), None)


def on_export(current: Conversation, kind: str) -> str:
    """The download payload (file name, text, type) of the conversation as JSON or Markdown; "" if it is empty."""
    if not current:
        gr.Warning(MSG_NOTHING_TO_EXPORT)
        return ""
    title = chats.title_of(current)
    if kind == "json":
        text, suffix, mime = chat_files.export_json(current, title, read_upload), "json", "application/json"
    else:
        text, suffix, mime = chat_files.export_markdown(current, title, read_upload), "md", "text/markdown"
    return download_payload(file_name(title, suffix), text, mime)


def on_import(upload, stored, busy: bool, current: Conversation | None = None) -> tuple:
    """Add an exported conversation (JSON) and show it; the uploaded file is deleted once read."""
    path = Path(upload if isinstance(upload, str) else getattr(upload, "name", "") or "")
    try:
        if busy:
            gr.Warning(MSG_BUSY_SWITCH)
            return UNCHANGED
        size = path.stat().st_size
        if size > MAX_IMPORT_BYTES:
            gr.Warning(MSG_IMPORT_TOO_BIG.format(name=path.name, size=size, limit=MAX_IMPORT_BYTES))
            return UNCHANGED
        title, imported = chat_files.import_json(path.read_text(encoding="utf-8", errors="replace"), path.name,
                                            conversation_of_file, keep=keep_picture)
    except ChatError as exc:
        gr.Warning(str(exc))
        return UNCHANGED
    finally:
        if is_uploaded(path):
            path.unlink(missing_ok=True)  # the conversation stays in the browser only
    kept, added = chats.add_imported(kept_store(stored, current), title, imported)
    said = MSG_IMPORTED if added else MSG_IMPORTED_AGAIN
    gr.Info(said.format(title=title, count=chats.turns_text(chats.turns_count(imported))))
    return showing(kept)
