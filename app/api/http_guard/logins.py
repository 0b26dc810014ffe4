"""Failed logins counted per client address in a sliding window."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

_MAX_CLIENTS_TRACKED = 10_000


class FailureLimiter:
    """At most `allowed` failures per key within `window` seconds; then the key waits."""

    def __init__(self, allowed: int, window: float, clock: Callable[[], float] = time.monotonic):
        self.allowed, self.window, self.clock = allowed, window, clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        cutoff = self.clock() - self.window
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def wait(self, key: str) -> int:
        """Seconds until `key` may try again (0: now)."""
        times = self._recent(key)
        if times is None or len(times) < self.allowed:
            return 0
        return max(1, math.ceil(times[-self.allowed] + self.window - self.clock()))

    def fail(self, key: str) -> None:
        times = self._recent(key)
        if times is None:
            if len(self._failures) >= _MAX_CLIENTS_TRACKED:  # forget the longest-known address
                del self._failures[next(iter(self._failures))]
            times = self._failures[key] = deque(maxlen=self.allowed)
        times.append(self.clock())
