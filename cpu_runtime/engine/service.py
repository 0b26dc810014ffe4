"""The engine's two threads, shared by every CPU stand-in (the `tensorrt_llm` engine and the `llmapi` model).

The engine thread builds the model and then runs the scheduler: it takes submitted requests between
steps, runs one step at a time and hands each step's events to the sender thread, which answers them
(`dispatch`) while the next step runs. Every PyTorch call of the model happens on the engine thread:
OpenMP keeps one thread pool per calling thread, and a second pool oversubscribes the cores.

This module has no Triton import so tests can drive it directly.
"""

from __future__ import annotations

import queue
import threading


class EngineService:
    """`build()` -> (engine, metrics or None) runs on the engine thread; `dispatch(event)` answers one event;
    `cancelled(gen)` says whether a request's client went away."""

    def __init__(self, build, dispatch, cancelled, name: str = "cpu-engine"):
        self._build, self._dispatch, self._cancelled = build, dispatch, cancelled
        self.engine = self.metrics = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: list = []
        self._shutdown = False
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()  # lists of events, answered in order
        self._sender = threading.Thread(target=self._answer, name=f"{name}-sender", daemon=True)
        self._ready, self._failure = threading.Event(), None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start both threads and wait for the build; re-raise its failure."""
        self._sender.start()
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def submit(self, gen) -> None:
        with self._wake:
            self._queue.append(gen)
            self._wake.notify()

    def _run(self) -> None:
        try:
            self.engine, self.metrics = self._build()
        except BaseException as exc:  # reported by start()
            self._failure = exc
            self._ready.set()
            self._outbox.put(None)
            return
        self._ready.set()
        self._loop()

    def _update_metrics(self, force: bool = False) -> None:
        if self.metrics is not None:
            self.metrics.update(self.engine, force=force)

    def _loop(self) -> None:
        engine = self.engine
        while True:
            if not engine.has_work():
                self._update_metrics(force=True)  # idle figures before waiting
            with self._wake:
                while not self._queue and not engine.has_work() and not self._shutdown:
                    self._wake.wait()
                if self._shutdown:
                    break
                for gen in self._queue:
                    engine.submit(gen)
                self._queue.clear()
            ran = engine.steps
            try:
                events = engine.step(self._cancelled)
            except Exception as exc:  # the step itself broke: end what it held, keep serving
                events = engine.fail_all(f"CPU engine error: {exc}")
            if events:
                self._outbox.put(events)
            self._update_metrics()
            if not events and engine.steps == ran:  # nothing could run (no room yet): do not spin
                with self._wake:
                    self._wake.wait(timeout=0.01)
        with self._wake:
            waiting, self._queue = self._queue, []
        for gen in waiting:
            engine.submit(gen)
        self._outbox.put(engine.fail_all("The CPU engine is shutting down."))
        self._outbox.put(None)

    def _answer(self) -> None:
        while True:
            events = self._outbox.get()
            if events is None:
                return
            for event in events:
                self._dispatch(event)

    def stop(self, timeout: float = 10.0) -> None:
        with self._wake:
            self._shutdown = True
            self._wake.notify()
        self._thread.join(timeout=timeout)
        self._sender.join(timeout=timeout)
