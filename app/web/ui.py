"""Assemble the app: one tab per page module (their timers tick while the tab is shown), the API endpoints, queue
settings, the HTTP guard."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import gradio as gr
from gradio.server_messages import ProcessCompletedMessage
from gradio.utils import _parse_file_size

from app.api import gradio_api as api
from app.api.arena_api import register_arena
from app.api.http_guard import Guard, GuardSettings, JobWatch, app_middleware, wrap_outermost
from app.api.openai_routes import OpenAIApi
from app.api.reply_limit import reply_limit
from app.arena.service import Arena
from app.context import AppContext
from app.core.constants import (
    API_MAX_BODY_BYTES,
    QUEUE_SIZE_PER_SLOT,
    UNREAD_JOB_GRACE_SECONDS,
    UPLOAD_FILES_PER_REQUEST,
)
from app.triton.metrics_sampler import Sampler
from app.web import speedups
from app.web.messages import MSG_JOB_UNREAD
from app.web.page_timers import tick_while_shown
from app.web.pages import adapters, arena, benchmark, build, chat, compare, server
from app.web.style import APP_CSS

APP_TITLE = "Triton VLM + LoRA demo"
API_PREFIX = "/gradio_api"
LOG = logging.getLogger(__name__)


def build_app(ctx: AppContext) -> gr.Blocks:
    """The app's Blocks; the Server tab's sampler is not started (`launch` starts it)."""
    return _assemble(ctx)[0]


def arena_of(ctx: AppContext) -> Arena:
    """The app's Arena: its database at --arena-db, else SQLite in the first workspace folder (opened on first use)."""
    roots = ctx.access.workspace.roots
    return Arena(ctx.config.arena_db, roots[0] if roots else Path.cwd())


def _assemble(ctx: AppContext) -> tuple[gr.Blocks, Sampler]:
    speedups.apply()
    # the replies streamed at once, settled once (the served model's batch when --concurrency was not given)
    ctx.config = replace(ctx.config, concurrency=reply_limit(ctx.config.concurrency, ctx.deployment))
    battles = arena_of(ctx)
    with gr.Blocks(title=APP_TITLE, analytics_enabled=False) as blocks:
        gr.HTML(f'<h1 id="app-title">{APP_TITLE}</h1>')
        # At 400 px the seven tabs take two rows rather than hiding three behind a "More tabs" menu.
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            with gr.Tab(chat.TITLE, id="chat") as chat_tab:
                chat.build(ctx, blocks, chat_tab)
            with gr.Tab(compare.TITLE, id="compare"):
                compare.build(ctx)
            with gr.Tab(arena.TITLE, id="arena") as arena_tab:
                arena.build(ctx, battles, arena_tab)
            with gr.Tab(adapters.TITLE, id="adapters") as adapters_tab:
                adapters.build(ctx, blocks, adapters_tab)
            with gr.Tab(build.TITLE, id="build"):
                build.build(ctx, tabs=tabs, chat_tab="chat")
            with gr.Tab(benchmark.TITLE, id="benchmark"):
                benchmark.build(ctx)
            with gr.Tab(server.TITLE, id="server") as server_tab:
                sampler = server.build(ctx, app=blocks, tab=server_tab)
        tick_while_shown(list(tabs.children))
        api.register(ctx)
        register_arena(ctx, battles)
    # Waiting jobs are bounded: past this many the Gradio API answers 503 "Queue is full" at once. Every
    # call goes through the queue (api_open=False closes the direct /gradio_api/run/<api> route around it).
    limit = ctx.config.concurrency
    blocks.queue(default_concurrency_limit=limit, max_size=limit * QUEUE_SIZE_PER_SLOT, api_open=False)
    speedups.quiet_when_idle(blocks)
    return blocks, sampler


def unread_job_watch(blocks: gr.Blocks, grace: float) -> JobWatch:
    """Cancel Gradio jobs nobody reads: through the queue, as Gradio does when a reader disconnects."""

    def session_of(event_id: str) -> str | None:
        event = blocks._queue.event_ids_to_events.get(event_id)
        return None if event is None else event.session_hash

    async def cancel(event_id: str, session: str) -> None:
        queue = blocks._queue
        if event_id not in queue.event_ids_to_events:
            return  # ended meanwhile
        await queue.clean_events(event_id=event_id)  # a waiting job leaves the queue; a running one stops
        messages = queue.pending_messages_per_session.get(session)
        if messages is not None:  # a reader that comes late learns why there is no result
            messages.put_nowait(ProcessCompletedMessage(
                output={"error": MSG_JOB_UNREAD.format(seconds=grace)}, success=False, event_id=event_id))

    return JobWatch(session_of, cancel, grace=grace, prefix=API_PREFIX)


def make_guard(ctx: AppContext, blocks: gr.Blocks, unread_job_grace_seconds: float = UNREAD_JOB_GRACE_SECONDS,
               **settings) -> Guard:
    """The HTTP guard for this app: its host names, per-route body limits, login counting, unread jobs.

    `settings` override GuardSettings fields (tests use short timeouts)."""
    file_limit = _parse_file_size(ctx.config.max_file_size)
    upload_limit = file_limit * UPLOAD_FILES_PER_REQUEST if file_limit else API_MAX_BODY_BYTES
    limits = {"/v1/chat/completions": API_MAX_BODY_BYTES, f"{API_PREFIX}/upload": upload_limit}
    config = GuardSettings(bind_host=ctx.config.host, allowed_hosts=tuple(ctx.config.allowed_hosts),
                           body_limits=limits, logins=bool(ctx.config.auth), **settings)
    return Guard(config, jobs=unread_job_watch(blocks, unread_job_grace_seconds))


def launch(ctx: AppContext, prevent_thread_lock: bool = False, **guard_options) -> gr.Blocks:
    """Serve the UI, the Gradio API and the OpenAI-compatible API (/v1/...) on one port.

    `guard_options` go to `make_guard` (e.g. body_stall_seconds=1, unread_job_grace_seconds=1 in tests)."""
    blocks, sampler = _assemble(ctx)
    guard = make_guard(ctx, blocks, **guard_options)
    # Inside Gradio's CORS middleware from the first request; wrapped around everything just after launch.
    middleware = app_middleware(guard, ctx.access)
    blocks.launch(
        server_name=ctx.config.host, server_port=ctx.config.port, max_file_size=ctx.config.max_file_size,
        max_threads=max(64, ctx.config.concurrency * 2), prevent_thread_lock=True,
        show_error=True, quiet=True, css=APP_CSS, auth=list(ctx.config.auth) if ctx.config.auth else None,
        # built with the /v1 routes, so they answer as soon as the page does (mounted after launch(), they
        # were missing for the first moments: a client that saw the page could get 404 from /v1)
        app_kwargs={"middleware": middleware, "routes": OpenAIApi(ctx).routes()},
    )
    # Outermost: before Gradio's CORS middleware, which would otherwise answer foreign pages' preflights.
    if not wrap_outermost(blocks.server_app, guard):
        LOG.warning("the HTTP guard could not be put in front of Gradio's middleware")
    sampler.start(alive=lambda: blocks.is_running)  # the Server tab's history from now until blocks.close()
    if not prevent_thread_lock:
        blocks.block_thread()
    return blocks
