"""Running one function in several threads at once (the concurrency tests), and a coroutine on a thread of its own.

Only the test suite imports this module; it imports nothing of the app.
"""

from __future__ import annotations

import asyncio
import threading


def run_in_threads(fn, count: int) -> list:
    """Run fn(i) in `count` threads; return results in order (exceptions re-raised)."""
    results: list = [None] * count
    errors: list = []

    def work(i):
        try:
            results[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def run_async(coroutine, timeout: float | None = None):
    """asyncio.run(coroutine) on a thread of its own (a browser session's Playwright keeps an event loop on the main
    thread); its value, or its exception raised here. AssertionError when it has not ended after `timeout` seconds."""
    outcome: list = []

    def target():
        try:
            outcome.append((True, asyncio.run(coroutine)))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert outcome, f"the coroutine had not ended after {timeout} s"
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
