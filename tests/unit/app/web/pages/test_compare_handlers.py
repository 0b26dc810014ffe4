"""The Compare tab's handlers, called directly (no layout, no browser): a run through the picked columns, Continue
with the cut ones, Stop, and a refusal that leaves the page as it was."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat.context import AppConfig, AppContext
from app.web.labels import COMPARE_NONE
from app.web.pages.compare import OUTPUTS, Finished, on_continue, on_pick, on_run, on_stop
from tests.compare_fakes import RecordingDeployment

SESSION = "session-1"
PICKS = ["base model", "pirate", COMPARE_NONE, COMPARE_NONE]


@pytest.fixture
def ctx() -> AppContext:
    return AppContext(AppConfig(), deployment=RecordingDeployment())


def test_a_run_fills_the_picked_columns_and_keeps_its_end_for_continue(ctx):
    runs = {}
    *_, last = on_run(ctx, runs, SESSION, "Hi", None, 2, PICKS)
    texts, record = last[:4], last[-1]
    assert [t.value for t in texts[:2]] == ["reply from", "reply from"] and texts[2].value == ""
    assert isinstance(record, Finished) and record.cut(PICKS[:2]) == ["base model", "pirate"]
    assert runs == {}  # the run is forgotten once it ended
    *_, more = on_continue(ctx, runs, SESSION, record, 8, PICKS)
    assert [t.value for t in more[:2]] == ["reply from base", "reply from pirate"]
    assert [r.continues for r in ctx.deployment.requests[2:]] == ["reply from", "reply from"]


def test_a_refusal_leaves_every_output_as_it_was(ctx):
    with pytest.warns(UserWarning, match="Pick the base model or at least one adapter"):
        assert list(on_run(ctx, {}, SESSION, "Hi", None, 2, [COMPARE_NONE] * 4)) == [[gr.skip()] * OUTPUTS]


def test_stop_cancels_the_sessions_run_and_a_pick_empties_its_column(ctx):
    ctx.deployment.endless = True
    runs = {}
    updates = on_run(ctx, runs, SESSION, "Hi", None, 2, PICKS)
    next(updates)
    on_stop(runs, SESSION)
    *_, last = updates
    assert all(stream.cancelled for stream in ctx.deployment.opened) and "(stopped)" in last[0].value
    box, line, resume = on_pick(2, "french", Finished(), PICKS)
    assert box.value == "" and "french" in line and not resume.interactive
