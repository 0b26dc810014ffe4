"""A thread that takes readings at a steady pace, so the Server tab's history does not depend on pages being open."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

LOG = logging.getLogger(__name__)


class Sampler:
    """Calls each of `reads` every `interval` seconds in one daemon thread, from start() until stop() or until
    `alive()` turns false (the app was closed).

    The readings go to histories of their own (MetricsHistory, the users' LiveReplies) that keep a bounded ring:
    this thread only paces them. One sampler per app process, started with the app, so every page visit sees the
    readings taken since the app started (within the rings' length), not only those since it was opened."""

    def __init__(self, reads: Sequence[Callable[[], object]], interval: float) -> None:
        self.reads, self.interval = tuple(reads), interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, alive: Callable[[], bool] = lambda: True) -> None:
        """Take a reading now and then every `interval` seconds while `alive()` (checked before each reading)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, args=(alive,), name="metrics-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread (it is between readings, or within one: a read of the metrics URL has its own timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self, alive: Callable[[], bool]) -> None:
        while alive() and not self._stop.is_set():
            for read in self.reads:
                try:
                    read()
                except Exception:  # noqa: BLE001 - one failed reading must not end the history
                    LOG.exception("metrics sampler: a reading failed")
            self._stop.wait(self.interval)
