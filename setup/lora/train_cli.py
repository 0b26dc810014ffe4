"""`python -m setup lora train`: train a LoRA adapter from a JSONL file into a PEFT folder, printing progress.

Bad input ends with one sentence on stderr and exit code 2; Ctrl-C cancels and writes nothing (exit 130).
The command line is run by the machine's own user, so folders are not confined to a workspace; the limits of
setup/data/lora_training.yaml apply as they do in the web UI.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from setup.cli_types import positive_float, positive_int
from setup.lora.dataset import read_dataset_file
from setup.lora.messages import MSG_INTERRUPTED
from setup.lora.train import prepare_training, where_it_runs
from setup.lora.train_settings import TrainCancelled, default_settings


def add_train_command(lora_sub) -> None:
    """The `train` subcommand of `python -m setup lora`."""
    defaults = default_settings()
    train = lora_sub.add_parser("train", help="Train a LoRA adapter (PEFT folder) from a JSONL dataset.")
    train.add_argument("--base", type=Path, required=True, help="Base model folder (Hugging Face checkpoint with "
                       "its tokenizer), e.g. the CPU demo's SmolLM2 folder.")
    train.add_argument("--data", type=Path, required=True, help='JSONL: one {"prompt", "response"} or '
                       '{"messages": [...]} object per line.')
    train.add_argument("--out", type=Path, required=True, help="Adapter folder to write (appears only when done), "
                       "e.g. adapters/my-style.")
    train.add_argument("--rank", type=positive_int, default=defaults.rank, help=f"LoRA rank (default {defaults.rank}).")
    train.add_argument("--targets", default=",".join(defaults.target_modules),
                       help=f"Comma list of modules (default {','.join(defaults.target_modules)}).")
    train.add_argument("--steps", type=positive_int, default=defaults.steps,
                       help=f"Full-batch optimizer steps (default {defaults.steps}).")
    train.add_argument("--lr", type=positive_float, default=defaults.learning_rate,
                       help=f"Learning rate (default {defaults.learning_rate:g}).")
    train.add_argument("--max-len", type=positive_int, default=defaults.max_len,
                       help=f"Longest example in tokens with the chat template (default {defaults.max_len}).")
    train.add_argument("--threads", type=positive_int, default=defaults.threads,
                       help=f"CPU threads (default {defaults.threads}, leaving the other cores to serving).")
    train.add_argument("--seed", type=int, default=defaults.seed, help=f"Random seed (default {defaults.seed}).")
    train.add_argument("--base-id", help="Base model name to record in adapter_config.json (default: its folder).")
    train.add_argument("--force", action="store_true", help="Replace --out if it exists (only once training is done).")


def cmd_train(args: argparse.Namespace) -> int:
    """Check, train with progress lines, and say where the adapter is; TrainError propagates to the caller."""
    settings = default_settings().with_changes(
        rank=args.rank, target_modules=tuple(t.strip() for t in args.targets.split(",") if t.strip()),
        steps=args.steps, learning_rate=args.lr, max_len=args.max_len, threads=args.threads, seed=args.seed)
    examples = read_dataset_file(args.data, shown=str(args.data))
    run = prepare_training(args.base, examples, args.out, settings, replace=args.force, base_model_id=args.base_id,
                           description=f"Trained from {args.data.name}.")
    print(f"Training {args.out} on {len(examples)} pairs, {run.settings.steps} steps. "
          f"{where_it_runs(run.settings.threads)}", flush=True)
    started = time.monotonic()

    def progress(step: int, steps: int, loss: float) -> None:
        print(f"  step {step}/{steps} loss {loss:.3f} ({time.monotonic() - started:.0f} s)", flush=True)

    try:
        result = run.run(on_step=progress)
    except (KeyboardInterrupt, TrainCancelled):
        print(MSG_INTERRUPTED, file=sys.stderr)
        return 130
    print(f"{result.summary()} Wrote {result.path}")
    return 0
