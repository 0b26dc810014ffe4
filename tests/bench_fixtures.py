"""Fixtures for the benchmark, soak and fault tests: a pacing-only tritonserver (starts in about a
second) and the web app served in this process against it. Import the fixtures into a test module."""

from __future__ import annotations

import pytest

from benchmarks.harness import PacingServer, free_port, pacing_server
from setup.cpu.pacing import PACING_MODEL, PacingSpec


def serve_app(triton_url: str, **config):
    """Build and launch the app in this process on a free port; returns (blocks, url, ctx)."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton_url, port=port, **{"model": PACING_MODEL, **config}))
    blocks = launch(ctx, prevent_thread_lock=True)
    return blocks, f"http://127.0.0.1:{port}/", ctx


@pytest.fixture(scope="module")
def pacing(tmp_path_factory) -> PacingServer:
    """tritonserver with the pacing model alone (20 words/s), shared by one test module."""
    with pacing_server(tmp_path_factory.mktemp("pacing"), PacingSpec(tokens_per_second=20)) as server:
        yield server


@pytest.fixture(scope="module")
def pacing_app(pacing) -> str:
    """The web app in this process, chatting with the pacing model."""
    blocks, url, _ = serve_app(pacing.grpc_url)
    yield url
    blocks.close()


def pacing_log_lines(server: PacingServer) -> list[str]:
    return [line for line in server.log_path.read_text().splitlines() if "pacing: request" in line]
