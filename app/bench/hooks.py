"""What `--adapter` and `--image` add to each benchmark request: LoRA inputs from the adapter registry,
image inputs from the image pipeline; and the up-front check of both values."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from app.adapters.registry import AdapterRegistry
from app.core.errors import ChatError, InvalidRequest
from app.deployments.base import check_adapter_name
from app.triton.client import ModelInfo
from app.vision.images import load_image
from app.vision.multimodal import prepare_images

# (value of --adapter/--image, prompt, model info) -> (prompt, extra request inputs)
ExtraHook = Callable[[str, str, ModelInfo], tuple[str, Mapping[str, object]]]


def image_hook(path: str, prompt: str, info: ModelInfo) -> tuple[str, Mapping[str, object]]:
    prepared = prepare_images([path], info, prompt)
    return prepared.text, prepared.extra


def adapter_hook(registry: AdapterRegistry) -> ExtraHook:
    """Every request sends the adapter's weights (the benchmark does not track what the server caches),
    which the backend accepts for a registered or a new task id alike."""
    return lambda name, prompt, info: (prompt, registry.extra_inputs(name, first_use=True))


def default_hooks() -> dict[str, ExtraHook]:
    return {"adapter": adapter_hook(AdapterRegistry()), "image": image_hook}


def check_values(args: argparse.Namespace) -> str | None:
    """A one-line problem with --adapter/--image, else None (before any request is sent)."""
    adapter, image = getattr(args, "adapter", None), getattr(args, "image", None)
    if adapter is not None and not getattr(args, "openai", None):  # a remote server's adapters are its own
        try:
            check_adapter_name(adapter, AdapterRegistry().names())
        except InvalidRequest as exc:
            return str(exc)
    if image is not None:
        try:
            load_image(image)
        except ChatError as exc:
            return str(exc)
        except OSError as exc:
            return f"Cannot read {image}: {exc.strerror or exc}."
    return None
