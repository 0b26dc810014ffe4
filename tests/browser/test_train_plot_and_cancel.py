"""The Adapters tab's Train section in Debian's Chromium, with a stand-in trainer the test moves step by step (no
model is trained): the loss plot's x axis shows whole steps only, and Cancel can be pressed only while a training
runs; pairs typed into the table reach the trainer whole."""

from __future__ import annotations

import json
import shutil

import pytest

from app.adapters.messages import MSG_CANCELLING, MSG_NOTHING_TO_CANCEL
from app.adapters.training import TrainingJob
from app.context import AppConfig, AppContext
from app.web.style import APP_CSS
from setup.paths import PROJECT_ROOT
from tests.browser.chat_helpers import toasts, wait_for_uploads, wait_until
from tests.browser.plot_helpers import x_labels_reach
from tests.browser_tabs import served_page
from tests.lora_training_helpers import PIRATE_PAIRS
from tests.servers import free_port

CANCEL = "#train-cancel"


class StandInTrainer:
    """ctx.training's stand-in: start() hands back a job whose losses the test appends; cancel() ends it as the
    real training thread would."""

    def __init__(self, default_base):
        self.default_base = default_base
        self.job: TrainingJob | None = None
        self.job_examples: list = []  # what the last start was given

    def current(self) -> TrainingJob | None:
        return self.job

    def start(self, name, base, examples, settings, folder=None) -> TrainingJob:
        self.job_examples, self.folder = list(examples), folder
        self.job = TrainingJob(name=name, steps=int(settings.steps), pairs=len(examples), where="stand-in")
        return self.job

    def cancel(self) -> str:
        job = self.job
        if job is None or job.finished.is_set():
            return MSG_NOTHING_TO_CANCEL
        job.state, job.message = "cancelled", f"Training cancelled at step {job.step}; nothing was written."
        job.finished.set()
        return MSG_CANCELLING


@pytest.fixture
def adapters_page(tmp_path, browser_context):
    """The Adapters tab alone with the stand-in trainer, its Train section open and a name given."""
    from app.web.pages import adapters

    folder = tmp_path / "adapters"
    shutil.copytree(PROJECT_ROOT / "adapters" / "pirate", folder / "pirate")
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port, adapters_dir=str(folder),
                               workspace=(str(tmp_path),)))
    trainer = ctx.training = StandInTrainer(tmp_path / "base")
    with served_page(browser_context, ctx, port, lambda: adapters.build(ctx), css=APP_CSS) as page:
        page.click("#train-section button:has-text('Train an adapter')")
        page.wait_for_selector("#train-name textarea")
        page.fill("#train-name textarea", "stand-in")
        yield page, trainer


@pytest.fixture
def train_page(adapters_page, tmp_path):
    """adapters_page with a 3-pair dataset uploaded."""
    page, trainer = adapters_page
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in PIRATE_PAIRS[:3]))
    page.set_input_files("#train-data input[type=file]", str(data))
    wait_for_uploads(page, "#train-data", ["pairs.jsonl"])
    return page, trainer


def train(page, trainer, steps: int, losses: int) -> None:
    """Start a training of `steps` steps and let the stand-in report the first `losses` of them."""
    page.fill("#train-steps input", str(steps))
    page.click("#train-start")
    page.wait_for_selector(f"{CANCEL}:enabled")  # live while it runs
    trainer.job.losses.extend((step, 3.0 - step / 100) for step in range(1, losses + 1))


def cancel(page, step: int) -> None:
    page.click(CANCEL)
    page.wait_for_selector("#train-cancel-note:has-text('Cancelling the training')")
    page.wait_for_selector(f"#train-result:has-text('Training cancelled at step {step};')")
    page.wait_for_selector(f"{CANCEL}:disabled")  # inactive again once the training ended


def test_loss_axis_shows_whole_steps_and_cancel_is_live_only_while_training(train_page):
    page, trainer = train_page
    assert page.locator(CANCEL).is_disabled()  # nothing runs yet
    train(page, trainer, steps=4, losses=3)
    assert x_labels_reach(page, 3) == ["1", "2", "3"]  # one label a step; not 1.5, 2.5 or 1.0, 1.1, ...
    cancel(page, 3)
    train(page, trainer, steps=300, losses=3)  # too many steps to label each: a numeric axis of whole steps
    labels = x_labels_reach(page, 300)
    assert all(label.isdigit() for label in labels) and len(labels) < 100, labels
    cancel(page, 3)
    train(page, trainer, steps=2, losses=2)  # a short one again after a long one
    assert x_labels_reach(page, 2) == ["1", "2"]
    cancel(page, 2)


def type_into_cell(page, row: int, column: int, text: str, delay_ms: int) -> None:
    """Click the pairs table's cell and type `text` key by key, `delay_ms` apart, then leave it with Tab."""
    page.locator(f"#train-pairs [data-row='{row}'][data-col='{column}']").first.click()
    page.keyboard.type(text, delay=delay_ms)
    page.keyboard.press("Tab")


# 30 ms apart as a person types; 0 ms as a busy page sees them: the second key reaches the cell's editor before the
# frame that puts the first one in ("eHllo there" in a loaded run before the script put kept keys first).
@pytest.mark.parametrize("delay_ms", [30, 0])
def test_pairs_typed_into_the_table_reach_the_trainer_whole(adapters_page, delay_ms):
    page, trainer = adapters_page
    pairs = [("Hello there", "Ahoy, matey"), ("Good morning", "Arr, mornin'")]
    for row, (prompt, response) in enumerate(pairs):
        type_into_cell(page, row, 0, prompt, delay_ms)
        type_into_cell(page, row, 1, response, delay_ms)
    page.fill("#train-steps input", "2")
    page.click("#train-start")
    wait_until(lambda: page.locator(CANCEL).is_enabled(), what="the training to start",
               explain=lambda: f"toasts {toasts(page)}, the table reads {page.locator('#train-pairs').all_inner_texts()}, "
                               f"the result {page.locator('#train-result').all_inner_texts()}")
    assert [(e.prompt[-1]["content"], e.response) for e in trainer.job_examples] == pairs
    cancel(page, 0)


def test_the_loss_axis_title_and_labels_show_whole(train_page):
    """The y axis's title reads "loss" and it and every tick label lie inside the plot (drawn left of the chart's
    own box, Vega clipped them to a sliver that read as a squiggle)."""
    page, trainer = train_page
    train(page, trainer, steps=4, losses=3)
    x_labels_reach(page, 3)
    texts = page.evaluate("""() => {
        const plot = document.querySelector('#train-loss').getBoundingClientRect();
        const svg = document.querySelector('#train-loss svg');
        const drawn = getComputedStyle(svg).overflow === 'visible' ? plot : svg.getBoundingClientRect();
        return [...svg.querySelectorAll("g.role-axis[aria-label^='Y-axis'] text")].map(t => {
            const box = t.getBoundingClientRect();  // shown where both the plot and the drawing take it in
            return [t.textContent, box.width > 0 && box.left >= Math.max(plot.left, drawn.left) &&
                    box.right <= Math.min(plot.right, drawn.right)];
        });
    }""")
    assert texts[-1] == ["loss", True], texts  # the axis title, after its tick labels
    assert all(inside for _, inside in texts), texts
    cancel(page, 3)
