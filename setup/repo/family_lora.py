"""LoRA inputs only for families that take LoRA (issue #47 item 13).

The ensemble and tensorrt_llm_bls templates declare lora_task_id, lora_weights and lora_config, and the app offers
adapters to any model that declares them. A family whose file says LoRA is unsupported (build.lora.supported:
false: the multimodal families BLIP-2, LLaVA-1.5, VILA and the others) gets a repository without them, so the
app lists no adapters for it instead of offering ones that fail on every request. The tensorrt_llm model keeps
the backend's own declaration (an engine built without LoRA never receives them).
"""

from __future__ import annotations

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

LORA_INPUTS = ("lora_task_id", "lora_weights", "lora_config")
CLIENT_MODELS = ("ensemble", "tensorrt_llm_bls")  # the models a client sends LoRA inputs to


def family_refuses_lora(family_id: object) -> bool:
    """Whether the family's file says LoRA is unsupported (False for an unknown id or a family that says nothing)."""
    if not family_id:
        return False
    from setup.catalog.builds import families

    family = families().get(str(family_id))
    return family is not None and (family.raw.get("lora") or {}).get("supported") is False


def without_lora(model: str, text: str) -> str:
    """Config text of a client-facing model without the LoRA inputs (and, in an ensemble, their mappings)."""
    if model not in CLIENT_MODELS:
        return text
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    kept = [tensor for tensor in config.input if tensor.name not in LORA_INPUTS]
    if len(kept) == len(config.input):
        return text
    del config.input[:]
    config.input.extend(kept)
    for step in config.ensemble_scheduling.step:
        for key in [k for k, tensor in step.input_map.items() if tensor in LORA_INPUTS]:
            del step.input_map[key]
    return text_format.MessageToString(config)
