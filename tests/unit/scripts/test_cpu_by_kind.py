"""scripts/cpu_by_kind.py: processes sorted into kinds by their command lines, CPU seconds read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

from scripts.cpu_by_kind import kind_of, sample, totals

STUB = "/root/.cache/triton-vlm-lora-demo/triton_backends/3.11/python/triton_python_backend_stub"


def test_each_kind_is_told_by_its_command_line():
    cases = {
        (STUB, "/tmp/run/repo/preprocessing/1/model.py", "prefix0_1", "1048576"): "stub:preprocessing",
        (STUB, "/tmp/run/repo/runner-kosmos-2/1/model.py", "x"): "stub:runner-kosmos-2",
        ("/root/.cache/x/tritonserver", "--model-repository=/tmp/repo"): "tritonserver",
        ("/usr/lib/chromium/chromium", "--type=renderer"): "chromium",
        ("/work/main/.venv-vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"): "vllm",
        ("/work/main/.venv/bin/python", "-m", "app", "--demo", "--deployment", "llmapi"): "app --demo",
        ("/work/main/.venv/bin/python", "-c", "import sys;exec(eval(sys.stdin.readline()))"): "pytest worker",
        ("python3", "scripts/busy_machine.py", "--gib", "4"): "busy_machine",
        ("/usr/bin/make", "test"): "other:make",
        (): "kernel",
    }
    for argv, kind in cases.items():
        assert kind_of(list(argv)) == kind, argv


def test_a_process_that_used_the_cpu_is_counted_under_its_kind():
    busy = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.5\n"
                             "while time.process_time() < end: pass\nprint('done', flush=True)\ntime.sleep(30)"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "done"
        seen: dict = {}
        sample(seen)
        mine = [entry for (pid, _), entry in seen.items() if pid == busy.pid]
        assert mine and mine[0][0] == f"other:{os.path.basename(sys.executable)}"
        assert mine[0][1] > 0
        assert totals(seen)[mine[0][0]] >= 0.4
    finally:
        busy.kill()
        busy.wait()
