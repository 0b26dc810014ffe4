import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageFile

from app.core import constants as C
from app.core.errors import ChatError, InvalidImage
from app.vision import messages as M
from app.vision.images import ImageLimits, image_format, load_image


def encoded(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares width x height, followed by a tiny IDAT: no real pixel data."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "BMP", "GIF"])
def test_accepted_formats_decode_to_rgb(tmp_path, fmt):
    source = Image.new("RGB", (40, 30), (200, 30, 40))
    path = write(tmp_path, f"x.{fmt.lower()}", encoded(source, fmt))
    image = load_image(path)
    assert image.mode == "RGB" and image.size == (40, 30)
    r, g, b = image.getpixel((20, 15))
    assert r > 150 and g < 80 and b < 80


def test_gif_uses_first_frame(tmp_path):
    frames = [Image.new("RGB", (16, 16), (255, 0, 0)), Image.new("RGB", (16, 16), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    assert Image.open(io.BytesIO(buffer.getvalue())).n_frames == 2
    assert load_image(buffer.getvalue()).getpixel((8, 8)) == (255, 0, 0)


def test_exif_orientation_applied(tmp_path):
    source = Image.new("RGB", (40, 20), (255, 0, 0))
    source.paste((0, 0, 255), (20, 0, 40, 20))  # left red, right blue
    exif = Image.Exif()
    exif[0x0112] = 6  # stored rotated: display needs a 90 degree clockwise turn
    image = load_image(encoded(source, "JPEG", exif=exif.tobytes(), quality=95))
    assert image.size == (20, 40)
    top, bottom = image.getpixel((10, 5)), image.getpixel((10, 35))
    assert top[0] > 200 and top[2] < 60  # the left (red) side is now on top
    assert bottom[2] > 200 and bottom[0] < 60


def test_palette_with_transparency_composited_on_white():
    palette = Image.new("P", (10, 10), 0)
    palette.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    palette.paste(1, (5, 0, 10, 10))
    image = load_image(encoded(palette, "PNG", transparency=0))
    assert image.mode == "RGB"
    assert image.getpixel((2, 5)) == (255, 255, 255)  # transparent index -> background
    assert image.getpixel((7, 5)) == (255, 0, 0)


def test_alpha_and_grey_alpha_composited_on_white():
    rgba = Image.new("RGBA", (4, 4), (10, 20, 30, 0))
    rgba.putpixel((0, 0), (10, 20, 30, 255))
    image = load_image(encoded(rgba, "PNG"))
    assert image.getpixel((3, 3)) == (255, 255, 255) and image.getpixel((0, 0)) == (10, 20, 30)
    la = Image.new("LA", (4, 4), (0, 128))
    r, g, b = load_image(encoded(la, "PNG")).getpixel((1, 1))
    assert r == g == b and 126 <= r <= 129  # black at half opacity over white


def test_cmyk_jpeg_to_rgb():
    cmyk = Image.new("CMYK", (8, 8), (0, 255, 255, 0))  # pure red in CMYK
    image = load_image(encoded(cmyk, "JPEG", quality=95))
    r, g, b = image.getpixel((4, 4))
    assert image.mode == "RGB" and r > 200 and g < 60 and b < 60


def test_sixteen_bit_grey_scaled_not_clipped():
    values = np.array([[0, 32896, 65535]], dtype=np.uint16)
    image = load_image(encoded(Image.fromarray(values), "PNG"))
    assert [image.getpixel((x, 0))[0] for x in range(3)] == [0, 128, 255]


def test_bad_files_each_get_their_own_message(tmp_path):
    jpeg = encoded(Image.new("RGB", (64, 64), (1, 2, 3)), "JPEG")
    png = encoded(Image.effect_noise((64, 64), 50).convert("RGB"), "PNG")
    cases = {
        "empty.png": (b"", M.MSG_IMAGE_EMPTY.format(name="empty.png")),
        "notes.png": (b"just some text, not pixels\n" * 4, M.MSG_IMAGE_NOT_AN_IMAGE.format(name="notes.png")),
        "cut.png": (png[: len(png) // 2], M.MSG_IMAGE_TRUNCATED.format(name="cut.png")),
        "cut.jpg": (jpeg[: len(jpeg) - 200], M.MSG_IMAGE_TRUNCATED.format(name="cut.jpg")),
        "scan.tif": (encoded(Image.new("RGB", (4, 4)), "TIFF"),
                     M.MSG_IMAGE_UNSUPPORTED_FORMAT.format(name="scan.tif", format="TIFF")),
    }
    messages = set()
    for name, (data, expected) in cases.items():
        with pytest.raises(InvalidImage) as caught:
            load_image(write(tmp_path, name, data))
        assert str(caught.value) == expected
        messages.add(str(caught.value).replace(name, ""))
    assert len(messages) == len(cases) - 1  # the two truncated files share one message
    assert issubclass(InvalidImage, ChatError)


def test_pixel_limit_refused_before_decoding(tmp_path, monkeypatch):
    def no_decoding(self):
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    with pytest.raises(InvalidImage) as caught:
        load_image(write(tmp_path, "big.png", png_header_only(8000, 6000)))
    assert str(caught.value) == M.MSG_IMAGE_TOO_MANY_PIXELS.format(
        name="big.png", width=8000, height=6000, megapixels=48.0, limit_mp=C.MAX_IMAGE_PIXELS / 1e6)
    # Far past Pillow's own bomb threshold: Pillow refuses at open, still with a message of ours.
    with pytest.raises(InvalidImage, match="far more pixels"):
        load_image(write(tmp_path, "bomb.png", png_header_only(60000, 60000)))


def test_configurable_pixel_and_byte_limits(tmp_path):
    data = encoded(Image.new("RGB", (100, 100)), "PNG")
    with pytest.raises(InvalidImage, match="10000 pixels|megapixels"):
        load_image(data, name="a.png", limits=ImageLimits(max_pixels=9_999))
    path = write(tmp_path, "a.png", data)
    with pytest.raises(InvalidImage) as caught:
        load_image(path, limits=ImageLimits(max_bytes=len(data) - 1))
    assert "MB; images may be at most" in str(caught.value)
    big = write(tmp_path, "huge.png", b"\0" * (C.MAX_IMAGE_BYTES + 1))
    with pytest.raises(InvalidImage, match="images may be at most 20 MB"):
        load_image(big)


def test_draft_decode_keeps_requested_size():
    photo = Image.effect_noise((4000, 3000), 40).convert("RGB")
    image = load_image(encoded(photo, "JPEG"), draft_side=1024)
    assert min(image.size) >= 1024 and image.size[0] < 4000


def test_image_format_sniffs_without_decoding():
    assert image_format(encoded(Image.new("RGB", (2, 2)), "WEBP")) == "WEBP"
    assert image_format(b"nope") is None
