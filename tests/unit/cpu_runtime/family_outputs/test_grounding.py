"""Kosmos-2's markup from boxes (cpu_runtime/family_outputs/grounding.py), held to upstream's processor facts and
read back by the app's parser (app/outputs/grounding.py)."""

import pytest

from app.outputs.grounding import parse_grounding
from cpu_runtime.family_outputs.grounding import Grounded, grounded_text, object_markup, patch_indices
from cpu_runtime.family_outputs.messages import NOTHING_GROUNDED


def test_patch_indices_follow_upstreams_coordinate_to_patch_index():
    # the documented example's boxes (tests/data/upstream/family_outputs.yaml): snowman 0044..0863, fire 0005..0911
    assert patch_indices((0.390625 * 320, 0.046875 * 320, 0.984375 * 320, 0.828125 * 320), 320, 320) == (44, 863)
    assert patch_indices((0, 0, 100, 100), 100, 100) == (0, 1023)
    assert patch_indices((0, 0, 1, 1), 64, 64) == (0, 0)  # inside one cell


def test_the_installed_transformers_agrees():
    processing = pytest.importorskip("transformers.models.kosmos2.processing_kosmos2")
    for box in ((12, 40, 300, 200), (0, 0, 511, 511), (250, 17, 260, 31)):
        normalised = (box[0] / 512, box[1] / 512, box[2] / 512, box[3] / 512)
        assert patch_indices(box, 512, 512) == tuple(processing.coordinate_to_patch_index(normalised, 32))


def test_an_empty_box_is_refused():
    with pytest.raises(ValueError, match="empty"):
        patch_indices((10, 10, 10, 20), 100, 100)


def test_the_app_reads_back_the_boxes_given_to_within_a_cell():
    face, sign = (130, 60, 250, 190), (20, 400, 180, 440)
    text = grounded_text("<grounding>An image of", [Grounded("a face", (face,)),
                                                     Grounded('the text "STOP"', (sign,))], 512, 512)
    assert text.startswith("An image of<phrase> a face</phrase><object><patch_index_")
    parsed = parse_grounding(text)
    assert parsed.text == 'An image of a face and the text "STOP".'
    assert [p.text for p in parsed.phrases] == ["a face", 'the text "STOP"']
    for phrase, given in zip(parsed.phrases, (face, sign), strict=True):
        # upstream decodes a pair spanning rows and columns from cell centre to cell centre: 16 px cells here
        assert all(abs(a - b) <= 16 for a, b in zip(phrase.boxes[0].pixels(512, 512), given, strict=True)), \
            (phrase.boxes[0].pixels(512, 512), given)


def test_several_boxes_of_one_phrase_share_its_object():
    markup = object_markup([(0, 0, 16, 16), (496, 496, 512, 512)], 512, 512)
    assert markup == ("<object><patch_index_0000><patch_index_0000></delimiter_of_multi_objects/>"
                      "<patch_index_1023><patch_index_1023></object>")
    assert len(parse_grounding("An image of<phrase> two faces</phrase>" + markup).phrases[0].boxes) == 2


def test_a_question_is_answered_without_repeating_it_and_nothing_found_is_said():
    found = [Grounded("a cat", ((0, 0, 10, 10),))]
    for asked in ("What is this?", "Describe this picture.", "where is the cat"):
        answer = grounded_text(f"<grounding>{asked}", found, 10, 10)
        assert answer.startswith("It shows<phrase> a cat</phrase>"), answer
        assert parse_grounding(answer).text == "It shows a cat.", answer
    assert grounded_text("", [], 10, 10) == f"An image of {NOTHING_GROUNDED}."
