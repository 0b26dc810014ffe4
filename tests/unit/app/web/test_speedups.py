"""The app's Gradio queue (app/web/speedups.py): Gradio's own polling pace while jobs wait or run and just after one
arrives, the quiet pace only after a quiet spell."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from app.context import AppConfig, AppContext
from app.core.constants import (
    QUEUE_QUIET_AFTER_SECONDS,
    QUEUE_QUIET_POLL_SECONDS,
    QUEUE_QUIET_PROGRESS_SECONDS,
)
from app.web import speedups
from app.web.ui import build_app

GRADIO_PACES = (0.001, 0.01)  # Gradio 6's queue: new work every 1 ms, progress every 10 ms


@pytest.fixture
def queue():
    queue = build_app(AppContext(AppConfig(triton_url="127.0.0.1:1", demo=True)))._queue
    queue.active_jobs = [None] * 4  # what Gradio's start() makes
    return queue


def paces(queue) -> tuple[float, float]:
    return queue.sleep_when_free, queue.progress_update_sleep_when_free


def test_the_apps_queue_is_quiet_until_a_job_arrives_then_keeps_gradios_pace(queue, monkeypatch):
    assert isinstance(queue, speedups.QuietWhenIdleQueue)
    assert paces(queue) == (QUEUE_QUIET_POLL_SECONDS, QUEUE_QUIET_PROGRESS_SECONDS) == (0.02, 0.1)
    now = [1000.0]
    monkeypatch.setattr(speedups.time, "monotonic", lambda: now[0])
    accepted, message, _ = asyncio.run(queue.push(SimpleNamespace(fn_index=None), None, None))
    assert not accepted and message == "No function index provided."  # refused, but it was a job arriving
    assert paces(queue) == GRADIO_PACES
    now[0] += QUEUE_QUIET_AFTER_SECONDS + 0.1
    assert paces(queue) == (QUEUE_QUIET_POLL_SECONDS, QUEUE_QUIET_PROGRESS_SECONDS)


def test_a_running_job_keeps_gradios_pace_however_long_it_runs(queue):
    queue.active_jobs[2] = [object()]  # a streamed reply: one active job, nothing queued
    assert paces(queue) == GRADIO_PACES
    queue.active_jobs[2] = None
    assert paces(queue) == (QUEUE_QUIET_POLL_SECONDS, QUEUE_QUIET_PROGRESS_SECONDS)


def test_a_waiting_job_keeps_gradios_pace(queue, monkeypatch):
    monkeypatch.setattr(type(queue), "__len__", lambda self: 1)  # one event waits for a free slot
    assert paces(queue) == GRADIO_PACES
