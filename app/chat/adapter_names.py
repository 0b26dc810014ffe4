"""Which adapter a name picks: the one rule every surface (pages, Gradio API, /v1, Compare, Arena) follows.

"", None and "base model" mean the base model (None), as does the pages' entry for a model with its own adapter
("base model + X (part of the model, always on)"); any other name is an adapter's, surrounding spaces ignored.
"""

from __future__ import annotations

from app.chat.messages import BASE_MODEL_WORDS


def adapter_named(name: str | None) -> str | None:
    """The adapter `name` picks; None for the base model."""
    name = (name or "").strip()
    if not name or name == BASE_MODEL_WORDS or name.startswith(BASE_MODEL_WORDS + " + "):
        return None
    return name
