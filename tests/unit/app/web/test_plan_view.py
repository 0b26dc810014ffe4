"""The engine-free plans as the Build page shows them: a summary list and the text, or the problems first."""

from __future__ import annotations

from types import SimpleNamespace

from app.web.plan_view import plan_view, problems_view


def test_problems_are_listed_escaped_and_kept():
    view = problems_view(["tp must divide 32 heads", "<b>bold</b> is shown as text"])
    assert view.plan is None and view.text == "" and view.problems[0] == "tp must divide 32 heads"
    assert view.summary.startswith("**Fix these first:**") and "&lt;b&gt;bold&lt;/b&gt;" in view.summary


def test_a_plan_shows_its_lines_then_its_notes():
    plan = SimpleNamespace(summary_lines=lambda: ["Family: llama", "TP 2"], notes=["Writes OUT/llmapi_repo"])
    view = plan_view(plan, "trtllm-serve ...")
    assert view.summary == "- Family: llama\n- TP 2\n- Writes OUT/llmapi_repo" and view.text == "trtllm-serve ..."
    assert view.plan is plan and view.problems == []
