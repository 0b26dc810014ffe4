"""What the app costs: the same chats straight to Triton and through the app's API, in one run.

    .venv/bin/python -m benchmarks.overhead [--concurrency 1,8,32] [--tokens 100] [--tokens-per-second 50]
        [--repeats 3] [--clients sse,gradio_client] [--triton HOST:PORT] [--json PATH]

Uses the pacing model (fixed-rate words, no compute), so any difference is the app's cost. Without
--triton it starts its own tritonserver with the pacing model on free loopback ports. The app runs as
its own process (`python -m app --triton ... --model pacing`). Each concurrency level runs --repeats
batches of N chats started together. Through the app, requests go over Gradio's HTTP API (`sse`, read
as each event arrives) and with gradio_client (whose reader polls every 50 ms, so it adds its own delay).

"app CPU s" is the app process's CPU time for the level's batches; "load CPU s" that of this process
(the load generator and its clients).

Goals: at 32 concurrent chats the app delivers >= 95% of the direct tokens/s, and a batch of 32 chats
finishes within 1.2x the time of one chat.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from contextlib import ExitStack
from pathlib import Path

from app.bench.load import run_load, session_pool, synthetic_requests
from app.bench.stats import summarize
from app.bench.targets import OpenAISender, TritonSender, word_count
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from benchmarks.app_senders import AppApiSender, SseApiSender
from benchmarks.harness import AppProcess, pacing_server, tokenizer_args
from benchmarks.scratch import scratch_folder
from setup.cpu.pacing import PACING_MODEL, PacingSpec

TOKENS_GOAL = 0.95
BATCH_GOAL = 1.2
CLIENTS = {"openai": OpenAISender, "sse": SseApiSender, "gradio_client": AppApiSender}


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(send, concurrency: int, tokens: int, repeats: int, app: AppProcess | None = None) -> dict:
    """`repeats` batches of `concurrency` chats started together; figures over all of them."""
    records, walls = [], []
    cpu_before = app.cpu_seconds() if app else 0.0
    own_before = _own_cpu()
    for batch in range(repeats):
        requests = synthetic_requests(concurrency, 16, tokens, seed=batch)
        batch_records, wall = run_load(send, requests, concurrency)
        records += batch_records
        walls.append(wall)
    summary = summarize(records, sum(walls))
    return {
        "concurrency": concurrency, "requests": summary.requests, "errors": summary.errors,
        "ttft_p50_ms": summary.ttft_ms.p50, "ttft_p90_ms": summary.ttft_ms.p90, "itl_p50_ms": summary.itl_ms.p50,
        "tokens_per_second": summary.output_tokens_per_second, "batch_seconds": sorted(walls)[len(walls) // 2],
        "app_cpu_seconds": (app.cpu_seconds() - cpu_before) if app else None,
        "client_cpu_seconds": _own_cpu() - own_before,
        "error_messages": summary.error_messages,
    }


def run_overhead(triton_url: str, app: AppProcess, levels: list[int], tokens: int, repeats: int,
                 clients: list[str], log=print) -> dict:
    """Direct and through-the-app figures at each level, ratios, and the goals' verdicts."""
    direct = TritonSender(TritonChatClient(triton_url, model=PACING_MODEL), SamplingParams(), count_tokens=word_count)
    senders = {name: CLIENTS[name](app.url, max(levels), count_tokens=word_count) for name in clients}
    try:
        warm = synthetic_requests(max(levels), 4, 4)
        run_load(direct, warm[:2], 2)
        for sender in senders.values():
            sender.connect_all()
            run_load(session_pool(sender, max(levels)), warm, max(levels))  # every session once
        rows = []
        for level in levels:
            log(f"concurrency {level}: direct", file=sys.stderr)
            rows.append({"path": "direct", **measure(direct, level, tokens, repeats)})
            for name, sender in senders.items():
                log(f"concurrency {level}: app ({name})", file=sys.stderr)
                rows.append({"path": f"app ({name})", **measure(session_pool(sender, level), level, tokens,
                                                                repeats, app)})
    finally:
        for sender in senders.values():
            sender.close()
    return {"tokens_per_chat": tokens, "repeats": repeats, "rows": rows, **verdicts(rows, levels)}


def verdicts(rows: list[dict], levels: list[int]) -> dict:
    """Ratios app/direct per level and client, and the two goals at the highest level."""
    by = {(r["path"], r["concurrency"]): r for r in rows}
    ratios = []
    for (path, level), row in by.items():
        base = by.get(("direct", level))
        if path == "direct" or base is None:
            continue
        one = by.get((path, min(levels)))
        ratios.append({
            "path": path, "concurrency": level,
            "ttft_ratio": _ratio(row["ttft_p50_ms"], base["ttft_p50_ms"]),
            "ttft_added_ms": None if row["ttft_p50_ms"] is None or base["ttft_p50_ms"] is None
            else row["ttft_p50_ms"] - base["ttft_p50_ms"],
            "tokens_ratio": _ratio(row["tokens_per_second"], base["tokens_per_second"]),
            "batch_vs_one": _ratio(row["batch_seconds"], one["batch_seconds"]) if one else None,
        })
    top = max(levels)
    goals = {}
    for r in (r for r in ratios if r["concurrency"] == top):
        goals[r["path"]] = {
            "tokens_ratio_ok": r["tokens_ratio"] is not None and r["tokens_ratio"] >= TOKENS_GOAL,
            "batch_vs_one_ok": r["batch_vs_one"] is not None and r["batch_vs_one"] <= BATCH_GOAL,
        }
    return {"ratios": ratios, "goals": goals}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _f(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_report(result: dict) -> str:
    lines = [f"{'conc':>4}  {'path':<20}{'TTFT p50':>10}{'TTFT p90':>10}{'ITL p50':>9}{'tokens/s':>10}"
             f"{'batch s':>9}{'app CPU s':>10}{'load CPU s':>11}{'errors':>7}"]
    for r in result["rows"]:
        lines.append(f"{r['concurrency']:>4}  {r['path']:<20}{_f(r['ttft_p50_ms'], '.1f'):>10}"
                     f"{_f(r['ttft_p90_ms'], '.1f'):>10}{_f(r['itl_p50_ms'], '.1f'):>9}"
                     f"{r['tokens_per_second']:>10.1f}{r['batch_seconds']:>9.2f}"
                     f"{_f(r['app_cpu_seconds'], '.2f'):>10}{r['client_cpu_seconds']:>11.2f}{r['errors']:>7}")
    lines += ["", f"{'conc':>4}  {'app vs direct':<20}{'TTFT x':>10}{'+TTFT ms':>10}{'tokens/s':>10}{'batch/one':>10}"]
    for r in result["ratios"]:
        lines.append(f"{r['concurrency']:>4}  {r['path']:<20}{_f(r['ttft_ratio'], '.2f'):>10}"
                     f"{_f(r['ttft_added_ms'], '.1f'):>10}{_f(r['tokens_ratio'], '.3f'):>10}"
                     f"{_f(r['batch_vs_one'], '.3f'):>10}")
    lines.append("")
    for path, goal in result["goals"].items():
        lines.append(f"{path}: tokens/s >= {TOKENS_GOAL:.0%} of direct: {'met' if goal['tokens_ratio_ok'] else 'MISSED'}; "
                     f"batch within {BATCH_GOAL}x of one chat: {'met' if goal['batch_vs_one_ok'] else 'MISSED'}")
    return "\n".join(lines)


def _levels(text: str) -> list[int]:
    try:
        levels = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of whole numbers") from None
    if not levels or levels[0] < 1:
        raise argparse.ArgumentTypeError("concurrency levels must be at least 1")
    return levels


def _clients(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in CLIENTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"clients are {', '.join(CLIENTS)}; got '{text}'")
    return names


def main(argv: list[str] | None = None) -> int:
    from setup.cli_types import OneLineErrorParser, positive_int

    parser = OneLineErrorParser(prog="python -m benchmarks.overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=_levels, default=[1, 8, 32], help="Levels (default 1,8,32).")
    parser.add_argument("--tokens", type=positive_int, default=100, help="Tokens per chat (default 100).")
    parser.add_argument("--tokens-per-second", type=float, default=50.0, help="Pacing rate per chat (default 50).")
    parser.add_argument("--repeats", type=positive_int, default=3, help="Batches per level (default 3).")
    parser.add_argument("--clients", type=_clients, default=list(CLIENTS), help="sse,gradio_client (default both).")
    parser.add_argument("--triton", help="Use this Triton gRPC HOST:PORT (it must serve the pacing model).")
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON here.")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        folder = stack.enter_context(scratch_folder())  # the run's files and TMPDIR, removed at the end
        url = args.triton
        if url is None:
            url = stack.enter_context(pacing_server(folder, PacingSpec(tokens_per_second=args.tokens_per_second))).grpc_url
        app = stack.enter_context(AppProcess(url, PACING_MODEL, folder / "app.log", extra_args=tokenizer_args()))
        result = run_overhead(url, app, args.concurrency, args.tokens, args.repeats, args.clients)
    print(f"App overhead: {args.tokens} tokens per chat at {args.tokens_per_second:g} tokens/s, "
          f"{args.repeats} batches per level (ms unless noted)")
    print(format_report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
