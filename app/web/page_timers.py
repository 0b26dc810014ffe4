"""Page timers tick only while their tab is shown.

The Chat page's status line, the Build page's job poll and the Server page's charts each run on a `gr.Timer`. Gradio
starts a tab's timers when the tab is first shown and never stops them: after one visit to the Build and Server
pages, an open browser tab asked the server for all three, several times a second, whichever page it showed. Each tab's timers start when the tab is selected (by a click
or by a handler that switches tabs, which Gradio reports as the same event) and stop when another tab is. A page's
own buttons whose results its timer shows (the Build page's Run, CPU demo, ...) start it too: a click that lands
before the tab's select event was wired would otherwise wait for a poll that never runs.

The first tab's select event also fires when the page loads. On a busy machine its answer could come after that of a
tab the person clicked right away, and turn the shown tab's timers off. Every switch runs in one queue, one at a
time, so they take effect in the order they were sent (a switch takes microseconds: one queue for every open tab
costs nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import gradio as gr

PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}
IN_ORDER = {"concurrency_id": "page-timer-switches", "concurrency_limit": 1}


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
    if not every:
        return by_tab
    for timer in every:
        timer.active = timer in by_tab[0]
    for index, tab in enumerate(tabs):

        def switch(shown: list[gr.Timer] = by_tab[index]) -> list[gr.Timer]:
            return [gr.Timer(active=timer in shown) for timer in every]

        tab.select(switch, None, every, **PRIVATE, **IN_ORDER)
    return by_tab


def started_by(events: Iterable[gr.events.Dependency], timer: gr.Timer) -> None:
    """Start `timer` after each of `events` (clicks whose progress the timer's ticks show)."""
    for event in events:
        event.then(lambda: gr.Timer(active=True), None, timer, **PRIVATE, **IN_ORDER)
