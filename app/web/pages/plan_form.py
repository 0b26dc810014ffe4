"""The two buttons the engine-free deployment forms share (Build page: trtllm-serve and Triton llmapi):
"Show plan" and "Write and start", each checked for access and workspace folders in its handler."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.chat.context import AppContext
from app.web.build_folders import problems_markdown
from app.web.gate import require_access


def plan_form_handlers(ctx: AppContext, form: Callable[[tuple], tuple[dict, list[str]]], view_of: Callable,
                       write: Callable[[object], str], errors: tuple[type[BaseException], ...]):
    """(on_show, on_write) for a form: `form(values)` gives the raw fields and the folders outside the
    workspace, `view_of(raw)` a view with summary/text/plan/problems, `write(plan)` the status message."""

    def on_show(request: gr.Request, *values):
        require_access(ctx, request)
        raw, outside = form(values)
        if outside:
            return problems_markdown(outside), ""
        view = view_of(raw)
        return view.summary, view.text

    def on_write(request: gr.Request, *values):
        require_access(ctx, request)
        raw, outside = form(values)
        if outside:
            raise gr.Error("\n".join(outside), print_exception=False)
        view = view_of(raw)
        if view.plan is None:
            raise gr.Error("\n".join(view.problems), print_exception=False)
        try:
            message = write(view.plan)
        except errors as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return view.summary, view.text, message

    return on_show, on_write
