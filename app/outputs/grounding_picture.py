"""Grounded phrases drawn on their picture: each phrase's boxes outlined in its own colour, labelled with it.

Phrase i has colour `phrase_colour(i)` on the picture, so a page can colour the phrase's words the same to
link them to their box.
"""

from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont

from app.outputs.grounding import GroundedPhrase, Grounding

# Ten colours that stay apart from each other (Tableau 10), then repeated.
PALETTE = ("#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F",
           "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F", "#BAB0AC")
_DARK_TEXT, _LIGHT_TEXT = (20, 20, 20), (255, 255, 255)


def phrase_colour(index: int) -> str:
    """The colour of phrase `index` (hex), the same on the picture and wherever the phrase is shown."""
    return PALETTE[index % len(PALETTE)]


def phrase_label(phrase: GroundedPhrase, index: int) -> str:
    """The phrase itself, or "object N" for a box the model gave no phrase."""
    return phrase.text if phrase.named else f"object {index + 1}"


def _text_colour(hex_colour: str) -> tuple[int, int, int]:
    red, green, blue = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return _DARK_TEXT if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else _LIGHT_TEXT


def draw_grounding(image: Image.Image, grounding: Grounding, line_width: int | None = None,
                   font_size: int | None = None) -> Image.Image:
    """A copy of `image` (RGB) with every phrase's boxes outlined and labelled; the input is left as it was."""
    picture = image.convert("RGB")
    width, height = picture.size
    line_width = line_width or max(2, round(min(width, height) / 150))
    font = ImageFont.load_default(size=font_size or max(11, round(min(width, height) / 32)))
    draw = ImageDraw.Draw(picture)
    for index, phrase in enumerate(grounding.phrases):
        colour = phrase_colour(index)
        label = phrase_label(phrase, index)
        for box in phrase.boxes:
            left, top, right, bottom = box.pixels(width, height)
            draw.rectangle((left, top, max(left, right - 1), max(top, bottom - 1)), outline=colour, width=line_width)
            text_left, text_top, text_right, text_bottom = draw.textbbox((0, 0), label, font=font)
            pad = max(2, line_width)
            label_w, label_h = text_right - text_left + 2 * pad, text_bottom - text_top + 2 * pad
            x = min(max(left, 0), max(width - label_w, 0))
            y = top - label_h if top - label_h >= 0 else min(top, max(height - label_h, 0))
            draw.rectangle((x, y, x + label_w - 1, y + label_h - 1), fill=colour)
            draw.text((x + pad - text_left, y + pad - text_top), label, fill=_text_colour(colour), font=font)
    return picture
