"""Typing into an editable table's cell keeps every letter. Gradio's Dataframe (6.31) opens a cell's editor on the
first printable key pressed over a selected cell, but focuses the editor a frame later, so that key (and any typed
before the editor has focus) is lost: "Hello" becomes "ello". The page script here keeps those keys and puts them
into the editor once it has focus, in the next frame or, when a key reaches the editor before that frame (a busy
page), ahead of that key. A key or click that ends the edit (Tab, Enter, a click anywhere) before the editor has
focus puts them into the editor first: the table saves what the editor holds when its edit ends, and a busy page
ended it holding nothing (the pairs test, 2 of 14 loaded runs: a pair shown whole reached the app half empty). A
table opts in with the class KEEPS_FIRST_KEY; `keep_typed_keys()` adds the script to the page (an empty HTML
element whose only job is to run it once)."""

from __future__ import annotations

import gradio as gr

KEEPS_FIRST_KEY = "keeps-first-key"  # the elem_classes of a table whose typed keys are kept
GIVE_UP_FRAMES = 60  # about a second: an editor that never gets focus (a read-only cell) drops the keys

KEEP_KEYS_JS = """
if (!window.keepsFirstKey) {
    window.keepsFirstKey = true;
    let kept = "", table = null;
    const editing = (t) => t && t.matches && t.matches("textarea, input");
    const ready = (editor) => kept && table && table.contains(editor) && editing(editor);
    const flush = (editor) => {
        editor.setRangeText(kept, editor.selectionStart, editor.selectionEnd, "end");
        editor.dispatchEvent(new Event("input", {bubbles: true}));
        kept = "";
    };
    const putKept = (frames) => {
        const editor = document.activeElement;
        if (!kept) {
            return;
        }
        if (ready(editor)) {
            flush(editor);
        } else if (frames > 0) {
            requestAnimationFrame(() => putKept(frames - 1));
        } else {
            kept = "";
        }
    };
    const flushOnLeaving = () => {  // the edit is about to end: the kept keys go into its editor, focused or not
        const editor = kept && table && table.querySelector("textarea");
        if (editor) {
            flush(editor);
        }
    };
    document.addEventListener("mousedown", flushOnLeaving, true);
    document.addEventListener("keydown", (event) => {
        if (ready(event.target)) {  // the editor had focus before the frame that puts the kept keys in: they go first
            flush(event.target);
        } else if (event.key === "Tab" || event.key === "Enter") {
            flushOnLeaving();
        }
        const owner = event.target.closest && event.target.closest(".KEEPS_FIRST_KEY");
        if (!owner || editing(event.target) || event.key.length !== 1 || event.ctrlKey || event.metaKey ||
            event.altKey) {
            return;
        }
        if (!kept) {
            table = owner;
            requestAnimationFrame(() => putKept(GIVE_UP_FRAMES));
        }
        kept += event.key;
    }, true);
}
""".replace("KEEPS_FIRST_KEY", KEEPS_FIRST_KEY).replace("GIVE_UP_FRAMES", str(GIVE_UP_FRAMES))


def keep_typed_keys() -> gr.HTML:
    """The empty element that runs KEEP_KEYS_JS when the page loads (once per page, however many tables)."""
    return gr.HTML("", js_on_load=KEEP_KEYS_JS, container=False, padding=False, elem_classes="keep-typed-keys")
