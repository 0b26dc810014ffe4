"""Build page: the page on its own (its logic without Gradio: tests/unit/app/build/test_engine.py)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import gradio as gr

from app.context import AppConfig, AppContext
from setup.jobs.registry import EngineRegistry
from setup.jobs.store import JobStore
from setup.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT


def test_page_imports_alone():
    code = "import app.web.pages.build as b; assert b.TITLE == 'Build' and callable(b.build)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=120).returncode == 0


def service(tmp_path):
    from app.web.pages.build import BuildService

    registry = EngineRegistry(tmp_path / "registry.json")
    return BuildService(JobStore(tmp_path / "jobs.json", registry=registry), registry)


def test_page_is_disabled_off_loopback_without_auth(tmp_path):
    from app.web.pages import build
    with gr.Blocks() as closed:
        build.build(AppContext(AppConfig(host="0.0.0.0")), service(tmp_path))
    assert [b.elem_id for b in closed.blocks.values() if getattr(b, "elem_id", None)] == ["build-disabled"]
    with_auth = SimpleNamespace(config=SimpleNamespace(host="0.0.0.0", auth=("admin", "pw")))
    with gr.Blocks() as open_page:
        build.build(with_auth, service(tmp_path))
    ids = {getattr(b, "elem_id", None) for b in open_page.blocks.values()}
    assert {"build-run", "build-cancel", "build-plan", "build-export", "build-log", "build-status"} <= ids


def test_the_cpu_twin_offered_follows_the_family_that_has_one_and_keeps_cpu_ocr_within_reach():
    from app.web.pages.build import twin_choices, twin_of
    from setup.cpu.twins import cpu_twins

    choices = twin_choices()
    assert choices[0] == "cpu-ocr" and sorted(choices) == sorted(cpu_twins())
    assert twin_of("kosmos-2") == "kosmos-2"
    assert twin_of("no-such-family") == "cpu-ocr"
    assert twin_of("no-such-family", shown="fuyu") == "fuyu"  # a family without a twin leaves the choice alone


def test_the_buttons_whose_progress_the_poll_shows_start_the_poll(tmp_path):
    """Run, Resume, Write repository and CPU demo start the page's timer after their handler, so their outcome
    shows even if the click landed before the Build tab's select event started it (app/web/page_timers.py)."""
    from app.web.pages import build

    with gr.Blocks() as blocks:
        build.build(AppContext(AppConfig()), service(tmp_path))
    (timer,) = [block for block in blocks.blocks.values() if isinstance(block, gr.Timer)]
    by_id = {getattr(block, "elem_id", None): block for block in blocks.blocks.values()}
    fns = list(blocks.fns.values())
    for button in ("build-run", "build-resume", "build-deploy", "build-cpu-demo", "build-cancel"):
        clicks = [fn for fn in fns if (by_id[button]._id, "click") in fn.targets]
        assert len(clicks) == 1, button
        after = [fn for fn in fns if fn.trigger_after == clicks[0]._id]
        starts = [fn for fn in after if [output._id for output in fn.outputs] == [timer._id]]
        if button == "build-cancel":  # a cancelled job's status comes from the poll already running
            assert starts == [], button
        else:
            assert len(starts) == 1 and starts[0].fn().active is True, button


def test_page_has_deployment_choice(tmp_path):
    from app.web.pages import build

    with gr.Blocks() as page:
        build.build(AppContext(AppConfig()), service(tmp_path))
    ids = {getattr(b, "elem_id", None) for b in page.blocks.values()}
    assert {"build-deployment", "serve-section", "serve-write", "serve-show-plan", "build-engine-path"} <= ids
