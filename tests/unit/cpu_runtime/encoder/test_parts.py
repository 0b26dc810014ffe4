"""Each part of the CPU image encoder on real pictures (scikit-image's photos, drawn shapes, a sign)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.cpu_runtime.encoder.conftest import photo, red_circle


def test_the_class_names_are_the_thousand_imagenet_classes(lib):
    names = lib.classifier.class_names()
    assert len(names) == 1000 and names[281] == "tabby cat" and names[967] == "espresso"
    groups = lib.classifier.class_groups()
    assert groups[285] == "cat" and groups[967] == "cup of coffee" and 500 not in groups


@pytest.mark.parametrize(("name", "expected"), [
    ("chelsea", {"tiger cat", "tabby cat", "Egyptian Mau"}),
    ("coffee", {"espresso", "cup"}),
    ("rocket", {"missile", "projectile", "space shuttle"}),
])
def test_classifier_names_the_object_of_a_photo(classifier, name, expected):
    labels = classifier.top(photo(name), k=3, min_confidence=0.05)
    assert labels and labels[0].name in expected, labels
    assert all(0 < label.confidence <= 1 for label in labels)
    assert [label.confidence for label in labels] == sorted((label.confidence for label in labels), reverse=True)


def test_classifier_is_sure_of_the_espresso_and_groups_the_cat(classifier):
    assert classifier.top(photo("coffee"), k=1)[0].confidence > 0.8
    assert {label.group for label in classifier.top(photo("chelsea"), k=3)} == {"cat"}


def test_the_astronaut_has_one_face_and_the_cat_photo_none(face_finder):
    gray = photo("astronaut").mean(axis=2).astype(np.uint8)
    people, cats = face_finder.find(gray)
    assert len(people) == 1 and not cats
    x, y, w, h = people[0].box
    assert 150 < x + w / 2 < 350 and y + h / 2 < 256 and people[0].where.endswith("centre")
    for name in ("coffee", "rocket"):
        assert face_finder.find(photo(name).mean(axis=2).astype(np.uint8))[0] == []


def test_red_circle_on_white_is_read_as_a_red_circle(colour_reader):
    colours, shapes = colour_reader.read(red_circle())
    assert [name for name, _ in colours] == ["white", "red"]
    assert [(s.colour, s.kind) for s in shapes] == [("red", "circle")]


def test_colours_of_photos_and_no_shapes_in_them(colour_reader):
    colours, shapes = colour_reader.read(photo("coffee"))
    assert "red" in {name for name, _ in colours} and shapes == []
    colours, _ = colour_reader.read(photo("camera"))
    assert {name for name, _ in colours} <= {"black", "grey", "white"}


def test_other_drawn_shapes(colour_reader):
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (400, 400), "white")
    draw = ImageDraw.Draw(image)
    draw.polygon([(40, 180), (180, 180), (110, 40)], fill=(30, 60, 220))
    draw.rectangle((220, 220, 380, 300), fill=(30, 160, 40))
    _, shapes = colour_reader.read(np.asarray(image))
    assert {(s.colour, s.kind) for s in shapes} == {("blue", "triangle"), ("green", "rectangle")}


def test_margins_of_a_letterbox_are_trimmed(lib):
    picture = photo("chelsea")
    boxed = np.full((700, picture.shape[1], 3), 255, np.uint8)
    boxed[100:100 + picture.shape[0]] = picture
    assert lib.perception.trim_margins(boxed).shape == picture.shape
    circle = red_circle()  # white on all four sides: its own background, kept
    assert lib.perception.trim_margins(circle) is circle
