"""Train a LoRA adapter on a causal LM checkpoint with PEFT, full-batch AdamW, and save it as a PEFT folder.

Two stages, so a caller can refuse a request at once and run the work elsewhere:

- `prepare_training` checks everything that can be checked before work starts (settings against the limits,
  the number of pairs, the base folder, the output folder, every example's length with the chat template) and
  takes the one training slot: this process's, and the output's folder's (an flock on a hidden lock file there,
  so a CLI training and the app's training into the same adapters folder exclude each other too; the kernel
  drops it when the process ends, even by a crash). A second training at the same time is refused.
- `TrainingRun.run` trains with a progress callback (step, steps, loss) and a cancel event, which stops it within
  the current layer's forward or backward pass. The adapter is written into a hidden temporary folder beside the
  output and renamed into place at the end, so a cancelled or failed training leaves nothing behind.

On the CPU it runs with `settings.threads` threads (one by default, so a CPU demo keeps its other cores for
serving); on a machine with a CUDA GPU it runs on GPU 0. torch, transformers and peft are imported when a
training is prepared, not when this module is.

Imports: setup.lora.dataset, setup.lora.messages, setup.lora.record, setup.lora.train_settings.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from setup.lora import messages as msg
from setup.lora.dataset import Example, check_count
from setup.lora.record import write_record
from setup.lora.train_settings import TrainCancelled, TrainError, TrainLimits, TrainSettings, check_settings

IGNORE = -100  # label of positions the loss skips (the prompt and the padding)
ADAPTER_README = "README.md"
ProgressCallback = Callable[[int, int, float], None]  # (step, steps, loss)

_SLOT = threading.Lock()  # one training at a time in this process
LOCK_NAME = ".lora-training.lock"  # in the output's folder: one training at a time there, across processes


class _Stop(Exception):
    """Raised inside the model's forward or backward pass when the cancel event is set."""


def training_running() -> bool:
    """Whether a training holds this process's slot (prepared or running)."""
    return _SLOT.locked()


def lock_folder(folder: Path) -> int:
    """Take the folder's training lock (an exclusive flock on `folder/LOCK_NAME`, made when missing); its file
    descriptor, for `unlock_folder`. TrainError (MSG_BUSY) when another process holds it.

    The file is removed on unlock, so a training leaves nothing in the adapters folder; the descriptor is not
    inherited by programs the process starts (O_CLOEXEC). A file left by a crashed process is locked afresh.
    """
    path = Path(folder) / LOCK_NAME
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise TrainError(msg.MSG_OUT_UNWRITABLE.format(path=folder, reason=exc.strerror or exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise TrainError(msg.MSG_BUSY) from None
        except OSError as exc:
            os.close(fd)
            raise TrainError(msg.MSG_OUT_UNWRITABLE.format(path=folder, reason=exc.strerror or exc)) from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:  # not a file its holder removed between our open and our lock
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)


def unlock_folder(folder: Path, fd: int) -> None:
    """Remove the lock file (while still holding it, so no one locks a removed file unnoticed) and release it."""
    try:
        (Path(folder) / LOCK_NAME).unlink(missing_ok=True)
    except OSError:
        pass  # the lock itself goes with the descriptor; a file left behind is locked afresh next time
    finally:
        os.close(fd)


def pick_device() -> str:
    """'cuda' when a CUDA GPU is usable, else 'cpu'."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def where_it_runs(threads: int) -> str:
    """One sentence for the UI and the CLI: where a training will run and with how much of the machine."""
    import torch

    if torch.cuda.is_available():
        return msg.MSG_WHERE_GPU.format(index=0, name=torch.cuda.get_device_name(0))
    return msg.MSG_WHERE_CPU.format(threads=threads)


def prompt_ids(tokenizer, turns: Sequence[dict[str, str]]) -> list[int]:
    """Token ids of a conversation with the chat template, ending where the assistant's answer starts."""
    if not getattr(tokenizer, "chat_template", None):
        raise TrainError(msg.MSG_NO_CHAT_TEMPLATE.format(path=getattr(tokenizer, "name_or_path", "the base folder")))
    text = tokenizer.apply_chat_template(list(turns), tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def encode_examples(tokenizer, examples: Sequence[Example], max_len: int | None = None) -> dict:
    """A padded batch whose loss covers each answer and its end-of-turn token only.

    TrainError names the first example longer than `max_len` tokens.
    """
    import torch

    rows, labels = [], []
    for number, example in enumerate(examples, start=1):
        prompt = prompt_ids(tokenizer, example.prompt)
        answer = tokenizer(example.response + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        if max_len is not None and len(prompt) + len(answer) > max_len:
            raise TrainError(msg.MSG_TOO_LONG.format(row=number, tokens=len(prompt) + len(answer), limit=max_len))
        rows.append(prompt + answer)
        labels.append([IGNORE] * len(prompt) + answer)
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return {
        "input_ids": torch.tensor([r + [pad] * (width - len(r)) for r in rows]),
        "attention_mask": torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows]),
        "labels": torch.tensor([lab + [IGNORE] * (width - len(lab)) for lab in labels]),
    }


def save_adapter(model, target: Path, base_model_id: str | None = None) -> None:
    """The PEFT folder (adapter_config.json + adapter_model.safetensors); `base_model_id`, when given, is
    recorded as the base model instead of this machine's path."""
    model.save_pretrained(target, safe_serialization=True)
    if base_model_id:
        config_path = Path(target) / "adapter_config.json"
        saved = json.loads(config_path.read_text())
        saved["base_model_name_or_path"] = base_model_id
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")


def _usual_modes(folder: Path) -> None:
    """The modes a folder and its files made by hand would have (the umask's), not mkdtemp's owner-only 700 and
    600: a server reading the adapters folder as another user (a container) can read a trained adapter."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for path in folder.iterdir():
        path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)


def _watch_cancel(model, cancel: threading.Event) -> list:
    """Hooks on every LoRA B module that raise _Stop in the forward or backward pass once `cancel` is set."""

    def check(*_args) -> None:
        if cancel.is_set():
            raise _Stop

    def on_forward(_module, _inputs, output):
        check()
        if output.requires_grad:
            output.register_hook(check)
        return None

    return [module.register_forward_hook(on_forward) for name, module in model.named_modules()
            if name.endswith("lora_B.default")]


@dataclass(frozen=True)
class TrainResult:
    """A finished training: where the adapter is, and how it went."""

    path: Path
    steps: int
    losses: tuple[float, ...]
    seconds: float
    device: str

    def summary(self) -> str:
        return msg.MSG_DONE.format(name=self.path.name, seconds=self.seconds, first=self.losses[0],
                                   last=self.losses[-1], steps=self.steps)


class TrainingRun:
    """A checked training request holding the slot; `run()` once, or `release()` to give the slot back."""

    def __init__(self, base: Path, batch: dict, out: Path, settings: TrainSettings, replace: bool,
                 base_model_id: str | None, description: str, examples: Sequence[Example], lock_fd: int):
        self.base, self.batch, self.out, self.settings = base, batch, out, settings
        self.replace, self.base_model_id, self.description = replace, base_model_id, description
        self.examples, self.pairs = tuple(examples), len(examples)
        self._lock_fd = lock_fd
        self._released = False

    def release(self) -> None:
        """Give the training slot back, the folder's lock and the process's (run() does it itself); safe to call
        twice."""
        if not self._released:
            self._released = True
            try:
                unlock_folder(self.out.parent, self._lock_fd)
            finally:
                _SLOT.release()

    def run(self, on_step: ProgressCallback | None = None, cancel: threading.Event | None = None) -> TrainResult:
        """Train, save into a temporary folder, rename it to `out`; TrainCancelled / TrainError otherwise."""
        import torch

        cancel = cancel or threading.Event()
        step, staging, previous_threads = 0, None, torch.get_num_threads()
        try:
            device = pick_device()
            if device == "cpu":
                torch.set_num_threads(self.settings.threads)
            started = time.monotonic()
            model = self._model(device)
            batch = {k: v.to(device) for k, v in self.batch.items()}
            optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                          lr=self.settings.learning_rate)
            hooks = _watch_cancel(model, cancel)
            model.train()
            losses = []
            for step in range(1, self.settings.steps + 1):
                if cancel.is_set():
                    raise _Stop
                loss = model(**batch).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                losses.append(float(loss.item()))
                if on_step is not None:
                    on_step(step, self.settings.steps, losses[-1])
            seconds = time.monotonic() - started
            for hook in hooks:
                hook.remove()
            model.eval()
            staging = self._save(model)
            if cancel.is_set():
                raise _Stop
            self._install(staging)
            staging = None
            return TrainResult(self.out, self.settings.steps, tuple(losses), seconds, device)
        except _Stop:
            raise TrainCancelled(msg.MSG_CANCELLED.format(step=step, steps=self.settings.steps)) from None
        except TrainError:
            raise
        except RuntimeError as exc:
            if cancel.is_set():  # _Stop raised in a backward hook reaches us wrapped by autograd
                raise TrainCancelled(msg.MSG_CANCELLED.format(step=step, steps=self.settings.steps)) from None
            raise TrainError(msg.MSG_TRAIN_FAILED.format(step=step, steps=self.settings.steps, reason=exc)) from None
        except (OSError, ValueError) as exc:
            raise TrainError(msg.MSG_TRAIN_FAILED.format(step=step, steps=self.settings.steps, reason=exc)) from None
        finally:
            torch.set_num_threads(previous_threads)
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            self.release()

    def _model(self, device: str):
        """The base model with fresh LoRA layers (seeded), on `device`."""
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM

        torch.manual_seed(self.settings.seed)
        try:
            base = AutoModelForCausalLM.from_pretrained(self.base, dtype=torch.float32)
        except (OSError, ValueError) as exc:
            raise TrainError(msg.MSG_BASE_UNREADABLE.format(path=self.base, reason=exc)) from None
        config = LoraConfig(r=self.settings.rank, lora_alpha=self.settings.lora_alpha, lora_dropout=0.0, bias="none",
                            target_modules=list(self.settings.target_modules), task_type="CAUSAL_LM")
        return get_peft_model(base, config).to(device)

    def _save(self, model) -> Path:
        s = self.settings
        readme = (f"# {self.out.name}\n\n{self.description or 'LoRA adapter.'}\n"
                  f"Base model: {self.base_model_id or self.base.name}. Trained by setup/lora/train.py (r={s.rank}, "
                  f"alpha={s.lora_alpha:g}, {', '.join(s.target_modules)}; {s.steps} full-batch steps on "
                  f"{self.pairs} pairs, learning rate {s.learning_rate:g}, seed {s.seed}).\n")
        return stage_adapter(model, self.out, readme, self.base_model_id, self.examples)

    def _install(self, staging: Path) -> None:
        install_adapter(staging, self.out, self.replace)


def stage_adapter(model, out: Path, readme: str, base_model_id: str | None = None,
                  examples: Sequence[Example] = ()) -> Path:
    """The adapter, its README and (when `examples` are given) the pairs it was trained on (setup.lora.record) in a
    hidden temporary folder beside `out` (for `install_adapter`)."""
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".training-{out.name}-", dir=out.parent))
    except OSError as exc:
        raise TrainError(msg.MSG_OUT_UNWRITABLE.format(path=out, reason=exc.strerror or exc)) from None
    try:
        save_adapter(model, staging, base_model_id)
        (staging / ADAPTER_README).write_text(readme)
        if examples:
            write_record(staging, examples)
        _usual_modes(staging)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise TrainError(msg.MSG_OUT_UNWRITABLE.format(path=out, reason=exc.strerror or exc)) from None
    return staging


def install_adapter(staging: Path, out: Path, replace: bool) -> None:
    """Rename a staged adapter folder to `out` (replacing an old adapter only when asked to). When that fails, the
    staged folder is removed and an old adapter stays where it was."""
    aside = None
    try:
        if out.exists():
            if not replace:
                raise TrainError(msg.MSG_OUT_EXISTS.format(path=out))
            aside = Path(tempfile.mkdtemp(prefix=f".replaced-{out.name}-", dir=out.parent))
            out.rename(aside / out.name)
        try:
            staging.rename(out)
        except OSError:
            if aside is not None:
                kept, aside = aside, None  # if even the way back fails, the old adapter stays in `kept`
                (kept / out.name).rename(out)
                shutil.rmtree(kept, ignore_errors=True)
            raise
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise TrainError(msg.MSG_OUT_UNWRITABLE.format(path=out, reason=exc.strerror or exc)) from None
    except TrainError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)


def prepare_training(base: Path, examples: Sequence[Example], out: Path, settings: TrainSettings, *,
                     limits: TrainLimits | None = None, replace: bool = False, base_model_id: str | None = None,
                     description: str = "") -> TrainingRun:
    """Check the request and take the training slot; TrainError with one sentence for the first refusal."""
    settings = check_settings(settings, limits)
    examples = check_count(list(examples), limits)
    base, out = Path(base), Path(out)
    if not (base / "config.json").is_file():
        raise TrainError(msg.MSG_BASE_MISSING.format(path=base))
    if out.exists() and not replace:
        raise TrainError(msg.MSG_OUT_EXISTS.format(path=out))
    if not _SLOT.acquire(blocking=False):
        raise TrainError(msg.MSG_BUSY)
    lock_fd = None
    try:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TrainError(msg.MSG_OUT_UNWRITABLE.format(path=out, reason=exc.strerror or exc)) from None
        lock_fd = lock_folder(out.parent)
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(base)
        except (OSError, ValueError) as exc:
            raise TrainError(msg.MSG_BASE_UNREADABLE.format(path=base, reason=exc)) from None
        batch = encode_examples(tokenizer, examples, settings.max_len)
    except BaseException:
        if lock_fd is not None:
            unlock_folder(out.parent, lock_fd)
        _SLOT.release()
        raise
    return TrainingRun(base, batch, out, settings, replace, base_model_id, description, examples, lock_fd)


def train(base: Path, examples: Sequence[Example], out: Path, settings: TrainSettings, *,
          on_step: ProgressCallback | None = None, cancel: threading.Event | None = None, **options) -> TrainResult:
    """prepare_training(...) then run(): the whole training in the calling thread."""
    return prepare_training(base, examples, out, settings, **options).run(on_step=on_step, cancel=cancel)
