"""How many threads the CPU engine's PyTorch calls use (the engine stubs and the runner stand-in's LLM)."""

from __future__ import annotations

import os

THREADS_ENV = "CPU_ENGINE_THREADS"  # a positive number overrides the default below
MOST_BY_DEFAULT = 4


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
