"""The Build page's CPU demo button and its build_demo API: the twin of the family chosen in the form (the cpu-ocr
demo, the InternLM-XComposer2 twin, a runner twin), a sentence naming the families with a twin for one without,
the page's access check, and the chat's settings for the server it started (its deployment kind and model).
No tritonserver here: the start is recorded and fails at once (`starts`); tests/browser covers a real start and a
chat with it."""

from __future__ import annotations

import socket

import gradio as gr
import pytest

from app.context import AppConfig, AppContext
from app.deployments.runner.deployment import RunnerDeployment
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.web.messages import MSG_BUILD_SERVER_RUNNING, MSG_TWIN_SERVING, MSG_TWIN_STARTING
from app.web.pages.build_api import BuildApi
from app.web.pages.build_handlers import BuildHandlers
from setup.cpu.messages import MSG_NO_TWIN
from setup.cpu.twins import cpu_twins
from tests.servers import free_port
from tests.unit.app.web.test_build_page import service


@pytest.fixture
def taken_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
def starts(monkeypatch):
    """Each twin start's (ports, deployment), failing at once instead of starting tritonserver."""
    import setup.cpu.demo
    from setup.launcher import LaunchError

    seen = []

    def start(http, grpc, metrics, **options):
        seen.append(((http, grpc, metrics), options["deployment"]))
        raise LaunchError(f"stand-in: not started on {http}/{grpc}/{metrics}")

    monkeypatch.setattr(setup.cpu.demo, "start_demo_triton", start)
    return seen


def _handlers(tmp_path) -> BuildHandlers:
    ctx = AppContext(AppConfig(auth=(("admin", "pw"),), workspace=(str(tmp_path),)))
    return BuildHandlers(ctx, service(tmp_path))


def _admin() -> gr.Request:
    return gr.Request(username="admin", headers={}, cookies={})


def test_the_families_with_a_twin_come_from_the_data():
    twins = cpu_twins()
    assert {"cpu-ocr", "internlm-xcomposer2", "kosmos-2", "fuyu", "video-neva"} <= set(twins)
    assert twins["kosmos-2"].kind == "runner" and twins["kosmos-2"].demo == "kosmos-2"
    assert twins["cpu-ocr"].demo == "engine" and twins["internlm-xcomposer2"].demo == "xcomposer2"
    assert twins["llava-1.5"].kind == "engine" and twins["llava-1.5"].demo == "llava-1.5"  # a template twin
    assert twins["internlm-xcomposer2"].model_adapter  # the twin's Partial LoRA, from xcomposer2_demo.yaml


def test_every_twin_is_one_the_command_line_starts():
    from app.__main__ import build_parser, config_from_args, demo_repository

    for twin in cpu_twins().values():
        args = build_parser().parse_args(["--demo", "--twin", twin.demo])
        assert args.demo and args.twin == twin.demo and demo_repository(args) == twin.demo
        assert config_from_args(args, "127.0.0.1:1", None).deployment == twin.kind


def test_a_family_without_a_twin_gets_a_sentence_naming_those_with_one(tmp_path):
    handlers = _handlers(tmp_path)
    with pytest.raises(gr.Error) as refused:
        handlers.on_demo("no-such-family", 8000, 8001, _admin())
    assert refused.value.message == MSG_NO_TWIN.format(family="no-such-family", known=", ".join(sorted(cpu_twins())))
    assert handlers.service.deployment.state == "stopped"  # nothing started


def test_the_chosen_familys_twin_is_started_and_the_page_says_which(tmp_path, taken_port, starts):
    handlers = _handlers(tmp_path)
    grpc = free_port()
    message = handlers.on_demo("kosmos-2", taken_port, grpc, _admin())
    assert message == f"Starting Triton{MSG_TWIN_STARTING.format(family='kosmos-2')}..."
    server = handlers.service.deployment
    assert server.serving == MSG_TWIN_SERVING.format(family="kosmos-2", demo="kosmos-2")
    assert "python -m app --demo --twin kosmos-2" in server.serving
    assert server.chat["deployment"] == "runner" and server.chat["model"] == "multimodal_runner"
    assert server.wait(60) == "failed" and "stand-in: not started" in server.message
    (ports, deployment), = starts
    assert deployment == "kosmos-2" and taken_port not in ports and len(set(ports)) == 3  # free ports instead


def test_the_forms_ports_are_used_while_they_are_free(tmp_path, starts):
    from setup.launcher import port_in_use

    handlers = _handlers(tmp_path)
    http, grpc = free_port(), free_port()
    while grpc + 1 == http or port_in_use(grpc + 1):  # the metrics port is gRPC + 1
        grpc = free_port()
    handlers.on_demo("fuyu", http, grpc, _admin())
    assert handlers.service.deployment.wait(60) == "failed"
    assert starts == [((http, grpc, grpc + 1), "fuyu")]


def test_the_cpu_ocr_and_xcomposer2_twins_keep_the_engine_kind(tmp_path, taken_port, starts):
    handlers = _handlers(tmp_path)
    handlers.on_demo("cpu-ocr", taken_port, free_port(), _admin())
    server = handlers.service.deployment
    assert server.wait(60) == "failed"
    assert server.chat == {"deployment": "engine", "model": AppConfig.model, "adapters_dir": AppConfig.adapters_dir,
                           "model_adapter": None, "tokenizer_dir": AppConfig.tokenizer_dir}
    handlers.on_demo("internlm-xcomposer2", taken_port, free_port(), _admin())
    assert server.wait(60) == "failed"
    twin = cpu_twins()["internlm-xcomposer2"]
    assert server.chat["deployment"] == "engine" and server.chat["model_adapter"] == twin.model_adapter
    assert server.chat["adapters_dir"] == twin.adapters_dir
    assert "--twin xcomposer2" in server.serving  # the command line's name for this twin


def test_a_second_start_while_one_runs_is_refused(tmp_path, taken_port):
    handlers = _handlers(tmp_path)
    handlers.service.deployment.state = "starting"
    with pytest.raises(gr.Error) as refused:
        handlers.on_demo("fuyu", taken_port, taken_port, _admin())
    assert refused.value.message == MSG_BUILD_SERVER_RUNNING


def test_without_a_login_no_twin_starts(tmp_path):
    handlers, stranger = _handlers(tmp_path), gr.Request(headers={}, cookies={})
    api = BuildApi(handlers)
    for call in (lambda: handlers.on_demo("kosmos-2", 8000, 8001, stranger),
                 lambda: api.build_demo("kosmos-2", 8000, 8001, 0, stranger)):
        with pytest.raises(gr.Error):
            call()
    assert handlers.service.deployment.state == "stopped"


def test_the_api_starts_the_twin_and_reports_its_state(tmp_path, taken_port, starts):
    api = BuildApi(_handlers(tmp_path))
    result = api.build_demo("fuyu", taken_port, free_port(), 60, _admin())
    assert result["family"] == "fuyu" and result["state"] == "failed" and result["grpc_url"] is None
    assert "stand-in: not started" in result["message"] and starts[0][1] == "fuyu"
    with pytest.raises(gr.Error) as refused:
        api.build_demo("no-such-family", 8000, 8001, 0, _admin())
    assert "no-such-family has no CPU twin yet" in refused.value.message


def test_a_launched_server_is_listed_with_the_twins_kind_model_and_adapters(tmp_path):
    ctx = AppContext(AppConfig(adapters_dir=str(tmp_path / "mine")))
    ctx.triton_server("build", "twin", "127.0.0.1:9", deployment="runner", model="multimodal_runner")
    view = ctx.for_session("s1") if ctx.servers.choose("s1", "build") else None
    assert isinstance(view.deployment, RunnerDeployment) and view.deployment.client.model == "multimodal_runner"
    assert view.deployment.client.url == "127.0.0.1:9"
    assert isinstance(ctx.deployment, TritonEngineDeployment)  # the app's own, and every other session's, stay
    assert ctx.for_session("s2") is ctx
    twin = cpu_twins()["internlm-xcomposer2"]
    ctx.triton_server("build", "twin", "127.0.0.1:9", deployment="engine", model=AppConfig.model,
                      adapters_dir=twin.adapters_dir, model_adapter=twin.model_adapter)
    view = ctx.for_session("s1")  # the new server of that id replaces the old one for its choosers
    assert isinstance(view.deployment, TritonEngineDeployment)
    assert str(view.adapters.folder) == twin.adapters_dir and view.config.model_adapter == twin.model_adapter
    assert str(ctx.adapters.folder) == str(tmp_path / "mine")
