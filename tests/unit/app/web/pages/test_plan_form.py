"""The engine-free deployment forms' buttons: access checked in the handler, folders outside the workspace
and plan problems refused as messages, write errors shown as a sentence, nothing written otherwise."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pytest

from app.context import AppConfig, AppContext
from app.core.access import TOKEN_HEADER
from app.web.pages.plan_form import plan_form_handlers


@pytest.fixture
def ctx(tmp_path):
    return AppContext(AppConfig(triton_url="127.0.0.1:1", adapters_dir=str(tmp_path / "adapters")))


def request(ctx, token: str | None = None):
    return SimpleNamespace(headers={TOKEN_HEADER: token or ctx.access.token}, cookies={}, username=None)


def handlers(ctx, outside=(), plan="the plan", problems=(), fail=None):
    written = []
    view = SimpleNamespace(summary="summary", text="plan text", plan=plan, problems=list(problems))

    def write(p):
        if fail:
            raise fail
        written.append(p)
        return "started"

    show, write_button = plan_form_handlers(ctx, lambda values: ({"v": values}, list(outside)), lambda raw: view,
                                            write, (OSError,))
    return show, write_button, written


def test_show_and_write_with_access(ctx):
    show, write, written = handlers(ctx)
    assert show(request(ctx), 1, 2) == ("summary", "plan text")
    assert write(request(ctx), 1, 2) == ("summary", "plan text", "started") and written == ["the plan"]


def test_without_the_launch_token_nothing_is_written(ctx):
    _, write, written = handlers(ctx)
    with pytest.raises(gr.Error):
        write(request(ctx, token="wrong"), 1)
    assert written == []


def test_folders_outside_the_workspace_and_plan_problems_are_messages(ctx):
    show, write, written = handlers(ctx, outside=["/etc is outside the workspace."])
    summary, text = show(request(ctx), 1)
    assert "/etc is outside the workspace." in summary and text == ""
    with pytest.raises(gr.Error, match="outside the workspace"):
        write(request(ctx), 1)
    _, write, written2 = handlers(ctx, plan=None, problems=["tp must divide the heads."])
    with pytest.raises(gr.Error, match="tp must divide the heads."):
        write(request(ctx), 1)
    assert written == written2 == []


def test_a_write_error_is_a_sentence(ctx):
    _, write, _ = handlers(ctx, fail=OSError("disk full"))
    with pytest.raises(gr.Error, match="disk full"):
        write(request(ctx), 1)
