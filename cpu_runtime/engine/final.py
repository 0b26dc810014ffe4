"""A request's final response and the question whether it was cancelled, kept apart (no Triton import).

Asking a response sender whether it is cancelled after its final response crashes tritonserver: the backend has
freed it (SIGSEGV in TRITONBACKEND_ResponseFactoryIsCancelled). Both go through one FinalGate, and a request
answered already counts as cancelled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class FinalGate:
    """One lock around every final send and every cancellation question of a model's requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def cancelled(self, gen) -> bool:
        """Whether the client cancelled `gen` (True once it was answered; False when the question fails)."""
        with self._lock:
            if gen.final_sent:
                return True
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
