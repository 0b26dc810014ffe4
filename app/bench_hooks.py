"""Connect `python -m app bench --adapter/--image` to the adapter registry and the image pipeline."""

from __future__ import annotations

from app.bench import register_extra_hook
from app.chat_logic import MSG_UNKNOWN_ADAPTER
from app.errors import ChatError
from app.images import load_image
from app.lora import AdapterRegistry
from app.multimodal import prepare_images


def _value_after(argv: list[str], flag: str) -> str | None:
    for i, item in enumerate(argv):
        if item == flag and i + 1 < len(argv):
            return argv[i + 1]
        if item.startswith(flag + "="):
            return item.split("=", 1)[1]
    return None


def connect(argv: list[str]) -> str | None:
    """Register the hooks; return a one-line problem with --adapter/--image values, else None.

    Every benchmark request with an adapter sends its weights (the benchmark does not track what the
    server caches), which is what the backend accepts for a registered or new task id alike.
    """
    registry = AdapterRegistry()
    register_extra_hook("adapter", lambda name, prompt, info: (prompt, registry.extra_inputs(name, first_use=True)))

    def image_hook(path, prompt, info):
        prepared = prepare_images([path], info, prompt)
        return prepared.text, prepared.extra

    register_extra_hook("image", image_hook)
    adapter, image = _value_after(argv, "--adapter"), _value_after(argv, "--image")
    remote = _value_after(argv, "--openai") is not None  # its adapters are the server's: checked there
    if adapter is not None and not remote and adapter not in registry.names():
        return MSG_UNKNOWN_ADAPTER.format(adapter=adapter, known=", ".join(registry.names()) or "none")
    if image is not None:
        try:
            load_image(image)
        except ChatError as exc:
            return str(exc)
        except OSError as exc:
            return f"Cannot read {image}: {exc.strerror or exc}."
    return None
