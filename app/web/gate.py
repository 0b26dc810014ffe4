"""The check every page handler that runs programs or writes files calls first (see app.core.access)."""

from __future__ import annotations

import gradio as gr

from app.api.messages import MSG_NO_REQUEST
from app.chat.context import AppContext


def caller_may_act(ctx: AppContext, request: gr.Request | None) -> str | None:
    """None when the caller may run programs or write files; otherwise the reason, in a sentence."""
    if request is None:
        return MSG_NO_REQUEST
    return ctx.access.refusal(request.username, dict(request.headers or {}), dict(request.cookies or {}))


def require_access(ctx: AppContext, request: gr.Request | None) -> None:
    """Raise a Gradio error (a toast, nothing run) when the caller may not act."""
    reason = caller_may_act(ctx, request)
    if reason:
        raise gr.Error(reason, print_exception=False)
