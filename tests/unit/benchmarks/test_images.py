"""benchmarks/images.py's image cases: every model's "new" images are new to the one encoder the models share, and
the remembered photo is the same file content for every request."""

from __future__ import annotations

import hashlib

from PIL import Image

from benchmarks.images import TTFT_MODELS, image_cases


def digest(path) -> str:
    return hashlib.sha256(Image.open(path).tobytes()).hexdigest()


def test_new_images_differ_across_requests_and_models_and_the_remembered_one_does_not(tmp_path):
    for name in ("photo", "code"):
        Image.new("RGB", (8, 8), "white").save(tmp_path / f"{name}.png")
    runs = 3
    cases = [image_cases(tmp_path / "code.png", tmp_path / "photo.png", runs, index)
             for index in range(len(TTFT_MODELS))]
    new = [digest(p) for model in cases for case, images in model.items()
           if case.startswith("one ") and "code" not in case for p in images]
    assert len(new) == len(set(new)) == len(TTFT_MODELS) * (runs + 1)
    remembered = {digest(p) for model in cases for case, images in model.items() if "remembered" in case
                  for p in images}
    assert len(remembered) == 1 and not remembered & set(new)
    assert all(model["no image"] == [None] * runs for model in cases)
