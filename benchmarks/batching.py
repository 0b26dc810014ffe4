"""In-flight batching benchmark: the CPU engine through Triton against vLLM's CPU build, same loads, one run.

    python -m benchmarks.batching [--concurrency 1 4 8 16] [--per-stream 3] [--input-len 32]
        [--output-len 64] [--no-vllm | --vllm-url URL] [--no-ceiling] [--json PATH]

Starts its own tritonserver (demo repository) on free loopback ports, runs every load, stops it, then
starts vLLM's CPU build (benchmarks/peer_vllm.py) and runs the same loads. Loads: `base`, one adapter
(`pirate`) and `mixed` (base, pirate, french in turn) at each concurrency, constant concurrency,
greedy, every reply exactly --output-len tokens; Compare-like streams (base + pirate + french at
once) against a lone stream. Prompts get the model's chat template on both sides. Then, with every server stopped,
the ceiling: plain `transformers` generate at batch N (the largest concurrency) on the same model and the same kind
of prompts, in a child process (benchmarks/ceiling.py), shown beside the engine's base row at N. Prints the machine
(CPU model, its matrix flags, load average at start and end), the tables and issue #51's goals, each met or not
with its figure. Everything the run, its servers and the ceiling's child write to the temporary folder (vLLM's
`vllm_dist_*` and PyTorch's compile cache among it) lands in the run's scratch folder, removed at the end
(benchmarks/scratch.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from app.bench.load import BenchRequest, run_load, session_pool, synthetic_requests
from app.bench.stats import summarize
from app.bench.targets import OpenAISender, TritonSender
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from benchmarks.ceiling import ceiling
from benchmarks.harness import demo_server
from benchmarks.scratch import scratch_folder

MIXES = {"base": (None,), "pirate": ("pirate",), "mixed": (None, "pirate", "french")}
COMPARE = (None, "pirate", "french")
COMPARE_PROMPT = "Tell me about the sea and the ships that sail on it."
PEER_LEVELS = (8, 32)  # base >= 1.2x vLLM at these concurrencies (issue #51)
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


class TritonTarget:
    """The CPU engine behind tritonserver, driven with the app's own client (tensorrt_llm_bls)."""

    name = "CPU engine (Triton)"

    def __init__(self, grpc_url: str, tokenizer_dir: Path):
        from app.adapters.registry import AdapterRegistry
        from app.bench.hooks import adapter_hook
        from app.chat.prompts import PromptBuilder

        self.client = TritonChatClient(grpc_url, stall_timeout=300)
        self.builder = PromptBuilder(tokenizer_dir=str(tokenizer_dir))
        self.hook = adapter_hook(AdapterRegistry())

    def sender(self, model: str | None, concurrency: int):
        hooks = [] if model is None else [partial(self.hook, model)]
        send = TritonSender(self.client, SamplingParams(), hooks=hooks)

        from app.core.conversation import Conversation

        def one(request: BenchRequest):
            return send(replace(request, prompt=self.builder.build(Conversation.asking(request.prompt))))

        return one

    def close(self) -> None:
        """Nothing held."""


class OpenAITarget:
    """vLLM's OpenAI server: the base model by its served name, adapters by theirs."""

    name = "vLLM CPU"

    def __init__(self, url: str, base: str = "smollm2"):
        self.url, self.base, self._senders = url, base, []

    def sender(self, model: str | None, concurrency: int):
        sender = OpenAISender(self.url, concurrency, SamplingParams(), timeout=300, model=model or self.base)
        self._senders.append(sender)
        return session_pool(sender, concurrency)

    def close(self) -> None:
        for sender in self._senders:
            sender.close()
        self._senders.clear()


# ---- loads ---------------------------------------------------------------------------------------------
def rotating(target, models: tuple, concurrency: int):
    """send(request) that gives request i the i-th model in turn (by the index in its prompt)."""
    senders = [target.sender(m, concurrency) for m in models]

    def one(request: BenchRequest):
        index = int(request.prompt.split(":", 1)[0].split()[-1])
        return senders[index % len(senders)](request)

    return one


def run_mix(target, mix: str, concurrency: int, args) -> dict:
    count = concurrency * args.per_stream
    requests = synthetic_requests(count + 1, args.input_len, args.output_len, seed=concurrency)
    send = rotating(target, MIXES[mix], concurrency)
    send(requests[0])  # warm-up (and the adapter into the server's cache)
    records, wall = run_load(send, requests[1:], concurrency)
    summary = summarize(records, wall)
    return {"tokens_per_s": summary.output_tokens_per_second, "ttft_p50": summary.ttft_ms.p50,
            "ttft_p90": summary.ttft_ms.p90, "errors": summary.errors,
            "avg_tokens": summary.avg_output_tokens, "wall_s": wall, "error_messages": summary.error_messages}


def stream_rate(record) -> float:
    return record.tokens / max(record.ended - record.started, 1e-9) if record.error is None else 0.0


def run_compare(target, args, rounds: int = 2) -> dict:
    """A lone base stream, then base + pirate + french at once (as the Compare tab streams them)."""
    request = BenchRequest(COMPARE_PROMPT, max_tokens=args.output_len, min_tokens=args.output_len)
    lone_send = target.sender(None, 1)
    lone_send(request)
    lone = statistics.median(stream_rate(lone_send(request)) for _ in range(rounds))
    senders = [target.sender(m, 1) for m in COMPARE]
    rates = []
    for _ in range(rounds):
        records, _ = run_load(lambda item: senders[item[0]](item[1]), list(enumerate([request] * len(COMPARE))),
                              len(COMPARE))
        rates.extend(stream_rate(r) for r in records)
    return {"lone": lone, "each_mean": statistics.mean(rates), "each_min": min(rates)}


def run_target(target, args, log=print) -> dict:
    results = {"loads": {}, "compare": None}
    try:
        for mix in MIXES:
            for concurrency in args.concurrency:
                log(f"  {target.name}: {mix} at concurrency {concurrency} ...")
                results["loads"][f"{mix}@{concurrency}"] = run_mix(target, mix, concurrency, args)
        log(f"  {target.name}: Compare-like streams ...")
        results["compare"] = run_compare(target, args)
    finally:
        target.close()
    return results


# ---- servers -------------------------------------------------------------------------------------------
def measure_engine(args, folder: Path, log=print) -> dict:
    from setup.cpu.model import prepare_cpu_model

    model = prepare_cpu_model(log=log)
    with demo_server(folder) as triton:
        log(f"  tritonserver ready on {triton.grpc_url}, log {triton.log_path}")
        return run_target(TritonTarget(triton.grpc_url, model), args, log)


def measure_vllm(args, log=print) -> dict | None:
    if args.no_vllm:
        return None
    if args.vllm_url:
        return run_target(OpenAITarget(args.vllm_url), args, log)
    from benchmarks.peer_vllm import vllm_server
    from setup.cpu.model import prepare_cpu_model
    from setup.paths import cache_dir

    with vllm_server(prepare_cpu_model(log=log), cache_dir() / "logs" / "vllm-peer.log", log=log) as server:
        return run_target(OpenAITarget(server.url), args, log)


# ---- report --------------------------------------------------------------------------------------------
def _num(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(ours, theirs) -> str:
    return "-" if not ours or not theirs else f"{ours / theirs:.2f}x"


def load_table(engine: dict, peer: dict | None, args, top: dict | None = None) -> list[str]:
    """The loads' table; with `top` (benchmarks.ceiling's figures) a `ceiling` row under the base row at its batch:
    plain transformers generate's tokens/s in the engine's column, the engine's base row / it as the ratio."""
    lines = [f"Total output tokens/s and time to first token (ms), {args.input_len}-word prompts, "
             f"{args.output_len} tokens out, greedy",
             f"{'load':<8}{'conc':>5}{'engine tok/s':>14}{'vLLM tok/s':>12}{'ratio':>8}"
             f"{'engine TTFT p50/p90':>22}{'vLLM TTFT p50/p90':>20}"]
    for key, ours in engine["loads"].items():
        mix, concurrency = key.split("@")
        theirs = (peer or {}).get("loads", {}).get(key, {})
        lines.append(f"{mix:<8}{concurrency:>5}{_num(ours['tokens_per_s']):>14}{_num(theirs.get('tokens_per_s')):>12}"
                     f"{_ratio(ours['tokens_per_s'], theirs.get('tokens_per_s')):>8}"
                     f"{_num(ours['ttft_p50'], 0) + ' / ' + _num(ours['ttft_p90'], 0):>22}"
                     f"{_num(theirs.get('ttft_p50'), 0) + ' / ' + _num(theirs.get('ttft_p90'), 0):>20}"
                     + (f"  (errors: engine {ours['errors']}, vLLM {theirs.get('errors', 0)})"
                        if ours["errors"] or theirs.get("errors") else ""))
        if top and key == f"base@{top.get('batch')}":
            lines.append(ceiling_row(top, ours["tokens_per_s"]))
    if top and f"base@{top.get('batch')}" not in engine["loads"]:
        lines.append(ceiling_row(top, None))
    for name, result in (("engine", engine), ("vLLM", peer)):  # why requests failed, over all loads
        messages: dict[str, int] = {}
        for load in (result or {}).get("loads", {}).values():
            for message, count in load.get("error_messages", {}).items():
                messages[message] = messages.get(message, 0) + count
        lines += [f"  {name}: {count} x {message}" for message, count in messages.items()]
    return lines


def compare_table(engine: dict, peer: dict | None) -> list[str]:
    lines = ["Compare-like: base + pirate + french streamed at once vs one lone stream (tokens/s per stream)",
             f"{'target':<22}{'lone':>8}{'each (mean)':>13}{'each (min)':>12}{'mean/lone':>11}"]
    for name, result in (("CPU engine (Triton)", engine), ("vLLM CPU", peer)):
        if result and result.get("compare"):
            c = result["compare"]
            lines.append(f"{name:<22}{_num(c['lone']):>8}{_num(c['each_mean']):>13}{_num(c['each_min']):>12}"
                         f"{c['each_mean'] / max(c['lone'], 1e-9):>10.0%}")
    return lines


def ceiling_row(top: dict, base: float | None) -> str:
    """The ceiling's line of the loads' table (its error instead of a figure when the child failed)."""
    batch = top.get("batch", "-")
    if top.get("error"):
        return f"{'ceiling':<8}{batch:>5}{'-':>14}{'':>12}{'':>8}  (plain transformers generate failed: {top['error']})"
    return (f"{'ceiling':<8}{batch:>5}{_num(top.get('tokens_per_s')):>14}{'-':>12}"
            f"{_ratio(base, top.get('tokens_per_s')):>8}  (plain transformers generate at batch {batch}; "
            f"ratio: engine base / this)")


def goal_checks(engine: dict, peer: dict | None, top: dict | None = None) -> list[tuple[str, float | None, float, str]]:
    """(goal, measured value, the value that meets it, unit) for each goal; the value is None when the run did not
    measure it (a concurrency not asked, no vLLM, no ceiling). Issue #51's goals: base >= 1.2x vLLM at 8 and 32 chats;
    pirate and mixed >= 0.9x the engine's base at each concurrency; base at the ceiling's batch >= plain
    transformers generate at that batch. Kept from before: c8 >= 5x c1, mixed at 8 >= 2x vLLM's pirate at 8,
    Compare streams >= 60% of a lone one, time to first token p50 at 8 <= vLLM's."""
    loads, theirs = engine["loads"], (peer or {}).get("loads", {})

    def get(table, key, field="tokens_per_s"):
        return table.get(key, {}).get(field)

    levels = sorted({int(key.split("@")[1]) for key in loads})
    compare = engine.get("compare") or {}
    checks = [("c8 >= 5x c1 (base)", _div(get(loads, "base@8"), get(loads, "base@1")), 5.0, "x")]
    checks += [(f"base c{n} >= 1.2x vLLM base c{n}", _div(get(loads, f"base@{n}"), get(theirs, f"base@{n}")), 1.2, "x")
               for n in PEER_LEVELS]
    checks += [(f"{mix} c{n} >= 0.9x engine base c{n}", _div(get(loads, f"{mix}@{n}"), get(loads, f"base@{n}")),
                0.9, "x") for mix in ("pirate", "mixed") for n in levels]
    batch = (top or {}).get("batch")
    checks.append((f"base c{batch or '-'} >= transformers batch {batch or '-'}",
                   _div(get(loads, f"base@{batch}"), (top or {}).get("tokens_per_s")), 1.0, "x"))
    checks += [
        ("mixed c8 >= 2x vLLM pirate c8", _div(get(loads, "mixed@8"), get(theirs, "pirate@8")), 2.0, "x"),
        ("Compare streams >= 60% of a lone stream", _div(compare.get("each_mean"), compare.get("lone")), 0.6, ""),
        ("TTFT p50 at c8 <= vLLM's", _div(get(theirs, "base@8", "ttft_p50"), get(loads, "base@8", "ttft_p50")), 1.0,
         "x (vLLM/engine)"),
    ]
    return checks


def goal_lines(engine: dict, peer: dict | None, top: dict | None = None) -> list[str]:
    lines = ["Goals"]
    for goal, value, target, unit in goal_checks(engine, peer, top):
        verdict = "n/a" if value is None else "met" if value >= target else "not met"
        shown = "-" if value is None else f"{value:.2f}{unit}"
        lines.append(f"  {goal:<42} {shown:<20} {verdict}")
    return lines


def _div(a, b):
    return a / b if a and b else None


def cpu_description(cpuinfo: str) -> str:
    """'MODEL; avx2 yes, avx512f no, ...' from /proc/cpuinfo's text (its first processor's model name and flags)."""
    model, flags = "unknown CPU", set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "model name" and model == "unknown CPU":
            model = value.strip() or model
        elif name.strip() == "flags" and not flags:
            flags = set(value.split())
    return f"{model}; " + ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in CPU_FLAGS)


def read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def machine_line(started_load: tuple, ended_load: tuple | None = None, cpuinfo: str | None = None) -> str:
    end = os.getloadavg() if ended_load is None else ended_load
    info = read_cpuinfo() if cpuinfo is None else cpuinfo
    return (f"Machine: {cpu_description(info)}; {os.cpu_count()} cores; load average {started_load[0]:.2f} at start, "
            f"{end[0]:.2f} at end (other processes on the machine share these cores)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--per-stream", type=int, default=3, help="Measured requests per stream (default 3).")
    parser.add_argument("--input-len", type=int, default=32, help="Prompt words, about one token each (default 32).")
    parser.add_argument("--output-len", type=int, default=64, help="Tokens per reply (default 64).")
    peer = parser.add_mutually_exclusive_group()
    peer.add_argument("--no-vllm", action="store_true", help="Measure the CPU engine only.")
    peer.add_argument("--vllm-url", help="Use a running vLLM OpenAI server (http://HOST:PORT/v1) instead of starting one.")
    parser.add_argument("--no-ceiling", action="store_true",
                        help="Skip plain transformers generate at batch N (the largest concurrency).")
    parser.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    args = parser.parse_args(argv)
    started_load = os.getloadavg()
    started = time.monotonic()
    with scratch_folder() as scratch:
        print("CPU engine through Triton ...", flush=True)
        engine = measure_engine(args, scratch)
        if not args.no_vllm:
            print("vLLM's CPU build ...", flush=True)
        peer = measure_vllm(args)
        top = None
        if not args.no_ceiling:  # every server has stopped: the generate has the CPU to itself
            batch = max(args.concurrency)
            print(f"Plain transformers generate at batch {batch} ...", flush=True)
            top = {"batch": batch} | ceiling(batch, args.input_len, args.output_len, args.per_stream)
    lines = ["", machine_line(started_load) + f"; {time.monotonic() - started:.0f} s in all", "",
             *load_table(engine, peer, args, top), "", *compare_table(engine, peer), "",
             *goal_lines(engine, peer, top)]
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({"engine": engine, "vllm": peer, "ceiling": top,
                                         "settings": vars(args) | {"json": str(args.json)}},
                                        indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
