"""The CPU engine's thread count: half the cores (1 to 4) unless CPU_ENGINE_THREADS says."""

import pytest

from cpu_runtime.engine.threads import THREADS_ENV, engine_threads


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (8, 4), (64, 4)])
def test_default_is_half_the_cores_from_one_to_four(monkeypatch, cores, threads):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert engine_threads(cores) == threads


@pytest.mark.parametrize(("value", "threads"), [("3", 3), (" 6 ", 6), ("0", 1), ("", 1), ("many", 1), ("-2", 1)])
def test_a_positive_setting_wins_and_anything_else_falls_back(monkeypatch, value, threads):
    monkeypatch.setenv(THREADS_ENV, value)
    assert engine_threads(2) == threads
