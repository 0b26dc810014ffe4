"""How many threads the CPU engine's PyTorch calls use (the engine stubs and the runner stand-in's LLM)."""

from __future__ import annotations

import os

THREADS_ENV = "CPU_ENGINE_THREADS"  # a positive number fixes the count for every step
MOST_BY_DEFAULT = 4
# A step of this many tokens or more is bound by arithmetic, not by reading the weights: it gets every core (up to
# MOST_WIDE). SmolLM2-135M on the EPYC development machine, forward pass only: 8 decode rows 91 ms on one thread,
# 60 ms on two; 32 rows 177 and 123 ms; one row gains about a tenth from a second thread.
WIDE_STEP_TOKENS = 8
MOST_WIDE = 8


def engine_threads(cores: int | None = None) -> int:
    """CPU_ENGINE_THREADS when set, else half the machine's cores (1 to 4).

    A decode step reads every weight once, so it is bound by memory bandwidth: on 2 cores a second thread
    makes a step 11 % faster for 80 % more CPU time, and beside any other busy process the two threads wait
    for each other at every barrier (3 times the CPU per step with GOMP_SPINCOUNT=10000, 45 times with
    libgomp's default spin; docs/cpu-demo.md). Half the cores leaves room for tritonserver, the app and a
    browser.
    """
    chosen = os.environ.get(THREADS_ENV, "").strip()
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    cores = cores if cores is not None else (os.cpu_count() or 2)
    return min(MOST_BY_DEFAULT, max(1, cores // 2))


def fixed_threads() -> bool:
    """Whether CPU_ENGINE_THREADS fixes the count (else it follows each step's size: step_threads)."""
    chosen = os.environ.get(THREADS_ENV, "").strip()
    return chosen.isdigit() and int(chosen) > 0


def step_threads(tokens: int, cores: int | None = None) -> int:
    """Threads for one forward pass of `tokens` tokens: the fixed count when CPU_ENGINE_THREADS is set; else
    engine_threads() for a small step (bound by memory bandwidth, where a second thread adds little and waits at
    every barrier beside other busy processes) and every core, up to MOST_WIDE, for a step of WIDE_STEP_TOKENS or
    more (bound by arithmetic)."""
    base = engine_threads(cores)
    if fixed_threads() or tokens < WIDE_STEP_TOKENS:
        return base
    cores = cores if cores is not None else (os.cpu_count() or 2)
    return max(base, min(MOST_WIDE, cores))


def threads_summary() -> str:
    """The thread rule in words, for the engine's start line."""
    base = engine_threads()
    if fixed_threads():
        return f"{base} thread{'' if base == 1 else 's'}"
    return f"{base} thread{'' if base == 1 else 's'}, {step_threads(WIDE_STEP_TOKENS)} for steps of {WIDE_STEP_TOKENS}+ tokens"
