"""The batching benchmark's ceiling: plain `transformers` generate at batch N on the CPU model, in a process of its own.

    python -m benchmarks.ceiling --batch 32 [--input-len 32] [--output-len 64] [--rounds 3]

Same model as the CPU engine serves (setup.cpu.model.prepare_cpu_model(), float32), same kind of prompts as
benchmarks.batching sends at concurrency N (app.bench.load.synthetic_requests with seed N, wrapped in the model's chat
template as the engine's prompts are), left padding, greedy, every row exactly --output-len new tokens
(min_new_tokens = max_new_tokens). Prints one JSON object: total output tokens/s over the rounds after a warm-up.

benchmarks.batching runs it with `ceiling(...)` after its servers have stopped, so the generate has the CPU to itself
and its memory goes with the child; the child inherits the run's TMPDIR (benchmarks/scratch.py), so it leaves nothing
in /tmp.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from app.bench.load import synthetic_requests


def ceiling_prompts(batch: int, input_len: int, output_len: int, template) -> list[str]:
    """The first `batch` measured prompts of benchmarks.batching's load at concurrency `batch` (request 0 there is the
    warm-up), each through `template(text) -> prompt` (the model's chat template)."""
    requests = synthetic_requests(batch + 1, input_len, output_len, seed=batch)[1:]
    return [template(r.prompt) for r in requests]


def plain_batch_generate(model_dir: Path, prompts: list[str], new_tokens: int, rounds: int = 1) -> dict:
    """Greedy `generate` of all prompts as one left-padded batch, `rounds` times after a short warm-up:
    {"tokens_per_s", "batch", "rounds", "tokens", "wall_s"} (tokens in all rounds, generate time only)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    batch = tokenizer(prompts, return_tensors="pt", padding=True)
    width = batch["input_ids"].shape[1]
    tokens, wall = 0, 0.0
    with torch.inference_mode():
        model.generate(**batch, max_new_tokens=min(4, new_tokens), do_sample=False, pad_token_id=tokenizer.pad_token_id)
        for _ in range(max(rounds, 1)):
            start = time.perf_counter()
            out = model.generate(**batch, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
            wall += time.perf_counter() - start
            tokens += (out.shape[1] - width) * out.shape[0]
    return {"tokens_per_s": tokens / wall if wall else None, "batch": len(prompts), "rounds": max(rounds, 1),
            "tokens": tokens, "wall_s": wall}


def ceiling(batch: int, input_len: int, output_len: int, rounds: int, timeout: float = 3600) -> dict:
    """This module's measurement in a child process (same interpreter and environment, so the run's TMPDIR):
    its JSON, or {"error": why} when it failed."""
    command = [sys.executable, "-m", "benchmarks.ceiling", "--batch", str(batch), "--input-len", str(input_len),
               "--output-len", str(output_len), "--rounds", str(rounds)]
    try:
        run = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"plain transformers generate took over {timeout:.0f} s"}
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        return {"error": (run.stderr.strip().splitlines() or [f"exit code {run.returncode}"])[-1]}
    try:  # a long run's table is still printed when the child's last line is not its figures
        return json.loads(lines[-1])
    except ValueError:
        return {"error": f"unreadable output: {lines[-1][:200]}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, required=True, help="Rows generated at once.")
    parser.add_argument("--input-len", type=int, default=32, help="Prompt words, about one token each (default 32).")
    parser.add_argument("--output-len", type=int, default=64, help="New tokens per row (default 64).")
    parser.add_argument("--rounds", type=int, default=1, help="Timed generates after the warm-up (default 1).")
    args = parser.parse_args(argv)
    from app.chat.prompts import PromptBuilder
    from app.core.conversation import Conversation
    from setup.cpu.model import prepare_cpu_model

    model_dir = prepare_cpu_model(log=lambda *_: None)
    builder = PromptBuilder(tokenizer_dir=str(model_dir))
    prompts = ceiling_prompts(args.batch, args.input_len, args.output_len,
                              lambda text: builder.build(Conversation.asking(text)))
    print(json.dumps(plain_batch_generate(model_dir, prompts, args.output_len, args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
