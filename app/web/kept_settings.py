"""The chat's Sampling settings and system prompt kept in the browser's local storage, so a reload (or the next
visit) finds them as the person left them. Only values a person could have set come back: numbers within their
limits, the known choices, text up to a length; anything else keeps the widget's default."""

from __future__ import annotations

from collections.abc import Mapping

import gradio as gr

from app.chat.sampling import GREEDY
from app.core.constants import CONTEXT_MODES, MAX_PROMPT_CHARS
from app.core.sampling import SAMPLING_LIMITS

STORAGE_KEY = "triton-vlm-lora-settings"
STORAGE_SECRET = "triton-vlm-lora-settings-v1"  # fixed, as the conversations' (history_panel.py): kept across restarts
DECODINGS = ("greedy", "sample")
TEXT_LIMITS = {"seed": 30, "pdf_pages": 100, "system_prompt": MAX_PROMPT_CHARS}
PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}


def checked(name: str, value: object) -> object | None:
    """`value` when it is one the widget `name` can hold, else None (the widget keeps its default)."""
    if name in SAMPLING_LIMITS and name != "seed":
        _default, low, high = SAMPLING_LIMITS[name]
        ok = isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high
        return value if ok else None
    if name == "decoding":
        return value if value in DECODINGS else None
    if name == "context_mode":
        return value if value in CONTEXT_MODES else None
    if name == "keep_pictures":
        return value if isinstance(value, bool) else None
    if name in TEXT_LIMITS:
        return value if isinstance(value, str) and len(value) <= TEXT_LIMITS[name] else None
    return None


def restored(stored: object, names: list[str]) -> list:
    """Updates for the widgets `names`, in order, from what the browser kept (gr.skip() where nothing usable)."""
    kept = stored if isinstance(stored, Mapping) else {}
    if "context_mode" not in kept and "history_mode" in kept:  # the name pages before 29 November kept it under
        kept = {**kept, "context_mode": kept["history_mode"]}
    values = [checked(name, kept.get(name)) for name in names]
    return [gr.skip() if value is None else value for value in values]


def sample_only_state(stored: object, count: int) -> list:
    """The Sample-only widgets' state after a restore: following the kept decoding, and left alone when none was
    kept (the page's load can end after the person already picked Sample: it must not turn the controls off)."""
    decoding = checked("decoding", stored.get("decoding") if isinstance(stored, Mapping) else None)
    if decoding is None:
        return [gr.skip()] * count
    return [gr.update(interactive=decoding != GREEDY) for _ in range(count)]


def wire(app: gr.Blocks, widgets: Mapping[str, gr.components.Component], sample_only: list) -> None:
    """Keep `widgets` (name -> widget) in the browser: saved when one changes, restored on page load;
    `sample_only`: the widgets Greedy decoding turns off (their state follows the restored decoding)."""
    names = list(widgets)
    store = gr.BrowserState({}, storage_key=STORAGE_KEY, secret=STORAGE_SECRET)

    def save(*values):
        return {name: value for name, value in zip(names, values, strict=True) if checked(name, value) is not None}

    def restore(stored):
        return [*restored(stored, names), *sample_only_state(stored, len(sample_only))]

    for widget in widgets.values():  # .change: typed, dragged or restored (a restore saves what it restored)
        widget.change(save, list(widgets.values()), store, trigger_mode="always_last", **PRIVATE)
    app.load(restore, store, [*widgets.values(), *sample_only], **PRIVATE)
