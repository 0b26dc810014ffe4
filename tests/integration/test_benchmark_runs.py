"""Each benchmark as a person runs it from a fresh clone: `python -m benchmarks.<name>` on its smallest setting, in
a process of its own outside the test run's temporary folder (no TRITON_DEMO_TEST_TMP, no pytest variables; a new
empty TMPDIR). It starts its own servers, ends with 0, prints its table, and leaves nothing in TMPDIR
(benchmarks/scratch.py). The figures of such short runs mean nothing; `make bench`, `make bench-peer`, `make overhead`
and `make soak` make the real ones.

The batching benchmark runs without its vLLM peer (`--no-vllm`): vLLM's CPU build takes 1.5-3 minutes to start on 2
cores. Its own start lies in the same scratch folder (its `vllm_dist_*` folder and ZMQ sockets go where TMPDIR says).
It does run its ceiling (plain transformers generate at batch 1 in a child process, benchmarks/ceiling.py), whose row
the test looks for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from setup.paths import PROJECT_ROOT
from tests.run_folder import RUN_TMP_ENV

pytestmark = [pytest.mark.integration,
              pytest.mark.usefixtures("demo_command_memory")]  # the servers these runs start, outside the ledger

# entry point -> (its smallest setting, a line of its table's header)
SMALLEST = {
    "foundation": (["--runs", "1", "--max-tokens", "8"], "(a) Time to first token"),
    "lora": (["--runs", "1"], "LoRA bytes sent"),
    "images": (["--runs", "1", "--encoder-runs", "1", "--seconds", "0.1"], "CPU encoder per image"),
    "batching": (["--no-vllm", "--concurrency", "1", "--per-stream", "1", "--output-len", "4"],
                 "plain transformers generate at batch 1"),  # the ceiling's row: its child process ran
    "overhead": (["--concurrency", "1", "--tokens", "4", "--repeats", "1", "--clients", "sse"], "app vs direct"),
    "soak": (["--sessions", "2", "--duration", "2", "--tokens", "4", "--client", "sse"], "Memory growth"),
}
RUN_TIMEOUT = 900  # a demo tritonserver may take 300 s to be ready on a loaded machine (benchmarks/harness.py)


def own_environment(tmpdir) -> dict[str, str]:
    """This process's environment without the test run's variables, with TMPDIR at `tmpdir`."""
    kept = {k: v for k, v in os.environ.items() if k != RUN_TMP_ENV and not k.startswith("PYTEST_")}
    return {**kept, "TMPDIR": str(tmpdir)}


@pytest.mark.parametrize("name", SMALLEST)
def test_a_benchmark_runs_on_its_own_and_leaves_nothing_behind(name, tmp_path):
    args, header = SMALLEST[name]
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *args], cwd=PROJECT_ROOT,
                         env=own_environment(tmp_path), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=RUN_TIMEOUT)
    said = f"python -m benchmarks.{name} {' '.join(args)} ({time.monotonic() - started:.0f} s):\n" + \
           (run.stdout[-3000:] + run.stderr[-3000:])
    assert run.returncode == 0, said
    assert header in run.stdout, said
    assert sorted(p.name for p in tmp_path.iterdir()) == [], said
