"""The Build page in Debian's Chromium: a plan before the download, command lines that wrap on a phone, a job
resumed after a reload without the form, a log that follows its tail, "Stopping…" at once after Stop server.

The TensorRT-LLM tools are stand-ins (tests/build_standins.py); the server stopped is a real tritonserver."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from benchmarks.harness import pacing_server
from tests.browser.build_helpers import served_build_page, shown_plan
from tests.browser_tabs import grant_access
from tests.build_standins import make_checkpoint


@pytest.fixture
def build_page(tmp_path, monkeypatch, browser_context):
    """(page, page service, stand-in TensorRT-LLM root, checkpoint): the Build page alone, tools first on PATH."""
    with served_build_page(tmp_path, monkeypatch) as served:
        grant_access(browser_context, served.ctx, served.url)
        page = browser_context.new_page()
        page.goto(served.url)
        page.wait_for_selector("#build-family input")
        yield page, served.service, served.trtllm_root, make_checkpoint(tmp_path / "ckpt")
        served.service.deployment.stop()
        page.close()


def _fill(page, checkpoint: str, out: str, root: str) -> None:
    """LLaVA-1.5 with these folders (the other fields keep the family's defaults)."""
    page.locator("#build-family input").click()
    page.locator("#build-family input").fill("LLaVA-1.5")
    page.get_by_role("option", name="LLaVA-1.5", exact=True).click()
    page.wait_for_function("document.querySelector('#build-family-info').innerText.includes('576 tokens')")
    page.fill("#build-checkpoint textarea", checkpoint)
    page.fill("#build-out textarea", out)
    page.fill("#build-trtllm-root textarea", root)


def _wait_status(page, status: str, timeout: float = 240) -> None:
    page.wait_for_selector(f"#build-status [data-status='{status}']", timeout=timeout * 1000)


@pytest.mark.parametrize("width", [1200, 400])
def test_plan_before_the_download_with_lines_that_wrap(build_page, tmp_path, width):
    page, _, root, _ = build_page
    page.set_viewport_size({"width": width, "height": 1000})
    _fill(page, str(tmp_path / "llava not downloaded yet"), str(tmp_path / "out"), root)
    # no model id: a missing folder would get the download otherwise (the form's rule, MSG_MODEL_SOURCE_RULE)
    page.wait_for_function("document.querySelector('#build-model-id textarea').value !== ''")
    # The family's defaults can come a second time, after the box was emptied, and bring the example model id back
    # (a loaded run showed the plan with the download: the family pick's events answered late). Empty it again then.
    model_id = "document.querySelector('#build-model-id textarea').value"
    for _ in range(3):
        page.fill("#build-model-id textarea", "")
        page.click("#build-show-plan")
        try:
            page.wait_for_function(f"document.querySelector('#build-summary').innerText.includes('does not exist yet')"
                                   f" || {model_id} !== ''")
        except PlaywrightTimeout:  # say what the page showed
            shown = page.evaluate("""() => ({summary: document.querySelector('#build-summary').innerText,
                model_id: document.querySelector('#build-model-id textarea').value,
                family: document.querySelector('#build-family input').value})""")
            raise AssertionError(f"the plan never said the checkpoint does not exist yet; the page showed {shown}") from None
        if page.evaluate(model_id) == "":
            break
    assert "does not exist yet" in page.inner_text("#build-summary"), page.inner_text("#build-summary")
    assert "llava-hf/llava-1.5-7b-hf" in page.inner_text("#build-summary")  # whose shapes the plan used
    # The whole plan is in the box (also the last command), readable after the box's own scroll, and every
    # command line wraps inside it: nothing runs past its right edge or needs a sideways scroll.
    plan = shown_plan(page, "--dry-run")
    assert plan.startswith("#") and "# Warning: Checkpoint" in plan and "build_multimodal_engine.py" in plan
    page.evaluate("() => { const t = document.querySelector('#build-plan textarea'); t.scrollTop = t.scrollHeight; }")
    box = page.locator("#build-plan textarea").bounding_box()
    assert box["x"] + box["width"] <= width and box["height"] > 100
    page.screenshot(path=str(tmp_path / f"plan-{width}.png"), full_page=True)
    page.click("#build-run")  # Run needs the checkpoint itself
    page.wait_for_selector(".toast-body:has-text('does not exist')")
    assert not (tmp_path / "out").exists()


def test_a_cancelled_job_resumes_after_a_reload_without_the_form(build_page, tmp_path, monkeypatch):
    page, page_service, root, ckpt = build_page
    monkeypatch.setenv("STANDIN_DELAY", "3")  # slow enough to cancel in the middle, with many log lines
    _fill(page, str(ckpt), str(tmp_path / "out"), root)
    page.click("#build-run")
    _wait_status(page, "running")
    page.wait_for_function("""() => { const t = document.querySelector('#build-log textarea');
        return t.scrollHeight > t.clientHeight + 40; }""", timeout=120_000)
    seen = page.input_value("#build-log textarea")
    page.wait_for_function("seen => document.querySelector('#build-log textarea').value !== seen", arg=seen,
                           timeout=120_000)  # another update of the box after it overflowed
    page.wait_for_function("""() => { const t = document.querySelector('#build-log textarea');
        return t.scrollHeight - t.scrollTop - t.clientHeight <= 2; }""")  # the newest line in view
    # the conversion finished, so the resume has a step to skip: the first step (the repository dry run) has no
    # outputs and always runs again, and on a busy machine the log can overflow before the conversion ends
    page.wait_for_selector("#build-status li.step-done[data-step='convert']", timeout=120_000)
    page.click("#build-cancel")
    _wait_status(page, "cancelled")

    page.reload()  # the form is back to its defaults
    page.wait_for_selector("#build-family input")
    _wait_status(page, "cancelled")
    assert page.input_value("#build-checkpoint textarea") == ""
    assert "can resume" in page.input_value("#build-jobs input")
    monkeypatch.setenv("STANDIN_DELAY", "0.01")
    page.click("#build-resume")
    _wait_status(page, "done")
    assert page.locator("#build-status li.step-skipped").count() >= 1  # what was done stays done
    assert page.input_value("#build-checkpoint textarea") == str(ckpt)  # the form shows what ran
    assert page.input_value("#build-family input") == "LLaVA-1.5" and "576 tokens" in page.inner_text(
        "#build-family-info")
    assert (tmp_path / "out/visual_engine/model.engine").is_file()
    assert "can resume" not in page.input_value("#build-jobs input")


def test_stop_server_says_stopping_at_once(build_page, tmp_path):
    page, page_service, _, _ = build_page
    with pacing_server(tmp_path / "server") as server:  # a real tritonserver, stopped by the page
        assert page_service.deployment.start(lambda: server.process)
        page.wait_for_selector("#build-server:has-text('Triton ready')")
        # What the server line said, in the order it said it (a MutationObserver sees every state, however short).
        page.evaluate("""() => { window.serverSaid = [];
            const box = document.querySelector('#build-server');
            new MutationObserver(() => window.serverSaid.push(box.innerText)).observe(
                box, {childList: true, subtree: true, characterData: true}); }""")
        page.click("#build-stop-server")
        page.wait_for_selector("#build-server:has-text('Triton stopped.')", timeout=120_000)
        said = page.evaluate("window.serverSaid")
        stopping = [i for i, text in enumerate(said) if "Stopping Triton" in text]
        stopped = [i for i, text in enumerate(said) if "Triton stopped." in text]
        assert stopping and stopping[0] < stopped[0], said  # "Stopping" shows first, while the server stops
        assert not server.process.is_running()


def test_a_model_id_typed_after_the_family_pick_is_kept(build_page):
    """Issue 48's flake, made to happen every time: one pick in the family list sends its input event twice, and the
    second answer, held here until a model id is typed, came late on a busy machine and put the family's example
    back (the build then downloaded the example model). Now it changes nothing."""
    import json

    page = build_page[0]
    held = []

    def hold_the_second_pick(route):
        data = json.loads(route.request.post_data or "{}").get("data") or []
        # the pick's event: the family and the release (a number) first; the family's other events send other values
        if len(data) >= 2 and data[0] == "llava-1.5" and str(data[1])[:1].isdigit():
            held.append(route)
            if len(held) == 2:
                return  # answered below, once the model id is typed
        route.continue_()

    page.route("**/gradio_api/queue/join*", hold_the_second_pick)
    page.locator("#build-family input").click()
    page.locator("#build-family input").fill("LLaVA-1.5")
    page.get_by_role("option", name="LLaVA-1.5", exact=True).click()
    model_id = "document.querySelector('#build-model-id textarea').value"
    page.wait_for_function(f"{model_id} === 'llava-hf/llava-1.5-7b-hf'")  # the first answer
    for _ in range(100):  # the route handler runs while Playwright waits
        if len(held) >= 2:
            break
        page.wait_for_timeout(100)
    assert len(held) == 2, f"{len(held)} family events were sent (Gradio's dropdown sent two per pick)"
    page.fill("#build-model-id textarea", "tiny-org/tiny-llava")
    held[1].continue_()
    page.wait_for_timeout(3000)  # the second answer's time to arrive (it is cheap: milliseconds)
    assert page.evaluate(model_id) == "tiny-org/tiny-llava"
    page.unroute("**/gradio_api/queue/join*")
