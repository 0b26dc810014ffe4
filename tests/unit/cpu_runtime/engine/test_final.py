"""The final-send gate: a request's client is asked whether it cancelled at most once per check period."""

from __future__ import annotations

import types

import pytest

from cpu_runtime.engine.final import FinalGate, check_period


class _Sender:
    def __init__(self):
        self.asked, self.gone, self.sent = 0, False, []

    def is_cancelled(self):
        self.asked += 1
        return self.gone


def _gen():
    return types.SimpleNamespace(sender=_Sender(), request=None, final_sent=False)


def test_the_client_is_asked_once_per_period():
    now = [10.0]
    gate, gen = FinalGate(0.1, clock=lambda: now[0]), _gen()
    assert not gate.cancelled(gen) and gen.sender.asked == 1
    gen.sender.gone = True
    now[0] = 10.05
    assert not gate.cancelled(gen) and gen.sender.asked == 1  # within the period: not asked again
    now[0] = 10.11
    assert gate.cancelled(gen) and gen.sender.asked == 2


def test_a_period_of_zero_asks_every_time_and_an_answered_request_is_never_asked():
    gate, gen = FinalGate(0.0), _gen()
    for _ in range(3):
        gate.cancelled(gen)
    assert gen.sender.asked == 3
    gate.send_final(gen, lambda: gen.sender.sent.append("final"))
    assert gate.cancelled(gen) and gen.sender.asked == 3 and gen.sender.sent == ["final"]


@pytest.mark.parametrize("value, seconds", [("100", 0.1), ("", 0.1), ("${cancellation_check_period_ms}", 0.1),
                                            ("0", 0.0), ("-5", 0.0), ("250", 0.25), ("nan", 0.1), (None, 0.1)])
def test_check_period_from_the_parameter(value, seconds):
    assert check_period(value) == pytest.approx(seconds)
