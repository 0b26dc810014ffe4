"""Foundation benchmark: (a) the app's API vs a direct Triton stream, (b) Triton CPU engine vs plain
transformers generate. Starts its own tritonserver and app on free loopback ports; prints tables.

    python -m benchmarks.foundation [--runs 5] [--max-tokens 64]

Its files (the demo repository, the server's log) live in the run's scratch folder (benchmarks/scratch.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from app.chat.prompts import PromptBuilder
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from benchmarks.harness import demo_server
from benchmarks.scratch import scratch_folder
from benchmarks.server_process import free_port

QUESTION = "Explain in a few sentences why the sky is blue."


def timings(stamps: list[float], start: float) -> tuple[float, float, int]:
    """(time to first text, time from first to last text, number of updates).

    The app throttles UI/API updates to ~20 a second, so per-token latency is computed from the span
    and the token count (the same greedy reply on both paths), not from gaps between updates.
    """
    return stamps[0] - start, stamps[-1] - stamps[0], len(stamps)


def direct_run(url: str, prompt: str, params: SamplingParams) -> tuple[float, float, int]:
    client = TritonChatClient(url)
    start = time.perf_counter()
    stream = client.stream(prompt, params)
    stamps = [time.perf_counter() for _ in stream]
    return timings(stamps, start)


def api_run(sender, params: SamplingParams) -> tuple[float, float, int]:
    """One request through the app's /generate endpoint over Gradio's HTTP API (events read as they
    arrive; gradio_client would add up to 50 ms of its own polling delay)."""
    from app.bench.load import BenchRequest

    record = sender(0, BenchRequest(prompt=QUESTION, max_tokens=params.max_tokens))
    if record.error:
        raise RuntimeError(record.error)
    return record.first_token - record.started, record.ended - record.first_token, record.tokens


def plain_generate(model_dir: Path, prompt: str, new_tokens: int) -> float:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ids = tokenizer(prompt, return_tensors="pt")
    with torch.inference_mode():
        model.generate(**ids, max_new_tokens=4, do_sample=False)  # warm-up
        start = time.perf_counter()
        out = model.generate(**ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
        elapsed = time.perf_counter() - start
    return (out.shape[1] - ids["input_ids"].shape[1]) / elapsed


def med(values):
    return statistics.median(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="Runs per path (median reported).")
    parser.add_argument("--max-tokens", type=int, default=64, help="Tokens per reply.")
    args = parser.parse_args(argv)
    with scratch_folder() as scratch:
        direct, api, tokens, triton_tps, plain_tps = measure(args, scratch)
    report(args, direct, api, tokens, triton_tps, plain_tps)
    return 0


def measure(args, scratch: Path):
    """Both paths interleaved, then plain generate: (direct runs, API runs, tokens, Triton tokens/s, plain tokens/s)."""
    from app.web.ui import (
        build_app,  # Gradio after TMPDIR points at the scratch folder: its upload folder is read once
    )
    from benchmarks.app_senders import SseApiSender
    from setup.cpu.model import prepare_cpu_model

    model_dir = prepare_cpu_model()
    print("Starting the CPU demo tritonserver ...", flush=True)
    with demo_server(scratch) as triton:
        port = free_port()
        blocks = build_app(AppContext(AppConfig(triton_url=triton.grpc_url, port=port)))
        blocks.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
        try:
            params = SamplingParams(max_tokens=args.max_tokens)
            prompt = PromptBuilder(tokenizer_dir=str(model_dir)).build(Conversation.asking(QUESTION))
            sender = SseApiSender(f"http://127.0.0.1:{port}/", sessions=1, params=params)
            direct_run(triton.grpc_url, prompt, params)  # warm-up both paths
            api_run(sender, params)
            direct, api = [], []
            for _ in range(args.runs):  # interleaved so both see the same machine state
                direct.append(direct_run(triton.grpc_url, prompt, params))
                api.append(api_run(sender, params))
        finally:
            blocks.close()
    tokens = med([d[2] for d in direct])  # the direct stream has one update per token
    triton_tps = [d[2] / (d[0] + d[1]) for d in direct]
    return direct, api, tokens, triton_tps, plain_generate(model_dir, prompt, tokens)


def report(args, direct, api, tokens, triton_tps, plain_tps) -> None:
    print(f"\nMachine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {args.runs} runs, {tokens} tokens per reply, greedy\n")
    print("(a) Time to first token and per-token latency (median)")
    print(f"{'path':<34}{'TTFT ms':>10}{'per token ms':>15}{'updates':>9}")
    per_token = {name: [r[1] / max(1, tokens - 1) * 1000 for r in rows] for name, rows in (("d", direct), ("a", api))}
    for name, key, rows in (("direct tritonclient gRPC stream", "d", direct),
                            ("app API (HTTP /generate, SSE)", "a", api)):
        print(f"{name:<34}{med([r[0] for r in rows]) * 1000:>10.1f}{med(per_token[key]):>15.2f}"
              f"{med([r[2] for r in rows]):>9}")
    added_ttft = (med([r[0] for r in api]) - med([r[0] for r in direct])) * 1000
    added_token = med(per_token["a"]) - med(per_token["d"])
    print(f"{'app adds':<34}{added_ttft:>10.1f}{added_token:>15.2f}   (goal: < 30 ms, < 1 ms)\n")
    print("(b) CPU engine tokens/s through Triton vs plain transformers generate (same model, prompt, length)")
    print(f"{'path':<34}{'tokens/s':>10}")
    print(f"{'plain transformers generate':<34}{plain_tps:>10.1f}")
    print(f"{'Triton (BLS stream, end to end)':<34}{med(triton_tps):>10.1f}")
    print(f"{'ratio':<34}{med(triton_tps) / plain_tps:>10.1%}   (goal: >= 90%)")


if __name__ == "__main__":
    raise SystemExit(main())
