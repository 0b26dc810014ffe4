"""The Gradio API's one access guard (app.api.gradio_api.require_access), as add_server and the Arena's writes and
export call it: without the launch token or a login they refuse with the access policy's sentence (a gr.Error, no
traceback) and run nothing; a call with no request is refused with its own sentence; the leaderboard stays open."""

from __future__ import annotations

import gradio as gr
import pytest

from app.api.arena_api import register_arena
from app.api.gradio_api import register, require_access
from app.api.messages import MSG_NO_REQUEST
from app.arena.service import Arena
from app.context import AppConfig, AppContext
from app.core.access import TOKEN_HEADER
from app.core.messages import MSG_NEED_LOGIN, MSG_NEED_TOKEN
from tests.compare_fakes import RecordingDeployment

GUARDED = {  # each guarded endpoint with arguments it would otherwise act on
    "add_server": {"address": "http://127.0.0.1:1/v1"},
    "arena_start": {"prompt": "Hi"},
    "arena_ask": {"battle": "b1", "prompt": "Hi"},
    "arena_vote": {"battle": "b1", "vote": "A"},
    "arena_export": {"format": "jsonl"},
    "arena_prompt_set": {"jsonl": None},
    "arena_next": {"prompt_set": "shapes"},
}


@pytest.fixture
def app(tmp_path):
    """The app's context on loopback without logins (the launch token grants access), a fake deployment, and every
    Gradio API endpoint by name."""
    deployment = RecordingDeployment(known=("pirate",))
    ctx = AppContext(AppConfig(host="127.0.0.1", workspace=(str(tmp_path),)), deployment=deployment)
    arena = Arena(f"sqlite:///{tmp_path / 'arena.sqlite3'}", tmp_path)
    with gr.Blocks() as blocks:
        register(ctx)
        register_arena(ctx, arena)
    yield ctx, deployment, {block.api_name: block.fn for block in blocks.fns.values()}
    arena.close()


def stranger() -> gr.Request:
    return gr.Request(username=None, headers={}, cookies={})


def refusal(fn, **kwargs) -> str:
    with pytest.raises(gr.Error) as caught:
        result = fn(**kwargs)
        if not isinstance(result, dict | str):
            list(result)
    return caught.value.message


def test_the_guard_passes_the_token_and_refuses_without_it(app):
    ctx, _, _ = app
    assert require_access(ctx, gr.Request(username=None, headers={TOKEN_HEADER: ctx.access.token}, cookies={})) is None
    for request, sentence in ((stranger(), MSG_NEED_TOKEN), (None, MSG_NO_REQUEST)):
        with pytest.raises(gr.Error) as caught:
            require_access(ctx, request)
        assert caught.value.message == sentence and caught.value.print_exception is False


def test_with_logins_a_login_passes_and_no_name_is_refused(tmp_path):
    ctx = AppContext(AppConfig(host="0.0.0.0", auth=(("ann", "pw"),), workspace=(str(tmp_path),)),  # noqa: S104
                     deployment=RecordingDeployment())
    assert require_access(ctx, gr.Request(username="ann", headers={}, cookies={})) is None
    with pytest.raises(gr.Error) as caught:
        require_access(ctx, stranger())
    assert caught.value.message == MSG_NEED_LOGIN.format(host="0.0.0.0")  # noqa: S104


@pytest.mark.parametrize("name", GUARDED)
def test_every_guarded_endpoint_refuses_a_stranger_and_runs_nothing(app, name):
    ctx, deployment, api = app
    assert refusal(api[name], **GUARDED[name], request=stranger()) == MSG_NEED_TOKEN
    assert refusal(api[name], **GUARDED[name], request=None) == MSG_NO_REQUEST
    assert deployment.requests == [] and [s.origin for s in ctx.servers.listed()] == ["app"]


def test_the_token_opens_the_export_and_the_leaderboard_is_open_to_all(app):
    ctx, _, api = app
    token = gr.Request(username=None, headers={TOKEN_HEADER: ctx.access.token}, cookies={})
    assert api["arena_export"](format="jsonl", request=token) == ""
    assert api["arena_leaderboard"](filters={})["votes"] == 0
