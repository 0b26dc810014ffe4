"""What the Build page shows for an engine-free plan: the plan and its text, or the problems to fix first."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass

from app.build.messages import MSG_FIELD_NOT_A_NUMBER
from setup.plan.serve_catalog import served_families
from setup.plan.types import PlanError


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


def served_family_choices() -> list[tuple[str, str]]:
    """Families the LLM API serves at some recorded release, then the others (their note says why not)."""
    families = served_families().values()
    return ([(f.name, f.id) for f in families if f.since]
            + [(f"{f.name} (not served)", f.id) for f in families if not f.since])


def typed_form(form: dict, ints: Iterable[str], floats: Iterable[str] = ("kv_cache_fraction",)) -> dict:
    """The form's filled-in values (empty ones left out: the tool's default), numbers as numbers; a value that is
    not one raises PlanError naming the field."""
    values = {k: v for k, v in form.items() if v is not None and v != ""}
    problems = []
    for names, kind in ((ints, int), (floats, float)):
        for name in (n for n in names if n in values):
            try:
                values[name] = kind(values[name])
            except (TypeError, ValueError):
                problems.append(MSG_FIELD_NOT_A_NUMBER.format(field=name, value=values[name]))
    if problems:
        raise PlanError(problems)
    return values
