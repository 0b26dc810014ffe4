"""Page timers tick only while their tab is shown.

The Chat page's status line, the Build page's job poll and the Server page's charts each run on a `gr.Timer`. Left
running, every open browser tab asks the server for all three, several times a second, whichever page it shows:
work for the server and the browser that nobody sees. Each tab's timers start when the tab is selected (by a click
or by a handler that switches tabs, which Gradio reports as the same event) and stop when another tab is.
"""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr

PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}


def timers_in(block: gr.blocks.Block) -> Iterator[gr.Timer]:
    """The timers laid out anywhere inside `block`."""
    for child in getattr(block, "children", ()):
        if isinstance(child, gr.Timer):
            yield child
        else:
            yield from timers_in(child)


def tick_while_shown(tabs: list[gr.Tab]) -> dict[int, list[gr.Timer]]:
    """Start each tab's timers when it is selected and stop the others'; only the first tab's tick at first.

    Returns the timers by tab (in `tabs`' order)."""
    by_tab = {index: list(timers_in(tab)) for index, tab in enumerate(tabs)}
    every = [timer for timers in by_tab.values() for timer in timers]
    for timer in every:
        timer.active = timer in by_tab[0]
    for index, tab in enumerate(tabs):
        shown = by_tab[index]

        def switch(shown: list[gr.Timer] = shown) -> list[gr.Timer]:
            return [gr.Timer(active=timer in shown) for timer in every]

        if every:
            tab.select(switch, None, every, **PRIVATE)
    return by_tab
