"""Grounded phrases drawn on a picture: each phrase's boxes in its colour, labelled, the input untouched."""

import numpy as np
from PIL import Image, ImageColor

from app.outputs.grounding import parse_grounding
from app.outputs.grounding_picture import PALETTE, draw_grounding, phrase_colour, phrase_label

TEXT = ("<grounding> A<phrase> red square</phrase><object><patch_index_0264><patch_index_0495></object> and"
        "<object><patch_index_0792><patch_index_0926></object>")


def test_each_phrase_is_outlined_in_its_colour_with_a_label():
    image = Image.new("RGB", (320, 320), "white")
    grounding = parse_grounding(TEXT)
    drawn = draw_grounding(image, grounding, line_width=3)
    assert np.asarray(image).min() == 255, "the input picture was drawn on"
    pixels = np.asarray(drawn)
    for index, phrase in enumerate(grounding.phrases):
        colour = ImageColor.getrgb(phrase_colour(index))
        left, top, right, bottom = phrase.boxes[0].pixels(320, 320)
        middle_y = (top + bottom) // 2
        assert tuple(pixels[middle_y, left + 1]) == colour, "left edge"
        assert tuple(pixels[middle_y, right - 2]) == colour, "right edge"
        assert tuple(pixels[middle_y, (left + right) // 2]) == (255, 255, 255), "inside stays clear"
        label_row = pixels[top - 4, left:right]
        assert (label_row == colour).all(axis=1).sum() > 10, "a label in the phrase's colour above the box"
    assert phrase_label(grounding.phrases[0], 0) == "red square"
    assert phrase_label(grounding.phrases[1], 1) == "object 2"


def test_a_box_at_the_top_gets_its_label_inside_the_picture():
    grounding = parse_grounding("<phrase> top</phrase><object><patch_index_0000><patch_index_0100></object>")
    drawn = np.asarray(draw_grounding(Image.new("RGB", (256, 256), "white"), grounding))
    colour = ImageColor.getrgb(phrase_colour(0))
    assert (drawn[:12, :40] == colour).all(axis=2).sum() > 100


def test_colours_are_distinct_and_repeat_after_the_palette():
    assert len({phrase_colour(i) for i in range(len(PALETTE))}) == len(PALETTE)
    assert phrase_colour(len(PALETTE)) == phrase_colour(0)


def test_a_grey_or_transparent_picture_comes_back_rgb():
    drawn = draw_grounding(Image.new("LA", (64, 64)), parse_grounding(TEXT))
    assert drawn.mode == "RGB" and drawn.size == (64, 64)
