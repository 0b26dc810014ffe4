"""The Adapters tab's Train section in Debian's Chromium, with a stand-in trainer the test moves step by step (no
model is trained): the loss plot's x axis shows whole steps only, and Cancel can be pressed only while a training
runs."""

from __future__ import annotations

import json
import shutil

import pytest

from app.adapters.messages import MSG_CANCELLING, MSG_NOTHING_TO_CANCEL
from app.adapters.training import TrainingJob
from app.chat.context import AppConfig, AppContext
from setup.paths import PROJECT_ROOT
from tests.browser.chat_helpers import wait_for_uploads
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
    with served_page(browser_context, ctx, port, lambda: adapters.build(ctx)) as page:
        page.click("#train-section button:has-text('Train an adapter')")
        page.wait_for_selector("#train-name textarea")
        page.fill("#train-name textarea", "stand-in")
        page.set_input_files("#train-data input[type=file]", str(data))
        wait_for_uploads(page, "#train-data", ["pairs.jsonl"])
        yield page, trainer


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
