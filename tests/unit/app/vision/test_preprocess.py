"""Preprocessing against references computed independently: the Hugging Face image processors
(PIL implementations, built here from the published settings, no download) and plain float64 math."""

import numpy as np
import pytest
from PIL import Image

from app.vision.preprocess import pixel_batch, preprocess_image, resize_image
from setup.catalog.families import families, get_family

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def photo(width: int, height: int, seed: int = 0) -> Image.Image:
    """A deterministic image with gradients and noise, so resampling differences would show."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    pixels = np.stack([x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), (x + y) % 256], axis=-1)
    pixels = np.clip(pixels + rng.integers(-20, 21, pixels.shape), 0, 255).astype(np.uint8)
    return Image.fromarray(pixels)


def hf_processor(name: str):
    from transformers.models.blip.image_processing_pil_blip import BlipImageProcessorPil
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    bicubic = Image.Resampling.BICUBIC
    if name == "llava-1.5":  # llava-hf/llava-1.5-7b-hf preprocessor settings
        return CLIPImageProcessorPil(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336},
                                     resample=bicubic, image_mean=CLIP_MEAN, image_std=CLIP_STD)
    if name == "blip2-opt":  # Salesforce/blip2-opt-2.7b preprocessor settings
        return BlipImageProcessorPil(size={"height": 224, "width": 224}, resample=bicubic,
                                     image_mean=CLIP_MEAN, image_std=CLIP_STD)
    if name == "vila":  # VILA1.5-3b: SigLIP 384, mean/std 0.5
        return SiglipImageProcessorPil(size={"height": 384, "width": 384}, resample=bicubic,
                                       image_mean=(0.5, 0.5, 0.5), image_std=(0.5, 0.5, 0.5))
    raise KeyError(name)


@pytest.mark.parametrize("family,size", [("llava-1.5", 336), ("blip2-opt", 224), ("vila", 384)])
@pytest.mark.parametrize("width,height", [(640, 480), (300, 517), (336, 336)])
def test_matches_hugging_face_processor(family, size, width, height):
    image = photo(width, height, seed=width + height)
    ours = preprocess_image(image, get_family(family).preprocess)
    reference = hf_processor(family)(images=image, return_tensors="np")["pixel_values"][0]
    assert ours.shape == reference.shape == (3, size, size)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, reference, atol=2e-6)


def test_solid_colour_normalises_to_hand_computed_values():
    colour = (200, 100, 50)
    image = Image.new("RGB", (500, 400), colour)
    for name, mean, std in (("llava-1.5", CLIP_MEAN, CLIP_STD), ("blip2-opt", CLIP_MEAN, CLIP_STD),
                            ("vila", (0.5,) * 3, (0.5,) * 3)):
        out = preprocess_image(image, get_family(name).preprocess)
        for channel in range(3):
            expected = (colour[channel] / 255.0 - mean[channel]) / std[channel]
            assert np.allclose(out[channel], expected, atol=1e-6), name


def test_llava_crop_is_the_centre_of_the_shorter_side_resize():
    # 600 x 300: shorter side -> 336, longer -> 672; the crop keeps x 168..504 of the resized image,
    # i.e. the middle half of the original: a vertical stripe at x 150..449 fills the crop exactly.
    image = Image.new("RGB", (600, 300), (0, 0, 0))
    image.paste((255, 255, 255), (150, 0, 450, 300))
    out = preprocess_image(image, get_family("llava-1.5").preprocess)
    white = (1.0 - CLIP_MEAN[0]) / CLIP_STD[0]
    assert np.allclose(out[0][:, 2:-2], white, atol=1e-3)


def test_cpu_ocr_letterbox_geometry_and_exact_pixels():
    spec = get_family("cpu-ocr").preprocess
    ramp = np.tile(np.arange(256, dtype=np.uint8), (64, 8))  # 2048 x 64 grey ramp
    image = Image.fromarray(np.stack([ramp] * 3, axis=-1))
    resized = resize_image(image, spec)
    assert resized.size == (1024, 1024)
    tensor = pixel_batch([image], spec)
    assert tensor.shape == (1, 1, 3, 1024, 1024) and tensor.dtype == np.float16
    # 2048 x 64 scaled by 0.5 -> 1024 x 32, centred: rows 496..527 hold the image, the rest is white
    assert np.all(tensor[0, 0, :, :496] == 1.0) and np.all(tensor[0, 0, :, 528:] == 1.0)
    assert not np.all(tensor[0, 0, :, 496:528] == 1.0)
    # FP16 carries every 8-bit level exactly: pixel = round(value * 255) recovers the resized image
    back = np.rint(tensor[0, 0].astype(np.float32) * 255).astype(np.uint8).transpose(1, 2, 0)
    assert np.array_equal(back, np.asarray(resized))


def test_pixel_batch_stacks_images_in_order():
    spec = get_family("blip2-opt").preprocess
    red, blue = Image.new("RGB", (50, 80), (255, 0, 0)), Image.new("RGB", (90, 20), (0, 0, 255))
    batch = pixel_batch([red, blue], spec)
    assert batch.shape == (1, 2, 3, 224, 224) and batch.dtype == np.float16
    assert batch[0, 0, 0].mean() > batch[0, 1, 0].mean() and batch[0, 1, 2].mean() > batch[0, 0, 2].mean()
    np.testing.assert_allclose(batch[0, 1].astype(np.float32), preprocess_image(blue, spec), atol=2e-3)


def test_every_family_entry_loads_and_pixel_families_are_complete():
    entries = families()
    assert {"llava-1.5", "blip2-opt", "vila", "mllama", "llava-onevision", "qwen2-vl", "cpu-ocr"} <= set(entries)
    for family in entries.values():
        assert family.max_num_images >= 1
        assert family.prompt.image_marker in family.prompt.user_text("q", 1)
        if family.image_input == "image_input":
            assert family.preprocess is not None and family.visual_tokens_per_image
    assert entries["llava-1.5"].visual_tokens_per_image == 576
    assert entries["blip2-opt"].visual_tokens_per_image == 32
    assert entries["vila"].visual_tokens_per_image == 196
    assert entries["vila"].prompt.user_text("Compare", 2) == "<image><image>\nCompare"


@pytest.mark.parametrize("name", [n for n, f in families().items() if f.preprocess is not None and not f.preprocess.as_bytes])
def test_table_lookup_gives_the_numbers_of_per_pixel_float32_arithmetic(name):
    """normalize looks every 8-bit value up in a table: the same float32 numbers (and float16 after the cast)
    as rescaling, subtracting and dividing each pixel."""
    from app.vision.preprocess import normalize

    spec = get_family(name).preprocess
    resized = resize_image(photo(500, 300, seed=3), spec)
    pixels = np.asarray(resized, dtype=np.float32) * np.float32(spec.rescale)
    direct = ((pixels - np.float32(spec.mean)) / np.float32(spec.std)).transpose(2, 0, 1)
    np.testing.assert_array_equal(normalize(resized, spec), direct)
    np.testing.assert_array_equal(normalize(resized, spec, np.float16), direct.astype(np.float16))
    assert pixel_batch([photo(500, 300, seed=3)], spec).dtype == np.float16
