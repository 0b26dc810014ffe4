"""Fixtures of the CPU image encoder's unit tests: the encoder package, and scikit-image's photos."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont


def encoder_package():
    """cpu_runtime.encoder with every module loaded (the package the CPU multimodal_encoders model imports)."""
    import cpu_runtime.encoder
    from cpu_runtime.encoder import (  # noqa: F401
        classifier,
        colours,
        encoder,
        faces,
        margins,
        ocr,
        onnx_model,
        perception,
        text_reader,
    )

    return cpu_runtime.encoder


def photo(name: str) -> np.ndarray:
    """One of the photos inside scikit-image's wheel as [H, W, 3] uint8 RGB."""
    from skimage import data

    image = getattr(data, name)()
    return np.ascontiguousarray(np.stack([image] * 3, axis=-1) if image.ndim == 2 else image[..., :3])


def red_circle() -> np.ndarray:
    image = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(image).ellipse((120, 70, 280, 230), fill=(220, 20, 30))
    return np.asarray(image)


def sign(text: str = "OPEN DAILY 9-17") -> np.ndarray:
    image = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(image).text((20, 60), text, fill="black", font=ImageFont.load_default(size=64))
    return np.asarray(image)


@pytest.fixture(scope="session")
def lib():
    return encoder_package()


@pytest.fixture(scope="session")
def classifier(lib):
    return lib.classifier.ImageClassifier()


@pytest.fixture(scope="session")
def face_finder(lib):
    return lib.faces.FaceFinder()


@pytest.fixture(scope="session")
def colour_reader(lib):
    return lib.colours.ColourReader()
