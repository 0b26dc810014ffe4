"""The Adapters tab's Train section in Debian's Chromium, with a stand-in trainer the test moves step by step (no
model is trained): the loss plot's x axis shows whole steps only, and Cancel can be pressed only while a training
runs."""

from __future__ import annotations

import json
import shutil

import gradio as gr
import pytest

from app.adapters.training import MSG_CANCELLING, MSG_NOTHING_TO_CANCEL, TrainingJob
from app.chat.context import AppConfig, AppContext
from setup.paths import PROJECT_ROOT
from tests.browser.chat_helpers import wait_for_uploads
from tests.conftest import free_port, grant_access
from tests.lora_training_helpers import PIRATE_PAIRS

X_LABELS = "#train-loss svg g.role-axis[aria-label^='X-axis'] g.role-axis-label text"
CANCEL = "#train-cancel"


class StandInTrainer:
    """ctx.training's stand-in: start() hands back a job whose losses the test appends; cancel() ends it as the
    real training thread would."""

    def __init__(self, default_base):
        self.default_base = default_base
        self.job: TrainingJob | None = None

    def current(self) -> TrainingJob | None:
        return self.job

    def start(self, name, base, examples, settings) -> TrainingJob:
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
def train_page(tmp_path, browser_context):
    """The Adapters tab alone with the stand-in trainer, its Train section open and a 3-pair dataset uploaded."""
    from app.web.pages import adapters

    folder = tmp_path / "adapters"
    shutil.copytree(PROJECT_ROOT / "adapters" / "pirate", folder / "pirate")
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port, adapters_dir=str(folder),
                               workspace=(str(tmp_path),)))
    trainer = ctx.training = StandInTrainer(tmp_path / "base")
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in PIRATE_PAIRS[:3]))
    with gr.Blocks() as blocks:
        adapters.build(ctx)
    blocks.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    url = f"http://127.0.0.1:{port}/"
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    page.goto(url)
    page.click("#train-section button:has-text('Train an adapter')")
    page.wait_for_selector("#train-name textarea")
    page.fill("#train-name textarea", "stand-in")
    page.set_input_files("#train-data input[type=file]", str(data))
    wait_for_uploads(page, "#train-data", ["pairs.jsonl"])
    page.fill("#train-steps input", "40")
    yield page, trainer
    page.close()
    blocks.close()


def x_labels_reach(page, last: int) -> list[str]:
    """The x axis's tick labels, once the plot shows a step of `last` or more (however the labels are written)."""
    page.wait_for_function(
        """([selector, last]) => [...document.querySelectorAll(selector)]
               .some(t => parseFloat(t.textContent.replace(/,/g, '')) >= last)""", arg=[X_LABELS, last])
    return page.locator(X_LABELS).all_text_contents()


def test_loss_axis_shows_whole_steps_and_cancel_is_live_only_while_training(train_page):
    page, trainer = train_page
    assert page.locator(CANCEL).is_disabled()  # nothing runs yet
    page.click("#train-start")
    page.wait_for_selector(f"{CANCEL}:enabled")
    trainer.job.losses.extend([(1, 2.9), (2, 2.5), (3, 2.2)])
    assert x_labels_reach(page, 3) == ["1", "2", "3"]  # not 1.5, 2.5 or 1.00, 1.05, ...
    trainer.job.losses.extend((step, 2.2 - step / 100) for step in range(4, 41))
    labels = x_labels_reach(page, 40)  # too many steps to label each: a numeric axis, still whole steps
    assert all(label.isdigit() for label in labels) and len(labels) < 40, labels
    assert page.locator(CANCEL).is_enabled()
    page.click(CANCEL)
    page.wait_for_selector("#train-cancel-note:has-text('Cancelling the training')")
    page.wait_for_selector("#train-result:has-text('Training cancelled at step 40')")
    page.wait_for_selector(f"{CANCEL}:disabled")  # inactive again once the training ended
