"""The Build page in the whole app as a person starts it: the cache in its default place under the home folder
(outside the run's temporary folder and the working folder), Show plan then Export, and the earlier form errors
replaced by the plan's summary."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from app.context import AppConfig, AppContext
from app.web.ui import launch
from setup.paths import cache_dir
from tests.browser.build_helpers import shown_plan
from tests.browser.chat_helpers import toasts
from tests.browser_tabs import app_tab
from tests.build_standins import make_checkpoint
from tests.servers import free_port


def _outside(path: Path, folder: Path) -> bool:
    return not path.resolve().is_relative_to(folder.resolve())


@pytest.fixture
def default_cache_app(tmp_path, monkeypatch):
    """The whole app launched as `python -m app` does, with no cache override; its workspace is the test's folder
    (where the checkpoint lies)."""
    monkeypatch.delenv("TRITON_DEMO_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    cache = cache_dir()
    assert cache == Path.home() / ".cache" / "triton-vlm-lora-demo"
    assert _outside(cache, Path(tempfile.gettempdir())) and _outside(cache, Path(os.getcwd()))
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port, workspace=(str(tmp_path),)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def test_show_plan_and_export_with_the_default_cache(browser_context, default_cache_app, tmp_path):
    with app_tab(browser_context, default_cache_app) as page:
        page.get_by_role("tab", name="Build").click()
        page.locator("#build-family input").click()
        page.locator("#build-family input").fill("LLaVA-1.5")
        page.get_by_role("option", name="LLaVA-1.5", exact=True).click()
        # The family's defaults come back from the server; a plan asked for before they arrive is the first family's.
        page.wait_for_function("document.querySelector('#build-model-id textarea').value === 'llava-hf/llava-1.5-7b-hf'")
        page.fill("#build-trtllm-root textarea", str(tmp_path / "TensorRT-LLM"))
        page.click("#build-show-plan")  # no folders filled in yet: both are named from the example model id
        page.wait_for_function("document.querySelector('#build-summary').innerText.includes("
                               "\"The plan's first step downloads llava-hf/llava-1.5-7b-hf\")")
        assert str(tmp_path / "builds" / "llava-1.5--llava-hf--llava-1.5-7b-hf") in page.input_value("#build-plan textarea")
        page.fill("#build-model-id textarea", "")
        page.click("#build-show-plan")  # no model id and no folders: the summary names what is missing
        page.wait_for_function("document.querySelector('#build-summary').innerText.includes('output folder')")
        page.fill("#build-checkpoint textarea", str(make_checkpoint(tmp_path / "llava ckpt")))
        page.fill("#build-out textarea", str(tmp_path / "out"))
        page.click("#build-show-plan")
        plan = shown_plan(page, "--max_multimodal_len 4608")  # the export downloads exactly the shown plan
        assert "trtllm-build" in plan
        summary = page.locator("#build-summary").inner_text()
        assert "output folder" not in summary.lower() and "Fix these first" not in summary
        assert toasts(page) == []  # no error toast on the way
