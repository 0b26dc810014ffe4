"""The Adapters tab's Train section: a LoRA adapter from a small dataset, with progress, a live loss plot and
Cancel; afterwards the adapter-applied check runs on it. Its handlers are also the Gradio API's `train_adapter`
and `cancel_training` endpoints; both check the launch token or login themselves (app.web.gate).

A training follows the server the browser session chose in the chat (`AppContext.for_session`), as the tab's Add
does: the adapter is written to that server's adapters folder and made known to that server, and the check runs
there. An API caller that chose nothing trains for the app's own server. One training runs at a time, whoever
asked for it.
"""

from __future__ import annotations

import html
from pathlib import Path

import gradio as gr
import pandas as pd

from app.adapters.training import default_base_dir
from app.api.gradio_api import is_uploaded
from app.context import AppContext
from app.core.errors import ChatError
from app.web.audit_view import audit_lines
from app.web.gate import require_access
from app.web.pages.messages import (
    MSG_BASE_INFO,
    MSG_BASE_NONE,
    MSG_INTRO,
    MSG_NO_BASE,
    MSG_PROGRESS,
    MSG_REGISTERED,
    MSG_STARTING,
    MSG_UPLOAD_ONLY,
)
from app.web.pages.table_typing import KEEPS_FIRST_KEY, keep_typed_keys
from setup.lora.dataset import examples_from_pairs, read_dataset_file
from setup.lora.train import where_it_runs
from setup.lora.train_settings import TrainError, default_limits, default_settings
from setup.workspace import WorkspaceError

POLL_SECONDS = 0.5  # how often a running training's progress is sent to the page
PAIR_ROWS = 3
STATE_ICONS = {"done": "✅", "cancelled": "⏹️", "failed": "⚠️"}
# The plot's x axis. A numeric axis gets about one tick per 40 px, so a few steps get ticks at 1.5, 2.5: a
# training of up to LABELLED_STEPS steps has its steps as categories (one label each). A longer one keeps a numeric
# axis over all its steps, wide enough for whole ticks on the widest plot (~1830 px); a label per step would crowd.
LABELLED_STEPS = 40
STEP_ORDER = [str(step) for step in range(1, default_limits().max_steps + 1)]  # categories sort as numbers
EMPTY_PLOT = pd.DataFrame({"step": pd.Series(dtype=str), "loss": pd.Series(dtype=float)})


def session_base(ctx: AppContext, view: AppContext) -> Path | None:
    """The base model a training starts from by default for a session whose chosen server is `view`: the app's own
    (`ctx.training.default_base`), or the chosen server's checkpoint (a Build deployment's, say)."""
    if view is ctx or view.config.tokenizer_dir == ctx.config.tokenizer_dir:
        return ctx.training.default_base
    return default_base_dir(view.config.tokenizer_dir, view.config.demo)


def resolve_base(ctx: AppContext, text: str | None, view: AppContext | None = None) -> Path:
    """The base model folder: the session's server's (the default: `session_base`) or a folder inside the
    workspace roots."""
    text = (text or "").strip()
    default = session_base(ctx, view or ctx)
    if not text:
        if default is None:
            raise TrainError(MSG_NO_BASE)
        return default
    if default is not None and Path(text).expanduser().resolve() == default.resolve():
        return default
    return ctx.access.workspace.resolve(text, what="base model folder")


def base_box(ctx: AppContext, view: AppContext) -> gr.Textbox:
    """The base model box for a session: empty, its placeholder naming the session's default."""
    default = session_base(ctx, view)
    return gr.Textbox(placeholder=str(default) if default else MSG_BASE_NONE)


def pair_rows(table) -> list[list]:
    """The table's rows as lists, whatever shape Gradio sends (DataFrame, dict with data, list)."""
    if table is None:
        return []
    if isinstance(table, pd.DataFrame):
        return table.values.tolist()
    if isinstance(table, dict):
        return list(table.get("data") or [])
    return [list(row) for row in table]


def read_examples(upload: str | None, table):
    """The uploaded JSONL file when there is one (only from Gradio's upload folder), else the table's pairs."""
    limits = default_limits()
    if upload:
        if not is_uploaded(upload):
            raise TrainError(MSG_UPLOAD_ONLY)
        return read_dataset_file(Path(upload), limits, shown=Path(upload).name)
    return examples_from_pairs(pair_rows(table), limits)


def progress_html(job) -> str:
    """A progress bar and one line of figures (HTML, every value escaped)."""
    loss = f"{job.losses[-1][1]:.3f}" if job.losses else "-"
    line = (MSG_PROGRESS.format(step=job.step, steps=job.steps, loss=loss, seconds=job.elapsed()) if job.losses
            else MSG_STARTING.format(pairs=job.pairs, steps=job.steps))
    return (f'<progress id="train-progress" value="{job.step}" max="{job.steps}"></progress> '
            f'<span id="train-figures">{html.escape(line)}</span><br><small>{html.escape(job.where)}</small>')


def loss_frame(job) -> pd.DataFrame:
    """The points so far: steps as text (categories) up to LABELLED_STEPS steps, else numbers."""
    labelled = job.steps <= LABELLED_STEPS
    steps = [str(step) if labelled else step for step, _loss in job.losses]
    return pd.DataFrame({"step": pd.Series(steps, dtype=str if labelled else int),
                         "loss": pd.Series([loss for _step, loss in job.losses], dtype=float)})


def loss_plot(job) -> gr.LinePlot:
    """The points and the x axis's range: none for categories, 1 to the last step for numbers.

    The page draws its axis anew only when x_lim changes, and then from the value it held before that update:
    a training's first update is its frame alone (loss_frame), so the axis kind follows from the second."""
    return gr.LinePlot(loss_frame(job), x_lim=None if job.steps <= LABELLED_STEPS else [1, job.steps])


def cancel_button(ctx: AppContext) -> gr.Button:
    """Cancel is live (and red) only while a training runs."""
    job = ctx.training.current()
    running = job is not None and not job.finished.is_set()
    return gr.Button(interactive=running, variant="stop" if running else "secondary")


def finish(view: AppContext, job) -> str:
    """The final sentence: how training went; when it worked, the session's server (`view`, the one it trained
    for) told and the adapter checked there."""
    if job.state != "done":
        return f"{STATE_ICONS.get(job.state, '⚠️')} {job.message}"
    folder = job.folder or view.adapters.folder
    try:
        note = view.deployment.register_adapter(job.name, folder / job.name)
    except ChatError as exc:
        note = f"⚠️ {exc}"
    check = view.adapter_checks.run_now(view.deployment, job.name).message
    audit = view.deployment.adapter_audit(job.name)
    applied = f" {audit_lines(audit)[0].capitalize()}." if audit else ""
    registered = MSG_REGISTERED.format(summary=job.message, folder=folder, server=view.server.label, note=note)
    return f"✅ {registered}{applied} Check: {check}"


def message_html(text: str) -> str:
    return f'<span id="train-result">{html.escape(text)}</span>'


def train_handlers(ctx: AppContext):
    """(on_train, on_cancel): the Train and Cancel handlers, each checking access before anything else.

    on_train is a generator of (status HTML, loss plot update): refusals as one message, then progress at once
    and every POLL_SECONDS, then how it ended (with the adapter check when it worked).
    """
    defaults = default_settings()

    def on_train(name_text, base_text, upload_path, table, rank_value, steps_value, rate_value, max_len_value,
                 target_list, request: gr.Request):
        require_access(ctx, request)
        view = ctx.for_session(request.session_hash)  # the server this session chose, as Add uses it
        try:
            examples = read_examples(upload_path, table)
            settings = defaults.with_changes(rank=rank_value, steps=steps_value, learning_rate=rate_value,
                                             max_len=max_len_value, target_modules=tuple(target_list or ()))
            job = ctx.training.start(name_text, resolve_base(ctx, base_text, view), examples, settings,
                                     folder=view.adapters.folder)
        except (TrainError, ChatError, WorkspaceError) as exc:
            yield message_html(f"⚠️ {exc}"), EMPTY_PLOT
            return
        yield progress_html(job), loss_frame(job)  # the value first, so the axis is drawn for it (loss_plot)
        while not job.wait(POLL_SECONDS):
            yield progress_html(job), loss_plot(job)
        yield progress_html(job), loss_plot(job)  # every step shown (and Cancel off) while the check runs
        yield progress_html(job) + "<br>" + message_html(finish(view, job)), loss_plot(job)

    def on_cancel(request: gr.Request):
        require_access(ctx, request)
        return message_html(ctx.training.cancel())

    return on_train, on_cancel


def build(ctx: AppContext, shown_by: list | None = None):
    """The Train section (inside the Adapters tab); returns the Train event, for the page to chain list updates.
    `shown_by`: the events (page load, the tab's selection) after which the base model box names the base of the
    server the session chose."""
    defaults, limits = default_settings(), default_limits()
    with gr.Accordion("Train an adapter", open=False, elem_id="train-section"):
        gr.Markdown(MSG_INTRO.format(where=where_it_runs(defaults.threads), pairs=limits.max_pairs,
                                     steps=limits.max_steps, max_len=limits.max_len, rank=limits.max_rank))
        with gr.Row():
            name = gr.Textbox(label="Name", placeholder="my-style", elem_id="train-name",
                              info="The adapter's folder name: letters, digits, '.', '_' or '-'.")
            base = gr.Textbox(label="Base model folder", placeholder=str(ctx.training.default_base or MSG_BASE_NONE),
                              elem_id="train-base", info=MSG_BASE_INFO)
        with gr.Row():
            upload = gr.File(label="Dataset (.jsonl)", file_types=[".jsonl"], type="filepath", elem_id="train-data")
            pairs = gr.Dataframe(headers=["prompt", "response"], datatype=["str", "str"], interactive=True,
                                 value=[["", ""]] * PAIR_ROWS, row_count=PAIR_ROWS, column_count=(2, "fixed"),
                                 label="Or pairs (used when no file is uploaded)", elem_id="train-pairs",
                                 elem_classes=KEEPS_FIRST_KEY)
        keep_typed_keys()  # the first letter typed into a cell is kept (table_typing.py)
        # No minimum/maximum on the fields: Gradio would refuse an out-of-range value with its own words (and a
        # traceback in the log) before the handler runs; the training's check says which limit, in a sentence.
        with gr.Row():
            rank = gr.Number(defaults.rank, label=f"Rank (1-{limits.max_rank})", precision=0, elem_id="train-rank")
            steps = gr.Number(defaults.steps, label=f"Steps (1-{limits.max_steps})", precision=0,
                              elem_id="train-steps")
            rate = gr.Number(defaults.learning_rate, label="Learning rate", elem_id="train-lr")
            max_len = gr.Number(defaults.max_len, label=f"Max tokens per pair (16-{limits.max_len})", precision=0,
                                elem_id="train-max-len")
        targets = gr.CheckboxGroup(list(limits.target_modules), value=list(defaults.target_modules),
                                   label="Target modules", elem_id="train-targets")
        with gr.Row():
            start = gr.Button("Train", variant="primary", elem_id="train-start")
            cancel = gr.Button("Cancel", variant="secondary", interactive=False, elem_id="train-cancel")
        # Cancel writes a note of its own: the running training's handler keeps the status until its thread stops.
        cancel_note = gr.HTML("", elem_id="train-cancel-note")
        status = gr.HTML("", elem_id="train-status")
        plot = gr.LinePlot(EMPTY_PLOT, x="step", y="loss", title="Training loss", elem_id="train-loss",
                           height=240, sort=STEP_ORDER)

    def base_shown(request: gr.Request):
        return base_box(ctx, ctx.for_session(request.session_hash))

    for event in shown_by or []:
        event(base_shown, None, base, api_visibility="private", show_progress="hidden")
    on_train, on_cancel = train_handlers(ctx)
    event = start.click(on_train, [name, base, upload, pairs, rank, steps, rate, max_len, targets], [status, plot],
                        api_name="train_adapter")
    cancel.click(on_cancel, None, cancel_note, api_name="cancel_training")
    # Every status update (a refusal, progress, the end) says whether a training runs now; the Train endpoint's
    # outputs stay status and plot for API callers.
    status.change(lambda: cancel_button(ctx), None, cancel, api_visibility="private", show_progress="hidden")
    return event
