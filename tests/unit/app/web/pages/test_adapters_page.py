"""The Adapters tab (app/web/pages/adapters.py) per browser session: a session that chose another server in the chat
sees, adds to and removes from that server's adapters; every other session, and an API caller that chose nothing,
keeps the app's own. Nothing listens at either address: the tab reads the folders and the deployments' lists."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import gradio as gr
import pytest

from app.context import AppConfig, AppContext
from app.core.access import TOKEN_HEADER
from app.web.pages import adapters
from app.web.pages.messages import MSG_BASE_NONE
from setup.paths import PROJECT_ROOT

OTHER_URL = "127.0.0.1:9"


@pytest.fixture
def ctx(tmp_path):
    """The app's own server with pirate in its folder; a Build-launched one with french in another, chosen by 'a'."""
    shutil.copytree(PROJECT_ROOT / "adapters" / "pirate", tmp_path / "own" / "pirate")
    shutil.copytree(PROJECT_ROOT / "adapters" / "french", tmp_path / "other" / "french")
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1", adapters_dir=str(tmp_path / "own"),
                               workspace=(str(tmp_path),)))
    ctx.triton_server("build", "twin", OTHER_URL, adapters_dir=str(tmp_path / "other"))
    ctx.servers.choose("a", "build")
    return ctx


def request(ctx, session: str) -> SimpleNamespace:
    return SimpleNamespace(headers={TOKEN_HEADER: ctx.access.token}, cookies={}, username=None, session_hash=session)


def names(rows) -> list[str]:
    return [row[0] for row in rows]


def test_each_session_sees_the_adapters_of_the_server_it_chose(ctx, tmp_path):
    line, rows, to_remove, to_check = adapters.shown(ctx.for_session("a"))
    assert f"at `{OTHER_URL}`" in line and f"`{tmp_path / 'other'}`" in line
    assert names(rows) == ["french"]
    assert to_remove.choices == [("french", "french")] and to_check.choices == [("french", "french")]
    line, rows, to_remove, _ = adapters.shown(ctx.for_session("b"))  # another session: the app's own
    assert "at `127.0.0.1:1`" in line and f"`{tmp_path / 'own'}`" in line and names(rows) == ["pirate"]
    assert to_remove.choices == [("pirate", "pirate")]


def test_a_picked_name_is_kept_while_the_sessions_server_lists_it(ctx):
    _, _, to_remove, to_check = adapters.shown(ctx.for_session("a"), "pirate", "french")
    assert to_remove.value is None and to_check.value == "french"


def test_remove_and_check_name_the_sessions_adapters(ctx, tmp_path):
    view = ctx.for_session("a")
    row, _, problem = adapters.on_ask_remove(view, "pirate")
    assert row.visible is False and "the adapters are: french" in problem
    assert "the adapters are: french" in adapters.on_check(view, "pirate")
    row, question, _ = adapters.on_ask_remove(view, "french")
    assert row.visible is True and str(tmp_path / "other" / "french") in question
    rows, message, to_remove = adapters.on_remove(view, "french")
    assert message == "Removed **french**." and rows == [] and to_remove.choices == []
    assert not (tmp_path / "other" / "french").exists() and (tmp_path / "own" / "pirate").is_dir()
    assert ctx.adapters.names() == ["pirate"]


def test_an_adapter_added_in_a_session_goes_to_its_servers_folder(ctx, tmp_path):
    shutil.copytree(PROJECT_ROOT / "adapters" / "french", tmp_path / "work" / "mine")
    rows, message, _ = adapters.on_add_folder(ctx.for_session("a"), str(tmp_path / "work" / "mine"), "")
    assert "Added **mine**" in message and names(rows) == ["french", "mine"]
    assert (tmp_path / "other" / "mine").is_dir() and not (tmp_path / "own" / "mine").exists()
    assert names(adapters.table_rows(ctx.for_session("b"))) == ["pirate"]


def wired(ctx) -> gr.Blocks:
    with gr.Blocks() as blocks:
        with gr.Tabs():
            with gr.Tab(adapters.TITLE, id="adapters") as tab:
                adapters.build(ctx, blocks, tab)
    return blocks


def endpoint(blocks: gr.Blocks, api_name: str):
    return next(f.fn for f in blocks.fns.values() if f.api_name == api_name)


def test_the_endpoints_keep_their_names_and_answer_for_the_callers_session(ctx):
    blocks = wired(ctx)
    listed = endpoint(blocks, "list_adapters")
    rows, message, _ = listed(request(ctx, "a"))
    assert names(rows) == ["french"] and message == ""
    rows, _, _ = listed(request(ctx, "api-caller"))  # a session that chose nothing: the app's own
    assert names(rows) == ["pirate"]
    assert "the adapters are: french" in endpoint(blocks, "check_adapter")("nope", request(ctx, "a"))
    _, message, _ = endpoint(blocks, "remove_adapter")("french", request(ctx, "b"))
    assert "the adapters are: pirate" in message  # b's server has no french: nothing removed
    assert {"add_adapter_folder", "add_adapter_zip"} <= {f.api_name for f in blocks.fns.values()}


def test_the_page_load_and_the_tabs_selection_show_the_sessions_server(ctx):
    blocks = wired(ctx)
    events = [f for f in blocks.fns.values() if any(t[1] in ("load", "select") for t in f.targets)]
    assert {t[1] for f in events for t in f.targets} >= {"load", "select"}
    assert {f.fn.__name__ for f in events} == {"shown_now", "base_shown"}
    base_shown = next(f.fn for f in events if f.fn.__name__ == "base_shown")
    # no base known (not the demo, no tokenizer folder) for either session: the box says what to give
    assert base_shown(request(ctx, "a")).placeholder == base_shown(request(ctx, "b")).placeholder == MSG_BASE_NONE
    for fn in {f.fn for f in events if f.fn.__name__ == "shown_now"}:
        line, rows, _, _ = fn(None, None, request(ctx, "a"))
        assert f"at `{OTHER_URL}`" in line and names(rows) == ["french"]
        line, rows, _, _ = fn(None, None, request(ctx, "b"))
        assert "at `127.0.0.1:1`" in line and names(rows) == ["pirate"]


def test_without_access_nothing_is_removed(ctx, tmp_path):
    stranger = SimpleNamespace(headers={TOKEN_HEADER: "wrong"}, cookies={}, username=None, session_hash="a")
    with pytest.raises(gr.Error):
        endpoint(wired(ctx), "remove_adapter")("french", stranger)
    assert (tmp_path / "other" / "french").is_dir()
