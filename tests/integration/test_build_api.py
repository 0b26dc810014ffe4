"""The Build page's API endpoints (gradio_client) against the whole app: a plan from a model id, a job run,
followed and cancelled, the launch token required, and bad settings answered in a sentence."""

from __future__ import annotations

import pytest

from tests.lora_training_helpers import app_on_own_adapters


@pytest.fixture
def served(tmp_path, triton, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no hub: a job's download step fails at once
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
