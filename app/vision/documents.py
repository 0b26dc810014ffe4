"""PDF intake: check an uploaded PDF and render the pages asked for to RGB images with pdfium (pypdfium2).

The byte size is checked before the file is read and the header before pdfium sees it. Password-protected
and damaged files are refused with a sentence each; a document longer than the page limit needs a page
range ("1-3,5", "4-"). A page too large for the pixel limit is rendered at a lower resolution instead of
being refused. pdfium is not thread-safe, so every call into it holds one lock.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw
from PIL import Image

from app.core.constants import MAX_PDF_BYTES, MAX_PDF_PAGE_PIXELS, MAX_PDF_PAGES, PDF_RENDER_DPI
from app.core.errors import InvalidDocument
from app.vision.images import to_rgb
from app.vision.messages import (
    MSG_PDF_BAD_RANGE,
    MSG_PDF_BROKEN,
    MSG_PDF_EMPTY,
    MSG_PDF_ENCRYPTED,
    MSG_PDF_NO_PAGES,
    MSG_PDF_NOT_A_PDF,
    MSG_PDF_PAGE_OUT_OF_RANGE,
    MSG_PDF_RANGE_TOO_LONG,
    MSG_PDF_RENDER_FAILED,
    MSG_PDF_TOO_LARGE_BYTES,
    MSG_PDF_TOO_MANY_PAGES,
)

_MB = 1024 * 1024
_POINTS_PER_INCH = 72.0
_HEADER_WINDOW = 1024  # the PDF header may follow a little junk; readers look this far
_PASSWORD_ERRORS = (pdfium_raw.FPDF_ERR_PASSWORD, pdfium_raw.FPDF_ERR_SECURITY)
_PART = re.compile(r"^(\d+)?\s*(-)?\s*(\d+)?$")
_LOCK = threading.Lock()


@dataclass(frozen=True)
class DocumentLimits:
    """Upload limits; the defaults come from app/core/constants.py."""

    max_bytes: int = MAX_PDF_BYTES
    max_pages: int = MAX_PDF_PAGES
    max_page_pixels: int = MAX_PDF_PAGE_PIXELS


@dataclass(frozen=True)
class RenderedPages:
    """The rendered pages (RGB) with their 1-based numbers in a document of `page_count` pages."""

    name: str
    page_count: int
    numbers: tuple[int, ...]
    pages: tuple[Image.Image, ...]


def parse_page_range(pages: str, page_count: int, name: str = "The PDF") -> tuple[int, ...]:
    """1-based page numbers from text like "1-3, 5" or "4-" (to the end), in the order written, no repeats."""
    numbers: list[int] = []
    parts = [part.strip() for part in pages.split(",")]
    if not any(parts):
        raise InvalidDocument(MSG_PDF_BAD_RANGE.format(pages=pages))
    for part in parts:
        match = _PART.match(part)
        if not part or not match or not (match.group(1) or match.group(3)) or (
                match.group(1) and match.group(3) and not match.group(2)):
            raise InvalidDocument(MSG_PDF_BAD_RANGE.format(pages=pages))
        first = int(match.group(1) or 1)
        last = int(match.group(3)) if match.group(3) else (page_count if match.group(2) else first)
        if first > last:
            raise InvalidDocument(MSG_PDF_BAD_RANGE.format(pages=pages))
        for page in (first, last):
            if not 1 <= page <= page_count:
                raise InvalidDocument(MSG_PDF_PAGE_OUT_OF_RANGE.format(name=name, count=page_count, page=page))
        numbers += [n for n in range(first, last + 1) if n not in numbers]
    return tuple(numbers)


def _read(source: str | os.PathLike | bytes, name: str, limits: DocumentLimits) -> bytes:
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
    else:
        size = Path(source).stat().st_size
        if size > limits.max_bytes:
            raise InvalidDocument(MSG_PDF_TOO_LARGE_BYTES.format(name=name, size_mb=size / _MB,
                                                                 limit_mb=limits.max_bytes / _MB))
        data = Path(source).read_bytes()
    if not data:
        raise InvalidDocument(MSG_PDF_EMPTY.format(name=name))
    if len(data) > limits.max_bytes:
        raise InvalidDocument(MSG_PDF_TOO_LARGE_BYTES.format(name=name, size_mb=len(data) / _MB,
                                                             limit_mb=limits.max_bytes / _MB))
    if b"%PDF-" not in data[:_HEADER_WINDOW]:
        raise InvalidDocument(MSG_PDF_NOT_A_PDF.format(name=name))
    return data


def _open(data: bytes, name: str) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) in _PASSWORD_ERRORS:
            raise InvalidDocument(MSG_PDF_ENCRYPTED.format(name=name)) from None
        raise InvalidDocument(MSG_PDF_BROKEN.format(name=name, detail=_detail(exc))) from None


def _detail(exc: Exception) -> str:
    text = str(exc)
    found = re.search(r"PDFium: ([^)]*)", text)
    return (found.group(1) if found else text).rstrip(".").lower()


def _name_of(source: str | os.PathLike | bytes, name: str | None) -> str:
    if name:
        return name
    return "The PDF" if isinstance(source, bytes | bytearray) else Path(source).name


def pdf_page_count(source: str | os.PathLike | bytes, name: str | None = None,
                   limits: DocumentLimits = DocumentLimits()) -> int:
    """How many pages the PDF has (nothing rendered); raises InvalidDocument for a file that cannot be used."""
    name = _name_of(source, name)
    data = _read(source, name, limits)
    with _LOCK:
        document = _open(data, name)
        try:
            return len(document)
        finally:
            document.close()


def _render_page(document: pdfium.PdfDocument, number: int, dpi: float, name: str,
                 limits: DocumentLimits) -> Image.Image:
    page = document[number - 1]
    try:
        width, height = page.get_size()
        scale = dpi / _POINTS_PER_INCH
        if width * height * scale * scale > limits.max_page_pixels:
            scale = math.sqrt(limits.max_page_pixels / (width * height))
        bitmap = page.render(scale=scale)
        try:
            return to_rgb(bitmap.to_pil().copy())
        finally:
            bitmap.close()
    except (pdfium.PdfiumError, ValueError, OSError) as exc:
        raise InvalidDocument(MSG_PDF_RENDER_FAILED.format(page=number, name=name, detail=_detail(exc))) from None
    finally:
        page.close()


def render_pdf(source: str | os.PathLike | bytes, name: str | None = None, pages: str | Sequence[int] | None = None,
               dpi: float = PDF_RENDER_DPI, limits: DocumentLimits = DocumentLimits()) -> RenderedPages:
    """Render the pages asked for (all when None: then the document must fit the page limit) to RGB images.

    `pages` is a range text ("1-3,5") or 1-based numbers. Raises InvalidDocument with a message for the user.
    """
    name = _name_of(source, name)
    data = _read(source, name, limits)
    with _LOCK:
        document = _open(data, name)
        try:
            count = len(document)
            if count == 0:
                raise InvalidDocument(MSG_PDF_NO_PAGES.format(name=name))
            if pages is None:
                if count > limits.max_pages:
                    raise InvalidDocument(MSG_PDF_TOO_MANY_PAGES.format(name=name, count=count,
                                                                        limit=limits.max_pages))
                numbers = tuple(range(1, count + 1))
            else:
                text = pages if isinstance(pages, str) else ",".join(str(int(n)) for n in pages)
                numbers = parse_page_range(text, count, name)
                if len(numbers) > limits.max_pages:
                    raise InvalidDocument(MSG_PDF_RANGE_TOO_LONG.format(pages=text, count=len(numbers),
                                                                        limit=limits.max_pages))
            images = tuple(_render_page(document, number, dpi, name, limits) for number in numbers)
        finally:
            document.close()
    return RenderedPages(name, count, numbers, images)
