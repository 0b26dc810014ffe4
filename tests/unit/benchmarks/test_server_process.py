"""benchmarks.server_process: a peer that cannot start says why in one line; processes stop by their group; free ports
are picked together, and a start that may pass next time is tried again on new ones (on_free_ports)."""

from __future__ import annotations

import sys

import pytest

from benchmarks import server_process
from benchmarks.server_process import (
    PeerStartError,
    ServerProcess,
    failure_reason,
    on_free_ports,
    require_memory,
)
from setup.launcher.options import LaunchError

# The last lines vLLM's CPU build wrote when its KV cache did not fit (the failure that made peers start or not
# depending on what else ran on the machine).
VLLM_LOG = """\
INFO 11-23 10:00:01 [cpu_worker.py:240] Available memory: 0.05 GiB
(EngineCore pid=4242) ERROR 11-23 10:00:02 [core.py:1100] EngineCore failed to start.
Traceback (most recent call last):
  File "/x/vllm/v1/core/kv_cache_utils.py", line 700, in check_enough_kv_cache_memory
    raise ValueError(
ValueError: To serve at least one request with the model's max seq len (2048), 0.09 GiB KV cache is needed, \
which is larger than the available KV cache memory (0.04 GiB).
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_the_reason_is_the_last_error_line_of_the_log(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_LOG)
    assert failure_reason(log) == ("RuntimeError: Engine core initialization failed. See root cause above. "
                                   "Failed core proc(s): {}")
    log.write_text(VLLM_LOG.rsplit("RuntimeError", 1)[0])
    reason = failure_reason(log)
    assert reason.startswith("ValueError: To serve at least one request") and "0.04 GiB" in reason


def test_no_reason_when_the_log_says_none_or_is_missing(tmp_path):
    log = tmp_path / "quiet.log"
    log.write_text("INFO starting\nINFO loading weights\n")
    assert failure_reason(log) is None
    assert failure_reason(tmp_path / "missing.log") is None


def test_a_process_that_exits_while_starting_is_one_line_with_its_reason(tmp_path):
    script = "import sys; print('loading'); sys.stderr.write('OSError: [Errno 98] Address already in use\\n'); sys.exit(3)"
    proc = ServerProcess("Peer", [sys.executable, "-c", script], tmp_path / "peer.log").start()
    with pytest.raises(PeerStartError) as info:
        proc.wait_until(lambda: False, timeout=60, what="answer")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("Peer exited with code 3: OSError: [Errno 98] Address already in use")
    assert str(tmp_path / "peer.log") in message


def test_a_process_that_never_gets_ready_is_stopped_and_named(tmp_path):
    proc = ServerProcess("Slow peer", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "slow.log")
    proc.start()
    with pytest.raises(PeerStartError, match=r"^Slow peer did not answer within 1 s \(log: "):
        proc.wait_until(lambda: False, timeout=1, what="answer", interval=0.1)
    assert proc.exited() is not None  # stopped by its group, not left running


def test_memory_check_names_what_is_needed_and_what_is_free(monkeypatch):
    monkeypatch.setattr(server_process, "available_memory_bytes", lambda: 1 * 2**30)
    with pytest.raises(PeerStartError) as info:
        require_memory("vLLM", int(2.5 * 2**30), "512 MiB of KV cache and about 2 GiB for the model")
    assert str(info.value) == ("vLLM cannot start: it needs about 2.5 GiB of memory (512 MiB of KV cache and about "
                               "2 GiB for the model); 1.0 GiB is available.")
    monkeypatch.setattr(server_process, "available_memory_bytes", lambda: 8 * 2**30)
    require_memory("vLLM", int(2.5 * 2**30), "enough")  # no error


def test_available_memory_is_read_from_proc_meminfo():
    free = server_process.available_memory_bytes()
    assert free is not None and free > 0


def test_a_server_outlives_no_starter_killed_without_cleanup(tmp_path):
    """The starter dies by SIGKILL (no atexit, no fixture teardown): the reaper ends the server's group."""
    import os
    import signal
    import subprocess
    import time

    from setup.paths import PROJECT_ROOT

    starter_code = ("import sys, time; from pathlib import Path; from benchmarks.server_process import ServerProcess; "
                    "p = ServerProcess('Sleeper', [sys.executable, '-c', 'import time; time.sleep(600)'], "
                    f"Path({str(tmp_path / 'sleeper.log')!r})).start(); print(p.pid, flush=True); time.sleep(600)")
    starter = subprocess.Popen([sys.executable, "-c", starter_code], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                               text=True)
    server_pid = int(starter.stdout.readline())
    os.kill(server_pid, 0)  # running
    starter.send_signal(signal.SIGKILL)
    starter.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive(server_pid):
        time.sleep(0.2)
    assert not _alive(server_pid)


def _alive(pid: int) -> bool:
    from pathlib import Path

    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class LowestFreePortSockets:
    """A socket module whose bind to port 0 gets the lowest port not held by an open socket: the kernel may hand out
    a port just closed again, and this one always does."""

    def __init__(self):
        self.held: set[int] = set()
        outer = self

        class Socket:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                outer.held.discard(self.port)

            def bind(self, address):
                self.port = min(set(range(40000, 40010)) - outer.held)
                outer.held.add(self.port)

            def getsockname(self):
                return ("127.0.0.1", self.port)

        self.socket = Socket


def test_free_ports_picked_together_all_differ(monkeypatch):
    monkeypatch.setattr(server_process, "socket", LowestFreePortSockets())
    assert server_process.free_port() == server_process.free_port() == 40000  # one at a time: the same port again
    assert server_process.free_ports(4) == [40000, 40001, 40002, 40003]
    assert server_process.socket.held == set()  # none is left open


SLOW = "tritonserver was not ready after 300 s.\nI1128 model 'preprocessing' loading"
TAKEN = "tritonserver exited with code 1 before it was ready.\nfailed to start HTTP service: port already in use"


def failing(*errors: str):
    """A start() that raises LaunchError(error) for each of `errors` in turn, then returns its ports."""
    calls = []

    def start(*ports):
        calls.append(ports)
        if len(calls) <= len(errors):
            raise LaunchError(errors[len(calls) - 1])
        return "server"

    return start, calls


@pytest.mark.parametrize("errors", [(SLOW,), (TAKEN, TAKEN), (TAKEN, SLOW, TAKEN)])
def test_a_start_that_may_pass_next_time_is_tried_again_on_new_ports(errors):
    start, calls = failing(*errors)
    ports, server = on_free_ports(start)
    assert server == "server" and list(ports) == list(calls[-1]) and len(calls) == len(errors) + 1
    assert len({tuple(c) for c in calls}) == len(calls)  # new ports each time


@pytest.mark.parametrize(("errors", "tries"), [((SLOW, SLOW), 2), ((TAKEN,) * 3, 3),
                                               (("tritonserver exited with code 1: no such model",), 1)])
def test_a_start_that_keeps_failing_or_fails_for_good_reason_raises(errors, tries):
    start, calls = failing(*errors)
    with pytest.raises(LaunchError, match=errors[-1].splitlines()[0][:30]):
        on_free_ports(start)
    assert len(calls) == tries
