"""The server's LoRA cache as this app saw it: which adapters it holds now (weights sent and answered, not evicted
since), and per adapter over the last 15 minutes its hits (task id alone, answered), misses ("not found in cache":
an eviction seen), re-sends (weights again after a miss) and first sends.

The server evicts the least recently used adapter no request is using (TensorRT-LLM's LoraCache; the CPU engine
alike), so a miss also says how many adapters it holds: those used after the evicted one. From then on the
resident list keeps that many, the most recently used (an estimate for adapters of like size).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

WINDOW_SECONDS = 15 * 60
SENT, HIT, MISS, RESENT = "sent", "hit", "miss", "resent"
EVENTS = (SENT, HIT, MISS, RESENT)


@dataclass(frozen=True)
class AdapterCacheRow:
    """One adapter's cache events over the window."""

    name: str
    task_id: int
    resident: bool
    sent: int
    hits: int
    misses: int
    resent: int


@dataclass(frozen=True)
class CacheView:
    """What the app saw: resident adapters (least recently used first), per-adapter counts, evictions seen."""

    resident: tuple[str, ...]
    rows: tuple[AdapterCacheRow, ...]
    evictions: int
    window_seconds: int
    capacity: int | None = None  # adapters the cache holds, as the evictions seen show (None: none seen yet)


class CacheWatch:
    """Fed by the adapter streams (app/adapters/stream.py) through the registry."""

    def __init__(self, window: float = WINDOW_SECONDS, clock=time.monotonic):
        self.window, self._clock = window, clock
        self._lock = threading.Lock()
        self._events: deque[tuple[float, int, str, str]] = deque()
        self._resident: OrderedDict[int, str] = OrderedDict()
        self._capacity: int | None = None

    def record(self, event: str, name: str, task_id: int) -> None:
        """An adapter request's outcome: SENT / RESENT (weights answered), HIT (task id answered), MISS."""
        if event not in EVENTS:
            raise ValueError(f"unknown cache event {event!r}")
        with self._lock:
            self._events.append((self._clock(), task_id, name, event))
            if event == MISS:
                if task_id in self._resident:  # LRU: the adapters used since it are what the cache held
                    newer = len(self._resident) - 1 - list(self._resident).index(task_id)
                    if newer > 0:
                        self._capacity = min(self._capacity or newer, newer)
                self._resident.pop(task_id, None)
            else:
                self._resident[task_id] = name
                self._resident.move_to_end(task_id)
                while self._capacity and len(self._resident) > self._capacity:
                    self._resident.popitem(last=False)
            self._trim()

    def forget(self) -> None:
        """The server restarted (or may have): it holds nothing now; the counts stay."""
        with self._lock:
            self._resident.clear()

    def _trim(self) -> None:
        cutoff = self._clock() - self.window
        while self._events and self._events[0][0] < cutoff:
            self._events.popleft()

    def view(self) -> CacheView:
        with self._lock:
            self._trim()
            counts: dict[tuple[int, str], dict[str, int]] = {}
            for _, task_id, name, event in self._events:
                counts.setdefault((task_id, name), dict.fromkeys(EVENTS, 0))[event] += 1
            rows = tuple(AdapterCacheRow(name=name, task_id=task_id, resident=task_id in self._resident,
                                         sent=c[SENT], hits=c[HIT], misses=c[MISS], resent=c[RESENT])
                         for (task_id, name), c in sorted(counts.items(), key=lambda item: item[0][1]))
            return CacheView(resident=tuple(self._resident.values()), rows=rows,
                             evictions=sum(r.misses for r in rows), window_seconds=int(self.window),
                             capacity=self._capacity)
