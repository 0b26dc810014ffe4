"""The Adapters tab's Train handlers (app/web/pages/adapter_training.py): access checked in the handler, refusals
as one message, uploads only from Gradio's folder, a table of pairs trained with progress and a final check, for the
server the browser session chose (its adapters folder and deployment), as the tab's Add does."""

from __future__ import annotations

import html
from types import SimpleNamespace

import gradio as gr
import pandas as pd
import pytest

from app.adapters.training import TrainingJob
from app.context import AppConfig, AppContext
from app.core.access import TOKEN_HEADER
from app.web.pages.adapter_training import (
    LABELLED_STEPS,
    base_box,
    cancel_button,
    loss_plot,
    resolve_base,
    train_handlers,
)
from app.web.pages.messages import MSG_UPLOAD_ONLY
from tests.lora_training_helpers import PIRATE_PAIRS, write_tiny_base


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, cpu_model_dir):
    return write_tiny_base(tmp_path_factory.mktemp("tiny-base"), cpu_model_dir)


@pytest.fixture
def ctx(tmp_path, tiny_base):
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1", adapters_dir=str(tmp_path / "adapters"),
                               workspace=(str(tmp_path),)))
    ctx.training.default_base = tiny_base
    return ctx


def request(ctx, token: str | None = None, session: str = "s"):
    return SimpleNamespace(headers={TOKEN_HEADER: token or ctx.access.token}, cookies={}, username=None,
                           session_hash=session)


def pairs(count=3):
    return pd.DataFrame(PIRATE_PAIRS[:count], columns=["prompt", "response"])


def args(name="mine", base="", upload=None, table=None, steps=3):
    return [name, base, upload, pairs() if table is None else table, 8, steps, 0.05, 256, ["q_proj", "v_proj"]]


def test_without_access_nothing_runs(ctx, tmp_path):
    on_train, on_cancel = train_handlers(ctx)
    with pytest.raises(gr.Error, match="launch token"):
        next(on_train(*args(), request(ctx, token="wrong")))
    with pytest.raises(gr.Error, match="launch token"):
        on_cancel(request(ctx, token="wrong"))
    with pytest.raises(gr.Error, match="needs a request"):
        next(on_train(*args(), None))
    assert ctx.training.current() is None and not (tmp_path / "adapters").exists()


def test_trains_the_table_with_progress_and_checks_the_adapter(ctx, tmp_path):
    on_train, _ = train_handlers(ctx)
    updates = list(on_train(*args(), request(ctx)))
    status, plot = updates[-1]
    status = html.unescape(status)
    assert "✅ Trained mine in" in status and "Check: The adapter check for 'mine' could not run" in status
    assert [step for step, _loss in plot.value["data"]] == ["1", "2", "3"] and 'value="3" max="3"' in status
    assert isinstance(updates[0][1], pd.DataFrame)  # a training's first plot update is its value alone
    assert (tmp_path / "adapters" / "mine" / "adapter_config.json").is_file()
    assert "mine" in ctx.deployment.adapter_names()  # the chat dropdown and Compare list it now


def test_a_session_on_another_server_trains_into_that_servers_folder(ctx, tmp_path):
    """A Build-listed server with an adapters folder of its own, chosen by session 'a': the adapter lands in that
    folder, that server lists it and the message names it; the app's own folder and server stay without it."""
    other = tmp_path / "other"
    other.mkdir()
    ctx.triton_server("build", "twin at 127.0.0.1:9", "127.0.0.1:9", adapters_dir=str(other))
    ctx.servers.choose("a", "build")
    on_train, _ = train_handlers(ctx)
    status = html.unescape(list(on_train(*args(name="theirs"), request(ctx, session="a")))[-1][0])
    assert "✅ Trained theirs in" in status and f"Written to {other}; server: twin at 127.0.0.1:9." in status
    assert (other / "theirs" / "adapter_config.json").is_file() and not (tmp_path / "adapters" / "theirs").exists()
    assert "theirs" in ctx.for_session("a").deployment.adapter_names()
    assert "theirs" not in ctx.deployment.adapter_names()
    assert "theirs" not in ctx.for_session("b").deployment.adapter_names()
    # the name is taken in that folder, not in the app's own
    updates = list(on_train(*args(name="theirs"), request(ctx, session="a")))
    assert len(updates) == 1 and "An adapter named 'theirs' exists already" in html.unescape(updates[0][0])


def test_a_session_on_a_built_server_starts_from_that_servers_checkpoint(ctx, tmp_path, tiny_base):
    """A Build deployment listed with its own checkpoint (tokenizer_dir) and chosen by session 'a': an empty base box
    means that checkpoint for 'a' (the box's placeholder says so), and the app's own base for session 'b'."""
    built = tmp_path / "built-checkpoint"
    built.mkdir()
    ctx.triton_server("build", "built at 127.0.0.1:9", "127.0.0.1:9", tokenizer_dir=str(built))
    ctx.servers.choose("a", "build")
    assert resolve_base(ctx, "", ctx.for_session("a")) == built
    assert resolve_base(ctx, "  ", ctx.for_session("b")) == tiny_base
    assert base_box(ctx, ctx.for_session("a")).placeholder == str(built)
    assert base_box(ctx, ctx.for_session("b")).placeholder == str(tiny_base)
    # a twin keeps the app's tokenizer: the app's own base
    ctx.triton_server("build", "twin at 127.0.0.1:9", "127.0.0.1:9", tokenizer_dir=ctx.config.tokenizer_dir)
    assert resolve_base(ctx, "", ctx.for_session("a")) == tiny_base


@pytest.mark.parametrize(("changes", "expected"), [
    ({"name": "bad name"}, "Adapter name 'bad name' is not allowed"),
    ({"table": pd.DataFrame([["", ""]], columns=["prompt", "response"])}, "The dataset holds 0 pair(s)"),
    ({"table": pd.DataFrame([["q", ""]], columns=["prompt", "response"])}, "Pair 1 has a prompt or a response"),
    ({"steps": 5000}, "Steps must be a whole number from 1 to 300, got 5000."),
    ({"base": "/etc"}, "The base model folder '/etc' is outside the folders this app may use"),
    ({"upload": "/etc/passwd"}, MSG_UPLOAD_ONLY),
])
def test_refusals_are_one_message(ctx, tmp_path, changes, expected):
    on_train, _ = train_handlers(ctx)
    updates = list(on_train(*args(**changes), request(ctx)))
    assert len(updates) == 1 and "⚠️" in updates[0][0] and expected in html.unescape(updates[0][0])
    assert ctx.training.current() is None


def test_an_uploaded_jsonl_is_read(ctx, tmp_path, monkeypatch):
    from app.web.pages import adapter_training

    upload = tmp_path / "uploads" / "style.jsonl"
    upload.parent.mkdir()
    upload.write_text('{"prompt": "Hi?"}\n')
    monkeypatch.setattr(adapter_training, "is_uploaded", lambda path: str(path).startswith(str(upload.parent)))
    on_train, _ = train_handlers(ctx)
    (status, _), = list(on_train(*args(upload=str(upload)), request(ctx)))
    assert "Line 1 of 'style.jsonl' needs" in html.unescape(status)


def job_of(steps: int, losses: int) -> TrainingJob:
    return TrainingJob(name="mine", steps=steps, pairs=3, where="here",
                       losses=[(step, 3.0 - step / 100) for step in range(1, losses + 1)])


def test_few_steps_are_categories_and_many_a_numeric_axis_over_every_step():
    short = loss_plot(job_of(LABELLED_STEPS, 3))
    assert short.value["datatypes"]["step"] == "nominal" and short.x_lim is None
    assert [step for step, _loss in short.value["data"]] == ["1", "2", "3"]
    long = loss_plot(job_of(LABELLED_STEPS + 1, 3))
    assert long.value["datatypes"]["step"] == "quantitative" and long.x_lim == [1, LABELLED_STEPS + 1]
    assert [step for step, _loss in long.value["data"]] == [1, 2, 3]
    assert loss_plot(job_of(300, 0)).value["datatypes"]["step"] == "quantitative"  # before its first step too


def test_cancel_is_live_only_while_a_training_runs(ctx):
    assert cancel_button(ctx).interactive is False  # none has run
    assert cancel_button(ctx).variant == "secondary"  # grey when off: it does not look like a live Cancel
    job = job_of(3, 1)
    ctx.training.current = lambda: job
    assert cancel_button(ctx).interactive is True and cancel_button(ctx).variant == "stop"
    job.finished.set()
    assert cancel_button(ctx).interactive is False
