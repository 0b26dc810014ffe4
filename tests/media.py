"""Short videos and PDFs made on the fly for the tests: a red ball moving left to right, pages drawn with Pillow.

Nothing here is downloaded; every file is written by OpenCV (MP4, WebM), Pillow (GIF, PDF) or by hand
(a PDF whose trailer names an encryption dictionary).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw

RED = (220, 20, 20)
FOURCC = {"mp4": "mp4v", "webm": "VP80"}


def ball_frame(index: int, frames: int, size: tuple[int, int] = (160, 120), radius: int = 14) -> Image.Image:
    """Frame `index` of `frames`: a red ball on white, its centre moving evenly from the left edge to the right."""
    width, height = size
    x = radius + (width - 2 * radius) * index / max(frames - 1, 1)
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).ellipse((x - radius, height / 2 - radius, x + radius, height / 2 + radius), fill=RED)
    return image


def ball_x(image: Image.Image) -> float:
    """The mean column of the red pixels (where the ball is)."""
    pixels = np.asarray(image.convert("RGB")).astype(int)
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 100) & (pixels[..., 2] < 100)
    assert red.any(), "no red ball in this frame"
    return float(np.nonzero(red)[1].mean())


def ball_video(path: Path, frames: int = 30, fps: float = 10.0, size: tuple[int, int] = (160, 120)) -> Path:
    """The moving ball as .mp4 or .webm (by `path`'s suffix, written by OpenCV) or .gif (Pillow)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pictures = [ball_frame(i, frames, size) for i in range(frames)]
    kind = path.suffix.lstrip(".").lower()
    if kind == "gif":
        pictures[0].save(path, save_all=True, append_images=pictures[1:], duration=round(1000 / fps), loop=0)
        return path
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*FOURCC[kind]), fps, size)
    assert writer.isOpened(), f"OpenCV cannot write {kind}"
    for picture in pictures:
        writer.write(cv2.cvtColor(np.asarray(picture), cv2.COLOR_RGB2BGR))
    writer.release()
    return path


def pdf_of_pages(pages: Sequence[Image.Image]) -> bytes:
    """The pictures as the pages of one PDF (Pillow's writer)."""
    buffer = io.BytesIO()
    pages[0].save(buffer, format="PDF", save_all=True, append_images=list(pages[1:]), resolution=72.0)
    return buffer.getvalue()


def page_with_heading(text: str, size: tuple[int, int] = (300, 400), fill: tuple[int, int, int] = (0, 0, 0)):
    """A white page with `text` near its top and a coloured block below it."""
    page = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(page)
    draw.text((20, 20), text, fill=fill)
    draw.rectangle((20, 60, size[0] - 20, 120), fill=fill)
    return page


def hand_made_pdf(objects: Sequence[str], trailer_extra: str = "") -> bytes:
    """A PDF of the given object bodies (object 1 is the catalogue), with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R {trailer_extra}>>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


ONE_PAGE = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"]


def password_pdf() -> bytes:
    """A one-page PDF under the standard security handler whose user password is not empty."""
    encrypt = "<< /Filter /Standard /V 1 /R 2 /O <" + "11" * 32 + "> /U <" + "22" * 32 + "> /P -4 >>"
    return hand_made_pdf([*ONE_PAGE, encrypt], "/Encrypt 4 0 R /ID [<" + "33" * 16 + "> <" + "33" * 16 + ">] ")


def bomb_gif() -> bytes:
    """A 10x10 GIF whose header claims a 60000x60000 screen: Pillow's decompression-bomb check refuses to open it."""
    buffer = io.BytesIO()
    Image.new("P", (10, 10)).save(buffer, "GIF")
    data = bytearray(buffer.getvalue())
    data[6:10] = struct.pack("<HH", 60000, 60000)
    return bytes(data)
