"""The Build page's API endpoints (gradio_client) against the whole app: a plan from a model id, a job run,
followed and cancelled, the launch token required, and bad settings answered in a sentence."""

from __future__ import annotations

import pytest

from tests.lora_training_helpers import app_on_own_adapters


@pytest.fixture
def served(tmp_path, triton, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no hub: a job's download step fails at once
    # the jobs list in the test's folder: the user's own list (in the cache under the home folder) stays as it was
    monkeypatch.setattr("setup.jobs.store.default_store_path", lambda: tmp_path / "build_jobs.json")
    with app_on_own_adapters(tmp_path, triton) as served_app:
        yield served_app


def client(url: str, token: str | None):
    from gradio_client import Client

    return Client(url, verbose=False, headers={"X-Launch-Token": token} if token else {})


def test_plan_run_status_and_cancel_through_the_api(served, tmp_path):
    ctx, url, _ = served
    owner = client(url, ctx.access.token)
    settings = {"family": "llava-1.5", "model_id": "llava-hf/llava-1.5-7b-hf",
                "trtllm_root": str(tmp_path / "TensorRT-LLM")}  # inside the workspace, as every folder must be
    plan = owner.predict(settings, api_name="/build_plan")
    assert "setup download --model-id llava-hf/llava-1.5-7b-hf" in plan["script"], plan
    assert str(tmp_path / "models" / "llava-hf--llava-1.5-7b-hf") in plan["script"]
    started = owner.predict(settings, "", api_name="/build_run")
    status = owner.predict(started["job"], api_name="/build_status")
    assert status["id"] == started["job"] and [s["id"] for s in status["steps"]][0] == "download", status
    cancelled = owner.predict(started["job"], api_name="/build_cancel")
    assert cancelled["id"] == started["job"]
    assert started["job"] in (tmp_path / "build_jobs.json").read_text()


def test_without_the_launch_token_nothing_is_planned(served):
    from gradio_client.exceptions import AppError

    _, url, _ = served
    with pytest.raises(AppError) as refused:
        client(url, None).predict({"family": "llava-1.5"}, api_name="/build_plan")
    assert "token" in str(refused.value).lower(), refused.value


def test_unknown_settings_are_named(served):
    from gradio_client.exceptions import AppError

    ctx, url, _ = served
    with pytest.raises(AppError) as refused:
        client(url, ctx.access.token).predict({"family": "llava-1.5", "max_batch": 4}, api_name="/build_plan")
    assert "Unknown Build settings: max_batch" in str(refused.value), refused.value


def test_the_cpu_twin_of_a_family_through_the_api(served):
    """build_demo: a family without a twin is answered with the families that have one, the launch token is
    required, and a twin asked for on a taken port (`make demo` beside it) starts on free ports instead, is listed
    as server "build", and build_stop_server stops it (the browser test chats with one)."""
    import socket

    from gradio_client.exceptions import AppError

    from tests.servers import free_port

    ctx, url, _ = served
    owner = client(url, ctx.access.token)
    with pytest.raises(AppError) as refused:
        owner.predict("no-such-family", 8000, 8001, 0, api_name="/build_demo")
    assert "no-such-family has no CPU twin yet; the families with one are: " in str(refused.value), refused.value
    with pytest.raises(AppError) as refused:
        client(url, None).predict("kosmos-2", 8000, 8001, 0, api_name="/build_demo")
    assert "token" in str(refused.value).lower(), refused.value
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            result = owner.predict("kosmos-2", port, free_port(), 400, api_name="/build_demo")
            assert result["family"] == "kosmos-2" and result["state"] == "ready", result
            assert result["grpc_url"] and f":{port}" not in result["grpc_url"], result
            listed = {s["id"]: s for s in owner.predict(api_name="/list_servers")}
            assert listed["build"]["url"] == result["grpc_url"] and listed["build"]["usable"], listed
        finally:
            stopped = owner.predict(60, api_name="/build_stop_server")
    assert stopped["state"] == "stopped", stopped
    assert not ctx.servers.get("build").usable  # marked stopped: its choosers are back on the app's own
