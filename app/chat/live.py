"""What the app's users live through, counted where their replies open and end (chat, Compare, both APIs):
replies in progress, replies waiting for their first token, output tokens and times to first token.

Triton's own counters see every internal model call and, for streaming models, end a request when the model
has taken it; these figures are the ones a person at the chat would quote."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

IN_PROGRESS = "replies in progress"
WAITING = "waiting for first token"
TOKENS_PER_SECOND = "output tokens/s"
FIRST_TOKEN_MS = "time to first token ms"
GAP_SECONDS = 10.0  # readings further apart than this leave a gap in the charts, not a ramp
FIRST_TOKEN_WINDOW = 10.0  # seconds of first tokens each point of that line averages (none: a gap)


@dataclass(frozen=True)
class LiveReading:
    """The counters at one moment; `first_tokens` are the times to first token (s) seen since the last reading."""

    at: float
    in_progress: int
    waiting: int
    tokens: int  # output pieces since the app started (one per token when the server streams)
    first_tokens: tuple[float, ...] = ()
    lora_last: int = 0  # bytes of LoRA inputs the latest finished reply's request sent (0: it carried no adapter)
    lora_last_weights: bool = False  # ... and whether they held the weights (else the task id alone)
    lora_total: int = 0  # bytes of LoRA inputs sent since the app started


class LiveReplies:
    """Counters of the replies the app streams to its users, and their recent history for the Server tab."""

    # 451 readings: the 15 minutes the Server tab charts, at its sampler's pace of one reading per 2 s
    def __init__(self, size: int = 451, min_interval: float = 1.0, clock=time.monotonic):
        self._lock = threading.Lock()
        self._clock = clock
        self._next_key = 0
        self._opened: dict[int, float] = {}  # key -> when it was opened
        self._answering: set[int] = set()  # keys that have had their first token
        self._tokens = 0
        self._first_tokens: list[float] = []
        self._lora = (0, False, 0)  # last reply's bytes, whether with weights, total
        self.min_interval = min_interval
        self.readings: deque[LiveReading] = deque(maxlen=size)

    def opened(self) -> int:
        """A reply just opened (app/chat/chat_stream.py counts it until it ends): its key."""
        with self._lock:
            key = self._next_key
            self._next_key += 1
            self._opened[key] = self._clock()
        return key

    def progressed(self, key: int, tokens: int, first_token: float | None) -> None:
        with self._lock:
            if key not in self._opened:
                return
            self._tokens += tokens
            if tokens and key not in self._answering:
                self._answering.add(key)
                self._first_tokens.append(first_token if first_token is not None
                                          else self._clock() - self._opened[key])

    def sent_lora(self, nbytes: int, weights: bool) -> None:
        """A reply's request sent `nbytes` of LoRA inputs (`weights`: with the adapter's weights)."""
        with self._lock:
            self._lora = (nbytes, weights, self._lora[2] + nbytes)

    def in_progress(self) -> int:
        """Replies opened and not yet ended."""
        with self._lock:
            return len(self._opened)

    def ended(self, key: int) -> None:
        with self._lock:
            self._opened.pop(key, None)
            self._answering.discard(key)

    def read(self) -> LiveReading:
        """Take a reading (at most one per `min_interval`; a sooner call returns the last one)."""
        with self._lock:
            now = self._clock()
            if self.readings and now - self.readings[-1].at < self.min_interval:
                return self.readings[-1]
            reading = LiveReading(now, len(self._opened), len(self._opened) - len(self._answering), self._tokens,
                                  tuple(self._first_tokens), *self._lora)
            self._first_tokens.clear()
            self.readings.append(reading)
            return reading

    def series(self) -> list[dict]:
        """Rows {t, metric, value} for the charts, t in seconds before the latest reading. Between readings
        too far apart (no page was open) the value is NaN, which the charts draw as a gap."""
        with self._lock:
            readings = list(self.readings)
        if not readings:
            return []
        last, rows = readings[-1].at, []
        for before, after in zip(readings, readings[1:], strict=False):
            span = after.at - before.at
            gap = span > GAP_SECONDS
            t = round(after.at - last, 1)
            if gap:  # both lines break here: a gauge inherits no value across the gap either
                rows += [{"t": round(before.at - last + span / 2, 1), "metric": m, "value": math.nan}
                         for m in (IN_PROGRESS, WAITING, FIRST_TOKEN_MS)]
            rows.append({"t": t, "metric": TOKENS_PER_SECOND,
                         "value": math.nan if gap else (after.tokens - before.tokens) / max(span, 1e-6)})
        for reading in readings:
            t = round(reading.at - last, 1)
            recent = [s for r in readings if reading.at - FIRST_TOKEN_WINDOW < r.at <= reading.at
                      for s in r.first_tokens]
            rows += [{"t": t, "metric": IN_PROGRESS, "value": reading.in_progress},
                     {"t": t, "metric": WAITING, "value": reading.waiting},
                     {"t": t, "metric": FIRST_TOKEN_MS,
                      "value": 1000 * sum(recent) / len(recent) if recent else math.nan}]
        return sorted(rows, key=lambda row: row["t"])
