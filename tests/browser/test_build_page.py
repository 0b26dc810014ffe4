"""The Build page in Debian's Chromium: run a LLaVA plan with stand-in tools, then cancel another."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import gradio as gr
import pytest

from app.chat.context import AppConfig, AppContext
from tests.build_standins import make_checkpoint, make_trtllm
from tests.conftest import free_port, grant_access
from tests.unit.app.web.test_build_page import service


@pytest.fixture
def build_page_url(tmp_path, monkeypatch):
    """The build page alone, served in this process, with stand-in TensorRT-LLM tools first on PATH."""
    from app.web.pages import build
    tools = make_trtllm(tmp_path / "trtllm", "0.19")
    bin_dir = Path(tools["trtllm_build"]).parent
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_DELAY", "0.05")
    port = free_port()
    ctx = AppContext(AppConfig(port=port, workspace=(str(tmp_path),)))
    with gr.Blocks() as blocks:
        build.build(ctx, service(tmp_path))
    blocks.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield ctx, f"http://127.0.0.1:{port}/", tools["trtllm_root"], make_checkpoint(tmp_path / "llava ckpt")
    blocks.close()


def _wait_status(page, status: str, timeout: float = 240) -> None:
    page.wait_for_selector(f"#build-status [data-status='{status}']", timeout=timeout * 1000)


def shown_plan(page, must_contain: str) -> str:
    """The plan's text once the box shows `must_contain`, checked to be all readable: the box holds the whole
    script the export button downloads, and it is either fully in view or scrolls to show the rest."""
    page.wait_for_function("text => document.querySelector('#build-plan textarea').value.includes(text)",
                           arg=must_contain)
    shown = page.input_value("#build-plan textarea")
    page.wait_for_selector("#build-export:not([disabled])")
    with page.expect_download() as download:
        page.click("#build-export")
    assert Path(download.value.path()).read_text().strip() == shown.strip()
    fit = page.evaluate("""() => { const t = document.querySelector('#build-plan textarea');
        return {fits: t.scrollHeight <= t.clientHeight + 1, scrolls: ['auto', 'scroll'].includes(getComputedStyle(t).overflowY),
                sideways: t.scrollWidth - t.clientWidth}; }""")
    assert (fit["fits"] or fit["scrolls"]) and fit["sideways"] == 0, fit
    return shown


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
