"""How the pages name things: the adapter dropdowns' "base model" entry (None below the web layer)."""

from __future__ import annotations

BASE_LABEL = "base model"


def adapter_of(label: str | None) -> str | None:
    """The adapter a dropdown value names; None for the base model (or nothing chosen)."""
    return None if not label or label == BASE_LABEL else label


def adapter_choices(ctx) -> list[str]:
    """Dropdown entries: the base model, then every adapter the deployment can use."""
    return [BASE_LABEL, *ctx.deployment.adapter_names()]
