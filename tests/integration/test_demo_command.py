"""`python -m app --demo` as a person runs it: it serves the page, and Ctrl-C stops the UI and Triton."""

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.proc_helpers import children_of


def test_demo_serves_and_ctrl_c_stops_everything():
    ui, http, grpc, metrics = (free_port() for _ in range(4))
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--demo", "--port", str(ui), "--triton-http-port", str(http),
         "--triton-grpc-port", str(grpc), "--triton-metrics-port", str(metrics)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline, page = time.monotonic() + 240, None
        while time.monotonic() < deadline and page is None:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{ui}/", timeout=2).read().decode()
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.5)
        assert page and "gradio" in page.lower()
        triton_pids = children_of(proc.pid)
        assert triton_pids, "tritonserver should be a child of the app"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "Stopping tritonserver" in out and "Traceback" not in out
        for pid in triton_pids:
            assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{http}/v2/health/ready", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
