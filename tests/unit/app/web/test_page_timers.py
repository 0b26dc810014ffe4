"""Page timers: only the first tab's tick at first; selecting a tab starts its timers and stops every other."""

from __future__ import annotations

import gradio as gr

from app.web.page_timers import tick_while_shown, timers_in


def two_tabs():
    with gr.Blocks() as blocks:
        with gr.Tabs():
            with gr.Tab("A") as first:
                status = gr.Markdown()
                first_timer = gr.Timer(3.0)
                first_timer.tick(lambda: "a", None, status)
            with gr.Tab("B") as second:
                with gr.Row():
                    second_timer = gr.Timer(1.0)
            with gr.Tab("C") as third:
                gr.Markdown("no timer")
        by_tab = tick_while_shown([first, second, third])
    return blocks, by_tab, (first_timer, second_timer)


def select_handler(blocks, tab):
    """The function Gradio runs when `tab` is selected."""
    for block_fn in blocks.fns.values():
        if any(target[0] == tab._id and target[1] == "select" for target in block_fn.targets):
            return block_fn
    raise AssertionError("no select handler")


def test_only_the_first_tabs_timers_start_active_and_nested_timers_are_found():
    blocks, by_tab, (first_timer, second_timer) = two_tabs()
    assert by_tab == {0: [first_timer], 1: [second_timer], 2: []}
    assert (first_timer.active, second_timer.active) == (True, False)
    assert list(timers_in(blocks)) == [first_timer, second_timer]


def test_selecting_a_tab_starts_its_timers_and_stops_the_others():
    blocks, _, (first_timer, second_timer) = two_tabs()
    tabs = [block for block in blocks.blocks.values() if isinstance(block, gr.Tab)]
    for tab, expected in zip(tabs, ([True, False], [False, True], [False, False]), strict=True):
        handler = select_handler(blocks, tab)
        assert [output._id for output in handler.outputs] == [first_timer._id, second_timer._id]
        assert [update.active for update in handler.fn()] == expected
        # one queue, one at a time: the load-time select of the first tab cannot land after a later click's
        assert (handler.concurrency_id, handler.concurrency_limit) == ("page-timer-switches", 1)
