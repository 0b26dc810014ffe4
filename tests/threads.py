"""Running one function in several threads at once (the concurrency tests).

Only the test suite imports this module; it imports nothing of the app.
"""

from __future__ import annotations

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
