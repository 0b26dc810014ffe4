"""The Build page served alone for the browser tests, with stand-in TensorRT-LLM tools first on PATH, and what the
tests read from it; shared by the Build page test files."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from app.context import AppConfig, AppContext
from tests.build_standins import make_trtllm
from tests.servers import free_port
from tests.unit.app.web.test_build_page import service


@dataclass
class ServedBuildPage:
    ctx: AppContext
    url: str
    service: object  # the page's BuildPageService
    trtllm_root: str


@contextmanager
def served_build_page(tmp_path: Path, monkeypatch) -> Iterator[ServedBuildPage]:
    """The Build page alone, served in this process for the test's length; workspace confined to `tmp_path`, the
    stand-in tools of TensorRT-LLM 0.19 first on PATH (with a short delay per step)."""
    from app.web.pages import build
    tools = make_trtllm(tmp_path / "trtllm", "0.19")
    bin_dir = Path(tools["trtllm_build"]).parent
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_DELAY", "0.05")
    port = free_port()
    ctx = AppContext(AppConfig(port=port, workspace=(str(tmp_path),)))
    page_service = service(tmp_path)
    with gr.Blocks() as blocks:
        build.build(ctx, page_service)
    blocks.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield ServedBuildPage(ctx, f"http://127.0.0.1:{port}/", page_service, tools["trtllm_root"])
    finally:
        blocks.close()


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
