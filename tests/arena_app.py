"""The demo app launched in this process with its Arena on a given database, for the Arena's browser and
integration tests (each keeps its database in a scratch folder of its own). The app's modules are imported inside
the function."""

from __future__ import annotations

from tests.servers import free_port


def launch_app(triton, db_url: str):
    """Launch the demo app against `triton` on a free port with its Arena on `db_url`; (context, blocks, URL)."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True, arena_db=db_url))
    return ctx, launch(ctx, prevent_thread_lock=True), f"http://127.0.0.1:{port}/"
