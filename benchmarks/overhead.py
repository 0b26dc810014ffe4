"""What the app costs: the same chats straight to Triton and through the app's APIs, side by side in one run.

    .venv/bin/python -m benchmarks.overhead [--concurrency 32,128,256] [--tokens 100] [--tokens-per-second 100]
        [--rates 50,100,200] [--repeats 3] [--clients openai,sse,gradio_client] [--triton HOST:PORT] [--json PATH]

Uses the pacing model (fixed-rate words, no compute), so any difference is the app's cost. Without --triton it
starts its own tritonserver with the pacing model (max_batch_size: the highest level, as a GPU server batching that
many) on free loopback ports, and the app as its own process (`python -m app --triton ... --model pacing`, its
default --concurrency). Each level runs --repeats rounds; a round is one batch of N chats started together per path,
direct first, so the paths' batches run side by side under the same machine load and each round gives a ratio.
Paths: direct tritonclient gRPC; the app's OpenAI-compatible API (`openai`); Gradio's HTTP API (`sse`, the
`generate` endpoint's server-sent events, as the chat tab's queue streams them); gradio_client (polls every 50 ms).

--rates runs the whole set once per tokens/s-per-chat rate (a pacing server and an app each), a sweep of the
offered tokens/s (chats x rate) that reports where each path falls below 95% of direct.

"app CPU s" is the app process's CPU time for the path's batches, also per 1,000 tokens delivered (it moves less
with the machine than the ratio); "load CPU s" that of this process (the load generator and its clients).

Goals (issue #51, at 100 tokens/s per chat): the OpenAI-compatible API >= 95% of direct tokens/s at 32 and 128
chats with no errors; Gradio's API (the chat tab's path) >= 90% at 32 chats.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from contextlib import ExitStack
from pathlib import Path

from app.bench.load import run_load, session_pool, synthetic_requests
from app.bench.stats import RequestRecord, summarize
from app.bench.targets import OpenAISender, TritonSender, word_count
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from benchmarks.app_senders import AppApiSender, SseApiSender
from benchmarks.harness import AppProcess, pacing_server, tokenizer_args
from benchmarks.overhead_report import DIRECT, falls_below, format_report, goals, ratios
from benchmarks.scratch import scratch_folder
from setup.cpu.pacing import PACING_MODEL, PacingSpec

CLIENTS = {"openai": OpenAISender, "sse": SseApiSender, "gradio_client": AppApiSender}


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class PathRun:
    """One path's batches at one level: records, wall times, CPU."""

    def __init__(self, path: str, send, app: AppProcess | None):
        self.path, self.send, self.app = path, send, app
        self.records: list[RequestRecord] = []
        self.walls: list[float] = []
        self.batch_rates: list[float] = []
        self.app_cpu = 0.0 if app else None
        self.client_cpu = 0.0

    def batch(self, requests, concurrency: int) -> None:
        cpu_before, own_before = (self.app.cpu_seconds() if self.app else 0.0), _own_cpu()
        records, wall = run_load(self.send, requests, concurrency)
        if self.app:
            self.app_cpu += self.app.cpu_seconds() - cpu_before
        self.client_cpu += _own_cpu() - own_before
        self.records += records
        self.walls.append(wall)
        self.batch_rates.append(sum(r.tokens for r in records if r.error is None) / wall if wall else 0.0)

    def row(self, rate: float, concurrency: int) -> dict:
        summary = summarize(self.records, sum(self.walls))
        tokens = sum(r.tokens for r in self.records if r.error is None)
        return {
            "rate": rate, "concurrency": concurrency, "path": self.path, "requests": summary.requests,
            "errors": summary.errors, "ttft_p50_ms": summary.ttft_ms.p50, "ttft_p90_ms": summary.ttft_ms.p90,
            "itl_p50_ms": summary.itl_ms.p50, "tokens_per_second": summary.output_tokens_per_second,
            "batch_tokens_per_second": self.batch_rates, "batch_seconds": sorted(self.walls)[len(self.walls) // 2],
            "app_cpu_seconds": self.app_cpu, "client_cpu_seconds": self.client_cpu,
            "app_cpu_per_1k_tokens": None if self.app_cpu is None or not tokens else self.app_cpu * 1000 / tokens,
            "error_messages": summary.error_messages,
        }


def measure_level(paths: dict, app: AppProcess, rate: float, concurrency: int, tokens: int, repeats: int,
                  log=print) -> list[dict]:
    """`repeats` rounds of one batch of `concurrency` chats per path, the paths one after another in each round."""
    runs = [PathRun(name, send if name == DIRECT else session_pool(send, concurrency), None if name == DIRECT else app)
            for name, send in paths.items()]
    for batch in range(repeats):
        requests = synthetic_requests(concurrency, 16, tokens, seed=batch)
        for run in runs:
            log(f"{rate:g} tokens/s, {concurrency} chats, round {batch + 1}: {run.path}", file=sys.stderr)
            run.batch(requests, concurrency)
    return [run.row(rate, concurrency) for run in runs]


def run_overhead(triton_url: str, app: AppProcess, levels: list[int], tokens: int, repeats: int,
                 clients: list[str], rate: float = 0.0, log=print) -> dict:
    """Direct and through-the-app figures at each level for one pacing rate; ratios, limits and goals."""
    rows = measure_rate(triton_url, app, levels, tokens, repeats, clients, rate, log)
    return summarize_rows(rows, tokens, repeats)


def measure_rate(triton_url: str, app: AppProcess, levels: list[int], tokens: int, repeats: int,
                 clients: list[str], rate: float, log=print) -> list[dict]:
    """The rows of every level at one pacing rate (the server's)."""
    direct = TritonSender(TritonChatClient(triton_url, model=PACING_MODEL), SamplingParams(), count_tokens=word_count)
    senders = {f"app ({name})": CLIENTS[name](app.url, max(levels), count_tokens=word_count) for name in clients}
    try:
        warm = synthetic_requests(max(levels), 4, 4)
        run_load(direct, warm[:2], 2)
        for sender in senders.values():
            sender.connect_all()
            run_load(session_pool(sender, max(levels)), warm, max(levels))  # every session once
        rows = []
        for level in levels:
            rows += measure_level({DIRECT: direct, **senders}, app, rate, level, tokens, repeats, log)
    finally:
        for sender in senders.values():
            sender.close()
    return rows


def summarize_rows(rows: list[dict], tokens: int, repeats: int) -> dict:
    found = ratios(rows)
    return {"tokens_per_chat": tokens, "repeats": repeats, "rows": rows, "ratios": found,
            "falls_below": falls_below(found), "goals": goals(found)}


def _levels(text: str) -> list[int]:
    try:
        levels = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of whole numbers") from None
    if not levels or levels[0] < 1:
        raise argparse.ArgumentTypeError("concurrency levels must be at least 1")
    return levels


def _rates(text: str) -> list[float]:
    try:
        rates = sorted({float(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of numbers") from None
    if not rates or rates[0] <= 0:
        raise argparse.ArgumentTypeError("rates must be above 0 tokens/s")
    return rates


def _clients(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in CLIENTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"clients are {', '.join(CLIENTS)}; got '{text}'")
    return names


def build_parser() -> argparse.ArgumentParser:
    from setup.cli_types import OneLineErrorParser, positive_int

    parser = OneLineErrorParser(prog="python -m benchmarks.overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=_levels, default=[32, 128, 256], help="Levels (default 32,128,256).")
    parser.add_argument("--tokens", type=positive_int, default=100, help="Tokens per chat (default 100).")
    parser.add_argument("--tokens-per-second", type=float, default=100.0, help="Pacing rate per chat (default 100).")
    parser.add_argument("--rates", type=_rates, help="A sweep: run everything at each of these pacing rates "
                        "(tokens/s per chat, e.g. 50,100,200); replaces --tokens-per-second.")
    parser.add_argument("--repeats", type=positive_int, default=3, help="Rounds per level (default 3).")
    parser.add_argument("--clients", type=_clients, default=["openai", "sse"],
                        help=f"Paths through the app, of {','.join(CLIENTS)} (default openai,sse).")
    parser.add_argument("--triton", help="Use this Triton gRPC HOST:PORT (it must serve the pacing model; "
                        "one rate: its own, as --tokens-per-second says).")
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON here.")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    rates = args.rates or [args.tokens_per_second]
    if args.triton and len(rates) > 1:
        parser.error("--rates starts a pacing server per rate; leave out --triton")
    rows = []
    with scratch_folder() as folder:  # the run's files and TMPDIR, removed at the end
        for rate in rates:
            with ExitStack() as stack:
                url = args.triton
                if url is None:
                    spec = PacingSpec(tokens_per_second=rate, max_batch_size=max(max(args.concurrency),
                                                                                 PacingSpec.max_batch_size))
                    url = stack.enter_context(pacing_server(folder / f"rate-{rate:g}", spec)).grpc_url
                app = stack.enter_context(AppProcess(url, PACING_MODEL, folder / f"app-{rate:g}.log",
                                                     extra_args=tokenizer_args()))
                rows += measure_rate(url, app, args.concurrency, args.tokens, args.repeats, args.clients, rate)
    result = summarize_rows(rows, args.tokens, args.repeats)
    print(f"App overhead: {args.tokens} tokens per chat at {', '.join(f'{r:g}' for r in rates)} tokens/s, "
          f"{args.repeats} rounds per level, paths side by side in each round (ms unless noted)")
    print(format_report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
