"""The CPU OCR encoder (cpu_runtime/encoder/ocr.py): a picture's text as rows of the LLM's embeddings, cut to the
family's row count, and its pixels back to 8-bit BGR."""

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from cpu_runtime.encoder import ocr
from setup.catalog.families import get_family

ROWS = get_family("cpu-ocr").visual_tokens_per_image  # the CPU demo's prompt-table rows per image


@pytest.fixture(scope="module")
def ocr_encoder(tmp_path_factory, cpu_model_dir):
    from setup.cpu.encoder import build_cpu_encoder

    folder = build_cpu_encoder(get_family("cpu-ocr"), 2, 576, root=tmp_path_factory.mktemp("enc"))
    return ocr.OcrEncoder(folder, hf_dir=cpu_model_dir)


def test_ocr_encoder_rows_are_the_llm_embeddings_of_the_text(ocr_encoder, cpu_model_dir):
    from app.vision.preprocess import pixel_batch

    image = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(image).text((20, 60), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    pixels = pixel_batch([image], get_family("cpu-ocr").preprocess)[0]
    table, texts = ocr_encoder.encode(pixels)
    assert texts == ["The secret code is 4711"]
    assert table.shape == (ROWS, 576) and table.dtype == np.float16
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(cpu_model_dir).encode("[Image text: The secret code is 4711]",
                                                              add_special_tokens=False)
    np.testing.assert_array_equal(table[: len(ids)], ocr_encoder.embeddings[ids].astype(np.float16))
    newline = ocr_encoder.embeddings[ocr_encoder.pad_id].astype(np.float16)
    assert all(np.array_equal(row, newline) for row in table[len(ids):])


def test_ocr_encoder_cuts_long_text_and_marks_empty_images(ocr_encoder, cpu_model_dir):
    from transformers import AutoTokenizer

    long_ids = ocr_encoder.text_ids("word " * 400)
    assert len(long_ids) == ROWS and long_ids[-len(ocr_encoder.close_ids):] == ocr_encoder.close_ids
    empty = AutoTokenizer.from_pretrained(cpu_model_dir).decode([i for i in ocr_encoder.text_ids("") if i != ocr_encoder.pad_id])
    assert empty == "[Image text: (no readable text)]"
    blank = np.ones((1, 3, 64, 64), np.float16)
    table, texts = ocr_encoder.encode(blank)
    assert texts == [""] and table.shape == (ROWS, 576)


def test_pixels_round_trip_to_uint8():
    rgb = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    pixels = (rgb.astype(np.float32) / 255).transpose(2, 0, 1).astype(np.float16)
    bgr = ocr.to_bgr_uint8(pixels, [0, 0, 0], [1, 1, 1], 1 / 255)
    assert np.array_equal(bgr[:, :, ::-1], rgb)


def test_a_family_twin_s_block_is_zero_rows_then_the_text(tmp_path, cpu_model_dir):
    """zero_rows_first (the template twins' hundreds of rows per image): the padding comes first and is all zeros,
    the text's rows end the block; the folder records the family's model type and is accepted for its twin section."""
    from app.vision.preprocess import pixel_batch
    from setup.cpu.encoder import build_cpu_encoder
    from setup.cpu.family_twins import encoder_family

    family = get_family("llava-1.5")
    twin = {"family": family.name, "format": "llava-1.5: ...", "padding": "zero_rows_first"}
    folder = build_cpu_encoder(encoder_family(family), 1, 576, root=tmp_path, twin=twin)
    encoder = ocr.OcrEncoder(folder, hf_dir=cpu_model_dir)
    assert encoder.tokens == family.visual_tokens_per_image == 576
    image = Image.new("RGB", (500, 500), "white")  # square: LLaVA's centre crop keeps it whole
    ImageDraw.Draw(image).text((60, 210), "Code 4711", fill="black", font=ImageFont.load_default(size=64))
    table, texts = encoder.encode(pixel_batch([image], family.preprocess)[0])
    assert texts == ["Code 4711"] and table.shape == (576, 576)
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(cpu_model_dir).encode("[Image text: Code 4711]", add_special_tokens=False)
    np.testing.assert_array_equal(table[-len(ids):], encoder.embeddings[ids].astype(np.float16))
    assert not table[: 576 - len(ids)].any()
    config = folder / "config.json"
    config.write_text(config.read_text().replace('"twin"', '"not_twin"'))
    with pytest.raises(RuntimeError, match="does not describe a cpu-ocr encoder \\(model_type llava\\)"):
        ocr.OcrEncoder(folder, hf_dir=cpu_model_dir)
