"""What one LoRA training may ask for: the settings with their defaults, and the limits they are checked against
before anything starts. Both are data, in setup/data/lora_training.yaml.

Imports: setup.paths and setup.lora.messages only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from setup.lora import messages as msg
from setup.paths import DATA_DIR
from setup.shipped import shipped_yaml

TRAINING_FILE = DATA_DIR / "lora_training.yaml"


class TrainError(ValueError):
    """A training request is refused, or a training stopped; the message is one sentence saying why."""


class TrainCancelled(TrainError):
    """The training was cancelled; nothing was written."""


@cache
def _data() -> dict:
    return shipped_yaml(TRAINING_FILE.name)


@dataclass(frozen=True)
class TrainLimits:
    """The most one training may ask for (bounded work for the web UI, the API and the CLI)."""

    max_dataset_bytes: int
    min_pairs: int
    max_pairs: int
    max_steps: int
    max_len: int
    max_rank: int
    min_learning_rate: float
    max_learning_rate: float
    max_threads: int
    target_modules: tuple[str, ...]


@dataclass(frozen=True)
class TrainSettings:
    """PEFT and optimiser settings of one training; `alpha` None means rank x alpha_per_rank."""

    rank: int
    target_modules: tuple[str, ...]
    steps: int
    learning_rate: float
    max_len: int
    seed: int
    threads: int
    alpha: float | None = None

    @property
    def lora_alpha(self) -> float:
        return float(self.alpha) if self.alpha is not None else float(self.rank * _data()["defaults"]["alpha_per_rank"])

    def with_changes(self, **changes) -> TrainSettings:
        """A copy with the given fields replaced (None values keep the current one)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def default_limits() -> TrainLimits:
    raw = _data()["limits"]
    return TrainLimits(**{**raw, "target_modules": tuple(raw["target_modules"])})


def default_settings() -> TrainSettings:
    raw = dict(_data()["defaults"])
    raw.pop("alpha_per_rank")
    return TrainSettings(**{**raw, "target_modules": tuple(raw["target_modules"])})


def _whole(value) -> int | None:
    """An int (or a float holding one, as UI number fields send); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def check_settings(settings: TrainSettings, limits: TrainLimits | None = None) -> TrainSettings:
    """The settings with whole numbers as ints; TrainError with the first refusal otherwise."""
    limits = limits or default_limits()
    rank, steps, max_len, threads = (_whole(v) for v in (settings.rank, settings.steps, settings.max_len,
                                                          settings.threads))
    if rank is None or not 1 <= rank <= limits.max_rank:
        raise TrainError(msg.MSG_RANK.format(limit=limits.max_rank, value=settings.rank))
    if steps is None or not 1 <= steps <= limits.max_steps:
        raise TrainError(msg.MSG_STEPS.format(limit=limits.max_steps, value=settings.steps))
    if max_len is None or not 16 <= max_len <= limits.max_len:
        raise TrainError(msg.MSG_MAX_LEN.format(limit=limits.max_len, value=settings.max_len))
    if threads is None or not 1 <= threads <= limits.max_threads:
        raise TrainError(msg.MSG_THREADS.format(limit=limits.max_threads, value=settings.threads))
    try:
        rate = float(settings.learning_rate)
    except (TypeError, ValueError):
        rate = float("nan")
    if not limits.min_learning_rate <= rate <= limits.max_learning_rate:
        raise TrainError(msg.MSG_LEARNING_RATE.format(low=limits.min_learning_rate, high=limits.max_learning_rate,
                                                      value=settings.learning_rate))
    if settings.alpha is not None and not float(settings.alpha) > 0:
        raise TrainError(msg.MSG_ALPHA.format(value=settings.alpha))
    targets = tuple(dict.fromkeys(t.strip() for t in settings.target_modules if t and t.strip()))
    allowed = ", ".join(limits.target_modules)
    if not targets:
        raise TrainError(msg.MSG_NO_TARGETS.format(allowed=allowed))
    unknown = [t for t in targets if t not in limits.target_modules]
    if unknown:
        raise TrainError(msg.MSG_BAD_TARGETS.format(names=", ".join(unknown), allowed=allowed))
    return replace(settings, rank=rank, steps=steps, max_len=max_len, threads=threads, learning_rate=rate,
                   target_modules=targets)
