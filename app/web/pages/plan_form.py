"""What the Build page's forms share: the box a plan's commands are shown in, and the two buttons of the
engine-free deployment forms (trtllm-serve and Triton llmapi), "Show plan" and "Write and start", each checked
for access and workspace folders in its handler."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.build.folders import problems_markdown
from app.context import AppContext
from app.web.gate import require_access


def plan_box(label: str, elem_id: str) -> gr.Textbox:
    """A read-only box holding a plan's whole text: long command lines wrap, the box grows to 30 lines and
    then scrolls, and a button copies it all. (A code editor draws only the lines in view, and drew the
    lines below a wrapped one as numbered empty lines until scrolled.)"""
    return gr.Textbox(label=label, lines=6, max_lines=30, interactive=False, autoscroll=False, buttons=["copy"],
                      elem_id=elem_id, elem_classes=["plan-box"])


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
