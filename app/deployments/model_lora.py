"""An adapter that is part of the served model: InternLM-XComposer2's Partial LoRA (its `build.lora.required`).

Such a model answers only with its own adapter active, so every request carries it and the adapter dropdown
cannot turn it off. When the app's adapters folder holds it (`model_adapter`), it goes through the registry like
any adapter: weights on first use, the task id after, re-sent after eviction. Without one the server's
preprocessing applies the adapter it was deployed with. Another adapter cannot be added on top unless the served
model says it combines adapters (parameter `combines_adapters: true`); TensorRT-LLM takes one task per request.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.errors import InvalidRequest
from app.deployments.messages import MSG_OWN_ADAPTER_MISSING, MSG_OWN_ADAPTER_ONLY
from app.triton.client import ModelInfo
from setup.catalog.builds import get_family as build_family
from setup.catalog.families import FamilyError

COMBINES_PARAMETER = "combines_adapters"  # served config parameter: "true" when adapters can be combined



@dataclass(frozen=True)
class ModelAdapter:
    """The served model's own adapter: `name` in the app's adapters folder, or None (the server applies it)."""

    family: str  # display name, for messages
    name: str | None
    combines: bool
    partial: bool = False  # acts only at image rows (a Partial LoRA): only an image shows it

    @property
    def shown(self) -> str:
        return f"'{self.name}'" if self.name else "its Partial LoRA"


def model_adapter(info: ModelInfo, configured: str | None) -> ModelAdapter | None:
    """The model's own adapter when the served family has one (lora.required); else None."""
    family_id = info.parameters.get("multimodal_family", "")
    if not family_id:
        return None
    try:
        family = build_family(family_id)
    except (FamilyError, KeyError, ValueError):
        return None
    if not family.lora.get("required"):
        return None
    combines = info.parameters.get(COMBINES_PARAMETER, "").strip().lower() in ("true", "1", "yes")
    return ModelAdapter(family=family.name, name=configured or None, combines=combines,
                        partial=bool(family.lora.get("partial")))


def adapter_for_request(own: ModelAdapter | None, requested: str | None, known: list[str]) -> str | None:
    """The adapter a request sends: the model's own whatever the dropdown says (None: nothing to send).

    InvalidRequest for another adapter the deployment cannot combine with its own, or when the model's own
    adapter is named but absent from the adapters folder.
    """
    if own is None:
        return requested
    if own.name and own.name not in known:
        raise InvalidRequest(MSG_OWN_ADAPTER_MISSING.format(family=own.family, own=own.name))
    if requested and requested != own.name and not own.combines:
        raise InvalidRequest(MSG_OWN_ADAPTER_ONLY.format(family=own.family, own=own.shown, adapter=requested))
    if requested and requested != own.name:
        return requested  # a deployment that combines: the request's adapter (the server adds its own)
    return own.name
