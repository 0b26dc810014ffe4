"""app/api/http_guard/jobs.py: which requests submit or read Gradio jobs, and the grace timer that cancels
jobs nobody reads (real event loop, short grace times)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from app.api.http_guard.jobs import JobWatch
from tests.unit.app.api.http_guard.asgi_driver import run_async

GRACE = 0.05


def watch(sessions: dict[str, str], cancelled: list, prefix: str = "/gradio_api", fail: bool = False) -> JobWatch:
    async def cancel(event_id, session):
        cancelled.append((event_id, session))
        if fail:
            raise RuntimeError("queue gone")

    return JobWatch(sessions.get, cancel, grace=GRACE, prefix=prefix)


@pytest.mark.parametrize("method, path, submit", [
    ("POST", "/gradio_api/queue/join", True),
    ("POST", "/gradio_api/queue/join/", True),
    ("POST", "/gradio_api/call/generate", True),
    ("POST", "/gradio_api/call/v2/generate", True),
    ("GET", "/gradio_api/call/generate", False),
    ("POST", "/gradio_api/call/generate/e1", False),  # that is a reader's path
    ("POST", "/gradio_api/queue/data", False),
    ("POST", "/other/queue/join", False),
    ("POST", "/gradio_api/queue/join/extra", False),
])
def test_submit_paths(method, path, submit):
    assert watch({}, []).is_submit(method, path) is submit


def test_a_custom_prefix_is_taken_literally():
    jobs = watch({}, [], prefix="/app.v1")
    assert jobs.is_submit("POST", "/app.v1/queue/join")
    assert not jobs.is_submit("POST", "/appXv1/queue/join")  # the dot is no wildcard


def test_reader_sessions():
    jobs = watch({"e1": "s1"}, [])
    assert jobs.reader_session("GET", "/gradio_api/queue/data", b"session_hash=s9&x=1") == "s9"
    assert jobs.reader_session("GET", "/gradio_api/queue/data/", b"session_hash=s9") == "s9"
    assert jobs.reader_session("GET", "/gradio_api/queue/data", b"") is None
    assert jobs.reader_session("GET", "/gradio_api/call/generate/e1", b"") == "s1"
    assert jobs.reader_session("GET", "/gradio_api/call/v2/generate/e1/", b"") == "s1"
    assert jobs.reader_session("GET", "/gradio_api/call/generate/gone", b"") == "gone"  # ended: its own id
    assert jobs.reader_session("POST", "/gradio_api/call/generate/e1", b"") is None
    assert jobs.reader_session("GET", "/gradio_api/info", b"") is None


def test_an_unread_job_is_cancelled_after_the_grace_time_once():
    cancelled: list = []
    jobs = watch({"e1": "s1"}, cancelled)

    async def run():
        jobs.submitted("e1")
        await asyncio.sleep(GRACE / 2)
        early = list(cancelled)
        await asyncio.sleep(GRACE * 3)
        return early

    assert run_async(run()) == [] and cancelled == [("e1", "s1")] and jobs.cancelled == 1


def test_a_reader_of_the_session_saves_every_job_of_it():
    cancelled: list = []
    jobs = watch({"e1": "s1", "e2": "s1", "e3": "s2"}, cancelled)

    async def run():
        for event in ("e1", "e2", "e3"):
            jobs.submitted(event)
        jobs.reader_opened("s1")
        await asyncio.sleep(GRACE * 3)

    run_async(run())
    assert cancelled == [("e3", "s2")]


def test_a_job_that_already_ended_is_not_watched():
    cancelled: list = []
    jobs = watch({}, cancelled)  # session_of answers None: the job is over

    async def run():
        jobs.submitted("e1")
        await asyncio.sleep(GRACE * 3)

    run_async(run())
    assert cancelled == [] and jobs.cancelled == 0


def test_readers_are_counted_so_one_closing_leaves_the_session_read():
    cancelled: list = []
    jobs = watch({"e1": "s1", "e2": "s1"}, cancelled)

    async def run():
        jobs.reader_opened("s1")
        jobs.reader_opened("s1")
        jobs.reader_closed("s1")
        jobs.submitted("e1")  # one reader is still connected
        jobs.reader_closed("s1")
        jobs.submitted("e2")  # nobody reads now
        await asyncio.sleep(GRACE * 3)

    run_async(run())
    assert cancelled == [("e2", "s1")]


def test_a_failing_cancel_is_logged_not_raised(caplog):
    cancelled: list = []
    jobs = watch({"e1": "s1"}, cancelled, fail=True)

    async def run():
        jobs.submitted("e1")
        await asyncio.sleep(GRACE * 3)

    with caplog.at_level(logging.ERROR, logger="app.api.http_guard.jobs"):
        run_async(run())
    assert cancelled == [("e1", "s1")]
    assert any("cancelling an unread job failed" in r.getMessage() for r in caplog.records)
