"""tests/stub_watch.py: the stubs a server started are found by parent and binary name, and one that has died (a
zombie not yet reaped, or gone) is named by its model."""

import os
import signal
import subprocess
import sys
import time

from tests.stub_watch import STUB_BINARY, StubWatch, python_stubs


def _fake_stub(tmp_path, model):
    script = tmp_path / model / "1" / "model.py"
    script.parent.mkdir(parents=True)
    script.write_text("import time\ntime.sleep(60)\n")
    return subprocess.Popen([f"/somewhere/{STUB_BINARY}", str(script)], executable=sys.executable)


def test_a_dead_stub_is_named_by_its_model(tmp_path):
    alive, crashing = _fake_stub(tmp_path, "preprocessing"), _fake_stub(tmp_path, "tensorrt_llm_bls")
    try:
        watch = StubWatch()
        expected = {alive.pid: "preprocessing", crashing.pid: "tensorrt_llm_bls"}
        deadline = time.monotonic() + 10  # on a loaded machine a just-started process may show no command line yet
        while python_stubs(os.getpid()) != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert python_stubs(os.getpid()) == expected
        assert watch.dead_models(os.getpid()) == []  # the first check records them
        assert watch.dead_models(None) == []
        crashing.send_signal(signal.SIGSEGV)
        os.waitid(os.P_PID, crashing.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie, as under Triton
        assert watch.dead_models(os.getpid()) == ["tensorrt_llm_bls"]
    finally:
        for stub in (alive, crashing):
            stub.kill()
            stub.wait()
