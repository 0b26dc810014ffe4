"""The Build page's API (app/web/pages/build_api.py): plan, run, status and cancel by field name, with the page's
access check and messages."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from app.context import AppConfig, AppContext
from app.web.pages.build_api import BuildApi, form_values
from app.web.pages.build_handlers import BuildHandlers
from tests.unit.app.web.test_build_page import service

TOKEN = "hf_apiTOKEN77"


def _api(tmp_path) -> BuildApi:
    ctx = AppContext(AppConfig(auth=(("admin", "pw"),), workspace=(str(tmp_path),)))
    return BuildApi(BuildHandlers(ctx, service(tmp_path)))


def _admin() -> gr.Request:
    return gr.Request(username="admin", headers={}, cookies={})


def _settings(tmp_path, **more) -> dict:
    return {"family": "llava-1.5", "model_id": "llava-hf/llava-1.5-7b-hf",
            "trtllm_root": str(tmp_path / "TensorRT-LLM"), **more}


def test_a_plan_from_a_model_id_downloads_first_and_converts_the_download(tmp_path):
    plan = _api(tmp_path).build_plan(_settings(tmp_path), _admin())
    folder = tmp_path / "models" / "llava-hf--llava-1.5-7b-hf"
    lines = plan["script"].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("# [1/"))
    assert "Download llava-hf/llava-1.5-7b-hf" in lines[first]
    assert f"--model-id llava-hf/llava-1.5-7b-hf --revision main --dest {folder}" in lines[first + 1]
    assert f"--model_dir {folder} " in plan["script"] and "first step downloads" in plan["summary"]


def test_fields_left_out_keep_the_familys_defaults_and_given_ones_win(tmp_path):
    values = form_values({"family": "vila", "max_batch_size": 2})
    assert 2 in values and 4 in values  # the batch given; VILA's 4 images per request kept


@pytest.mark.parametrize("settings, words", [
    ({"model_id": "a/b"}, "Give the model family as settings[\"family\"]"),
    ({"family": "llava-9"}, "one of: "),
    ({"family": "llava-1.5", "max_batch": 4}, "Unknown Build settings: max_batch. The settings are: family,"),
])
def test_bad_settings_get_one_sentence(tmp_path, settings, words):
    with pytest.raises(gr.Error) as refused:
        _api(tmp_path).build_plan(settings, _admin())
    assert words in str(refused.value)


def test_a_folder_outside_the_workspace_is_refused(tmp_path):
    with pytest.raises(gr.Error) as refused:
        _api(tmp_path).build_plan(_settings(tmp_path, out="/etc/builds"), _admin())
    assert "/etc/builds" in str(refused.value)


def test_without_a_login_nothing_is_planned_or_run(tmp_path):
    api, stranger = _api(tmp_path), gr.Request(headers={}, cookies={})
    for call in (lambda: api.build_plan(_settings(tmp_path), stranger),
                 lambda: api.build_run(_settings(tmp_path), None, stranger),
                 lambda: api.build_status("j1", stranger), lambda: api.build_cancel("j1", stranger)):
        with pytest.raises(gr.Error):
            call()
    assert api.handlers.service.store.list() == []


def test_run_status_and_cancel_a_job_and_the_token_is_never_returned(tmp_path, monkeypatch):
    api = _api(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: the download fails, nothing leaves
    started = api.build_run(_settings(tmp_path), TOKEN, _admin())
    status = api.build_status(started["job"], _admin())
    assert status["id"] == started["job"] and status["family"] == "llava-1.5" and "steps" in status
    cancelled = api.build_cancel(started["job"], _admin())
    assert cancelled["id"] == started["job"]
    api.handlers.service.store.get(started["job"]).wait(timeout=60)
    for answer in (started, status, cancelled, api.build_status(started["job"], _admin())):
        assert TOKEN not in json.dumps(answer, default=str)
    with pytest.raises(gr.Error) as unknown:
        api.build_status("no-such-job", _admin())
    assert "There is no build job 'no-such-job'" in str(unknown.value)
