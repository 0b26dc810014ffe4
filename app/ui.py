"""Assemble the app: one tab per page module, the API endpoints, queue settings."""

from __future__ import annotations

import gradio as gr
from starlette.middleware import Middleware

from app import api, speedups
from app.access import TokenCookieMiddleware
from app.context import AppContext
from app.openai_api import OpenAIApi
from app.pages import adapters, benchmark, build, chat, compare, server

APP_TITLE = "Triton VLM + LoRA demo"


def build_app(ctx: AppContext) -> gr.Blocks:
    speedups.apply()
    with gr.Blocks(title=APP_TITLE, analytics_enabled=False) as blocks:
        gr.Markdown(f"## {APP_TITLE}")
        with gr.Tabs() as tabs:
            with gr.Tab(chat.TITLE, id="chat"):
                chat.build(ctx)
            with gr.Tab(compare.TITLE, id="compare"):
                compare.build(ctx)
            with gr.Tab(adapters.TITLE, id="adapters"):
                adapters.build(ctx)
            with gr.Tab(build.TITLE, id="build"):
                build.build(ctx, tabs=tabs, chat_tab="chat")
            with gr.Tab(benchmark.TITLE, id="benchmark"):
                benchmark.build(ctx)
            with gr.Tab(server.TITLE, id="server"):
                server.build(ctx)
        api.register(ctx)
    blocks.queue(default_concurrency_limit=ctx.config.concurrency, max_size=None)
    return blocks


def launch(ctx: AppContext, prevent_thread_lock: bool = False) -> gr.Blocks:
    """Serve the UI, the Gradio API and the OpenAI-compatible API (/v1/...) on one port."""
    blocks = build_app(ctx)
    middleware = [Middleware(TokenCookieMiddleware, policy=ctx.access)]
    blocks.launch(
        server_name=ctx.config.host, server_port=ctx.config.port, max_file_size=ctx.config.max_file_size,
        max_threads=max(64, ctx.config.concurrency * 2), prevent_thread_lock=True,
        show_error=True, quiet=True, auth=list(ctx.config.auth) if ctx.config.auth else None,
        app_kwargs={"middleware": middleware},
    )
    # Gradio builds its FastAPI app inside launch(); routes added now are served from the next request on.
    OpenAIApi(ctx).mount(blocks.server_app)
    if not prevent_thread_lock:
        blocks.block_thread()
    return blocks
