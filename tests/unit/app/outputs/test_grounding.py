"""Kosmos-2's grounded text: our parser against the recorded facts and against the installed transformers'
own functions (processing_kosmos2) on the documented example, hand-written edge cases and random strings."""

import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import transformers
import yaml
from transformers.models.kosmos2 import processing_kosmos2 as upstream

from app.outputs import grounding as G
from app.outputs.grounding import Box, box_patches, grounded_phrase, parse_grounding, patch_box

FACTS = yaml.safe_load((Path(__file__).parents[3] / "data/upstream/family_outputs.yaml").read_text())["kosmos2"]
REQUIREMENTS = (Path(__file__).parents[4] / "requirements-cpu.txt").read_text().splitlines()  # transformers: the CPU demo's


def upstream_result(text: str):
    """What the processor's post_process_generation returns (it reads only its eoi token from the processor)."""
    processor = SimpleNamespace(eoi_token=FACTS["eoi_token"])
    return upstream.Kosmos2Processor.post_process_generation(processor, text)


def ours(text: str):
    grounding = parse_grounding(text)
    return grounding.text, [(p.text, (p.start, p.end), [b.coordinates for b in p.boxes]) for p in grounding.phrases]


def test_the_recorded_version_is_the_pinned_and_installed_one():
    assert f"transformers=={FACTS['transformers_version']}" in REQUIREMENTS
    assert transformers.__version__ == FACTS["transformers_version"]


def test_the_format_constants_are_the_recorded_ones():
    assert (G.GRID, G.END_OF_IMAGE, G.BOX_SEPARATOR) == (FACTS["grid"], FACTS["eoi_token"], FACTS["delimiter"])
    assert G.PATCH_TOKEN.format(44) == "<patch_index_0044>"


def test_the_documented_example():
    example = FACTS["documented_example"]
    text, entities = ours(example["text"])
    assert text == example["clean_text"]
    assert entities == [(name, tuple(span), [tuple(box) for box in boxes])
                        for name, span, boxes in example["entities"]]
    assert (text, entities) == upstream.clean_text_and_extract_entities_with_bboxes(example["text"])


CASES = [
    "<grounding> An image of<phrase> a snowman</phrase><object><patch_index_0044><patch_index_0863></object> "
    "warming himself by<phrase> a fire</phrase><object><patch_index_0005><patch_index_0911></object>.",
    "<image>. the, to and of</image><grounding> A dog<phrase> a ball</phrase><object><patch_index_0100>"
    "<patch_index_0200></object>",
    "<grounding><phrase> two cats</phrase><object><patch_index_0033><patch_index_0300>"
    "</delimiter_of_multi_objects/><patch_index_0600><patch_index_0990></object> on a sofa",
    "<grounding> Something<object><patch_index_0010><patch_index_0500></delimiter_of_multi_objects/>"
    "<patch_index_0700><patch_index_0800></object> here",
    "  leading spaces<phrase>  a cat  </phrase><object><patch_index_0000><patch_index_1023></object>  ",
    "<grounding><phrase> a dog</phrase> runs<object><patch_index_0001><patch_index_0002></object>",
    "<grounding> broken<phrase> x</phrase><object><patch_index_0001></object> and <object></object>",
    "row<phrase> a row</phrase><object><patch_index_0064><patch_index_0090></object> column<phrase> a column"
    "</phrase><object><patch_index_0005><patch_index_0997></object> cell<phrase> a cell</phrase><object>"
    "<patch_index_0400><patch_index_0400></object>",
    "short indices<phrase> it</phrase><object><patch_index_5><patch_index_40></object>",
    "a < b and<phrase> c</phrase><object><patch_index_0001><patch_index_0066></object> > d",
    "first line\nsecond<phrase> thing</phrase><object><patch_index_0300><patch_index_0600></object>\n",
    "plain text without any markup",
    "",
    "</image></image> twice<phrase> x</phrase><object><patch_index_0001><patch_index_0034></object>",
    "inverted<phrase> box</phrase><object><patch_index_0900><patch_index_0100></object>",
]


@pytest.mark.parametrize("text", CASES)
def test_each_case_parses_as_upstream_does(text):
    assert ours(text) == upstream_result(text)


def random_generation(rng: random.Random) -> str:
    pieces = ["<grounding>", " a", " the dog", "  ", ".", " <", ">", "\n", "</image>", "<image>", "x"]
    parts = []
    for _ in range(rng.randint(0, 8)):
        kind = rng.random()
        if kind < 0.5:
            parts.append(rng.choice(pieces))
        else:
            if rng.random() < 0.7:
                parts.append(f"<phrase>{rng.choice([' a cat', 'dog ', ' sky', 'x'])}</phrase>")
                if rng.random() < 0.2:
                    parts.append(" ")
            pairs = [f"<patch_index_{rng.randrange(1024):04d}><patch_index_{rng.randrange(1024):04d}>"
                     for _ in range(rng.randint(1, 3))]
            parts.append("<object>" + "</delimiter_of_multi_objects/>".join(pairs) + "</object>")
    return "".join(parts)


def test_random_generations_parse_as_upstream_does():
    rng = random.Random(31)
    for _ in range(300):
        text = random_generation(rng)
        assert ours(text) == upstream_result(text), text


def test_patch_boxes_match_upstream_for_every_kind_of_pair():
    rng = random.Random(7)
    pairs = [(0, 0), (0, 1023), (1023, 0), (44, 863), (64, 90), (5, 997), (400, 400)]
    pairs += [(rng.randrange(1024), rng.randrange(1024)) for _ in range(500)]
    for first, last in pairs:
        box = patch_box(first, last)
        assert box.coordinates == upstream.patch_index_to_coordinate(first, last, 32)
        assert (box.first_patch, box.last_patch) == (first, last)


def test_box_patches_match_upstream():
    rng = random.Random(11)
    boxes = [(0.0, 0.0, 1.0, 1.0), (0.5, 0.5, 0.51, 0.52), (0.03125, 0.0625, 0.5, 0.5)]
    for _ in range(500):
        x1, x2 = sorted(rng.uniform(0, 1) for _ in range(2))
        y1, y2 = sorted(rng.uniform(0, 1) for _ in range(2))
        if x2 > x1 and y2 > y1:
            boxes.append((x1, y1, x2, y2))
    for box in boxes:
        assert box_patches(*box) == upstream.coordinate_to_patch_index(box, 32)
    for bad in [(0.5, 0.1, 0.5, 0.9), (0.1, 0.9, 0.9, 0.1)]:
        with pytest.raises(ValueError):
            box_patches(*bad)
        with pytest.raises(ValueError):
            upstream.coordinate_to_patch_index(bad, 32)


def test_a_grounded_phrase_written_by_us_reads_back_here_and_upstream():
    face = (0.40, 0.12, 0.58, 0.36)
    text = "<grounding> An astronaut with" + grounded_phrase(" her face", [face]) + " and" + grounded_phrase(
        " two hands", [(0.0, 0.7, 0.2, 1.0), (0.8, 0.7, 1.0, 1.0)]) + "."
    grounding = parse_grounding(text)
    assert grounding.text == "An astronaut with her face and two hands."
    face_phrase, hands = grounding.phrases
    assert grounding.text[face_phrase.start:face_phrase.end] == "her face" and len(hands.boxes) == 2
    box = face_phrase.boxes[0]
    assert box.x1 <= face[0] + 1 / 32 and box.x2 >= face[2] - 1 / 32 and box.y1 <= face[1] + 1 / 32
    assert ours(text) == upstream_result(text)
    with pytest.raises(ValueError):
        grounded_phrase("a <b>", [face])
    with pytest.raises(ValueError):
        grounded_phrase("nothing", [])


def test_phrases_without_a_name_are_marked():
    grounding = parse_grounding("x<object><patch_index_0001><patch_index_0066></object>")
    assert [p.named for p in grounding.phrases] == [False]
    assert parse_grounding("x<phrase> y</phrase><object><patch_index_0001><patch_index_0066></object>").phrases[0].named


def test_box_pixels_are_ordered_and_kept_in_the_picture():
    assert Box(0.25, 0.5, 0.75, 1.0, 0, 0).pixels(200, 100) == (50, 50, 150, 100)
    assert Box(0.75, 1.2, 0.25, -0.1, 0, 0).pixels(200, 100) == (50, 0, 150, 100)
