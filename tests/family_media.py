"""Pictures of each runner family's job, drawn with Pillow for the tests: a bar chart with a value axis, a
document page with a heading, paragraphs and a list. Nothing is downloaded."""

from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont

CHART_TITLE = "Fruit sales"
CHART_BARS = (("Apples", 40, (220, 50, 50)), ("Pears", 75, (50, 160, 60)), ("Plums", 25, (60, 80, 220)),
              ("Kiwis", 90, (240, 160, 20)))
CHART_TOP_VALUE, CHART_TICK = 100, 20
PAGE_HEADING = "Quarterly Report"
PAGE_SECTION = "Highlights"
PAGE_PARAGRAPH = ("The quarter went well for the shop and its", "customers, with sales up in every region.")
PAGE_ITEMS = ("New store opened in Leeds", "Online orders doubled")


def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size)


def bar_chart(bars=CHART_BARS, title: str = CHART_TITLE, size: tuple[int, int] = (640, 480)) -> Image.Image:
    """Vertical bars of distinct colours on white over a value axis 0..CHART_TOP_VALUE with tick labels every
    CHART_TICK, each bar's label under it and the title above."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    draw.text((size[0] // 2, 20), title, fill="black", font=font(24), anchor="mt")
    left, base, top = 90, size[1] - 80, 80
    draw.line([(left, top - 10), (left, base)], fill="black", width=2)
    draw.line([(left, base), (size[0] - 40, base)], fill="black", width=2)
    for value in range(0, CHART_TOP_VALUE + 1, CHART_TICK):
        y = base - (base - top) * value / CHART_TOP_VALUE
        draw.line([(left - 6, y), (left, y)], fill="black")
        draw.text((left - 10, y), str(value), fill="black", font=font(16), anchor="rm")
    step = (size[0] - 40 - left) // len(bars)
    for index, (label, value, colour) in enumerate(bars):
        x = left + 40 + index * step
        draw.rectangle([x, base - (base - top) * value / CHART_TOP_VALUE, x + step * 0.6, base - 1], fill=colour)
        draw.text((x + step * 0.3, base + 10), label, fill="black", font=font(16), anchor="mt")
    return image


def document_page(size: tuple[int, int] = (850, 1100)) -> Image.Image:
    """A page: a large heading, a paragraph of two lines, a smaller section heading and a two-item list."""
    page = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(page)
    draw.text((80, 80), PAGE_HEADING, fill="black", font=font(40))
    y = 160
    for line in PAGE_PARAGRAPH:
        draw.text((80, y), line, fill="black", font=font(18))
        y += 26
    draw.text((80, y + 30), PAGE_SECTION, fill="black", font=font(28))
    y += 80
    for item in PAGE_ITEMS:
        draw.text((80, y), f"- {item}", fill="black", font=font(18))
        y += 30
    return page
