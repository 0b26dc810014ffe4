"""A request's final response and the question whether it was cancelled, kept apart (no Triton import).

Asking a response sender whether it is cancelled after its final response crashes tritonserver: the backend has
freed it (SIGSEGV in TRITONBACKEND_ResponseFactoryIsCancelled). Both go through one FinalGate, and a request
answered already counts as cancelled.

The question is asked of each request at most once per `period` seconds (the backend's
`cancellation_check_period_ms`, 100 by default): each ask is a round trip to tritonserver, and the engine asks
between every two steps (at 8 chats, 6 % of the engine thread's time when it asked every step).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class FinalGate:
    """One lock around every final send and every cancellation question of a model's requests."""

    def __init__(self, period: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self.period, self._clock = period, clock

    def cancelled(self, gen) -> bool:
        """Whether the client cancelled `gen` (True once it was answered; False when the question fails or was
        asked less than `period` seconds ago)."""
        with self._lock:
            if gen.final_sent:
                return True
            now = self._clock()
            if now - getattr(gen, "cancel_asked_at", float("-inf")) < self.period:
                return False
            gen.cancel_asked_at = now
            try:
                return gen.sender.is_cancelled() if gen.sender is not None else gen.request.is_cancelled()
            except Exception:
                return False

    def send_final(self, gen, send: Callable[[], None]) -> None:
        """Mark `gen` answered and run `send` (its final send) when it has a sender; a gone client is ignored."""
        with self._lock:
            gen.final_sent = True
            if gen.sender is not None:
                try:
                    send()
                except Exception:
                    pass  # the client is gone (cancelled); nothing left to tell it


DEFAULT_CHECK_PERIOD_MS = 100  # the backend's cancellation_check_period_ms default


def check_period(value: object) -> float:
    """Seconds between cancellation questions from a `cancellation_check_period_ms` value (the default when it is
    absent or not a number; 0 asks at every step)."""
    try:
        ms = float(str(value).strip())
    except ValueError:
        ms = DEFAULT_CHECK_PERIOD_MS
    if math.isnan(ms):
        ms = DEFAULT_CHECK_PERIOD_MS
    return max(0.0, ms) / 1000
