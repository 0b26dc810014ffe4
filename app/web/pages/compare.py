"""Compare tab: the same prompt (and optionally images) through the base model and up to three adapters, side
by side, streamed, each column with its state and figures; Continue goes on with the columns cut at the token
limit. A column whose reply the chat would render (a chart's table, grounded boxes, a markdown page) shows that
under its raw text once it ends: the Markdown, the picture with its boxes, the table's CSV."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import gradio as gr

from app.chat.compare import CUT, DEFAULT_MAX_TOKENS, ColumnView, CompareRun, continue_cut, is_cut
from app.chat.messages import MSG_COMPARE_CUT
from app.chat.reply_outputs import ReplyOutputs
from app.context import AppConfig, AppContext
from app.core.constants import MAX_COMPARE_ADAPTERS
from app.core.errors import ChatError
from app.core.sampling import SamplingParams
from app.web.chat_view import parsed_words
from app.web.labels import (
    COMPARE_IMAGE_HEIGHT,
    COMPARE_IMAGE_LABEL,
    COMPARE_INTRO,
    COMPARE_NONE,
    COMPARE_READY,
    COMPARE_READY_ADAPTER,
    COMPARE_UNUSED,
    CONTINUE,
    STOP,
    adapter_choices,
    adapter_of,
)
from app.web.media_view import csv_file, grounded_file

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


@dataclass(frozen=True)
class Finished:
    """What the last run (or Continue) left, for Continue: its prompt and images, and each picked model's column
    as it ended, by the name its picker shows."""

    prompt: str = ""
    images: list[str] | None = None
    views: dict[str, ColumnView] = field(default_factory=dict)

    def cut(self, names: list[str | None]) -> list[str]:
        """The picked models among `names` (once each) whose column was cut at the token limit."""
        return [name for name in dict.fromkeys(n for n in names if n) if name in self.views and is_cut(self.views[name])]

    def after(self, names: list[str], views: list[ColumnView]) -> Finished:
        """This record with the columns of `names` ended as `views`."""
        return Finished(self.prompt, self.images, {**self.views, **dict(zip(names, views, strict=True))})


def rendered_updates(outputs: ReplyOutputs | None) -> list:
    """A column's rendered reply, its picture with boxes and its CSV; each hidden when the reply gives none."""
    words = parsed_words(outputs) if outputs is not None else None
    picture = grounded_file(outputs) if outputs is not None else None
    table = csv_file(outputs) if outputs is not None else None
    return [gr.Markdown(value=words or "", visible=words is not None), gr.Image(value=picture, visible=bool(picture)),
            gr.File(value=table, visible=bool(table))]


def column_updates(names: list[str | None], shown: dict[str, ColumnView], limit: int, fresh: bool,
                   before: dict[str, ColumnView] | None = None) -> list:
    """Each column's text box, then each one's state line, then each one's rendered parts (`rendered_updates`),
    for the columns `shown` (by picked name); the others emptied when `fresh` (a new run), else left as they are
    (Continue). Rendered parts that are as in the update `before` are left as they are."""
    texts, states, rendered = [], [], []
    for i, name in enumerate(names):
        view = shown.get(name) if name else None
        if view is None and not fresh:
            texts.append(gr.skip())
            states.append(gr.skip())
            rendered.append([gr.skip()] * RENDERED)
            continue
        texts.append(gr.Textbox(value=view.text if view else "", label=name or f"Column {i + 1}"))
        states.append(state_line(view, limit))
        same = before is not None and view is not None and name in before and before[name].outputs is view.outputs
        rendered.append([gr.skip()] * RENDERED if same else rendered_updates(view.outputs if view else None))
    return [*texts, *states, *[part for parts in zip(*rendered, strict=True) for part in parts]]


RENDERED = 3  # per column: the rendered reply, the picture with boxes, the CSV
# every column's text, state line and rendered parts, Compare, Continue, Stop, the pickers, the record
OUTPUTS = (3 + RENDERED) * COLUMNS + 4
Runs = dict  # the run each browser session is showing, by session (for Stop)


def compare_controls(running: bool, can_continue: bool = False) -> list[gr.Button | gr.Dropdown]:
    """Compare, Continue, Stop, then the column pickers: locked while a run shows what they picked."""
    return [gr.Button(interactive=not running), gr.Button(interactive=can_continue and not running),
            gr.Button(interactive=running, variant="stop" if running else "secondary"),
            *[gr.Dropdown(interactive=not running) for _ in range(COLUMNS)]]


def follow(runs: Runs, session: str, compare: CompareRun, chosen: list[str], names: list[str | None], limit: int,
           record: Finished, fresh: bool) -> Iterator[list]:
    """Show `compare` (its columns: the picked `chosen`) until it ends, then keep its end in the record."""
    runs[session] = compare
    before = None
    try:
        for views in compare.view_updates():
            done = compare.done()  # true for the last snapshot: its update re-enables Compare
            ended = record.after(chosen, views) if done else None
            locks = compare_controls(not done, bool(ended and ended.cut(names))) if before is None or done \
                else [gr.skip()] * (COLUMNS + 3)
            shown = dict(zip(chosen, views, strict=True))
            yield [*column_updates(names, shown, limit, fresh, before), *locks, ended or gr.skip()]
            before = shown
    finally:
        runs.pop(session, None)


def on_run(ctx: AppContext, runs: Runs, session: str, text: str, pictures: list[tuple[str, str | None]] | None,
           tokens: float, picks: list[str]) -> Iterator[list]:
    """Stream `text` (and the attached pictures) through every picked column."""
    names = [column_name(pick) for pick in picks[:COLUMNS]]
    chosen = list(dict.fromkeys(name for name in names if name))
    images = [path for path, _caption in pictures] if pictures else None
    try:
        compare = CompareRun(ctx, text, [adapter_of(name) for name in chosen], SamplingParams(max_tokens=int(tokens)),
                             images=images)
    except ChatError as exc:
        gr.Warning(str(exc))  # a toast; the page stays as it was
        yield [gr.skip()] * OUTPUTS
        return
    yield from follow(runs, session, compare, chosen, names, int(tokens), Finished(text, images), True)


def on_continue(ctx: AppContext, runs: Runs, session: str, record: Finished, tokens: float,
                picks: list[str]) -> Iterator[list]:
    """Go on, at once, with every picked column the last run left cut at the token limit."""
    names = [column_name(pick) for pick in picks[:COLUMNS]]
    cut = record.cut(names)  # none: continue_cut refuses in a sentence
    try:
        compare = continue_cut(ctx, record.prompt, [adapter_of(name) for name in cut],
                               [record.views[name] for name in cut], SamplingParams(max_tokens=int(tokens)),
                               images=record.images)
    except ChatError as exc:
        gr.Warning(str(exc))
        yield [gr.skip()] * OUTPUTS
        return
    yield from follow(runs, session, compare, cut, names, int(tokens), record, False)


def on_stop(runs: Runs, session: str) -> None:
    compare = runs.get(session)
    if compare is not None:
        compare.cancel()  # the run then shows each column's last text with "(stopped)"


def on_pick(number: int, pick: str | None, record: Finished, picks: list[str]) -> list:
    """Column `number`'s new pick empties its column (the text was another model's) and says what it will run;
    Continue stays offered while a picked model's column is cut."""
    can_continue = bool(record.cut([column_name(p) for p in picks]))
    return [gr.Textbox(value="", label=f"Column {number}"), pick_line(pick), gr.Button(interactive=can_continue),
            *rendered_updates(None)]


def build(ctx: AppContext) -> None:
    gr.Markdown(COMPARE_INTRO)
    with gr.Row(elem_id="compare-inputs"):
        prompt = gr.Textbox(label="Prompt", elem_id="compare-prompt", placeholder="What is the capital of France?",
                            scale=3)
        # A gallery of paths (type="filepath": the server decodes nothing), so the app's intake checks size and
        # pixels before anything reads a picture; the browser shows thumbnails of what was attached.
        image = gr.Gallery(label=COMPARE_IMAGE_LABEL, file_types=["image", ".mp4", ".webm", ".gif"], type="filepath", interactive=True,
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
        resume = gr.Button(CONTINUE, elem_id="compare-continue", interactive=False)
        stop = gr.Button(STOP, elem_id="compare-stop", interactive=False)
    outputs, states, rendered = [], [], []
    with gr.Row():
        for i in range(COLUMNS):
            with gr.Column(min_width=200):
                outputs.append(gr.Textbox(label=f"Column {i + 1}", lines=10, interactive=False,
                                          elem_id=f"compare-out-{i}"))
                states.append(gr.Markdown(pick_line(picks[i]), elem_id=f"compare-state-{i}"))
                rendered.append([gr.Markdown(visible=False, elem_id=f"compare-view-{i}"),
                                 gr.Image(visible=False, interactive=False, buttons=["download"],
                                          label="Boxes", elem_id=f"compare-boxes-{i}"),
                                 gr.File(visible=False, interactive=False, label="Table (CSV)",
                                         elem_id=f"compare-csv-{i}")])
    finished = gr.State(Finished())
    runs: Runs = {}

    # Gradio passes the request first (its annotation), then the inputs; the column pickers last.
    def run_columns(request: gr.Request, text, pictures, tokens, *picks):
        yield from on_run(ctx.for_session(request.session_hash), runs, request.session_hash, text, pictures, tokens,
                          list(picks))

    def continue_columns(request: gr.Request, record, tokens, *picks):
        yield from on_continue(ctx.for_session(request.session_hash), runs, request.session_hash, record, tokens,
                               list(picks))

    def stop_columns(request: gr.Request):
        on_stop(runs, request.session_hash)

    def picked(number: int):
        def handler(pick, record, *picks):
            return on_pick(number, pick, record, list(picks))
        return handler

    def choices_again(request: gr.Request):  # the adapters of the server this browser session talks to
        return gr.Dropdown(choices=column_choices(ctx.for_session(request.session_hash)))

    for i, picker in enumerate(pickers):
        picker.focus(choices_again, None, picker, api_visibility="private", show_progress="hidden")
        picker.change(picked(i + 1), [picker, finished, *pickers], [outputs[i], states[i], resume, *rendered[i]],
                      api_visibility="private", show_progress="hidden")
    shown = [*outputs, *states, *[part for parts in zip(*rendered, strict=True) for part in parts], run, resume,
             stop, *pickers, finished]
    run.click(run_columns, [prompt, image, max_tokens, *pickers], shown, api_visibility="private")
    resume.click(continue_columns, [finished, max_tokens, *pickers], shown, api_visibility="private")
    # No `cancels=`: it would end the run before its last update, so "(stopped)" would never show.
    stop.click(stop_columns, None, None, api_visibility="private")

if __name__ == "__main__":
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
