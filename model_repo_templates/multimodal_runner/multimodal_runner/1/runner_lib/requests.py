"""One request to the runner model, read from its declared inputs and checked before the runner sees it."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

MSG_NO_TEXT = "text_input is required (one string)."
MSG_TOKENS = "max_tokens must be between 1 and {limit}; got {value}."
MSG_IMAGES = "This runner takes {limit} image(s) per request; got {count}."
MSG_IMAGE = "image_bytes {index} is not an image PIL can read ({detail})."
MSG_BOTH = "Send an image or a video, not both: the runner reads one picture input per request."
MSG_NUMBER = "{name} must be a number; got {value!r}."


@dataclass(frozen=True)
class RunnerRequest:
    """What the client asked: the bare question (the runner adds its family's template), pictures, settings."""

    text: str
    images: tuple[bytes, ...] = ()
    video: bytes | None = None
    max_tokens: int = 128
    sampling: dict = field(default_factory=dict)  # args field -> value, only the ones the client sent
    stop: tuple[str, ...] = ()
    lora_task_id: int | None = None


SAMPLING_INPUTS = {"temperature": ("temperature", float), "top_k": ("top_k", int), "top_p": ("top_p", float),
                   "repetition_penalty": ("repetition_penalty", float)}


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _first(get, name):
    value = get(name)
    return None if value is None or np.asarray(value).size == 0 else np.asarray(value).reshape(-1)[0]


def read_request(get: Callable[[str], np.ndarray | None], max_tokens_limit: int, default_max_tokens: int,
                 max_images: int = 1) -> RunnerRequest:
    """`get(name)` -> the input as numpy or None; ValueError with a sentence for the client on bad values."""
    text = _first(get, "text_input")
    if text is None:
        raise ValueError(MSG_NO_TEXT)
    tokens = _first(get, "max_tokens")
    tokens = default_max_tokens if tokens is None else int(tokens)
    if not 1 <= tokens <= max_tokens_limit:
        raise ValueError(MSG_TOKENS.format(limit=max_tokens_limit, value=tokens))
    images = tuple(bytes(v) for v in np.asarray(get("image_bytes") if get("image_bytes") is not None else [])
                   .reshape(-1))
    if len(images) > max_images:
        raise ValueError(MSG_IMAGES.format(limit=max_images, count=len(images)))
    video = _first(get, "video_bytes")
    if video is not None and images:
        raise ValueError(MSG_BOTH)
    sampling = {}
    for name, (field_name, cast) in SAMPLING_INPUTS.items():
        value = _first(get, name)
        if value is not None:
            try:
                sampling[field_name] = cast(value)
            except (TypeError, ValueError):
                raise ValueError(MSG_NUMBER.format(name=name, value=value)) from None
    stop = get("stop_words")
    lora = _first(get, "lora_task_id")
    return RunnerRequest(text=_text(text), images=images, video=None if video is None else bytes(video),
                         max_tokens=tokens, sampling=sampling,
                         stop=tuple(s for s in (_text(v) for v in np.asarray(stop).reshape(-1)) if s) if stop is not None else (),
                         lora_task_id=None if lora is None else int(lora))


def decode_image(data: bytes, index: int = 0):
    """Image bytes (PNG, JPEG, ...) -> an RGB PIL image, as run.py's load_test_data gives the runner."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ValueError(MSG_IMAGE.format(index=index, detail=exc)) from None
    return image.convert("RGB")


MSG_LORA_UNKNOWN = ("lora_task_id {uid} is not an adapter this engine was built with; it holds {baked} "
                    "(trtllm-build --lora_dir, numbered in load order).")


def baked_adapters(text: str) -> tuple[str, ...]:
    """The lora_adapters parameter (the adapters the LLM engine was built with, comma-separated in load order)."""
    return tuple(name.strip() for name in (text or "").split(",") if name.strip())


def check_lora_task(request: RunnerRequest, adapters: tuple[str, ...]) -> None:
    """ValueError naming the request's lora_task_id when it is not a place in `adapters` (the runner's LoraManager
    numbers the engine's adapters "0", "1", ... in load order, and an unknown uid is a bare KeyError there). Nothing
    is checked when the repository records no adapters (written before lora_adapters, or by hand)."""
    uid = request.lora_task_id
    if uid is None or not adapters or 0 <= uid < len(adapters):
        return
    baked = ", ".join(f"{i} '{name}'" for i, name in enumerate(adapters))
    raise ValueError(MSG_LORA_UNKNOWN.format(uid=uid, baked=baked))
