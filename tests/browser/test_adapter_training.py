"""Training an adapter in the Adapters tab of the CPU demo (Debian's Chromium): upload three style pairs, train a
few steps on one core, see the loss plotted and the adapter check, then pick the adapter in Chat and Compare
without a restart."""

from __future__ import annotations

import json
import time

import pytest

from tests.browser.chat_helpers import wait_for_uploads
from tests.browser.plot_helpers import x_labels_reach
from tests.lora_training_helpers import PIRATE_PAIRS, app_on_own_adapters

TRAIN_TIMEOUT_MS = 300_000  # a few steps on one core take well under a minute idle; a loaded 2-core machine more


@pytest.fixture
def training_app(tmp_path, triton, cpu_model_dir, browser_context):
    """The whole app against the session's tritonserver, on an adapters folder of its own (a copy of pirate)."""
    with app_on_own_adapters(tmp_path, triton) as (ctx, url, folder):
        page = browser_context.new_page()
        page.goto(ctx.access.url(url))
        page.wait_for_selector("#chat-input textarea")
        yield page, folder, tmp_path
        page.close()


def options(page, element_id: str) -> set[str]:
    """Every choice the dropdown lists when opened. The choices are read afresh when it gets focus, and that
    update redraws the list, so it is let in first; options are read whether or not they fit in the window."""
    page.click(f"#{element_id} input")
    page.wait_for_timeout(1_000)
    listed = page.locator("li[role=option]")
    listed.first.wait_for(state="attached")
    names = {o.get_attribute("aria-label") for o in listed.all()}
    page.keyboard.press("Escape")
    page.locator("body").click(position={"x": 5, "y": 5})  # blur, so the next dropdown opens afresh
    return names


def test_train_a_style_adapter_and_pick_it_in_chat_and_compare(training_app):
    page, folder, tmp_path = training_app
    data = tmp_path / "three-pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in PIRATE_PAIRS[:3]))

    page.get_by_role("tab", name="Adapters").click()
    page.click("#train-section button:has-text('Train an adapter')")
    page.wait_for_selector("#train-name textarea")  # the section opened
    assert "1 thread(s)" in page.inner_text("#train-section")  # says it keeps to one core
    page.fill("#train-name textarea", "arr-style")
    page.set_input_files("#train-data input[type=file]", str(data))
    wait_for_uploads(page, "#train-data", ["three-pairs.jsonl"])
    page.fill("#train-steps input", "4")
    page.fill("#train-lr input", "0.01")  # a strong style in 4 steps, so the greedy probe changes
    started = time.monotonic()
    page.click("#train-start")
    page.wait_for_selector("#train-figures:has-text('Step')", timeout=TRAIN_TIMEOUT_MS)  # progress while it runs
    page.wait_for_selector("#train-result:has-text('Trained arr-style')", timeout=TRAIN_TIMEOUT_MS)
    seconds = time.monotonic() - started
    result = page.inner_text("#train-result")
    print(f"\n3 pairs, 4 steps in the browser: {seconds:.0f} s; {result}")
    assert "Check: Adapter 'arr-style' is applied" in result, result
    assert page.get_attribute("#train-progress", "value") == "4"
    assert x_labels_reach(page, 4) == ["1", "2", "3", "4"]  # the loss plot: one label a step, whole numbers
    assert (folder / "arr-style" / "adapter_model.safetensors").is_file()
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".training")) == []
    deadline = time.monotonic() + 30
    while "arr-style" not in page.inner_text("#adapter-table") and time.monotonic() < deadline:
        time.sleep(0.2)  # the table is updated in the event after the training's
    assert "arr-style" in page.inner_text("#adapter-table")

    page.get_by_role("tab", name="Chat").click()
    assert {"arr-style", "pirate"} <= options(page, "adapter")
    page.get_by_role("tab", name="Compare").click()
    assert {"arr-style", "pirate"} <= options(page, "compare-adapter-2")


def open_train_section(page) -> None:
    page.get_by_role("tab", name="Adapters").click()
    page.click("#train-section button:has-text('Train an adapter')")
    page.wait_for_selector("#train-name textarea")  # the section opened


def type_pairs(page, pairs) -> None:
    """Type prompt/response pairs into the table's cells the way a person does (double-click, type, Enter)."""
    for row, pair in enumerate(pairs):
        for column, text in enumerate(pair):
            cell = page.locator(f"#train-pairs [data-testid=cell-{row}-{column}]")
            cell.dblclick()
            editor = cell.locator("textarea")
            editor.wait_for()
            editor.fill(text)
            editor.press("Enter")
    for row, pair in enumerate(pairs):  # every cell kept what was typed
        for column, text in enumerate(pair):
            shown = page.locator(f"#train-pairs [data-testid=cell-{row}-{column}] span[data-editable]")
            assert shown.inner_text().strip() == text  # the cell's text, not its menu button


def hidden_entries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_pairs_typed_in_the_table_train_for_two_steps(training_app):
    page, folder, _tmp_path = training_app
    open_train_section(page)
    page.fill("#train-name textarea", "typed-style")
    type_pairs(page, PIRATE_PAIRS[:3])
    page.fill("#train-steps input", "2")
    page.fill("#train-lr input", "0.01")
    started = time.monotonic()
    page.click("#train-start")
    page.wait_for_selector("#train-result:has-text('Trained typed-style')", timeout=TRAIN_TIMEOUT_MS)
    result = page.inner_text("#train-result")
    print(f"\n3 typed pairs, 2 steps in the browser: {time.monotonic() - started:.0f} s; {result}")
    assert "over 2 steps" in result and "Check:" in result, result
    assert (folder / "typed-style" / "adapter_model.safetensors").is_file() and hidden_entries(folder) == []


def test_cancel_in_the_browser_keeps_nothing(training_app):
    page, folder, _tmp_path = training_app
    open_train_section(page)
    page.fill("#train-name textarea", "never-kept")
    type_pairs(page, PIRATE_PAIRS[:2])
    page.fill("#train-steps input", "100")
    assert page.locator("#train-cancel").is_disabled()  # nothing to cancel yet
    page.click("#train-start")
    page.wait_for_selector("#train-figures:has-text('Step')", timeout=TRAIN_TIMEOUT_MS)  # past its first step
    page.click("#train-cancel")
    page.wait_for_selector("#train-cancel-note:has-text('Cancelling the training')")
    page.wait_for_selector("#train-status #train-result:has-text('Training cancelled at step')", timeout=TRAIN_TIMEOUT_MS)
    assert "nothing was written" in page.inner_text("#train-status #train-result")
    assert sorted(p.name for p in folder.iterdir()) == ["pirate"]  # no adapter, no .training-* folder, no lock
    page.wait_for_selector("#train-cancel:disabled")  # nothing left to cancel
