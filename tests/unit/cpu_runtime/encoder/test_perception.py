"""The combined description (wording, guesses, several images) and the encoder's prompt-table rows."""

from __future__ import annotations

import numpy as np
import pytest

from setup.catalog.families import get_family
from tests.unit.cpu_runtime.encoder.conftest import photo, red_circle, sign

ROWS = get_family("cpu-ocr").visual_tokens_per_image  # prompt-table rows per image


def test_wording_marks_guesses_and_names_every_part(lib):
    p = lib.perception
    Label, Face, Shape = lib.classifier.Label, lib.faces.Face, lib.colours.Shape
    guess = p.Perception([Label("football helmet", 0.16), Label("bobsleigh", 0.11)],
                         faces=[Face((1, 2, 3, 4), "centre")], colours=[("grey", 0.4), ("black", 0.3)])
    assert guess.sentence() == ("It shows perhaps a football helmet or a bobsleigh. A person: one face (centre), "
                                "facing the camera. Colours: grey and black.")
    sure = p.Perception([Label("espresso", 0.95, "cup of coffee")], shapes=[Shape("red", "circle", 0.2)],
                        text="OPEN")
    assert sure.sentence() == 'It shows a cup of coffee (an espresso). Shapes: a red circle. Text: "OPEN".'
    cat = p.Perception([Label("tiger cat", 0.39, "cat"), Label("Egyptian Mau", 0.36, "cat")])
    assert cat.sentence() == "It shows a cat (a tiger cat or an Egyptian Mau)."  # 75% together: not a guess
    assert p.Perception().sentence() == "Nothing recognised."
    cat_face = p.Perception([Label("tabby", 0.9, "cat")], cat_faces=[Face((1, 2, 3, 4), "left")])
    assert cat_face.sentence() == "It shows a cat (a tabby). A cat: one cat face (left), facing the camera."
    shown = guess.as_dict()
    assert shown["middle_colours"] == [] and shown["light"] == "" and shown["scene_cues"] == []
    assert shown["labels"][0] == {"name": "football helmet", "confidence": 0.16, "group": ""}
    assert shown["faces"] == [{"box": (1, 2, 3, 4), "where": "centre"}] and shown["description"] == guess.sentence()


@pytest.fixture(scope="module")
def reference(cpu_model_dir):
    """transformers' tokenizer of the LLM, to read the encoder's ids back."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(cpu_model_dir)


@pytest.fixture(scope="module")
def encoder(lib, tmp_path_factory, cpu_model_dir):
    from setup.catalog.families import get_family
    from setup.cpu.encoder import build_cpu_encoder

    folder = build_cpu_encoder(get_family("cpu-ocr"), 2, 576, root=tmp_path_factory.mktemp("enc"))
    return lib.encoder.make_encoder(folder, cpu_model_dir)


def test_demo_family_makes_a_perception_encoder(lib, encoder):
    assert isinstance(encoder, lib.encoder.PerceptionEncoder)


def _pixels(images):
    from app.vision.preprocess import pixel_batch
    from setup.catalog.families import get_family

    return pixel_batch(images, get_family("cpu-ocr").preprocess)[0]


def test_each_image_of_a_message_is_described_on_its_own(encoder, reference):
    from PIL import Image

    pictures = [Image.fromarray(photo("chelsea")), Image.fromarray(red_circle()), Image.fromarray(sign())]
    table, seen = encoder.encode(_pixels(pictures))
    assert table.shape == (3 * ROWS, 576) and table.dtype == np.float16
    cat, circle, board = (s.sentence() for s in seen)
    assert cat.startswith("It shows a cat (") and "Text" not in cat, cat
    assert "a red circle" in circle and "red" in [c for c, _ in seen[1].colours], circle
    assert 'Text: "OPEN DAILY 9-17"' in board, board
    ids = encoder.description_ids(cat, 1)
    np.testing.assert_array_equal(table[:ROWS], encoder.embeddings[ids].astype(np.float16))
    assert reference.decode([i for i in ids if i != encoder.pad_id]) == f"[Image 1: {cat}]"
    board_ids = encoder.description_ids(board, 3)
    np.testing.assert_array_equal(table[2 * ROWS:], encoder.embeddings[board_ids].astype(np.float16))


def test_one_image_alone_is_not_numbered(encoder, reference):
    """Numbers only tell several images of one message apart; the same image alone is "[Image: ...]"."""
    from PIL import Image

    table, (seen,) = encoder.encode(_pixels([Image.fromarray(red_circle())]))
    ids = encoder.description_ids(seen.sentence())
    np.testing.assert_array_equal(table, encoder.embeddings[ids].astype(np.float16))
    assert reference.decode([i for i in ids if i != encoder.pad_id]) == f"[Image: {seen.sentence()}]"
    assert encoder.image_block(np.ascontiguousarray(red_circle()[:, :, ::-1]), 2)[0] == encoder.description_ids(
        seen.sentence(), 2)


def test_a_long_description_is_cut_before_the_closing_bracket(encoder):
    ids = encoder.description_ids("word " * 300)
    assert len(ids) == ROWS and ids[-len(encoder.close_ids):] == encoder.close_ids


def test_stray_non_latin_ocr_is_dropped_from_photos(encoder):
    assert encoder.photo_text(np.ascontiguousarray(sign("OPEN 9-17")[:, :, ::-1])) == "OPEN 9-17"
    assert encoder.describe(np.ascontiguousarray(photo("rocket")[:, :, ::-1])).text == ""


def test_an_image_seen_again_is_remembered_not_run_again(encoder):
    from PIL import Image

    pixels = _pixels([Image.fromarray(red_circle())])
    first_table, first_seen = encoder.encode(pixels)
    calls, hits = [], encoder.memo.hits
    original = encoder.see
    encoder.see = lambda bgr: calls.append(bgr) or original(bgr)
    try:
        table, seen = encoder.encode(pixels.copy())
        encoder.encode(pixels[:, :, ::-1].copy())  # other pixels: run again
    finally:
        del encoder.see
    assert encoder.memo.hits == hits + 1 and len(calls) == 1
    np.testing.assert_array_equal(table, first_table)
    assert seen[0].as_dict() == first_seen[0].as_dict()


def test_memo_drops_the_least_recently_used(lib):
    memo = lib.ocr.ImageMemo(size=2)
    a, b, c = (np.full((3, 2, 2), v, np.float16) for v in (1, 2, 3))
    for image in (a, b, a, c):  # a used again, so b is the oldest when c arrives
        memo.get_or_make(image, lambda image=image: float(image[0, 0, 0]))
    made = []
    memo.get_or_make(b, lambda: made.append("b"))
    memo.get_or_make(a, lambda: made.append("a"))
    assert made == ["b", "a"]  # b was dropped by c; then a was dropped by b


def test_ocr_beside_the_other_parts_gives_what_one_after_the_other_gives(lib, encoder):
    from tests.unit.cpu_runtime.encoder.conftest import sign

    p = encoder.perceiver
    alone = lib.perception.Perceiver(p.settings, p.classifier, p.faces, p.colours, parallel=False)
    for picture in (photo("astronaut"), sign()):
        side_by_side = p.perceive(picture, encoder.photo_text).as_dict()
        assert side_by_side == alone.perceive(picture, encoder.photo_text).as_dict()
    assert alone.perceive(sign()).text == "" and "OPEN" in p.perceive(sign(), encoder.photo_text).text


@pytest.mark.parametrize("mean, std", [([0, 0, 0], [1, 1, 1]), ([0.48, 0.46, 0.41], [0.27, 0.26, 0.28])])
def test_float16_pixels_back_to_bytes_by_table_as_by_arithmetic(lib, mean, std):
    """to_bgr_uint8 looks float16 pixels up in a table of every bit pattern: the same bytes as the arithmetic,
    for a photo and for any float16 value (NaN and infinities included)."""
    from PIL import Image

    ocr = lib.ocr
    photo_pixels = _pixels([Image.fromarray(photo("chelsea"))])[0]
    anything = np.random.default_rng(0).integers(0, 65536, (3, 64, 48), dtype=np.uint16).view(np.float16)
    for pixels in (photo_pixels, anything):
        table = ocr.to_bgr_uint8(pixels, mean, std, 1 / 255)
        assert table.flags.c_contiguous and table.shape == (*pixels.shape[1:], 3)
        np.testing.assert_array_equal(table, ocr._to_bgr_arithmetic(pixels, mean, std, 1 / 255))


def test_setting_cues_are_said_only_where_the_pixels_show_them(lib):
    """The middle's colours when they differ from the whole picture's, light that is not ordinary, a sky-like top
    or a grass-like bottom; a photo with neither says so, a drawing (shapes) does not."""
    p, Label, Scene = lib.perception, lib.classifier.Label, lib.scene.Scene
    colours = [("orange", 0.5), ("black", 0.3)]
    outdoors = p.Perception([Label("sports car", 0.9)], colours=colours,
                            scene=Scene([("red", 0.6)], "dim", ["Blue at the top, perhaps sky."], "No sky."))
    assert outdoors.sentence() == ("It shows a sports car. Colours: orange and black. In the middle: red. "
                                   "The picture is dim. Blue at the top, perhaps sky.")
    same_middle = p.Perception([Label("sports car", 0.9)], colours=colours,
                               scene=Scene([("black", 0.5), ("orange", 0.4)], "", [], "No sky."))
    assert same_middle.sentence() == "It shows a sports car. Colours: orange and black. No sky."
    drawing = p.Perception(shapes=[lib.colours.Shape("red", "circle", 0.2)], scene=Scene([], "", [], "No sky."))
    assert drawing.sentence() == "Shapes: a red circle."
    assert outdoors.as_dict()["middle_colours"] == [{"name": "red", "share": 0.6}]


def test_the_scene_reader_on_photos(lib):
    reader = lib.scene.SceneReader()
    rocket, cat = (reader.read(photo(name)) for name in ("rocket", "chelsea"))
    assert rocket.cues == ["Blue at the top, perhaps sky."] and rocket.light == "dim", rocket
    assert cat.cues == [] and cat.light == "" and {c for c, _ in cat.middle} == {"orange", "brown"}, cat
    night = np.zeros((200, 300, 3), np.uint8)  # dark red and dark blue halves (brightest channel 55): no plain border
    night[:, :150, 0], night[:, 150:, 2] = 55, 55
    assert reader.read(night).light == "dark" and not reader.read(night).plain
    lawn = np.zeros((200, 300, 3), np.uint8)
    lawn[:] = (200, 200, 200)
    lawn[140:] = (40, 160, 40)
    assert reader.read(lawn).cues == ["Green at the bottom, perhaps grass or plants."]
    for drawing in (red_circle(), sign()):  # a plain background: no setting to speak of, not even "bright"
        assert reader.read(drawing) == lib.scene.Scene(plain=True)
