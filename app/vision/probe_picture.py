"""The adapter check's picture: a red circle and a blue square on white, drawn with Pillow (no file, no download).

A model that answers only about an image (InternLM-XComposer2), or whose adapter acts only at image rows (its Partial
LoRA), shows nothing of an adapter on a text-only probe; the check asks about this picture there instead."""

from __future__ import annotations

import io
from functools import lru_cache

from PIL import Image, ImageDraw

SIZE = 224  # pixels a side: small to send, large enough for any family's resize


@lru_cache(maxsize=1)
def probe_picture() -> bytes:
    """The picture as PNG bytes (the same bytes every call, so probes of one check see one image)."""
    image = Image.new("RGB", (SIZE, SIZE), "white")
    draw = ImageDraw.Draw(image)
    draw.ellipse((24, 24, 104, 104), fill=(220, 20, 20))
    draw.rectangle((120, 120, 200, 200), fill=(20, 40, 220))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
