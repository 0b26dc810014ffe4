"""What the decoupled models do so that the python backend's stub never frees their Python objects without the GIL.

Stubs before python_backend's "Hold GIL when deleting numpy array" (PR #390, December 2024: Triton 25.01; the stub
in nvidia-pytriton 0.7.0 and the Triton 24.x containers of TensorRT-LLM 0.12-0.16 are older) free a tensor's numpy
array wherever its last reference goes, also on threads that do not hold the GIL. That corrupts Python's allocator
while other request threads run: under concurrent streams the stub segfaults, and Triton answers every later
request with "Stub process ... is not healthy". Two places do it:

- `response_sender.send()` drops, with the GIL released, every output the client did not ask for
  (InferResponse::PruneOutputTensors): `requested_only` leaves those out of the response in the first place.
- the stub's own reference to a decoupled BLS response iterator (`response_iterator_map_`) is dropped on its service
  thread after the final response: `FinishedStreams` holds finished iterators so the model's drop is the last.

And one lock-order cycle of the stub (seen once, a BLS under the CPU engine; docs/benchmarks.md): its single
stub-to-parent thread keeps its queue lock for each message's round trip to tritonserver, and one kind of message
(a finished stream's clean-up) takes the response-iterator map's lock under it, while a BLS thread that ends a stream
queues its own clean-up with the GIL held. Every `is_cancelled()` is such a round trip, so asking it for every
streamed token keeps that thread busy and the cycle near: `CancelPoll` asks at most once per CANCEL_POLL_SECONDS.

Copied by the repository writer into the 1/ folder of each model that lists it (template.yaml `shared`).
"""

import collections
import threading
import time

HOLD_SECONDS = 30.0
HOLD_MOST = 256
CANCEL_POLL_SECONDS = 0.1  # as the TensorRT-LLM backend's cancellation_check_period_ms default (100)


def requested_only(request, outputs: dict) -> dict:
    """{name: value} of `outputs` that `request`'s client asked for (all of them when it named none)."""
    names = getattr(request, "requested_output_names", None)
    wanted = set(names() or ()) if callable(names) else set()
    return {name: value for name, value in outputs.items() if name in wanted} if wanted else dict(outputs)


class FinishedStreams:
    """Finished decoupled BLS response iterators, held for a while (`seconds`, at most the `most` newest) so that
    the model's reference is the last one: the stub drops its own moments after the final response, on one thread
    in order, and the model's drop then frees the responses with the GIL held."""

    def __init__(self, seconds: float = HOLD_SECONDS, most: int = HOLD_MOST, clock=time.monotonic):
        self.seconds, self.most, self._clock = seconds, most, clock
        self._held = collections.deque()  # (time kept, iterator), oldest first
        self._lock = threading.Lock()

    def keep(self, stream) -> None:
        """Hold `stream`; release those held longer than `seconds` or beyond the `most` newest, in this thread."""
        now = self._clock()
        released = []
        with self._lock:
            self._held.append((now, stream))
            while self._held and (len(self._held) > self.most or now - self._held[0][0] > self.seconds):
                released.append(self._held.popleft())
        released.clear()  # the last references go here, outside the lock

    def release_all(self) -> None:
        """At finalize: drop everything held (the stub is still running, and this thread holds the GIL)."""
        with self._lock:
            released = list(self._held)
            self._held.clear()
        released.clear()

    def __len__(self) -> int:
        return len(self._held)


class CancelPoll:
    """Called: whether a request's client cancelled, asked of its response sender at most once per `period` seconds
    (False in between); True for good once it was."""

    def __init__(self, sender, period: float = CANCEL_POLL_SECONDS, clock=time.monotonic):
        self.sender, self.period, self._clock = sender, period, clock
        self._due = float("-inf")
        self.cancelled = False

    def __call__(self) -> bool:
        if self.cancelled or self.sender is None:
            return self.cancelled
        now = self._clock()
        if now < self._due:
            return False
        self._due = now + self.period
        self.cancelled = bool(self.sender.is_cancelled())
        return self.cancelled
