"""The Compare tab's first column picks: something to compare at once, but on a model whose own adapter takes no
other (InternLM-XComposer2's Partial LoRA) only the base column, which keeps that adapter on; and what a column
says before a run; which columns Continue goes on with, and that it leaves the others as they are."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat.compare import CUT, DONE, ColumnView
from app.context import AppConfig, AppContext
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.web.labels import COMPARE_NONE, COMPARE_UNUSED, adapter_of
from app.web.pages.compare import Finished, column_updates, first_picks, pick_line, state_line
from tests.xcomposer2_fakes import FakeClient, xc2_registry

BASE_WITH_OWN = "base model + xc2-partial (part of the model, always on)"


@pytest.fixture
def context(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))

    def make(**parameters) -> AppContext:
        registry = xc2_registry(tmp_path / "adapters")
        deployment = TritonEngineDeployment(FakeClient(**parameters), registry, model_adapter="xc2-partial")
        return AppContext(AppConfig(adapters_dir=str(tmp_path / "adapters")), deployment=deployment)
    return make


def test_xcomposer2_starts_with_the_base_column_alone(context):
    picks = first_picks(context())
    assert picks == [BASE_WITH_OWN, COMPARE_NONE, COMPARE_NONE, COMPARE_NONE]
    assert adapter_of(picks[0]) is None  # the base column: the deployment adds the model's own adapter


def test_xcomposer2_that_combines_starts_with_its_other_adapters_too(context):
    assert first_picks(context(combines_adapters="true")) == [BASE_WITH_OWN, "pirate", COMPARE_NONE, COMPARE_NONE]


@pytest.mark.parametrize(("pick", "line"), [
    ("base model", "ready: base model"),
    (BASE_WITH_OWN, f"ready: {BASE_WITH_OWN}"),
    ("pirate", "ready: adapter pirate"),
    (COMPARE_NONE, COMPARE_UNUSED),
    (None, COMPARE_UNUSED),
])
def test_a_columns_state_before_a_run_names_what_its_picker_picked(pick, line):
    assert pick_line(pick) == f"<small>{line}</small>"


@pytest.mark.parametrize(("reason", "line"), [
    (CUT, "done · cut at the 2-token limit · 2 tokens · base model"),
    ("stop", "done · 2 tokens · base model"),
    (None, "done · 2 tokens · base model"),
])
def test_a_column_cut_at_the_token_limit_says_so(reason, line):
    assert state_line(ColumnView("Once upon", DONE, "2 tokens · base model", reason), 2) == f"<small>{line}</small>"


CUT_VIEW, ENDED = ColumnView("Once upon", DONE, "2 tokens", CUT), ColumnView("Hello.", DONE, "2 tokens", "stop")


def test_continue_is_for_the_picked_columns_cut_at_the_limit():
    record = Finished("Hi", None, {"base model": CUT_VIEW, "pirate": ENDED, "french": CUT_VIEW})
    assert record.cut(["base model", "pirate", None, "base model"]) == ["base model"]  # french is no longer picked
    assert record.cut(["pirate", None, None, None]) == []
    ended = record.after(["base model"], [ENDED])
    assert ended.cut(["base model", "pirate", "french", None]) == ["french"] and ended.prompt == "Hi"


def test_continue_updates_its_columns_alone_and_a_run_empties_the_others():
    shown = {"pirate": ENDED}
    names = ["base model", "pirate", None, "pirate"]
    continued = column_updates(names, shown, 8, fresh=False)
    texts, states = continued[:4], continued[4:]
    assert [t.value if isinstance(t, gr.Textbox) else None for t in texts] == [None, "Hello.", None, "Hello."]
    assert states[1] == states[3] == "<small>done · 2 tokens</small>"
    assert [texts[0], texts[2], states[0], states[2]] == [gr.skip()] * 4  # left as they are
    fresh = column_updates(names, shown, 8, fresh=True)
    assert [t.value for t in fresh[:4]] == ["", "Hello.", "", "Hello."]
    assert fresh[6] == f"<small>{COMPARE_UNUSED}</small>"
