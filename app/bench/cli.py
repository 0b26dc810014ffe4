"""`python -m app bench`: drive a Triton deployment and print the backend benchmark tools' figures.

    python -m app bench --triton 127.0.0.1:8001 [--model tensorrt_llm_bls] [--concurrency 8]
        [--request-rate R] [--num-requests 32] [--input-len 64 --output-len 64 | --dataset FILE]
        [--adapter NAME] [--image FILE] [--json [PATH]]
    python -m app bench --openai http://127.0.0.1:7860/v1 ...   the same load through the app's
        OpenAI-compatible API (or any OpenAI-compatible server): what the app's users see

Constant concurrency by default; with --request-rate, Poisson arrivals capped at --concurrency.
Prints requests/s, output tokens/s, time to first token, inter-token latency (gaps between
streamed chunks) and end-to-end latency (avg, p50, p90, p99), and errors. A progress bar runs on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from app.bench import hooks as extra
from app.bench.hooks import ExtraHook
from app.bench.load import DatasetError, Progress, load_dataset, run_load, session_pool, synthetic_requests
from app.bench.messages import (
    MSG_BENCH_IMAGE_MISSING,
    MSG_BENCH_INPUT_LEN_WITH_DATASET,
    MSG_BENCH_JSON_DIR,
    MSG_BENCH_MODEL_NOT_READY,
    MSG_BENCH_NO_MODELS,
    MSG_BENCH_NOT_OPENAI,
    MSG_BENCH_UNREACHABLE,
    MSG_BENCH_UNREACHABLE_API,
)
from app.bench.stats import BenchSummary, format_summary, summarize
from app.bench.targets import OpenAISender, TritonSender, openai_root, word_count
from app.core.constants import DEFAULT_MODEL, SUPPORTED_MODELS
from app.core.errors import ChatError
from app.core.sampling import SamplingParams
from app.deployments.base import check_adapter_name
from app.triton.client import TritonChatClient
from setup.cli_types import (
    OneLineErrorParser,
    host_port,
    http_url,
    non_negative_int,
    positive_float,
    positive_int,
)

EXTRA_KINDS = ("adapter", "image")


def build_parser() -> argparse.ArgumentParser:

    parser = OneLineErrorParser(prog="python -m app bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--triton", type=host_port, metavar="HOST:GRPC_PORT", help="Triton gRPC address.")
    target.add_argument("--openai", type=http_url, metavar="URL",
                        help="An OpenAI-compatible API instead, e.g. the app's http://127.0.0.1:7860/v1 "
                             "(--adapter is sent as the model name, --image inline).")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"Model to drive: {', '.join(SUPPORTED_MODELS)}, or any decoupled text model "
                             f"such as pacing (default {DEFAULT_MODEL}).")
    parser.add_argument("--concurrency", type=positive_int, default=8, help="Requests in flight at most (default 8).")
    parser.add_argument("--request-rate", type=positive_float, default=None,
                        help="Poisson arrivals at this many requests/s (default: back to back).")
    parser.add_argument("--num-requests", type=positive_int, default=32, help="Requests measured (default 32).")
    parser.add_argument("--warmup", type=non_negative_int, default=1, metavar="N",
                        help="Unmeasured requests sent one by one first (default 1).")
    parser.add_argument("--input-len", type=positive_int, default=None,
                        help="Synthetic prompt length in words, about one token each (default 64).")
    parser.add_argument("--output-len", type=positive_int, default=64,
                        help="Tokens per reply; synthetic requests ask for exactly this many (default 64).")
    parser.add_argument("--dataset", type=Path, help="JSON or JSON-lines prompts (strings or {prompt|text|input, "
                        "instruction?, output_len?}); repeated to --num-requests.")
    parser.add_argument("--adapter", help="LoRA adapter name to send with every request.")
    parser.add_argument("--image", type=Path, help="Image file to send with every request.")
    parser.add_argument("--seed", type=int, default=0, help="Seed for prompts and arrivals (default 0).")
    parser.add_argument("--timeout", type=positive_float, default=60.0,
                        help="Seconds without a streamed chunk before a request counts as failed (default 60).")
    parser.add_argument("--json", nargs="?", const="-", metavar="PATH",
                        help="Also write the figures as JSON to PATH (without PATH: JSON on stdout, no table).")
    parser.add_argument("--no-progress", action="store_true", help="No progress bar on stderr.")
    return parser


def _read_image(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(MSG_BENCH_IMAGE_MISSING.format(path=path) if isinstance(exc, FileNotFoundError)
                         else f"Cannot read {path}: {exc.strerror or exc}.") from None


def _hooks(args: argparse.Namespace, available: Mapping[str, ExtraHook] | None = None) -> list:
    """The request hooks for --adapter/--image (from app.bench.hooks unless `available` is given)."""
    wanted = {kind: getattr(args, kind) for kind in EXTRA_KINDS if getattr(args, kind) is not None}
    if not wanted:
        return []
    available = extra.default_hooks() if available is None else available
    hooks = []
    for kind, value in wanted.items():
        if kind == "image" and not Path(value).is_file():
            raise ValueError(MSG_BENCH_IMAGE_MISSING.format(path=value))
        hooks.append(partial(available[kind], str(value)))
    return hooks


def run_benchmark(client: TritonChatClient, requests: list, concurrency: int, request_rate: float | None = None,
                  hooks: list = (), warmup: int = 0, seed: int = 0, progress: bool = True,
                  label: str = "") -> BenchSummary:
    """Send requests[:warmup] one by one unmeasured, then the rest under load; summarize them."""
    info = client.model_info(refresh=True)
    count = word_count if "tokens_per_second" in info.parameters else None  # pacing model: one word per token
    send = TritonSender(client, SamplingParams(), hooks=hooks, count_tokens=count)
    for request in requests[:warmup]:
        send(request)
    measured = requests[warmup:]
    bar = Progress(len(measured)) if progress else None
    records, wall = run_load(send, measured, concurrency, request_rate, seed=seed, progress=bar)
    settings = {"triton": client.url, "model": client.model, "concurrency": concurrency,
                "request_rate": request_rate, "num_requests": len(measured)}
    return summarize(records, wall, label=label, settings=settings)


def run_openai_benchmark(url: str, requests: list, concurrency: int, request_rate: float | None = None,
                         model: str = "", image: bytes | None = None, warmup: int = 0, seed: int = 0,
                         progress: bool = True, label: str = "", timeout: float = 60.0) -> BenchSummary:
    """`run_benchmark` through an OpenAI-compatible API: `model` (an adapter's name, or the base model)
    and `image` go with every request."""
    sender = OpenAISender(url, concurrency, SamplingParams(), timeout=timeout, model=model, image=image)
    try:
        send = session_pool(sender, concurrency)
        for request in requests[:warmup]:
            send(request)
        measured = requests[warmup:]
        bar = Progress(len(measured)) if progress else None
        records, wall = run_load(send, measured, concurrency, request_rate, seed=seed, progress=bar)
    finally:
        sender.close()
    settings = {"openai": url, "model": model, "concurrency": concurrency, "request_rate": request_rate,
                "num_requests": len(measured)}
    return summarize(records, wall, label=label, settings=settings)


def openai_models(url: str) -> list[str]:
    """The model ids an OpenAI-compatible server lists; ValueError with a one-line message when it cannot."""
    import httpx

    address = openai_root(url) + "/v1/models"
    try:
        reply = httpx.get(address, timeout=10)
        reply.raise_for_status()
        return [entry["id"] for entry in reply.json()["data"]]
    except httpx.HTTPError as exc:
        raise ValueError(MSG_BENCH_UNREACHABLE_API.format(url=address, detail=exc)) from None
    except (ValueError, KeyError, TypeError):
        raise ValueError(MSG_BENCH_NOT_OPENAI.format(url=address)) from None


def check_ready(client: TritonChatClient) -> None:
    """ValueError with a one-line message unless the server is up and the model ready."""
    status = client.status()
    if not status.live:
        raise ValueError(MSG_BENCH_UNREACHABLE.format(url=client.url, detail=status.detail or "not live"))
    if not status.model_ready:
        raise ValueError(MSG_BENCH_MODEL_NOT_READY.format(model=client.model, url=client.url))


def _straight_to_triton(args: argparse.Namespace, requests: list, mode: str) -> BenchSummary:
    hooks = _hooks(args)
    client = TritonChatClient(args.triton, model=args.model, stall_timeout=args.timeout)
    check_ready(client)
    for hook in hooks:  # a value the deployment cannot take is one message now, not one per request
        hook(requests[0].prompt, client.model_info())
    label = (f"Benchmark: model {args.model} at {args.triton}, {mode}concurrency {args.concurrency}, "
             f"{args.num_requests} requests")
    return run_benchmark(client, requests, args.concurrency, args.request_rate, hooks, warmup=args.warmup,
                         seed=args.seed, progress=not args.no_progress, label=label)


def _through_openai(args: argparse.Namespace, requests: list, mode: str) -> BenchSummary:
    models = openai_models(args.openai)
    if not models:
        raise ValueError(MSG_BENCH_NO_MODELS.format(url=args.openai))
    model = args.adapter or (args.model if args.model in models else models[0])
    if model != models[0]:  # not the server's base model: one of the adapters it lists after it
        check_adapter_name(model, models[1:])
    image = _read_image(args.image) if args.image is not None else None
    label = (f"Benchmark: model {model} through {args.openai}, {mode}concurrency {args.concurrency}, "
             f"{args.num_requests} requests")
    return run_openai_benchmark(args.openai, requests, args.concurrency, args.request_rate, model, image,
                                warmup=args.warmup, seed=args.seed, progress=not args.no_progress, label=label,
                                timeout=args.timeout)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    problem = extra.check_values(args)
    if problem:
        print(f"python -m app bench: error: {problem}", file=sys.stderr)
        return 2
    try:
        if args.dataset is not None and args.input_len is not None:
            raise ValueError(MSG_BENCH_INPUT_LEN_WITH_DATASET)
        if args.json not in (None, "-") and not Path(args.json).resolve().parent.is_dir():
            raise ValueError(MSG_BENCH_JSON_DIR.format(path=args.json))
        if args.dataset is not None:
            requests = load_dataset(args.dataset, args.num_requests + args.warmup, args.output_len)
        else:
            requests = synthetic_requests(args.num_requests + args.warmup, args.input_len or 64, args.output_len,
                                          seed=args.seed)
        mode = f"Poisson {args.request_rate:g} req/s, " if args.request_rate else ""
        summary = (_through_openai if args.openai else _straight_to_triton)(args, requests, mode)
    except (ValueError, DatasetError, ChatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    if args.json != "-":
        print(format_summary(summary))
    if args.json:
        text = json.dumps(summary.as_dict(), indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
            print(f"Wrote {args.json}")
    return 0 if summary.completed else 1

