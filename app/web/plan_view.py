"""What the Build page shows for an engine-free plan: the plan and its text, or the problems to fix first."""

from __future__ import annotations

import html
from dataclasses import dataclass


@dataclass
class PlanView:
    plan: object | None  # a ServePlan / LlmApiPlan, None when there are problems
    text: str
    summary: str
    problems: list[str]


def problems_view(problems: list[str]) -> PlanView:
    items = "\n".join(f"- ✖ {html.escape(p, quote=False)}" for p in problems)
    return PlanView(None, "", f"**Fix these first:**\n\n{items}", list(problems))


def plan_view(plan, text: str) -> PlanView:
    """`plan`'s summary lines and notes as a Markdown list, with `text` (its commands) to show beside them."""
    summary = "\n".join(f"- {html.escape(line, quote=False)}" for line in [*plan.summary_lines(), *plan.notes])
    return PlanView(plan, text, summary, [])
