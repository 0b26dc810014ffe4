"""Training an adapter into the adapters folder from the app: one job at a time, run in a background thread, its
progress kept for the page (and the API) to show, cancellable.

The request is checked and the training slot taken before the thread starts (setup.lora.train.prepare_training),
so every refusal is an exception from `start`. The finished PEFT folder lands in the adapters folder `start` is
given (the one of the server the browser session chose; the app's own by default), where the chat dropdown,
Compare and the Adapters table find it the next time they list adapters.

Imports: app.adapters.intake, setup.lora (no Gradio).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.adapters.intake import check_name
from app.adapters.messages import (
    MSG_CANCELLING,
    MSG_ENGINE_MODULES,
    MSG_ENGINE_RANK,
    MSG_NAME_TAKEN,
    MSG_NOTHING_TO_CANCEL,
)
from setup.lora.convert import HF_TO_TRT, LoraConvertError
from setup.lora.dataset import Example
from setup.lora.engine import load_engine_spec
from setup.lora.train import TrainResult, prepare_training, where_it_runs
from setup.lora.train_settings import TrainCancelled, TrainError, TrainSettings


def default_base_dir(tokenizer_dir: str | None, demo: bool) -> Path | None:
    """The base checkpoint a training starts from by default: the deployment's tokenizer/checkpoint folder, or
    the CPU demo's model; None when the app knows neither."""
    if tokenizer_dir:
        return Path(tokenizer_dir)
    if demo:
        from setup.cpu.model import model_dir

        return model_dir()
    return None


@dataclass
class TrainingJob:
    """One training's state as the page shows it; written by the training thread, read by the page."""

    name: str
    steps: int
    pairs: int
    where: str
    folder: Path | None = None  # the adapters folder it trains into
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, loss)
    state: str = "running"  # running, done, cancelled, failed
    message: str = ""
    result: TrainResult | None = None
    started: float = field(default_factory=time.monotonic)
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def step(self) -> int:
        return self.losses[-1][0] if self.losses else 0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the training ends (True) or `timeout` passes (False)."""
        return self.finished.wait(timeout)


class Trainer:
    """Starts trainings into an adapters folder (`folder`, the app's own, unless `start` is given another), one
    at a time whatever the folder, and remembers the last one."""

    def __init__(self, folder: Path, default_base: Path | None = None, engine_dir: Path | None = None):
        self.folder = Path(folder)
        self.default_base = default_base
        self.engine_dir = Path(engine_dir) if engine_dir else None
        self._lock = threading.Lock()
        self._job: TrainingJob | None = None

    def current(self) -> TrainingJob | None:
        """The running training, or the last one that ended."""
        with self._lock:
            return self._job

    def start(self, name: str, base: Path, examples: Sequence[Example], settings: TrainSettings,
              folder: Path | None = None) -> TrainingJob:
        """Check the request, take the training slot and train in a thread into `folder` (default: the app's own
        adapters folder); TrainError (or AdapterError for a bad name) with one sentence for a refusal, before
        anything runs."""
        name = check_name((name or "").strip())
        folder = Path(folder) if folder is not None else self.folder
        if (folder / name).exists():
            raise TrainError(MSG_NAME_TAKEN.format(name=name))
        self.check_engine(settings)
        run = prepare_training(base, examples, folder / name, settings,
                               description=f"Trained in the app's Adapters tab on {len(examples)} pairs.")
        job = TrainingJob(name=name, steps=run.settings.steps, pairs=len(examples),
                          where=where_it_runs(run.settings.threads), folder=folder)
        with self._lock:
            self._job = job

        def on_step(step: int, _steps: int, loss: float) -> None:
            job.losses.append((step, loss))

        def work() -> None:
            try:
                job.result = run.run(on_step=on_step, cancel=job.cancel)
                job.state, job.message = "done", job.result.summary()
            except TrainCancelled as exc:
                job.state, job.message = "cancelled", str(exc)
            except TrainError as exc:
                job.state, job.message = "failed", str(exc)
            except Exception as exc:  # the page must learn that the thread ended, whatever ended it
                job.state, job.message = "failed", f"Training failed: {exc}"
            finally:
                job.finished.set()

        try:
            threading.Thread(target=work, daemon=True, name=f"train-{name}").start()
        except RuntimeError:
            run.release()
            raise
        return job

    def check_engine(self, settings: TrainSettings) -> None:
        """TrainError when the engine the adapters are checked against could not use such an adapter."""
        if self.engine_dir is None:
            return
        try:
            spec = load_engine_spec(self.engine_dir)
        except LoraConvertError as exc:
            raise TrainError(str(exc)) from None
        if spec.max_rank and int(settings.rank) > spec.max_rank:
            raise TrainError(MSG_ENGINE_RANK.format(max_rank=spec.max_rank))
        missing = [m for m in settings.target_modules if HF_TO_TRT.get(m) not in spec.target_modules]
        if missing:
            raise TrainError(MSG_ENGINE_MODULES.format(allowed=", ".join(spec.target_modules) or "no modules",
                                                       names=", ".join(missing)))

    def cancel(self) -> str:
        """Ask the running training to stop; the sentence to show."""
        job = self.current()
        if job is None or job.finished.is_set():
            return MSG_NOTHING_TO_CANCEL
        job.cancel.set()
        return MSG_CANCELLING

