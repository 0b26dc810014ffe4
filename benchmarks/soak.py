"""Load and soak: N concurrent chat sessions through the app's API for a bounded time (loopback only).

    .venv/bin/python -m benchmarks.soak [--sessions 64] [--duration 180] [--tokens 60]
        [--tokens-per-second 50] [--client gradio_client|sse|openai] [--think-time 0.3] [--triton HOST:PORT]
        [--json PATH]

Without --triton it starts its own tritonserver with the pacing model on free loopback ports; the app
runs as its own process so its memory is its own. Each session sends its next message 0.3 s
(--think-time) after the last reply ended, until the time is up. Pass: zero errors and no hung stream (a stream is hung
when nothing new arrives for --stall seconds). Reported: the app's resident memory after warm-up,
at its peak and at the end (goal: growth under 50 MB).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.bench.load import BenchRequest, Progress, run_sessions, synthetic_requests
from app.bench.messages import MSG_BENCH_HUNG
from app.bench.stats import summarize
from app.bench.targets import OpenAISender, word_count
from benchmarks.app_senders import AppApiSender, SseApiSender
from benchmarks.harness import AppProcess, pacing_server, tokenizer_args
from benchmarks.scratch import scratch_folder
from setup.cpu.pacing import PACING_MODEL, PacingSpec

MEMORY_GOAL_MB = 50.0
# A person reads the reply before sending the next message. Without a pause, gradio_client races
# itself: the server closes a session's event stream when its last event completes, and a message
# submitted in that instant is dropped by gradio_client's reader (a CancelledError on the client;
# the app served it). 0.3 s closes that window.
THINK_SECONDS = 0.3
CLIENTS = {"gradio_client": AppApiSender, "sse": SseApiSender, "openai": OpenAISender}


@dataclass
class SoakResult:
    sessions: int
    duration: float
    requests: int
    errors: int
    hung: int
    sessions_finished: int
    tokens_per_second: float
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    e2e_p99_ms: float | None
    rss_start_mb: float
    rss_peak_mb: float
    rss_end_mb: float
    error_messages: dict[str, int] = field(default_factory=dict)

    @property
    def growth_mb(self) -> float:
        return self.rss_end_mb - self.rss_start_mb

    @property
    def passed(self) -> bool:
        return self.errors == 0 and self.hung == 0 and self.sessions_finished == self.sessions

    def as_dict(self) -> dict:
        return {**asdict(self), "growth_mb": self.growth_mb, "passed": self.passed,
                "memory_goal_met": self.growth_mb < MEMORY_GOAL_MB}


class MemorySampler:
    """Samples the app's resident memory every `every` seconds on a daemon thread."""

    def __init__(self, app: AppProcess, every: float = 2.0):
        self.app, self.every, self.peak = app, every, app.rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.app.rss_mb())

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_soak(app: AppProcess, sessions: int, duration: float, tokens: int, client: str = "gradio_client",
             stall: float = 30.0, progress: bool = True, think_time: float = THINK_SECONDS) -> SoakResult:
    """Warm every session once, then keep all of them busy for `duration` seconds."""
    sender = CLIENTS[client](app.url, sessions, timeout=stall, count_tokens=word_count)
    try:
        sender.connect_all()
        warm = synthetic_requests(sessions, 8, 4)
        threads = [threading.Thread(target=sender, args=(i, warm[i])) for i in range(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        time.sleep(1.0)
        rss_start = app.rss_mb()

        def make_request(session: int, turn: int) -> BenchRequest:
            return BenchRequest(f"Session {session}, message {turn}: tell me a story about the sea.", tokens)

        finished = []
        bar = Progress(None, label="soak", duration=duration) if progress else None
        with MemorySampler(app) as memory:
            records, wall = _bounded_sessions(sender, make_request, sessions, duration, stall, bar, finished,
                                              think_time)
        time.sleep(1.0)
        rss_end = app.rss_mb()
    finally:
        sender.close()
    summary = summarize(records, wall)
    hung = sum(1 for r in records if r.error and r.error == MSG_BENCH_HUNG.format(seconds=stall))
    return SoakResult(
        sessions=sessions, duration=wall, requests=summary.requests, errors=summary.errors - hung, hung=hung,
        sessions_finished=len(finished), tokens_per_second=summary.output_tokens_per_second,
        ttft_p50_ms=summary.ttft_ms.p50, ttft_p99_ms=summary.ttft_ms.p99, e2e_p99_ms=summary.e2e_ms.p99,
        rss_start_mb=rss_start, rss_peak_mb=max(memory.peak, rss_end), rss_end_mb=rss_end,
        error_messages=summary.error_messages,
    )


def _bounded_sessions(sender, make_request, sessions, duration, stall, bar, finished, think_time):
    """run_sessions on a helper thread, so a session stuck beyond duration + stall is counted, not waited for."""
    out: dict = {}

    def runner():
        out["records"], out["wall"] = run_sessions(sender, make_request, sessions, duration, bar, think_time)
        finished.extend(range(sessions))

    thread = threading.Thread(target=runner, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(timeout=duration + stall + 30)
    if thread.is_alive():  # some session never came back: report what we have
        return [], time.monotonic() - started
    return out["records"], out["wall"]


def format_result(result: SoakResult) -> str:
    lines = [
        f"{'Sessions':<24}{result.sessions} ({result.sessions_finished} finished)",
        f"{'Duration':<24}{result.duration:.1f} s",
        f"{'Replies':<24}{result.requests}",
        f"{'Errors':<24}{result.errors}",
        f"{'Hung streams':<24}{result.hung}",
        f"{'Output tokens/s':<24}{result.tokens_per_second:.1f}",
        f"{'TTFT p50 / p99':<24}{_ms(result.ttft_p50_ms)} / {_ms(result.ttft_p99_ms)} ms",
        f"{'End-to-end p99':<24}{_ms(result.e2e_p99_ms)} ms",
        f"{'App memory':<24}{result.rss_start_mb:.1f} MB after warm-up, peak {result.rss_peak_mb:.1f} MB, "
        f"end {result.rss_end_mb:.1f} MB",
        f"{'Memory growth':<24}{result.growth_mb:+.1f} MB (goal under {MEMORY_GOAL_MB:.0f} MB: "
        f"{'met' if result.growth_mb < MEMORY_GOAL_MB else 'MISSED'})",
        f"{'Result':<24}{'PASS' if result.passed else 'FAIL'}",
    ]
    lines += [f"  {count} x {message}" for message, count in result.error_messages.items()]
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    from setup.cli_types import OneLineErrorParser, positive_int

    parser = OneLineErrorParser(prog="python -m benchmarks.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=positive_int, default=64, help="Concurrent chat sessions (default 64).")
    parser.add_argument("--duration", type=positive_int, default=180, help="Seconds (default 180).")
    parser.add_argument("--tokens", type=positive_int, default=60, help="Tokens per reply (default 60).")
    parser.add_argument("--tokens-per-second", type=float, default=50.0, help="Pacing rate per chat (default 50).")
    parser.add_argument("--client", choices=list(CLIENTS), default="gradio_client", help="API client (default gradio_client).")
    parser.add_argument("--think-time", type=float, default=THINK_SECONDS,
                        help=f"Seconds between a reply and the session's next message (default {THINK_SECONDS}).")
    parser.add_argument("--stall", type=positive_int, default=30, help="Seconds without news that make a stream hung.")
    parser.add_argument("--triton", help="Use this Triton gRPC HOST:PORT (it must serve the pacing model).")
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON here.")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        folder = stack.enter_context(scratch_folder())  # the run's files and TMPDIR, removed at the end
        url = args.triton or stack.enter_context(
            pacing_server(folder, PacingSpec(tokens_per_second=args.tokens_per_second))).grpc_url
        app = stack.enter_context(AppProcess(url, PACING_MODEL, folder / "app.log", extra_args=tokenizer_args()))
        result = run_soak(app, args.sessions, args.duration, args.tokens, args.client, args.stall,
                          think_time=args.think_time)
    print(f"Soak: {args.sessions} sessions through the app's API ({args.client}) for {args.duration} s, "
          f"{args.tokens} tokens per reply at {args.tokens_per_second:g} tokens/s")
    print(format_result(result))
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
