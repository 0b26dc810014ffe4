"""The Compare tab's handlers, called directly (no layout, no browser): a run through the picked columns, Continue
with the cut ones, Stop, and a refusal that leaves the page as it was."""

from __future__ import annotations

import gradio as gr
import pytest

from app.context import AppConfig, AppContext
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
    box, line, resume, rendered, boxes, table = on_pick(2, "french", Finished(), PICKS)
    assert box.value == "" and "french" in line and not resume.interactive
    assert not (rendered.visible or boxes.visible or table.visible)  # another model's table or boxes are gone


CHART = "TITLE | Sales <0x0A> Year | Units <0x0A> 2023 | 12 <0x0A> 2024 | 30"
GROUNDED = "<phrase> A red square</phrase><object><patch_index_0000><patch_index_1023></object> on white."


def test_ended_columns_render_the_table_with_its_csv_and_the_boxes_on_the_picture(tmp_path, monkeypatch):
    from PIL import Image

    from app.web.pages.compare import COLUMNS, RENDERED

    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    picture = tmp_path / "red.png"
    Image.new("RGB", (64, 48), (255, 0, 0)).save(picture)
    ctx = AppContext(AppConfig(), deployment=RecordingDeployment(replies={None: CHART, "pirate": GROUNDED}))
    updates = list(on_run(ctx, {}, SESSION, "Read it.", [(str(picture), None)], 64, PICKS))
    start = 2 * COLUMNS
    views, boxes, tables = (updates[-1][start + k * COLUMNS:start + (k + 1) * COLUMNS] for k in range(RENDERED))
    assert "| Year | Units |" in views[0].value and "| 2024 | 30 |" in views[0].value and views[0].visible
    assert tables[0].visible and open(tables[0].value["path"], encoding="utf-8").read().splitlines()[-1] == "2024,30"
    assert not boxes[0].visible
    assert 'class="grounded-phrase"' in views[1].value and "A red square" in views[1].value
    assert boxes[1].visible and Image.open(boxes[1].value["path"]).size == (64, 48) and not tables[1].visible
    assert not (views[2].visible or boxes[2].visible or tables[2].visible)  # an unused column
    for update in updates[1:-1]:  # while columns stream, nothing re-sends what is already shown
        rendered = update[start:start + RENDERED * COLUMNS]
        assert all(part == gr.skip() or not part.visible for part in rendered)
