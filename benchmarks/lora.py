"""LoRA benchmark: time to first token and bytes sent, first use of an adapter vs later uses vs base model.

    .venv/bin/python -m benchmarks.lora [--url HOST:PORT] [--runs 5] [--adapter adapters/pirate]

Without --url it starts the CPU demo tritonserver on free ports (and stops it at the end). The
7B-shaped rank-16 adapter (random weights, Llama-2-7B shapes, all seven linear modules) is converted
and sized only: a 7B model cannot run on this CPU machine, so its row shows bytes, not latency. Its files live in
the run's scratch folder (benchmarks/scratch.py).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.adapters.registry import AdapterRegistry, lora_bytes  # noqa: E402
from app.chat.prompts import PromptBuilder  # noqa: E402
from app.core.conversation import Conversation  # noqa: E402
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient  # noqa: E402
from benchmarks.harness import demo_server  # noqa: E402
from benchmarks.scratch import scratch_folder  # noqa: E402
from setup.cpu.model import model_dir  # noqa: E402
from setup.lora.convert import HF_TO_TRT, convert_peft  # noqa: E402
from setup.lora.engine import EngineLoraSpec, check_against_engine  # noqa: E402
from setup.paths import PROJECT_ROOT  # noqa: E402

QUESTION = "What is the capital of France?"
PARAMS = SamplingParams(max_tokens=4)
MODULES_7B = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LLAMA_7B = EngineLoraSpec(path=Path("llama-2-7b (shapes only)"), dtype="float16", max_rank=64,
                          target_modules=tuple(HF_TO_TRT[m] for m in MODULES_7B), num_layers=32, hidden_size=4096,
                          intermediate_size=11008, num_heads=32, num_kv_heads=32, head_size=128)
TTFT_GOAL = 0.10  # a cached adapter's TTFT within 10% of the base model's


def _ttft(client: TritonChatClient, prompt: str, extra: dict) -> float:
    """Seconds from sending a request to its first text."""
    started = time.monotonic()
    stream = client.stream(prompt, PARAMS, extra)
    for _ in stream:
        pass
    return stream.first_token_at - started


def measure_demo(url: str, adapter_dir: Path, runs: int) -> tuple[list[tuple], float]:
    tmp = Path(tempfile.mkdtemp(prefix="lora-bench-"))
    try:
        shutil.copytree(adapter_dir, tmp / adapter_dir.name)
        registry, client = AdapterRegistry(tmp), TritonChatClient(url)
        prompt = PromptBuilder(tokenizer_dir=str(model_dir())).build(Conversation.asking(QUESTION))
        name = adapter_dir.name
        cases = {"base": {}, "first": registry.extra_inputs(name, first_use=True),
                 "later": registry.extra_inputs(name, first_use=False)}
        _ttft(client, prompt, {})  # warm up
        times: dict[str, list[float]] = {case: [] for case in cases}
        for i in range(runs):  # interleaved, so background load hits every case alike
            task = {"lora_task_id": 900_000 + i}  # a new id: the server has never seen these weights
            times["base"].append(_ttft(client, prompt, {}))
            times["first"].append(_ttft(client, prompt, {**cases["first"], **task}))
            times["later"].append(_ttft(client, prompt, {**cases["later"], **task}))
        first_bytes, later_bytes = lora_bytes(cases["first"]), lora_bytes(cases["later"])
        base, first, later = times["base"], times["first"], times["later"]
        med = statistics.median
        return [
            ("base model", f"{med(base) * 1000:.0f}", "0", "-"),
            (f"{name}: first use (id + weights)", f"{med(first) * 1000:.0f}", f"{first_bytes:,}",
             f"{(med(first) / med(base) - 1) * 100:+.0f}%"),
            (f"{name}: later uses (id only)", f"{med(later) * 1000:.0f}", f"{later_bytes:,}",
             f"{(med(later) / med(base) - 1) * 100:+.0f}%"),
        ], med(later) / med(base) - 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_7b_adapter(folder: Path, rank: int = 16) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    tensors = {}
    for layer in range(LLAMA_7B.num_layers):
        for module in MODULES_7B:
            in_size, out_size = LLAMA_7B.module_shape(HF_TO_TRT[module])
            part = "mlp" if module in ("gate_proj", "up_proj", "down_proj") else "self_attn"
            key = f"base_model.model.model.layers.{layer}.{part}.{module}"
            tensors[f"{key}.lora_A.weight"] = rng.standard_normal((rank, in_size), dtype=np.float32) * 0.01
            tensors[f"{key}.lora_B.weight"] = rng.standard_normal((out_size, rank), dtype=np.float32) * 0.01
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    (folder / "adapter_config.json").write_text(
        f'{{"peft_type": "LORA", "r": {rank}, "lora_alpha": {2 * rank}, "target_modules": {list(MODULES_7B)}}}'
        .replace("'", '"'))


def measure_7b() -> list[tuple]:
    tmp = Path(tempfile.mkdtemp(prefix="lora-bench-7b-"))
    try:
        _write_7b_adapter(tmp / "peft")
        started = time.monotonic()
        converted = convert_peft(tmp / "peft", "float16")
        seconds = time.monotonic() - started
        check_against_engine(converted, LLAMA_7B)
        first = converted.nbytes + 8
        return [
            (f"7B-shaped r=16, 7 modules: first use (convert {seconds:.1f} s)", "n/a (no 7B on CPU)", f"{first:,}", "-"),
            ("7B-shaped r=16, 7 modules: later uses (id only)", "n/a (no 7B on CPU)", "8", "-"),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_table(rows: list[tuple]) -> None:
    header = ("case", "TTFT ms (median)", "LoRA bytes sent", "TTFT vs base")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(4)]
    line = " | ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*header))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="Triton gRPC HOST:PORT (default: start the CPU demo server).")
    parser.add_argument("--runs", type=int, default=5, help="Requests per case (median reported).")
    parser.add_argument("--adapter", type=Path, default=PROJECT_ROOT / "adapters" / "pirate")
    args = parser.parse_args(argv)
    with scratch_folder() as scratch:
        if args.url is None:
            print("Starting the CPU demo tritonserver...", flush=True)
            with demo_server(scratch) as server:
                rows, overhead = measure_demo(server.grpc_url, args.adapter, args.runs)
        else:
            rows, overhead = measure_demo(args.url, args.adapter, args.runs)
        rows += measure_7b()
    print_table(rows)
    print(f"\nGoal: after the first use only the 8-byte task id travels (met: later uses send 8 bytes); "
          f"cached adapter TTFT within {TTFT_GOAL:.0%} of base: {'met' if overhead <= TTFT_GOAL else 'NOT met'} "
          f"({overhead:+.1%}). CPU engine SmolLM2-135M, prompt of {QUESTION!r} in the chat template, 2 shared cores.")
    print("7B rows: converted size only (random weights, Llama-2-7B shapes); the CPU demo cannot run a 7B model.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
