"""image_url inputs -> token ids of what the CPU encoder sees in each image, placed in the prompt.

Upstream takes http(s) URLs the server can reach and inline `data:` URIs and refuses local paths and
file:// URLs (the input is client-controlled). The stand-in fetches nothing: it decodes `data:` URIs only.
Each image becomes the encoder's fixed-size block of ids ("[Image: ...]" padded; "[Image 1: ...]",
"[Image 2: ...]" for several), which is what the engine path's prompt table holds for it; the blocks go
at the prompt's `<image>` markers, else at the start of the last user turn. No Triton import, so tests use it directly.
"""

from __future__ import annotations

import base64
import binascii
import io
import re

import numpy as np

from cpu_runtime.llmapi_standin.messages import MSG_DATA, MSG_LOCAL, MSG_MARKERS, MSG_REMOTE

MARKER = "<image>"
MAX_IMAGE_SIDE = 2048
DATA_URI = re.compile(r"data:(image/[\w.+-]+)?(;[\w=.-]+)*;base64,(.*)", re.S)


def decode_image_url(url: str, index: int):
    """One image_url value -> an RGB PIL image; ValueError with the reason."""
    from PIL import Image

    text = url.strip()
    lowered = text[:16].lower()
    if lowered.startswith(("http://", "https://")):
        raise ValueError(MSG_REMOTE)
    if not lowered.startswith("data:"):
        raise ValueError(MSG_LOCAL.format(start=text[:40]))
    match = DATA_URI.fullmatch(text)
    if match is None:
        raise ValueError(MSG_DATA.format(index=index, detail="no ';base64,' part"))
    try:
        raw = base64.b64decode(match.group(3), validate=True)
        image = Image.open(io.BytesIO(raw))
        image.draft("RGB", (MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
        image = image.convert("RGB")
    except (binascii.Error, ValueError, OSError) as exc:
        raise ValueError(MSG_DATA.format(index=index, detail=exc)) from None
    image.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
    return image


def image_ids(encoder, image, number: int | None = None) -> tuple[list[int], str]:
    """The encoder's block of token ids for one image, and what it saw (its description or text); `number`:
    the image's place among several of one request ("[Image 2: ...]"), None for the only one."""
    bgr = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[:, :, ::-1])
    ids, seen = encoder.image_block(bgr, number)
    return ids, seen.sentence() if hasattr(seen, "sentence") else seen


def user_header(tokenizer) -> str | None:
    """The text a user turn starts with in the tokenizer's chat template (e.g. '<|im_start|>user\\n')."""
    try:
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": "\x00"}], tokenize=False)
    except Exception:  # noqa: BLE001 - no chat template: images go first
        return None
    before = rendered.split("\x00")[0]
    at = before.rfind("user")
    if at < 0:
        return None
    return before[max(0, before.rfind("<", 0, at)):]


def prompt_ids(tokenizer, prompt: str, blocks: list[list[int]], header: str | None) -> list[int]:
    """Token ids of `prompt` with each image's block at its marker, else at the start of the last user turn."""
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False) if text else []  # noqa: E731
    if not blocks:
        return tokenizer.encode(prompt, add_special_tokens=False)
    markers = prompt.count(MARKER)
    if markers:
        if markers != len(blocks):
            raise ValueError(MSG_MARKERS.format(markers=markers, marker=MARKER, count=len(blocks)))
        parts = prompt.split(MARKER)
        ids = encode(parts[0])
        for block, part in zip(blocks, parts[1:], strict=True):
            ids += block + encode(part)
        return ids
    at = prompt.rfind(header) + len(header) if header and header in prompt else 0
    return encode(prompt[:at]) + [i for block in blocks for i in block] + encode("\n" + prompt[at:])
