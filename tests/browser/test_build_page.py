"""The Build page in Debian's Chromium: run a LLaVA plan with stand-in tools, then cancel another."""

from __future__ import annotations

import pytest

from tests.browser.build_helpers import served_build_page, shown_plan
from tests.browser_tabs import grant_access
from tests.build_standins import make_checkpoint


@pytest.fixture
def build_page_url(tmp_path, monkeypatch):
    """(app context, URL, stand-in TensorRT-LLM root, checkpoint): the build page alone, served in this process."""
    with served_build_page(tmp_path, monkeypatch) as served:
        yield served.ctx, served.url, served.trtllm_root, make_checkpoint(tmp_path / "llava ckpt")


def _wait_status(page, status: str, timeout: float = 240) -> None:
    page.wait_for_selector(f"#build-status [data-status='{status}']", timeout=timeout * 1000)


def test_browser_runs_llava_plan_then_cancels_another(browser_context, build_page_url, tmp_path, monkeypatch):
    ctx, url, root, ckpt = build_page_url
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    page.goto(url)
    page.wait_for_selector("#build-family input")
    page.locator("#build-family input").click()
    page.locator("#build-family input").fill("LLaVA-1.5")
    page.get_by_role("option", name="LLaVA-1.5", exact=True).click()
    page.wait_for_function("document.querySelector('#build-family-info').innerText.includes('576 tokens')")
    page.fill("#build-checkpoint textarea", str(ckpt))
    page.fill("#build-out textarea", str(tmp_path / "out1"))
    page.fill("#build-trtllm-root textarea", root)
    page.click("#build-show-plan")
    plan = shown_plan(page, "--max_multimodal_len 4608")
    assert "build_multimodal_engine.py" in plan and "trtllm-build" in plan
    page.click("#build-run")
    _wait_status(page, "done")
    assert page.locator("#build-status li.step-done").count() == 4  # check-repository (dry run), convert, build, visual engine
    page.wait_for_selector("#build-deploy", state="visible")
    assert (tmp_path / "out1/visual_engine/model.engine").is_file()

    monkeypatch.setenv("STANDIN_DELAY", "3")
    page.fill("#build-out textarea", str(tmp_path / "out2"))
    page.click("#build-run")
    _wait_status(page, "running")
    page.wait_for_function("document.querySelector('#build-log textarea').value.includes('working')",
                           timeout=120_000)
    page.click("#build-cancel")
    _wait_status(page, "cancelled")
    assert page.locator("#build-status li.step-cancelled").count() == 1
    page.reload()
    _wait_status(page, "cancelled")  # the job list survives a reload
    page.close()
