"""app/api/http_guard/logins.py: the sliding window of failed logins per key, on a clock the test moves."""

from __future__ import annotations

from app.api.http_guard.logins import FailureLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_below_the_limit_nobody_waits():
    clock = Clock()
    limiter = FailureLimiter(allowed=3, window=60, clock=clock)
    limiter.fail("a")
    limiter.fail("a")
    assert limiter.wait("a") == 0


def test_the_wait_counts_from_the_oldest_failure_that_still_matters():
    clock = Clock()
    limiter = FailureLimiter(allowed=2, window=60, clock=clock)
    for offset in (0, 5, 20):  # three failures, two allowed: the one at +5 s decides
        clock.now = 1000 + offset
        limiter.fail("a")
    clock.now = 1030
    assert limiter.wait("a") == 35  # 1005 + 60 - 1030
    clock.now = 1065.5
    assert limiter.wait("a") == 0  # +5 has left the window; only +20 remains


def test_a_wait_about_to_end_is_still_at_least_one_second():
    clock = Clock()
    limiter = FailureLimiter(allowed=1, window=10, clock=clock)
    limiter.fail("a")
    clock.now += 9.999
    assert limiter.wait("a") == 1


def test_a_failure_exactly_window_seconds_old_has_left():
    clock = Clock()
    limiter = FailureLimiter(allowed=1, window=10, clock=clock)
    limiter.fail("a")
    clock.now += 10
    assert limiter.wait("a") == 0


def test_keys_are_counted_apart():
    clock = Clock()
    limiter = FailureLimiter(allowed=1, window=60, clock=clock)
    limiter.fail("10.0.0.1")
    assert limiter.wait("10.0.0.1") == 60 and limiter.wait("10.0.0.2") == 0


def test_the_table_of_clients_is_bounded_and_forgets_the_oldest_first():
    clock = Clock()
    limiter = FailureLimiter(allowed=1, window=3600, clock=clock)
    for number in range(10_001):
        limiter.fail(f"client-{number}")
    assert limiter.wait("client-0") == 0  # forgotten to make room
    assert limiter.wait("client-1") > 0 and limiter.wait("client-10000") > 0
