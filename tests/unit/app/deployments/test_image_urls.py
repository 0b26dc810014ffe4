"""Images as data URLs (OpenAI-compatible servers and Triton's llmapi model share them): PNG, JPEG and WebP go
as they are, other formats as PNG, damaged files and too many images are refused."""

import base64
import io

import pytest
from PIL import Image

from app.core.errors import ChatError, TooManyImages
from app.deployments.image_urls import MAX_IMAGES, check_image_count, image_data_url


def image_bytes(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(("fmt", "kind"), [("PNG", "png"), ("JPEG", "jpeg"), ("WEBP", "webp")])
def test_common_formats_go_as_they_are(fmt, kind):
    raw = image_bytes(fmt)
    assert image_data_url(raw) == f"data:image/{kind};base64," + base64.b64encode(raw).decode()


def test_other_formats_go_as_png(tmp_path):
    path = tmp_path / "picture.bmp"
    path.write_bytes(image_bytes("BMP"))
    url = image_data_url(str(path))
    assert url.startswith("data:image/png;base64,")
    decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert decoded.format == "PNG" and decoded.size == (8, 8)


def test_a_damaged_image_is_refused():
    with pytest.raises(ChatError):
        image_data_url(b"not an image")


def test_at_most_max_images_per_message():
    check_image_count(MAX_IMAGES)
    with pytest.raises(TooManyImages, match=f"at most {MAX_IMAGES} images with one message, got {MAX_IMAGES + 1}"):
        check_image_count(MAX_IMAGES + 1)
