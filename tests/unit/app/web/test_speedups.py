"""The app's Gradio queue polls for work at the app's pace, not Gradio's millisecond default."""

from __future__ import annotations

from app.chat.context import AppConfig, AppContext
from app.core.constants import QUEUE_IDLE_POLL_SECONDS, QUEUE_PROGRESS_POLL_SECONDS
from app.web.ui import build_app


def test_the_apps_queue_polls_every_10_ms_when_idle_and_sends_progress_every_100_ms():
    queue = build_app(AppContext(AppConfig(triton_url="127.0.0.1:1", demo=True)))._queue
    assert (queue.sleep_when_free, queue.progress_update_sleep_when_free) == (
        QUEUE_IDLE_POLL_SECONDS, QUEUE_PROGRESS_POLL_SECONDS) == (0.01, 0.1)
