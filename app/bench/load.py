"""Benchmark load: the requests to send (synthetic or from a dataset) and the drivers that send them.

Two drivers: `run_load` sends a fixed list at constant concurrency or with Poisson arrivals (as the
backend's benchmark_core_model does), `run_sessions` keeps N chat sessions busy for a fixed time
(the soak). Both call a `send(request) -> RequestRecord` from app.bench.targets on worker threads.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from app.bench.messages import MSG_BENCH_DATASET_EMPTY, MSG_BENCH_DATASET_ITEM, MSG_BENCH_DATASET_UNREADABLE
from app.bench.stats import RequestRecord

FILLER = ("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "while", "river", "flows", "past",
          "green", "hills", "and", "old", "stone", "bridges", "under", "bright", "summer", "sky")
PROMPT_KEYS = ("prompt", "text", "input", "question")


@dataclass(frozen=True)
class BenchRequest:
    """One request: the prompt text, the reply budget, and a minimum reply length (0 = none)."""

    prompt: str
    max_tokens: int
    min_tokens: int = 0


Sender = Callable[[BenchRequest], RequestRecord]


class DatasetError(ValueError):
    """A --dataset file cannot be used; the message says why."""


def synthetic_requests(count: int, input_len: int, output_len: int, seed: int = 0) -> list[BenchRequest]:
    """`count` distinct prompts of about `input_len` words (~1 token each) asking for exactly `output_len` tokens."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        words = [f"Request {index}:"] + [rng.choice(FILLER) for _ in range(max(input_len - 2, 1))]
        out.append(BenchRequest(" ".join(words), max_tokens=output_len, min_tokens=output_len))
    return out


def _item_prompt(item: object) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        text = next((item[k] for k in PROMPT_KEYS if isinstance(item.get(k), str) and item[k].strip()), None)
        if text is not None and isinstance(item.get("instruction"), str) and item["instruction"].strip():
            return f"{item['instruction'].strip()}\n\n{text}"
        return text
    return None


def load_dataset(path: Path, count: int, output_len: int) -> list[BenchRequest]:
    """Requests from a JSON list or JSON-lines file of strings or objects with a prompt/text/input field
    (plus optional instruction and output_len); the list is repeated to reach `count`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(MSG_BENCH_DATASET_UNREADABLE.format(path=path, reason=getattr(exc, "strerror", None) or exc)) from None
    try:
        items = json.loads(text)
        if isinstance(items, dict):
            items = items.get("data") or items.get("samples") or [items]
    except json.JSONDecodeError:
        try:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise DatasetError(MSG_BENCH_DATASET_UNREADABLE.format(path=path, reason=f"not JSON or JSON lines: {exc}")) from None
    if not isinstance(items, list) or not items:
        raise DatasetError(MSG_BENCH_DATASET_EMPTY.format(path=path))
    requests = []
    for number, item in enumerate(items, 1):
        prompt = _item_prompt(item)
        if not prompt or not prompt.strip():
            raise DatasetError(MSG_BENCH_DATASET_ITEM.format(path=path, number=number, keys=", ".join(PROMPT_KEYS)))
        length = item.get("output_len") if isinstance(item, dict) else None
        budget = length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else output_len
        requests.append(BenchRequest(prompt, max_tokens=budget))
    return [requests[i % len(requests)] for i in range(count)]


class Progress:
    """A one-line progress bar on stderr (redrawn in place on a terminal, a few lines otherwise)."""

    def __init__(self, total: int | None, label: str = "bench", stream: TextIO | None = None,
                 duration: float | None = None):
        self.total, self.label, self.duration = total, label, duration
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()
        self.done = self.errors = 0
        self._shown = -1.0
        self._drawn_at = 0.0
        self._lock = threading.Lock()

    def _fraction(self) -> float:
        if self.total:
            return min(self.done / self.total, 1.0)
        if self.duration:
            return min((time.monotonic() - self.started) / self.duration, 1.0)
        return 0.0

    def update(self, record: RequestRecord) -> None:
        with self._lock:
            self.done += 1
            self.errors += record.error is not None
            self._draw()

    def _draw(self, final: bool = False) -> None:
        fraction, now = self._fraction(), time.monotonic()
        step = 0.02 if self.tty else 0.25
        if not final and fraction - self._shown < step and not (self.tty and now - self._drawn_at > 0.5):
            return
        self._shown, self._drawn_at = fraction, now
        bar = "#" * int(fraction * 30)
        total = f"/{self.total}" if self.total else ""
        line = (f"{self.label} [{bar:<30}] {self.done}{total} requests, {self.errors} errors, "
                f"{time.monotonic() - self.started:.1f} s")
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        if final and self.tty:
            self.stream.write("\n")
        self.stream.flush()

    def close(self) -> None:
        with self._lock:
            self._draw(final=True)


def _poisson_gaps(count: int, rate: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [0.0] + [rng.expovariate(rate) for _ in range(count - 1)]


def run_load(send: Sender, requests: list[BenchRequest], concurrency: int, request_rate: float | None = None,
             seed: int = 0, progress: Progress | None = None) -> tuple[list[RequestRecord], float]:
    """Send every request; at most `concurrency` at once, arriving as a Poisson process when
    `request_rate` (requests/s) is given, else back to back. Returns the records and wall seconds."""
    records: list[RequestRecord] = []
    lock = threading.Lock()

    def one(request: BenchRequest) -> None:
        record = send(request)
        with lock:
            records.append(record)
        if progress:
            progress.update(record)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="bench") as pool:
        if request_rate:
            due = started
            for gap, request in zip(_poisson_gaps(len(requests), request_rate, seed), requests, strict=True):
                due += gap
                time.sleep(max(0.0, due - time.monotonic()))
                pool.submit(one, request)
        else:
            for request in requests:
                pool.submit(one, request)
    wall = time.monotonic() - started
    if progress:
        progress.close()
    return records, wall


def run_sessions(send: Callable[[int, BenchRequest], RequestRecord], make_request: Callable[[int, int], BenchRequest],
                 sessions: int, duration: float, progress: Progress | None = None,
                 think_time: float = 0.0) -> tuple[list[RequestRecord], float]:
    """`sessions` chats, each sending its next message `think_time` seconds after the last reply
    ended, until `duration` seconds have passed (a request under way then is finished, not cut)."""
    records: list[RequestRecord] = []
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + duration

    def session(index: int) -> None:
        turn = 0
        while time.monotonic() < deadline:
            record = send(index, make_request(index, turn))
            turn += 1
            with lock:
                records.append(record)
            if progress:
                progress.update(record)
            if think_time:
                if time.monotonic() + think_time >= deadline:
                    return  # the next message would come after the end: this chat is over
                time.sleep(think_time)

    threads = [threading.Thread(target=session, args=(i,), name=f"session-{i}", daemon=True) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    if progress:
        progress.close()
    return records, wall


def session_pool(send: Callable[[int, BenchRequest], RequestRecord], sessions: int) -> Sender:
    """Adapt `send(session, request)` to `send(request)`: each request in flight gets a free session."""
    free = list(range(sessions))
    lock = threading.Lock()

    def one(request: BenchRequest) -> RequestRecord:
        with lock:
            session = free.pop()
        try:
            return send(session, request)
        finally:
            with lock:
                free.append(session)

    return one
