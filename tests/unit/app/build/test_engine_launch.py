"""The Build page's server: Stop while it is still starting wins, and a taken port writes nothing."""

from __future__ import annotations

import socket
import threading
import time

from app.build import engine as logic
from setup.launcher import LaunchError
from tests.build_standins import make_checkpoint


class FakeProcess:
    def __init__(self):
        self.stopped = threading.Event()

    def is_running(self) -> bool:
        return not self.stopped.is_set()

    def stop(self) -> None:
        self.stopped.set()


def test_stop_while_starting_stops_the_server_that_comes_up_after():
    deployment, release, process = logic.LaunchedTriton(), threading.Event(), FakeProcess()

    def prepare():
        release.wait(10)
        return process

    assert deployment.start(prepare) and deployment.state == "starting"
    deployment.stop()
    assert deployment.state == "stopped"
    release.set()
    assert process.stopped.wait(5), "the server that came up after Stop must be stopped"
    assert deployment.state == "stopped" and deployment.process is None and deployment.grpc_url is None


def test_failed_start_after_stop_keeps_the_stopped_state():
    deployment, release = logic.LaunchedTriton(), threading.Event()

    def prepare():
        release.wait(10)
        raise LaunchError("port taken")

    deployment.start(prepare)
    deployment.stop()
    release.set()
    assert deployment.wait(5) == "stopped" and deployment.message == "Triton stopped."


def test_deploy_plan_on_a_taken_port_starts_on_free_ones(tmp_path, monkeypatch):
    """`make demo` holds 8000-8002 beside the Build page: its launch takes free ports instead of failing."""
    import setup.launcher
    import setup.repo.writer

    started = []
    monkeypatch.setattr(setup.repo.writer, "write_repository", lambda config, folder, force: folder)
    monkeypatch.setattr(setup.launcher, "find_tritonserver", lambda: "tritonserver")
    monkeypatch.setattr(setup.launcher, "start_triton", lambda binary, options, *rest, **kw: started.append(options))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        form = {"family": "llava-1.5", "checkpoint": str(make_checkpoint(tmp_path / "ckpt")), "trtllm_version": "0.19",
                "out": str(tmp_path / "o"), "dtype": "float16", "tp": 1, "pp": 1, "max_batch_size": 8,
                "max_input_len": 2048, "max_seq_len": 2560, "max_num_images": 1, "trtllm_root": "/opt/t",
                "grpc_port": port}
        plan = logic.plan_view(form, {}).plan
        assert plan is not None and plan.deployment and plan.config.grpc_port == port
        logic.deploy_plan(plan)
    (options,) = started
    ports = (options.http_port, options.grpc_port, options.metrics_port)
    assert port not in ports and len(set(ports)) == 3


class SlowProcess(FakeProcess):
    """A server whose shutdown takes a while (tritonserver drains its models for seconds)."""

    def __init__(self, release: threading.Event):
        super().__init__()
        self.release = release
        self.opts = type("Opts", (), {"grpc_port": 1})()

    def stop(self) -> None:
        self.release.wait(10)
        super().stop()


def test_stop_without_waiting_says_stopping_at_once_and_stopped_after():
    deployment, release = logic.LaunchedTriton(), threading.Event()
    process = SlowProcess(release)
    assert deployment.start(lambda: process) and deployment.wait(5) == "ready"
    deployment.stop(wait=False)  # returns while the process is still shutting down
    assert deployment.state == "stopping" and deployment.message == logic.MSG_STOPPING
    assert deployment.grpc_url is None and not deployment.start(lambda: FakeProcess())  # its ports are not free yet
    release.set()
    assert process.stopped.wait(5)
    deadline = time.monotonic() + 5
    while deployment.state != "stopped" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert deployment.state == "stopped" and deployment.message == logic.MSG_STOPPED
