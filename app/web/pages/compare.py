"""Compare tab: the same prompt (and optionally images) through the base model and up to three adapters, side
by side, streamed, each column with its state and figures."""

from __future__ import annotations

import gradio as gr

from app.chat.compare import CUT, DEFAULT_MAX_TOKENS, ColumnView, CompareRun
from app.chat.context import AppConfig, AppContext
from app.chat.messages import MSG_COMPARE_CUT
from app.core.constants import MAX_COMPARE_ADAPTERS
from app.core.errors import ChatError
from app.core.sampling import SamplingParams
from app.web.labels import (
    COMPARE_IMAGE_HEIGHT,
    COMPARE_IMAGE_LABEL,
    COMPARE_INTRO,
    COMPARE_NONE,
    COMPARE_READY,
    COMPARE_READY_ADAPTER,
    COMPARE_UNUSED,
    STOP,
    adapter_choices,
    adapter_of,
)

TITLE = "Compare"
COLUMNS = MAX_COMPARE_ADAPTERS + 1


def column_choices(ctx: AppContext) -> list[str]:
    return [COMPARE_NONE, *adapter_choices(ctx)]


def first_picks(ctx: AppContext) -> list[str]:
    """Column 1 the base model, the next ones the first adapters, so Compare compares something at once; on a
    model whose own adapter takes no other (InternLM-XComposer2's Partial LoRA) column 1 alone, as the others
    would be refused."""
    choices = adapter_choices(ctx) if ctx.deployment.combines_adapters() else adapter_choices(ctx)[:1]
    return [choices[i] if i < len(choices) else COMPARE_NONE for i in range(COLUMNS)]


def column_name(pick: str | None) -> str | None:
    """The model a column's dropdown names, None for an unused column."""
    return None if not pick or pick == COMPARE_NONE else pick


def small(text: str) -> str:
    return f"<small>{text}</small>"


def pick_line(pick: str | None) -> str:
    """A column's state before a run, from its dropdown: what it will run, or that it is not used."""
    name = column_name(pick)
    if name is None:
        return small(COMPARE_UNUSED)
    adapter = adapter_of(name)
    return small(COMPARE_READY_ADAPTER.format(adapter=adapter) if adapter else COMPARE_READY.format(model=name))


def state_line(view: ColumnView | None, limit: int) -> str:
    """A column's state during and after a run (with a mark when its reply reached the `limit` of new tokens);
    an unused column's when `view` is None."""
    if view is None:
        return small(COMPARE_UNUSED)
    cut = MSG_COMPARE_CUT.format(limit=limit) if view.finish_reason == CUT else ""
    return small(" · ".join(part for part in (view.state, cut, view.figures) if part))


def build(ctx: AppContext) -> None:
    gr.Markdown(COMPARE_INTRO)
    with gr.Row():
        prompt = gr.Textbox(label="Prompt", elem_id="compare-prompt", placeholder="What is the capital of France?",
                            scale=3)
        # A gallery of paths (type="filepath": the server decodes nothing), so the app's intake checks size and
        # pixels before anything reads a picture; the browser shows thumbnails of what was attached.
        image = gr.Gallery(label=COMPARE_IMAGE_LABEL, file_types=["image"], type="filepath", interactive=True,
                           sources=["upload"], elem_id="compare-image", height=COMPARE_IMAGE_HEIGHT, columns=4,
                           object_fit="contain", allow_preview=False, buttons=[], scale=1, min_width=160)
    picks = first_picks(ctx)
    with gr.Row():
        pickers = [gr.Dropdown(column_choices(ctx), value=pick, label=f"Column {i + 1}",
                               elem_id=f"compare-adapter-{i}", min_width=160)
                   for i, pick in enumerate(picks)]
    max_tokens = gr.Slider(1, 512, value=DEFAULT_MAX_TOKENS, step=1, label="Max new tokens", elem_id="compare-max-tokens")
    with gr.Row():
        run = gr.Button("Compare", variant="primary", elem_id="compare-run")
        stop = gr.Button(STOP, elem_id="compare-stop", interactive=False)
    outputs, states = [], []
    with gr.Row():
        for i in range(COLUMNS):
            with gr.Column(min_width=200):
                outputs.append(gr.Textbox(label=f"Column {i + 1}", lines=10, interactive=False,
                                          elem_id=f"compare-out-{i}"))
                states.append(gr.Markdown(pick_line(picks[i]), elem_id=f"compare-state-{i}"))
    runs: dict[str, CompareRun] = {}

    def controls(running: bool) -> list[gr.Button | gr.Dropdown]:
        """Compare, Stop, then the column pickers: locked while a run shows what they picked."""
        return [gr.Button(interactive=not running),
                gr.Button(interactive=running, variant="stop" if running else "secondary"),
                *[gr.Dropdown(interactive=not running) for _ in range(COLUMNS)]]

    def on_run(text: str, pictures: list[tuple[str, str | None]] | None, tokens: float, first: str, second: str,
               third: str, fourth: str, request: gr.Request):
        names = [column_name(pick) for pick in (first, second, third, fourth)[:COLUMNS]]
        chosen = list(dict.fromkeys(name for name in names if name))
        try:
            compare = CompareRun(ctx, text, [adapter_of(name) for name in chosen], SamplingParams(max_tokens=int(tokens)),
                                 images=[path for path, _caption in pictures] if pictures else None)
        except ChatError as exc:
            gr.Warning(str(exc))  # a toast; the page stays as it was
            yield [gr.skip()] * (3 * COLUMNS + 2)
            return
        runs[request.session_hash] = compare
        opening = True
        try:
            for views in compare.view_updates():
                by_name = dict(zip(chosen, views, strict=True))
                seen = [by_name.get(name) if name else None for name in names]
                texts = [gr.Textbox(value=view.text if view else "", label=name or f"Column {i + 1}")
                         for i, (name, view) in enumerate(zip(names, seen, strict=True))]
                finished = compare.done()  # true for the last snapshot: its update re-enables Compare
                locks = controls(not finished) if opening or finished else [gr.skip()] * (COLUMNS + 2)
                yield [*texts, *(state_line(view, int(tokens)) for view in seen), *locks]
                opening = False
        finally:
            runs.pop(request.session_hash, None)

    def on_stop(request: gr.Request):
        compare = runs.get(request.session_hash)
        if compare is not None:
            compare.cancel()  # the run then shows each column's last text with "(stopped)"

    def on_pick(pick: str | None, number: int) -> tuple[gr.Textbox, str]:
        """A new pick empties its column (the text was another model's) and says what the column will run."""
        return gr.Textbox(value="", label=f"Column {number}"), pick_line(pick)

    for i, picker in enumerate(pickers):
        picker.focus(lambda: gr.Dropdown(choices=column_choices(ctx)), None, picker,
                     api_visibility="private", show_progress="hidden")
        picker.change(lambda pick, number=i + 1: on_pick(pick, number), picker, [outputs[i], states[i]],
                      api_visibility="private", show_progress="hidden")
    run.click(on_run, [prompt, image, max_tokens, *pickers], [*outputs, *states, run, stop, *pickers],
              api_visibility="private")
    # No `cancels=`: it would end the run before its last update, so "(stopped)" would never show.
    stop.click(on_stop, None, None, api_visibility="private")


if __name__ == "__main__":
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
