"""The CPU engine's thread count: half the cores (1 to 4) for a small step and every core (up to 8) for a wide one, unless
CPU_ENGINE_THREADS fixes it."""

import pytest

from cpu_runtime.engine.threads import THREADS_ENV, engine_threads, step_threads


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (8, 4), (64, 4)])
def test_default_is_half_the_cores_from_one_to_four(monkeypatch, cores, threads):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert engine_threads(cores) == threads


@pytest.mark.parametrize(("value", "threads"), [("3", 3), (" 6 ", 6), ("0", 1), ("", 1), ("many", 1), ("-2", 1)])
def test_a_positive_setting_wins_and_anything_else_falls_back(monkeypatch, value, threads):
    monkeypatch.setenv(THREADS_ENV, value)
    assert engine_threads(2) == threads


@pytest.mark.parametrize(("cores", "tokens", "threads"), [
    (2, 1, 1), (2, 7, 1), (2, 8, 2), (2, 64, 2),  # the development machine: a wide step gets both cores
    (4, 4, 2), (4, 32, 4), (16, 32, 8), (1, 32, 1),
])
def test_a_wide_step_gets_every_core_up_to_eight(monkeypatch, cores, tokens, threads):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert step_threads(tokens, cores) == threads


def test_a_fixed_count_holds_for_every_step(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "1")
    assert [step_threads(tokens, 8) for tokens in (1, 8, 512)] == [1, 1, 1]


def test_the_engine_sets_the_threads_when_a_step_changes_width(monkeypatch):
    """Engine._threads_for calls torch.set_num_threads only when the count changes."""
    import torch

    from cpu_runtime.engine import engine as engine_module

    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(engine_module, "step_threads", lambda tokens: 2 if tokens >= 8 else 1)
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    engine = engine_module.Engine.__new__(engine_module.Engine)
    engine.threads = 0
    for tokens in (1, 1, 8, 32, 2):
        engine._threads_for(tokens)
    assert calls == [1, 2, 1]
