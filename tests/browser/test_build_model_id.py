"""The Build page from a model id in Debian's Chromium: the family fills in its example id; a gated model id on a hub
served on loopback (HF_ENDPOINT), with its token typed into the password field, is downloaded by the plan's first
step under the workspace, and the convert step then reads the downloaded folder. The token shows nowhere."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.build_helpers import served_build_page
from tests.browser_tabs import grant_access
from tests.hub_server import HubRepo, LoopbackHub, serve

MODEL = "tiny-org/tiny-llava"
TOKEN = "hf_typedINTOtheFORM2024"


@pytest.fixture
def hub_and_page(tmp_path, monkeypatch):
    config = {"num_attention_heads": 32, "hidden_size": 4096, "text_config": {"hidden_size": 4096}}
    files = {"config.json": json.dumps(config).encode(), "model.safetensors": os.urandom(300_000),
             "tokenizer.json": b"{}", "tf_model.h5": b"h5" * 1000}
    state = LoopbackHub(repos={MODEL: HubRepo(files, gated=True, granted={TOKEN})}, tokens={TOKEN})
    server, _ = serve(state)
    monkeypatch.setenv("HF_ENDPOINT", state.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with served_build_page(tmp_path, monkeypatch) as served:
        yield state, served
    server.shutdown()
    server.server_close()


def step_ended(page, served, step: str, expected: str, timeout_ms: int = 240_000) -> None:
    """Wait until `step` is `expected` or has ended otherwise (failed, cancelled); fail with what the page showed
    and the job's log in the second case, or when the step never got there."""
    ended = ":is(.step-done, .step-skipped, .step-failed, .step-cancelled)"
    selector = f"#build-status li[data-step='{step}']"
    try:
        page.wait_for_selector(f"{selector}{expected}, {selector}{ended}", timeout=timeout_ms)
    except PlaywrightTimeout:
        pass
    if page.locator(f"{selector}{expected}").count():
        return
    records = served.service.store.list()
    log = Path(records[0]["log"]).read_text(errors="replace")[-3000:] if records else "(no job was started)"
    shown = {sel: page.inner_text(sel) for sel in ("#build-status", "#build-log textarea")}
    raise AssertionError(f"step {step} is not {expected}: the page showed {shown}; the job's log ends {log!r}")


def test_a_model_id_is_downloaded_then_converted(browser_context, hub_and_page, tmp_path):
    hub, served = hub_and_page
    grant_access(browser_context, served.ctx, served.url)
    page = browser_context.new_page()
    page.goto(served.url)
    page.wait_for_selector("#build-family input")
    page.locator("#build-family input").click()
    page.locator("#build-family input").fill("LLaVA-1.5")
    page.get_by_role("option", name="LLaVA-1.5", exact=True).click()
    page.wait_for_function("document.querySelector('#build-model-id textarea').value === 'llava-hf/llava-1.5-7b-hf'")
    page.fill("#build-model-id textarea", MODEL)
    page.fill("#build-hf-token input", TOKEN)
    page.fill("#build-trtllm-root textarea", served.trtllm_root)
    page.click("#build-run")  # no folders typed: both are named from the model id, in the workspace
    folder = tmp_path / "models" / "tiny-org--tiny-llava"
    # The steps' states, not the log's last lines: under load several steps may end between two polls of the page.
    # A step that ended otherwise fails the test at once, with what the page and the job's log said (issue 48: a
    # fresh-clone run waited the whole 240 s for the download and its failure said nothing of how the step stood).
    step_ended(page, served, "download", ".step-done")
    step_ended(page, served, "convert", ":is(.step-running, .step-done)")
    plan = page.input_value("#build-plan textarea")
    assert f"--model_dir {folder} " in plan
    assert f"{tmp_path}/builds/llava-1.5--tiny-org--tiny-llava/checkpoint" in plan
    assert (folder / "model.safetensors").stat().st_size == 300_000 and not (folder / "tf_model.h5").exists()
    assert hub.seen("GET", "model.safetensors")[-1]["authorization"] == f"Bearer {TOKEN}"
    (record,) = served.service.store.list()
    log = Path(record["log"]).read_text()
    assert f"--model_dir {folder} " in log and "(100%)" in log  # the convert step ran on the downloaded folder
    shown = plan + page.input_value("#build-log textarea") + page.locator("#build-status").inner_text()
    for text in (shown, log, (tmp_path / "jobs.json").read_text()):
        assert TOKEN not in text
    page.close()
