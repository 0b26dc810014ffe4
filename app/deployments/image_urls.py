"""Images as the data URLs a chat message carries (OpenAI-compatible servers, Triton's llmapi model), at most
MAX_IMAGES per message."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from app.core.errors import TooManyImages
from app.deployments.messages import MSG_TOO_MANY_IMAGES
from app.vision.images import image_format, load_image

MAX_IMAGES = 8  # per message; the server may take fewer and says so
SENT_AS_IS = {"PNG": "png", "JPEG": "jpeg", "WEBP": "webp"}


def image_data_url(source: str | bytes) -> str:
    """A checked image (the app's usual intake checks) as a data URL; other formats are sent as PNG."""
    image = load_image(source)
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    kind = SENT_AS_IS.get(image_format(raw) or "")
    if kind is None:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        raw, kind = buffer.getvalue(), "png"
    return f"data:image/{kind};base64," + base64.b64encode(raw).decode("ascii")


def check_image_count(count: int) -> None:
    """TooManyImages when one message would carry more than MAX_IMAGES."""
    if count > MAX_IMAGES:
        raise TooManyImages(MSG_TOO_MANY_IMAGES.format(limit=MAX_IMAGES, count=count), limit=MAX_IMAGES)
